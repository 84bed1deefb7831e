"""VOP3SD: carry-out to an SGPR mask, carry-in from one, 64-bit multiply-add."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import lanes

rng = np.random.default_rng(3)

def test_add_co_carry_to_sgpr_and_back():
  a, b = (rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(2))
  out, st = lanes([v_add_co_u32(v[5], s[10], v[2], v[3]), v_add_co_ci_u32(v[6], s[11], 0, 0, s[10])], a, b, out_words=2)
  carry = ((a.astype(np.uint64) + b) >> 32).astype(np.uint32)
  np.testing.assert_array_equal(out[0::2], a + b)
  np.testing.assert_array_equal(out[1::2], carry)
  assert st.state.sgprs[10] == sum(int(c) << i for i, c in enumerate(carry)) and st.state.sgprs[11] == 0

def test_mad_u64_u32():
  a, b = (rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(2))
  c = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
  out, _ = lanes([v_mov_b32_e32(v[7], 0), v_mov_b32_e32(v[6], v[4]), v_mad_u64_u32(v[5:6], NULL, v[2], v[3], v[6:7])], a, b, c, out_words=2)
  got = out[0::2].astype(np.uint64) | (out[1::2].astype(np.uint64) << 32)
  np.testing.assert_array_equal(got, a.astype(np.uint64) * b.astype(np.uint64) + c.astype(np.uint64))

def test_carry_mask_of_inactive_lanes_is_zero():
  # a VALU lane mask leaves 0 in the bits of inactive lanes, whatever the register held (LLVM tests it with s_cmp_lg_u32)
  a, b = (rng.integers(0, 2**32, 5, dtype=np.uint64).astype(np.uint32) for _ in range(2))
  borrow = sum(int(x) << i for i, x in enumerate(b > a))
  _, st = lanes([s_mov_b32(VCC_LO, -1), v_sub_co_u32(v[5], s[10], v[2], v[3]), v_sub_co_ci_u32_e32(v[6], 0, v[3])],
                a, b, n=5)
  assert st.state.sgprs[10] == borrow
  assert st.state.vcc == sum(int(x) << i for i, x in enumerate(b.astype(np.uint64) + 1 > 0))   # 0 - b - 1 always borrows
