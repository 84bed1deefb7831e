"""Integer clamp (VOP3/VOP3SD/VOP3P clamp bit) on the ops that add: carry ops, mads, ADD3/XAD, integer dots, SADs. The
expected value is the exact result (Python integers, from the ISA formula of each op) saturated to the destination type;
carry-outs are unaffected. Both backends."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import lanes

rng = np.random.default_rng(11)
U32 = (0, (1 << 32) - 1)
BACKENDS = ["c", "python"]

def words(n=32, big=False):   # random u32 words with the extremes in the first lanes
  x = rng.integers(0, 1 << 32, n, dtype=np.uint64)
  x[:4] = [0xffffffff, 0, 0x80000000, 0x7fffffff]
  return x.astype(np.uint32)

def sat(vals, lo, hi): return np.array([min(max(int(v), lo), hi) & ((1 << 64) - 1) for v in vals], np.uint64)
def sx(x, bits): x = int(x) & ((1 << bits) - 1); return x - (1 << bits) if x >> (bits - 1) else x

@pytest.mark.parametrize("backend", BACKENDS)
def test_carry_ops(backend):
  a, b, cin = words(), words(), rng.integers(0, 2, 32)
  cin[:4] = 1
  vcc = sum(int(x) << i for i, x in enumerate(cin))
  A, B = [int(x) for x in a], [int(x) for x in b]
  for op, f in ((v_add_co_u32, lambda x, y, c: x + y), (v_sub_co_u32, lambda x, y, c: x - y), (v_subrev_co_u32, lambda x, y, c: y - x)):
    out, _ = lanes([op(v[5], s[20], v[2], v[3], clmp=1)], a, b, backend=backend)
    np.testing.assert_array_equal(out, sat([f(x, y, 0) for x, y in zip(A, B)], *U32), err_msg=str(op))
  for op, f in ((v_add_co_ci_u32, lambda x, y, c: x + y + c), (v_sub_co_ci_u32, lambda x, y, c: x - y - c), (v_subrev_co_ci_u32, lambda x, y, c: y - x - c)):
    out, _ = lanes([s_mov_b32(s[20], vcc), op(v[5], s[21], v[2], v[3], s[20], clmp=1)], a, b, backend=backend)
    np.testing.assert_array_equal(out, sat([f(x, y, int(c)) for x, y, c in zip(A, B, cin)], *U32), err_msg=str(op))
  # the carry-out is the pseudocode's (unsigned overflow of the exact sum), clamp or not
  out, _ = lanes([s_mov_b32(s[20], vcc), v_add_co_ci_u32(v[5], s[21], v[2], v[3], s[20], clmp=1), v_mov_b32_e32(v[5], s[21])], a, b, backend=backend)
  assert int(out[0]) == sum(1 << i for i in range(32) if A[i] + B[i] + int(cin[i]) >= 1 << 32)

@pytest.mark.parametrize("backend", BACKENDS)
def test_mads_add3_xad(backend):
  a, b, c = words(), words(), words()
  A, B, C = ([int(x) for x in y] for y in (a, b, c))
  cases = [(v_mad_u32_u24, lambda x, y, z: (x & 0xffffff) * (y & 0xffffff) + z, U32),
           (v_mad_i32_i24, lambda x, y, z: sx(x, 24) * sx(y, 24) + sx(z, 32), (-(1 << 31), (1 << 31) - 1)),
           (v_mad_u32_u16, lambda x, y, z: (x & 0xffff) * (y & 0xffff) + z, U32),
           (v_mad_i32_i16, lambda x, y, z: sx(x, 16) * sx(y, 16) + sx(z, 32), (-(1 << 31), (1 << 31) - 1)),
           (v_add3_u32, lambda x, y, z: x + y + z, U32), (v_xad_u32, lambda x, y, z: (x ^ y) + z, U32)]
  for op, f, rg in cases:
    out, _ = lanes([op(v[5], v[2], v[3], v[4], clmp=1)], a, b, c, backend=backend)
    np.testing.assert_array_equal(out, sat([f(x, y, z) for x, y, z in zip(A, B, C)], *rg).astype(np.uint32), err_msg=str(op))
  for op, f, rg in ((v_mad_u16, lambda x, y, z: (x & 0xffff) * (y & 0xffff) + (z & 0xffff), (0, 0xffff)),
                    (v_mad_i16, lambda x, y, z: sx(x, 16) * sx(y, 16) + sx(z, 16), (-(1 << 15), (1 << 15) - 1))):
    out, _ = lanes([v_mov_b32_e32(v[5], 0x12340000), op(v[5], v[2], v[3], v[4], clmp=1)], a, b, c, backend=backend)   # high half kept
    np.testing.assert_array_equal(out, (sat([f(x, y, z) for x, y, z in zip(A, B, C)], *rg) & 0xffff).astype(np.uint32) | 0x12340000, err_msg=str(op))
  for op, f, rg in ((v_mad_u64_u32, lambda x, y, z: x * y + z, (0, (1 << 64) - 1)),
                    (v_mad_i64_i32, lambda x, y, z: sx(x, 32) * sx(y, 32) + sx(z, 64), (-(1 << 63), (1 << 63) - 1))):
    hi = np.full(32, 0xffffffff, np.uint32); hi[1::3] = 0x7fffffff; hi[2::3] = 0x80000000
    out, _ = lanes([v_mov_b32_e32(v[7], v[4]), v_mov_b32_e32(v[8], v[4]), op(v[5:6], s[20], v[2], v[3], v[7:8], clmp=1)],
                   a, b, hi, out_words=2, out_dtype=np.uint64, backend=backend)
    want = sat([f(x, y, int(h) << 32 | int(h)) for x, y, h in zip(A, B, hi)], *rg)
    np.testing.assert_array_equal(out, want, err_msg=str(op))

@pytest.mark.parametrize("backend", BACKENDS)
def test_dots_and_sads(backend):
  a, b, c = words(), words(), words()
  A, B, C = ([int(x) for x in y] for y in (a, b, c))
  el = lambda x, k, bits, sg: sx(x >> (k * bits), bits) if sg else x >> (k * bits) & ((1 << bits) - 1)
  I32 = (-(1 << 31), (1 << 31) - 1)
  dot = lambda bits, n, sa, sb, signed_c: lambda x, y, z: (sx(z, 32) if signed_c else z) + sum(el(x, k, bits, sa) * el(y, k, bits, sb) for k in range(n))
  sad = lambda bits, n, skip0=False: lambda x, y: sum(abs(el(x, k, bits, 0) - el(y, k, bits, 0)) for k in range(n) if not skip0 or el(y, k, bits, 0))
  cases = [(v_dot4_u32_u8(v[5], v[2], v[3], v[4], clmp=1), dot(8, 4, 0, 0, 0), U32),
           (v_dot8_u32_u4(v[5], v[2], v[3], v[4], clmp=1), dot(4, 8, 0, 0, 0), U32),
           (v_dot4_i32_iu8(v[5], v[2], v[3], v[4], clmp=1, neg=0b01), dot(8, 4, 1, 0, 1), I32),   # NEG[0]: S0 signed, S1 unsigned
           (v_dot8_i32_iu4(v[5], v[2], v[3], v[4], clmp=1, neg=0b11), dot(4, 8, 1, 1, 1), I32),
           (v_sad_u8(v[5], v[2], v[3], v[4], clmp=1), lambda x, y, z: sad(8, 4)(x, y) + z, U32),
           (v_sad_u16(v[5], v[2], v[3], v[4], clmp=1), lambda x, y, z: sad(16, 2)(x, y) + z, U32),
           (v_sad_u32(v[5], v[2], v[3], v[4], clmp=1), lambda x, y, z: sad(32, 1)(x, y) + z, U32),
           (v_sad_hi_u8(v[5], v[2], v[3], v[4], clmp=1), lambda x, y, z: (sad(8, 4)(x, y) << 16) + z, U32),
           (v_msad_u8(v[5], v[2], v[3], v[4], clmp=1), lambda x, y, z: sad(8, 4, True)(x, y) + z, U32)]
  bb = b.copy(); bb[4:12] &= 0xff00ff00   # zero bytes in S1 for MSAD
  for inst, f, rg in cases:
    out, _ = lanes([inst], a, bb, c, backend=backend)
    np.testing.assert_array_equal(out, sat([f(x, int(y), z) for x, y, z in zip(A, bb, C)], *rg).astype(np.uint32), err_msg=repr(inst))

@pytest.mark.parametrize("backend", BACKENDS)
def test_pk_mad_clamps_each_half(backend):
  a, b, c = words(), words(), words()
  for op, sg in ((v_pk_mad_u16, 0), (v_pk_mad_i16, 1)):
    rg = (-(1 << 15), (1 << 15) - 1) if sg else (0, 0xffff)
    h = lambda x, k: sx(x >> 16 * k, 16) if sg else int(x) >> 16 * k & 0xffff
    out, _ = lanes([op(v[5], v[2], v[3], v[4], clmp=1)], a, b, c, backend=backend)
    want = [sum((min(max(h(x, k) * h(y, k) + h(z, k), rg[0]), rg[1]) & 0xffff) << 16 * k for k in (0, 1)) for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(out, np.array(want, np.uint32), err_msg=str(op))
