"""VOPD: two ops issued together read their sources before either writes; literal forms."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import lanes, f32

rng = np.random.default_rng(6)

def test_dual_mul_add():
  a, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
  out, _ = lanes([v_dual_mul_f32(VOPDOp.V_DUAL_ADD_F32, vdstx=v[5], vdsty=v[6], srcx0=v[2], vsrcx1=v[3], srcy0=v[2], vsrcy1=v[3])],
                 a, b, out_words=2)
  np.testing.assert_array_equal(out[0::2].view(np.float32), a * b)
  np.testing.assert_array_equal(out[1::2].view(np.float32), a + b)

def test_dual_reads_before_writes_and_fmamk():
  a, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
  # X writes v6 = a*2 + b (FMAMK literal), Y reads the old v6 (=b) and moves it into v5
  out, _ = lanes([v_mov_b32_e32(v[6], v[3]),
                  VOPD_LIT(VOPDOp.V_DUAL_FMAMK_F32, VOPDOp.V_DUAL_MOV_B32, vdstx=v[6], vdsty=v[5], srcx0=v[2], vsrcx1=v[3], srcy0=v[6], vsrcy1=v[0], literal=f32(2.0))],
                 a, b, out_words=2)
  np.testing.assert_array_equal(out[0::2].view(np.float32), b)
  np.testing.assert_allclose(out[1::2].view(np.float32), a * 2 + b, rtol=1e-6, atol=1e-6)

def _bf16_pairs(n=32):
  x = rng.standard_normal(2 * n).astype(np.float32)
  bits = (x.view(np.uint32) >> 16).astype(np.uint32)          # truncate to bf16
  return bits[0::2] | bits[1::2] << 16, (bits[0::2] << 16).view(np.float32), (bits[1::2] << 16).view(np.float32)

import pytest
@pytest.mark.parametrize("backend", ["c", "python"])
def test_dual_dot2acc_f32_bf16(backend):
  (a, a0, a1), (b, b0, b1) = _bf16_pairs(), _bf16_pairs()
  c = rng.standard_normal(32).astype(np.float32)
  # ISA: D = D + bf16 dot product; the products are exact in f32, the sums round in order
  out, _ = lanes([v_mov_b32_e32(v[5], v[4]),
                  v_dual_dot2acc_f32_bf16(VOPDOp.V_DUAL_MOV_B32, vdstx=v[5], vdsty=v[6], srcx0=v[2], vsrcx1=v[3], srcy0=v[4], vsrcy1=v[0])],
                 a, b, c, out_words=2, backend=backend)
  np.testing.assert_array_equal(out[0::2].view(np.float32), (c + a0 * b0) + a1 * b1)
  np.testing.assert_array_equal(out[1::2].view(np.float32), c)

@pytest.mark.parametrize("backend", ["c", "python"])
def test_rdna4_dual_dot2acc_f32_bf16(backend):
  from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
  from mockgpu.emu.api import run_code
  from isa_harness import Bufs
  (a, a0, a1), (b, b0, b1) = _bf16_pairs(), _bf16_pairs()
  c, out = rng.standard_normal(32).astype(np.float32), np.zeros(32, np.float32)
  bf = Bufs(a, b, c, out)
  p = [R4.v_lshlrev_b32_e32(R4.v[1], 2, R4.v[0])] + [R4.global_load_b32(vdst=R4.v[2 + i], vaddr=R4.v[1:2], saddr=R4.s[2 * i:2 * i + 1], ioffset=0) for i in range(3)]
  p += [R4.s_wait_loadcnt(simm16=0),
        R4.v_dual_mov_b32(R4.VOPDOp.V_DUAL_DOT2ACC_F32_BF16, vdstx=R4.v[7], vdsty=R4.v[4], srcx0=R4.v[0], vsrcx1=R4.v[0], srcy0=R4.v[2], vsrcy1=R4.v[3]),
        R4.global_store_b32(vaddr=R4.v[1:2], vsrc=R4.v[4], saddr=R4.s[6:7], ioffset=0), R4.s_endpgm()]
  run_code(b"".join(i.to_bytes() for i in p), bf.mem, arch="gfx1201", user_sgprs=bf.sgprs(), rsrc2=8 << 1, backend=backend)
  np.testing.assert_array_equal(out, (c + a0 * b0) + a1 * b1)
