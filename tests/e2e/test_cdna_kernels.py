"""tinygrad end to end on the mock CDNA GPUs (wave64): DEV=MOCKKFD+AMD::gfx950 (MI350X) and ::gfx942 (MI300X), kernels compiled by
a libLLVM that knows the chip (gfx950: LLVM >= 20, libllvm22 installed by dev.sh; tinygrad finds it through LLVM_PATH), numpy as
the oracle."""
import pytest
from mockgpu.tinygrad.checks import MIN_LLVM, find_libllvm

CDNA = ["gfx950", "gfx942"]

def libllvm_for(arch:str) -> str:
  """Path of the newest installed libLLVM whose AMDGPU backend knows `arch` (checks.MIN_LLVM)."""
  p = find_libllvm(MIN_LLVM[arch])
  assert p, f"no libLLVM >= {MIN_LLVM[arch]}: {arch} needs it; apt-get install libllvm22 (./dev.sh does)"
  return p

@pytest.mark.parametrize("arch", CDNA)
def test_kernels_on_cdna(run, arch):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, Device, dtypes
    rng, res = np.random.default_rng(1), {"arch": Device["AMD"].arch}
    for name in ["float32", "float16", "int8", "uint8", "int32", "int64"]:
      a, b = (rng.integers(0, 50, 64)).astype(name), (rng.integers(1, 50, 64)).astype(name)
      res[name] = bool(np.array_equal(((Tensor(a) + Tensor(b)) * 2 - Tensor(b)).numpy(), (a + b) * 2 - b))
    x, y = rng.random(64).astype(np.float32), rng.random(64).astype(np.float32)
    res["float_math"] = bool(np.allclose((Tensor(x).exp() + Tensor(y).sqrt() * Tensor(x).sin()).numpy(), np.exp(x) + np.sqrt(y) * np.sin(x), rtol=1e-4))
    res["cast"] = bool(np.array_equal(Tensor(x * 100).cast(dtypes.int32).numpy(), (x * 100).astype(np.int32)))
    h = rng.standard_normal(200).astype(np.float16)   # LLVM fuses h * 3 + 1 into v_pk_fma_f16: one rounding
    res["half_fma"] = bool(np.array_equal((Tensor(h) * 3 + 1).numpy(), (h.astype(np.float64) * 3 + 1).astype(np.float16)))
    i = rng.integers(-1000, 1000, 64).astype(np.int32)
    res["idiv"] = bool(np.array_equal((Tensor(i) // 7).numpy(), i // 7))
    a2, b2 = rng.standard_normal((48, 40)).astype(np.float32), rng.standard_normal((40, 24)).astype(np.float32)
    res["sum"] = bool(np.allclose(Tensor(a2).sum(axis=1).numpy(), a2.sum(axis=1), atol=1e-4))
    res["max"] = bool(np.array_equal(Tensor(a2).max(axis=0).numpy(), a2.max(axis=0)))
    res["argmax"] = bool(np.array_equal(Tensor(a2).argmax(axis=1).numpy(), a2.argmax(axis=1)))
    res["matmul_f32"] = bool(np.allclose((Tensor(a2) @ Tensor(b2)).numpy(), a2 @ b2, atol=1e-4))
    out(res)""", f"MOCKKFD+AMD::{arch}", LLVM_PATH=libllvm_for(arch)).result
  assert r.pop("arch") == arch and all(r.values()), r

@pytest.mark.parametrize("arch", CDNA)
def test_uniform_values_through_sgprs_on_cdna(run, arch):
  # LLVM moves lane-uniform values from VGPRs to SGPRs with V_READFIRSTLANE_B32 / V_READLANE_B32 (bool loads feeding scalar
  # selects, conv2d's unrolled weights); the result must land in the SGPR (gfx950 once wrote it to a VGPR: argmax 0, wild addresses)
  r = run("""
    import numpy as np
    from tinygrad import Tensor
    rng = np.random.default_rng(2)
    res = {"bool_argmax": [Tensor([False, True]).argmax().item(), Tensor([True, False, True]).argmax().item()]}
    x, w = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    ref = np.zeros((1, 3, 3, 3), np.float32)
    for i in range(3):
      for j in range(3): ref += np.einsum("nchw,oc->nohw", x[:, :, i:i + 3, j:j + 3], w[:, :, i, j])
    res["conv2d"] = bool(np.allclose(Tensor(x).conv2d(Tensor(w)).numpy(), ref, atol=1e-4))
    out(res)""", f"MOCKKFD+AMD::{arch}", LLVM_PATH=libllvm_for(arch)).result
  assert r == {"bool_argmax": [1, 0], "conv2d": True}, r

def test_fp8_with_nan_on_gfx950(run):
  # gfx950 converts fp8 natively (V_CVT_F32_FP8, V_CVT_PK_FP8_F32); before packing, LLVM clamps finite values to +-448 and keeps
  # inf/NaN, choosing with v_cmp_nlg_f32 |x|, inf (true for NaN). Sums below are exact in OCP e4m3 (bias 7, 3 mantissa bits).
  r = run("""
    from tinygrad import Tensor, dtypes
    a, b = [1.5, 0.25, float("nan"), -3.0, 448.0], [2.0, 0.5, 1.0, 1.0, 0.0]
    out((Tensor(a, dtype=dtypes.fp8e4m3) + Tensor(b, dtype=dtypes.fp8e4m3)).bitcast(dtypes.uint8).tolist())""",
    "MOCKKFD+AMD::gfx950", LLVM_PATH=libllvm_for("gfx950")).result
  def e4m3(u):
    if u & 0x7f == 0x7f: return float("nan")
    e, m = u >> 3 & 15, u & 7
    return (-1) ** (u >> 7) * ((8 + m) / 8 * 2.0 ** (e - 7) if e else m / 8 * 2.0 ** -6)
  got = [e4m3(u) for u in r]
  assert got[:2] == [3.5, 0.75] and got[3:] == [-2.0, 448.0] and got[2] != got[2], (r, got)
