"""VOP3P: packed f16 math with op_sel/op_sel_hi/neg, dot products and fma_mix against numpy (WMMA: test_wmma.py)."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import lanes

rng = np.random.default_rng(4)
def pk(lo, hi): return lo.astype(np.float16).view(np.uint16).astype(np.uint32) | (hi.astype(np.float16).view(np.uint16).astype(np.uint32) << 16)
def unpk(x): return (x & 0xffff).astype(np.uint16).view(np.float16), (x >> 16).astype(np.uint16).view(np.float16)

def test_pk_add_and_fma():
  a0, a1, b0, b1, c0, c1 = (rng.standard_normal(32).astype(np.float16) for _ in range(6))
  out, _ = lanes([v_pk_add_f16(v[5], v[2], v[3])], pk(a0, a1), pk(b0, b1))
  lo, hi = unpk(out)
  np.testing.assert_array_equal(lo, a0 + b0); np.testing.assert_array_equal(hi, a1 + b1)
  out, _ = lanes([v_pk_fma_f16(v[5], v[2], v[3], v[4])], pk(a0, a1), pk(b0, b1), pk(c0, c1))
  lo, hi = unpk(out)
  np.testing.assert_array_equal(lo, (a0.astype(np.float32) * b0 + c0).astype(np.float16))
  np.testing.assert_array_equal(hi, (a1.astype(np.float32) * b1 + c1).astype(np.float16))

def test_pk_op_sel_swaps_and_neg():
  a0, a1, b0, b1 = (rng.standard_normal(32).astype(np.float16) for _ in range(4))
  # lo result = a.hi + b.lo, hi result = a.lo + (-b.hi)
  out, _ = lanes([v_pk_add_f16(v[5], v[2], v[3], opsel=0b01, opsel_hi=0b10, neg_hi=0b10)], pk(a0, a1), pk(b0, b1))
  lo, hi = unpk(out)
  np.testing.assert_array_equal(lo, a1 + b0); np.testing.assert_array_equal(hi, a0 - b1)

def test_pk_int_op_sel():
  # integer packed ops pick halves like the float ones: an inline constant is 32 bits with the value in the low half, so
  # op_sel_hi=0 (what LLVM emits for `v_pk_lshlrev_b16 v1, 1, v1 op_sel_hi:[0,1]`) feeds the low half to both halves
  a = rng.integers(0, 1 << 32, 32, dtype=np.uint64).astype(np.uint32)
  b = rng.integers(0, 1 << 32, 32, dtype=np.uint64).astype(np.uint32)
  lo16, hi16 = (lambda x: x & 0xffff), (lambda x: x >> 16)
  def pk16(lo, hi): return (lo & 0xffff) | (hi & 0xffff) << 16
  out, _ = lanes([v_pk_lshlrev_b16(v[5], 1, v[2], opsel_hi=0b10)], a)
  np.testing.assert_array_equal(out, pk16(lo16(a) << 1, hi16(a) << 1))
  out, _ = lanes([v_pk_lshlrev_b16(v[5], 1, v[2])], a)   # op_sel_hi=1: the constant's high half (0) shifts the high half
  np.testing.assert_array_equal(out, pk16(lo16(a) << 1, hi16(a)))
  out, _ = lanes([v_pk_add_u16(v[5], v[2], v[3], opsel=0b01, opsel_hi=0b10)], a, b)
  np.testing.assert_array_equal(out, pk16(hi16(a) + lo16(b), lo16(a) + hi16(b)))
  out, _ = lanes([v_pk_mul_lo_u16(v[5], v[2], v[3], opsel=0b11, opsel_hi=0b11)], a, b)
  np.testing.assert_array_equal(out, pk16(hi16(a) * hi16(b), hi16(a) * hi16(b)))
  out, _ = lanes([v_pk_sub_i16(v[5], v[2], 5, opsel_hi=0b01)], a)   # neg bits have no effect on integer operands
  np.testing.assert_array_equal(out, pk16(lo16(a) - 5, hi16(a) - 5))
  out, _ = lanes([v_pk_sub_i16(v[5], v[2], v[3], neg=0b11, neg_hi=0b11)], a, b)
  np.testing.assert_array_equal(out, pk16(lo16(a) - lo16(b), hi16(a) - hi16(b)))

def test_pk_int_clamp_saturates_each_half():
  for op, sgn, f in ((v_pk_add_u16, 0, np.add), (v_pk_sub_u16, 0, np.subtract), (v_pk_add_i16, 1, np.add), (v_pk_sub_i16, 1, np.subtract)):
    lo, hi = (-32768, 32767) if sgn else (0, 65535)
    a0, a1, b0, b1 = (rng.integers(lo, hi, 32, endpoint=True) for _ in range(4))
    a0[:2], b0[:2], a1[:2], b1[:2] = [hi, lo], [hi, lo], [lo, hi], [hi, lo]
    def pk16(x, y): return ((x & 0xffff) | (y & 0xffff) << 16).astype(np.uint32)
    out, _ = lanes([op(v[5], v[2], v[3], clmp=1)], pk16(a0, a1), pk16(b0, b1))
    np.testing.assert_array_equal(out, pk16(np.clip(f(a0, b0), lo, hi), np.clip(f(a1, b1), lo, hi)), err_msg=str(op))

def test_dot2_f32_f16_inline_constant():
  a0, a1 = (rng.standard_normal(32).astype(np.float16) for _ in range(2))
  c = rng.standard_normal(32).astype(np.float32)
  # 1.0 is the f16 constant in the low half; op_sel_hi=0 for src1 uses it for both products
  out, _ = lanes([v_dot2_f32_f16(v[5], v[2], 1.0, v[4], opsel_hi=0b01, opsel_hi2=0)], pk(a0, a1), None, c)
  np.testing.assert_array_equal(out.view(np.float32), (c + a0.astype(np.float32)) + a1.astype(np.float32))

def test_dot2_f32_f16():
  a0, a1, b0, b1 = (rng.standard_normal(32).astype(np.float16) for _ in range(4))
  c = rng.standard_normal(32).astype(np.float32)
  out, _ = lanes([v_dot2_f32_f16(v[5], v[2], v[3], v[4])], pk(a0, a1), pk(b0, b1), c)
  want = c + a0.astype(np.float32) * b0 + a1.astype(np.float32) * b1   # exact products, the pseudocode's order of sums
  np.testing.assert_array_equal(out.view(np.float32), want)

def test_fma_mix():
  a, b = rng.standard_normal(32).astype(np.float16), rng.standard_normal(32).astype(np.float16)
  c = rng.standard_normal(32).astype(np.float32)
  # src0 = f16 from the high half (op_sel_hi=1, op_sel=1), src1 = f16 low half, src2 = f32; the f16 product is exact in f32
  out, _ = lanes([v_fma_mix_f32(v[5], v[2], v[3], v[4], opsel=0b001, opsel_hi=0b011, opsel_hi2=0)], pk(b, a), pk(b, b), c)
  np.testing.assert_array_equal(out.view(np.float32), a.astype(np.float32) * b.astype(np.float32) + c)
  # the pseudocode rounds the f32 fma to f16 (`f32_to_f16(fma(...))`), written to the low / high half; the other half is kept
  want = (a.astype(np.float32) * b.astype(np.float32) + c).astype(np.float16).view(np.uint16).astype(np.uint32)
  clamped = np.clip(want.astype(np.uint16).view(np.float16), np.float16(0), np.float16(1)).view(np.uint16).astype(np.uint32)
  for op, sh in ((v_fma_mixlo_f16, 0), (v_fma_mixhi_f16, 16)):
    for clmp, w in ((0, want), (1, clamped)):   # clamp saturates the written f16 half to [0, 1]
      out, _ = lanes([v_mov_b32_e32(v[5], v[2]), op(v[5], v[2], v[3], v[4], opsel=0b001, opsel_hi=0b011, opsel_hi2=0, clmp=clmp)],
                     pk(b, a), pk(b, b), c)
      np.testing.assert_array_equal(out, (pk(b, a) & np.uint32(0xffffffff ^ 0xffff << sh)) | w << sh)
