"""VOP3: three-source ops, abs/neg input modifiers, clamp/omod output modifiers, op_sel on 16-bit ops, compares and
v_cndmask with SGPR masks, 64-bit shifts."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from tinygrad.runtime.autogen import amdgpu_kd as kd
from isa_harness import lanes

rng = np.random.default_rng(2)
# OMOD applies only with MODE.IEEE clear (the GPUs ignore it in IEEE mode): these tests name that mode, denormals kept
NO_IEEE = 3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_32_SHIFT | 3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_16_64_SHIFT

def test_fma_with_neg_abs():
  a, b, c = (rng.standard_normal(32).astype(np.float32) for _ in range(3))
  out, _ = lanes([v_fma_f32(v[5], -v[2], abs(v[3]), v[4])], a, b, c)
  np.testing.assert_allclose(out.view(np.float32), (-a) * np.abs(b) + c, rtol=1e-6, atol=1e-6)

def test_clamp_and_omod():
  a = (rng.standard_normal(32) * 2).astype(np.float32)
  out, _ = lanes([v_add_f32_e64(v[5], v[2], 0.5, clmp=1)], a)
  np.testing.assert_array_equal(out.view(np.float32), np.clip(a + np.float32(0.5), 0, 1))
  out, _ = lanes([v_mul_f32_e64(v[5], v[2], v[3], omod=1)], a, a, rsrc1=NO_IEEE)
  np.testing.assert_array_equal(out.view(np.float32), (a * a) * 2)
  out, _ = lanes([v_add_f32_e64(v[5], v[2], v[3], omod=3)], a, a, rsrc1=NO_IEEE)
  np.testing.assert_array_equal(out.view(np.float32), (a + a) * np.float32(0.5))

def test_cndmask_source_modifiers():
  # V_CNDMASK takes abs/neg on its untyped sources as float sign-bit operations (LLVM folds fneg of a select into them)
  a, b = (rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(2))
  mask = 0x0f0f33c5
  sel = (mask >> np.arange(32)) & 1 == 1
  out, _ = lanes([s_mov_b32(s[10], mask), v_cndmask_b32_e64(v[5], -v[2], abs(v[3]), s[10])], a, b)
  np.testing.assert_array_equal(out, np.where(sel, b & 0x7fffffff, a ^ 0x80000000))
  out, _ = lanes([s_mov_b32(s[10], mask), v_cndmask_b16(v[5], abs(v[2]), -v[3], s[10])], a, b)
  np.testing.assert_array_equal(out & 0xffff, np.where(sel, (b ^ 0x8000) & 0xffff, a & 0x7fff))

def test_omod_f16():
  # omod multiplies the f16 result by 2, 4 or 0.5 (rounded to f16: overflow to inf, denormals round), then clamp applies
  a = np.concatenate([rng.standard_normal(24) * 4, [6e4, -5e4, 3e-5, -3e-5, 1e-7, 0.3, 0.25, -0.75]]).astype(np.float16)
  b = np.concatenate([rng.standard_normal(24), [1e4, -1e4, 1e-7, 0, 0, 0, 0, 0]]).astype(np.float16)
  u16 = lambda x: x.view(np.uint16).astype(np.uint32)
  for omod, m in ((1, 2.0), (2, 4.0), (3, 0.5)):
    for clmp in (0, 1):
      out, _ = lanes([v_add_f16_e64(v[5], v[2], v[3], omod=omod, clmp=clmp)], u16(a), u16(b), rsrc1=NO_IEEE)
      with np.errstate(over="ignore"): want = (a + b) * np.float16(m)
      if clmp: want = np.clip(want, np.float16(0), np.float16(1))
      np.testing.assert_array_equal(out & 0xffff, u16(want), err_msg=f"omod={omod} clamp={clmp}")

def test_integer_clamp_saturates():
  # clamp on integer ops saturates the exact result to the destination type's range (ISA: output modifiers)
  for op, bits, sgn, f in ((v_add_nc_u32_e64, 32, 0, np.add), (v_sub_nc_u32_e64, 32, 0, np.subtract), (v_add_nc_i32, 32, 1, np.add),
                           (v_sub_nc_i32, 32, 1, np.subtract), (v_subrev_nc_u32_e64, 32, 0, lambda a, b: b - a),
                           (v_add_nc_u16, 16, 0, np.add), (v_sub_nc_u16, 16, 0, np.subtract), (v_add_nc_i16, 16, 1, np.add),
                           (v_sub_nc_i16, 16, 1, np.subtract)):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if sgn else (0, (1 << bits) - 1)
    a, b = (rng.integers(lo, hi, 32, endpoint=True) for _ in range(2))
    a[:4], b[:4] = [hi, lo, hi, lo], [hi, lo, lo, hi]
    m = (1 << bits) - 1
    for clmp in (0, 1):
      out, _ = lanes([op(v[5], v[2], v[3], clmp=clmp)], (a & m).astype(np.uint32), (b & m).astype(np.uint32))
      want = f(a, b)
      want = np.clip(want, lo, hi) if clmp else want
      np.testing.assert_array_equal(out & m, (want & m).astype(np.uint32), err_msg=f"{op} clamp={clmp}")

def test_integer_three_source():
  a, b, c = (rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(3))
  out, _ = lanes([v_add3_u32(v[5], v[2], v[3], v[4])], a, b, c)
  np.testing.assert_array_equal(out, a + b + c)
  out, _ = lanes([v_bfe_u32(v[5], v[2], 4, 8)], a)
  np.testing.assert_array_equal(out, (a >> 4) & 0xff)
  out, _ = lanes([v_lshl_or_b32(v[5], v[2], 3, v[4])], a, None, c)
  np.testing.assert_array_equal(out, (a << 3) | c)
  out, _ = lanes([v_mul_lo_u32(v[5], v[2], v[3]), ], a, b)
  np.testing.assert_array_equal(out, a * b)
  out, _ = lanes([v_mul_hi_u32(v[5], v[2], v[3])], a, b)
  np.testing.assert_array_equal(out, ((a.astype(np.uint64) * b) >> 32).astype(np.uint32))

def test_lshlrev_b64():
  a = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
  sh = rng.integers(0, 64, 32).astype(np.uint32)
  out, _ = lanes([v_mov_b32_e32(v[7], v[2]), v_mov_b32_e32(v[8], 0), v_lshlrev_b64(v[5:6], v[3], v[7:8])], a, sh, out_words=2)
  full = (a.astype(np.uint64) | (0 << 32))
  got = out[0::2].astype(np.uint64) | (out[1::2].astype(np.uint64) << 32)
  np.testing.assert_array_equal(got, (full << sh.astype(np.uint64)) & 0xffffffffffffffff)

def test_cmp_e64_to_sgpr_and_cndmask_e64():
  a = rng.standard_normal(32).astype(np.float32)
  out, st = lanes([v_cmp_gt_f32_e64(s[10], v[2], 0), v_cndmask_b32_e64(v[5], 0, 1.0, s[10])], a)
  np.testing.assert_array_equal(out.view(np.float32), np.where(a > 0, 1.0, 0.0).astype(np.float32))
  assert st.state.sgprs[10] == sum(1 << i for i in range(32) if a[i] > 0)

def test_f16_opsel():
  a, b = rng.standard_normal(32).astype(np.float16), rng.standard_normal(32).astype(np.float16)
  packed = (a.view(np.uint16).astype(np.uint32) << 16) | b.view(np.uint16)
  # hi(v2) + lo(v2) written to the high half of v5 (op_sel bits 0, 3); the low half keeps its old value
  out, _ = lanes([v_mov_b32_e32(v[5], 0x1234), VOP3(VOP3Op.V_ADD_F16, vdst=v[5], src0=v[2], src1=v[2], opsel=0b1001)], packed)
  np.testing.assert_array_equal((out >> 16).astype(np.uint16).view(np.float16), a + b)
  np.testing.assert_array_equal(out & 0xffff, np.full(32, 0x1234))
