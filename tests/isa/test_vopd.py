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
