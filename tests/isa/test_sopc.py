"""SOPC: scalar compares set SCC (signed/unsigned/64-bit/bit tests)."""
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run

@pytest.mark.parametrize("op,a,b,want", [(s_cmp_lt_i32, -1, 1, 1), (s_cmp_lt_u32, -1, 1, 0), (s_cmp_eq_u32, 7, 7, 1),
                                         (s_cmp_lg_u32, 7, 7, 0), (s_cmp_ge_i32, -5, -5, 1), (s_bitcmp1_b32, 0x10, 4, 1),
                                         (s_bitcmp0_b32, 0x10, 4, 0)])
def test_scc(op, a, b, want):
  st = run([s_mov_b32(s[4], a), s_mov_b32(s[5], b), op(s[4], s[5])], sgprs=())
  assert st.state.scc == want

def test_s_cmp_u64():
  st = run([s_mov_b64(s[4:5], -1), s_mov_b64(s[6:7], -1), s_cmp_eq_u64(s[4:5], s[6:7])], sgprs=())
  assert st.state.scc == 1
