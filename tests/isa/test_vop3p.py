"""VOP3P: packed f16 math with op_sel/op_sel_hi/neg, dot products, fma_mix, and WMMA against numpy."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from conftest import lanes, run, Bufs

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

def test_dot2_f32_f16():
  a0, a1, b0, b1 = (rng.standard_normal(32).astype(np.float16) for _ in range(4))
  c = rng.standard_normal(32).astype(np.float32)
  out, _ = lanes([v_dot2_f32_f16(v[5], v[2], v[3], v[4])], pk(a0, a1), pk(b0, b1), c)
  want = c + a0.astype(np.float32) * b0 + a1.astype(np.float32) * b1
  np.testing.assert_allclose(out.view(np.float32), want, rtol=1e-5, atol=1e-5)

@pytest.mark.xfail(reason="pcode: V_FMA_MIX_* pseudocode reads its operands from a declared local `S[3]` instead of S0..S2; "
                          "needs an entry in mockgpu.pcode.corrections (reported to the pcode owner)", strict=False)
def test_fma_mix_f32():
  a, b = rng.standard_normal(32).astype(np.float16), rng.standard_normal(32).astype(np.float16)
  c = rng.standard_normal(32).astype(np.float32)
  # src0 = f16 from the high half (op_sel_hi=1, op_sel=1), src1 = f16 low half, src2 = f32
  out, _ = lanes([v_fma_mix_f32(v[5], v[2], v[3], v[4], opsel=0b001, opsel_hi=0b011, opsel_hi2=0)], pk(b, a), pk(b, b), c)
  np.testing.assert_allclose(out.view(np.float32), a.astype(np.float32) * b.astype(np.float32) + c, rtol=1e-6, atol=1e-6)

def test_wmma_f32_16x16x16_f16():
  A, B = rng.standard_normal((16, 16)).astype(np.float16), rng.standard_normal((16, 16)).astype(np.float16)
  C = rng.standard_normal((16, 16)).astype(np.float32)
  # lane layouts of the RDNA3 ISA: A row M=lane%16 in v[8:15], B column N=lane%16 in v[16:23], C/D element (2i+lane/16, lane%16) in v[i]
  a_l = np.array([A[l % 16].view(np.uint32) for l in range(32)]).T.copy()           # [8 regs][32 lanes]
  b_l = np.array([B[:, l % 16].copy().view(np.uint32) for l in range(32)]).T.copy()
  c_l = np.array([[C[2 * i + l // 16, l % 16] for l in range(32)] for i in range(8)], np.float32).view(np.uint32)
  bf = Bufs(a_l.reshape(-1), b_l.reshape(-1), c_l.reshape(-1), np.zeros(256, np.uint32))
  ld = [v_lshlrev_b32_e32(v[1], 2, v[0])]
  for base, reg in ((0, 8), (2, 16), (4, 24)):
    for i in range(8): ld.append(global_load_b32(vdst=v[reg + i], addr=v[1], saddr=s[base:base + 1], offset=i * 128))
  st = [v_wmma_f32_16x16x16_f16(v[32:39], v[8:15], v[16:23], v[24:31])]
  st += [global_store_b32(addr=v[1], data=v[32 + i], saddr=s[6:7], offset=i * 128) for i in range(8)]
  run(ld + [s_waitcnt(simm16=0)] + st, bf)
  D = bf[3].reshape(8, 32).view(np.float32)
  want = A.astype(np.float32) @ B.astype(np.float32) + C
  got = np.array([[D[m // 2, (m % 2) * 16 + n] for n in range(16)] for m in range(16)])
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
