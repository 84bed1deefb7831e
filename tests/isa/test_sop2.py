"""SOP2: integer arithmetic with SCC (carry, overflow), shifts, selects, 64-bit ops."""
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, as_f32

@pytest.mark.parametrize("a,b", [(0xffffffff, 1), (5, 7), (0x80000000, 0x80000000)])
def test_s_add_u32_carry(a, b):
  st = run([s_mov_b32(s[4], a), s_mov_b32(s[5], b), s_add_u32(s[6], s[4], s[5]), s_cselect_b32(s[7], 1, 0)], sgprs=())
  assert st.state.sgprs[6] == (a + b) & 0xffffffff and st.state.sgprs[7] == int(a + b > 0xffffffff)

def test_s_addc_sub_mul():
  st = run([s_mov_b32(s[4], 0xffffffff), s_add_u32(s[6], s[4], 1), s_addc_u32(s[7], 0, 0), s_sub_u32(s[8], 3, 5),
            s_mul_i32(s[9], -7, 6), s_mul_hi_u32(s[10], s[4], s[4])], sgprs=())
  sg = st.state.sgprs
  assert sg[6] == 0 and sg[7] == 1 and sg[8] == (3 - 5) & 0xffffffff and sg[9] == (-42) & 0xffffffff
  assert sg[10] == (0xffffffff * 0xffffffff) >> 32

def test_shifts_and_64bit():
  st = run([s_lshl_b32(s[4], 3, 4), s_ashr_i32(s[5], -64, 2), s_lshr_b32(s[6], 0x80000000, 31),
            s_mov_b64(s[8:9], -16), s_lshr_b64(s[10:11], s[8:9], 4), s_and_b64(s[12:13], s[8:9], 0x0f0)], sgprs=())
  sg = st.state.sgprs
  assert sg[4] == 48 and sg[5] == (-16) & 0xffffffff and sg[6] == 1
  assert (sg[10] | sg[11] << 32) == (0xfffffffffffffff0 >> 4) and (sg[12] | sg[13] << 32) == 0xf0

def test_s_bfe_and_minmax():
  st = run([s_mov_b32(s[7], 0xabcd1234), s_bfe_u32(s[4], s[7], (8 << 16) | 4), s_min_i32(s[5], -3, 2), s_max_u32(s[6], -3, 2)], sgprs=())
  assert st.state.sgprs[4] == (0xabcd1234 >> 4) & 0xff and st.state.sgprs[5] == (-3) & 0xffffffff and st.state.sgprs[6] == 0xfffffffd

def test_salu_float():
  st = run([s_add_f32(s[4], 1.5, 2.0), s_mul_f32(s[5], -0.5, 4.0)], sgprs=())
  assert as_f32(st.state.sgprs[4]) == 3.5 and as_f32(st.state.sgprs[5]) == -2.0
