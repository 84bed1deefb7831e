"""VOP2: float and integer arithmetic against numpy, VCC carry chains, v_cndmask, literal forms (FMAMK/FMAAK), FMAC."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import lanes, f32

rng = np.random.default_rng(1)

def test_float_binops():
  a, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
  for op, ref in ((v_add_f32_e32, a + b), (v_sub_f32_e32, a - b), (v_mul_f32_e32, a * b), (v_max_f32_e32, np.maximum(a, b)),
                  (v_min_f32_e32, np.minimum(a, b))):
    out, _ = lanes([op(v[5], v[2], v[3])], a, b)
    np.testing.assert_array_equal(out.view(np.float32), ref.astype(np.float32))

def test_fmac_and_literal_forms():
  a, b, c = (rng.standard_normal(32).astype(np.float32) for _ in range(3))
  out, _ = lanes([v_mov_b32_e32(v[5], v[4]), v_fmac_f32_e32(v[5], v[2], v[3])], a, b, c)
  np.testing.assert_allclose(out.view(np.float32), a * b + c, rtol=1e-6, atol=1e-6)
  out, _ = lanes([v_fmamk_f32_e32(v[5], v[2], v[3], literal=f32(3.0))], a, b)
  np.testing.assert_allclose(out.view(np.float32), a * 3.0 + b, rtol=1e-6, atol=1e-6)
  out, _ = lanes([v_fmaak_f32_e32(v[5], v[2], v[3], literal=f32(-2.0))], a, b)
  np.testing.assert_allclose(out.view(np.float32), a * b - 2.0, rtol=1e-6, atol=1e-6)

def test_integer_ops_and_inline_constants():
  a, b = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32), rng.integers(0, 32, 32).astype(np.uint32)
  out, _ = lanes([v_lshlrev_b32_e32(v[5], v[3], v[2])], a, b)
  np.testing.assert_array_equal(out, (a.astype(np.uint64) << b).astype(np.uint32))
  out, _ = lanes([v_xor_b32_e32(v[5], -1, v[2])], a)
  np.testing.assert_array_equal(out, ~a)
  out, _ = lanes([v_mul_u32_u24_e32(v[5], v[2], v[3])], a, b)
  np.testing.assert_array_equal(out, ((a & 0xffffff).astype(np.uint64) * b).astype(np.uint32))

def test_carry_chain_64bit_add():
  a, b = rng.integers(0, 2**63, 32, dtype=np.uint64), rng.integers(0, 2**63, 32, dtype=np.uint64)
  lo = lambda x: (x & 0xffffffff).astype(np.uint32)
  out, _ = lanes([v_add_co_u32(v[5], VCC_LO, v[2], v[3]), v_add_co_ci_u32_e32(v[6], v[4], v[4])], lo(a), lo(b), np.zeros(32, np.uint32), out_words=2)
  want_carry = ((a & 0xffffffff) + (b & 0xffffffff)) >> 32
  np.testing.assert_array_equal(out[0::2], lo(a + b))
  np.testing.assert_array_equal(out[1::2], want_carry.astype(np.uint32))

def test_cndmask_uses_vcc():
  a, b = np.arange(32, dtype=np.uint32), np.arange(32, dtype=np.uint32) + 100
  out, _ = lanes([s_mov_b32(VCC_LO, 0xaaaaaaaa), v_cndmask_b32_e32(v[5], v[2], v[3])], a, b)
  np.testing.assert_array_equal(out, np.where(np.arange(32) % 2 == 1, b, a))
