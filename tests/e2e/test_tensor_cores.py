"""tinygrad's tensor-core matmuls (WMMA on RDNA3 gfx1100 and RDNA4 gfx1201, MFMA on CDNA4 gfx950 and CDNA3 gfx942) on the mock
GPU against numpy. DEBUG=4 prints the rendered kernels, which must contain the matrix intrinsic, so the emulator's matrix ops
are what computed the results."""
import pytest

CODE = """
  import numpy as np
  from tinygrad import Tensor, dtypes
  rng, res = np.random.default_rng(3), {}
  a, b = rng.integers(-4, 5, (64, 48)).astype(np.float16), rng.integers(-4, 5, (48, 32)).astype(np.float16)
  exact = a.astype(np.float32) @ b.astype(np.float32)
  res["half_out"] = bool(np.array_equal((Tensor(a) @ Tensor(b)).numpy(), exact.astype(np.float16)))
  res["float_acc"] = bool(np.array_equal(Tensor(a).matmul(Tensor(b), dtype=dtypes.float).numpy(), exact))
  x, y = rng.standard_normal((32, 64)).astype(np.float16), rng.standard_normal((64, 48)).astype(np.float16)
  got = Tensor(x).matmul(Tensor(y), dtype=dtypes.float).numpy()
  p, q = rng.integers(-4, 5, (32, 32)).astype(np.float32), rng.integers(-4, 5, (32, 32)).astype(np.float32)
  res["bf16"] = bool(np.array_equal((Tensor(p).cast(dtypes.bfloat16) @ Tensor(q).cast(dtypes.bfloat16)).cast(dtypes.float).numpy(), p @ q))
  res["random"] = bool(np.allclose(got, x.astype(np.float32) @ y.astype(np.float32), rtol=1e-5, atol=1e-5))
  out(res)"""

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950", "gfx942"])
def test_half_matmul_with_tensor_cores(run, arch):
  from test_cdna_kernels import CDNA, libllvm_for
  p = run(CODE, f"MOCKKFD+AMD::{arch}", DEBUG="4", **({"LLVM_PATH": libllvm_for(arch)} if arch in CDNA else {}))
  assert all(p.result.values()), p.result
  assert ("mfma" if arch in CDNA else "wmma") in p.stdout.lower()   # the rendered kernel uses the matrix intrinsic
