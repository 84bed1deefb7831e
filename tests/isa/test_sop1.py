"""SOP1: moves (inline constants, literals, 64-bit), bit ops, exec save/restore. Expected values from the ISA definition."""
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run

@pytest.mark.parametrize("src,want", [(0, 0), (64, 64), (-1, 0xffffffff), (-16, 0xfffffff0), (0.5, 0x3f000000), (-4.0, 0xc0800000),
                                      (INV_2PI, 0x3e22f983), (0x12345678, 0x12345678), (-200, 0xffffff38)])
def test_s_mov_b32_inline_and_literal(src, want):
  st = run([s_mov_b32(s[5], src)], sgprs=())
  assert st.state.sgprs[5] == want

def test_s_mov_b64_and_not_brev():
  st = run([s_mov_b64(s[2:3], -2), s_not_b32(s[4], 0x0f0f0f0f), s_brev_b32(s[5], 1), s_mov_b64(s[6:7], 1.0)], sgprs=())
  sg = st.state.sgprs
  assert (sg[2], sg[3]) == (0xfffffffe, 0xffffffff)       # inline integers sign-extend to 64 bits
  assert sg[4] == 0xf0f0f0f0 and sg[5] == 0x80000000
  assert (sg[6] | sg[7] << 32) == 0x3ff0000000000000        # float constants are f64 for 64-bit operands

def test_s_and_saveexec_b32():
  st = run([s_mov_b32(s[4], 0x0000ffff), s_and_saveexec_b32(s[5], s[4])], sgprs=())
  assert st.state.sgprs[5] == 0xffffffff and st.state.exec == 0x0000ffff and st.state.scc == 1

def test_s_bcnt1_and_ff1():
  st = run([s_mov_b32(s[4], 0xf0f00000), s_bcnt1_i32_b32(s[5], s[4]), s_ctz_i32_b32(s[6], s[4]), s_cls_i32(s[7], -1)], sgprs=())
  assert st.state.sgprs[5] == 8 and st.state.sgprs[6] == 20 and st.state.scc == 1
