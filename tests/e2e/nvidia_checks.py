"""Checks shared by the NVIDIA end-to-end tests (test_cuda_ptx.py, test_nv.py): one tinygrad program runs many small kernels
(tinygrad's start-up dominates) and reports (name, ok, detail) per check; numpy (or exact rationals) is the oracle."""

def oob_ptx(stride: int) -> str:
  """A one-line kernel: thread t stores 1.0f at data0 + t * stride (out of bounds for a large enough t or stride)."""
  return f""".version 7.5
.target sm_70
.address_size 64
.visible .entry oob (.param .u64 data0)
{{
  .reg .u64 %a<3>; .reg .u32 %t; .reg .f32 %f;
  ld.param.u64 %a0, [data0+0];
  mov.u32 %t, %tid.x;
  cvt.u64.u32 %a1, %t;
  mad.lo.s64 %a2, %a1, {stride}, %a0;
  mov.b32 %f, 0f3F800000;
  st.global.f32 [%a2+0], %f;
  ret;
}}"""

CHECKS = r"""
import numpy as np
from tinygrad import Tensor, dtypes, Device
from mockgpu.mock.ptx import engine
rng = np.random.default_rng(0)
res = []
def check(name, got, want, exact=True, rtol=0, atol=0):
  got, want = np.asarray(got), np.asarray(want)
  ok = got.shape == want.shape and (np.array_equal(got, want) if exact else np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
  res.append((name, bool(ok), "" if ok else f"got {got.ravel()[:8]} want {want.ravel()[:8]}"))
a32 = rng.integers(-1000, 1000, 37).astype(np.int32); b32 = rng.integers(1, 50, 37).astype(np.int32) * rng.choice([-1, 1], 37).astype(np.int32)
check("int32 add", (Tensor(a32) + Tensor(b32)).numpy(), a32 + b32)
check("int32 mul", (Tensor(a32) * Tensor(b32)).numpy(), a32 * b32)
check("int32 floordiv", (Tensor(a32) // Tensor(b32)).numpy(), a32 // b32)
check("int32 mod", (Tensor(a32) % Tensor(b32)).numpy(), a32 % b32)
check("int32 div by const", (Tensor(a32) // 7).numpy(), a32 // 7)
check("int32 shifts", ((Tensor(a32) << 3) ^ (Tensor(a32) >> 2)).numpy(), (a32 << 3) ^ (a32 >> 2))
for dt, npdt in ((dtypes.int8, np.int8), (dtypes.uint8, np.uint8), (dtypes.int16, np.int16), (dtypes.uint16, np.uint16),
                 (dtypes.uint32, np.uint32), (dtypes.int64, np.int64), (dtypes.uint64, np.uint64)):
  x = rng.integers(0, 100, 19).astype(npdt); y = rng.integers(0, 100, 19).astype(npdt)
  check(f"{dt.name} add mul wrap", (Tensor(x, dtype=dt) * Tensor(y, dtype=dt) + Tensor(x, dtype=dt)).numpy(), x * y + x)
  check(f"{dt.name} max", Tensor(x, dtype=dt).max().numpy(), x.max())
f = rng.standard_normal(41).astype(np.float32); g = rng.standard_normal(41).astype(np.float32)
# tinygrad fuses a*b+c into fma.rn.f32 (one rounding): the f64 product of two f32 is exact, so f64 gives the fused result
check("f32 fma", (Tensor(f) * Tensor(g) + 1.5).numpy(), (f.astype(np.float64) * g + 1.5).astype(np.float32))
check("f32 div", (Tensor(f) / Tensor(g)).numpy(), f / g, exact=False, rtol=2e-7)
check("f32 where cmp", Tensor(f).maximum(Tensor(g)).numpy(), np.maximum(f, g))
check("f32 exp", Tensor(f).exp().numpy(), np.exp(f), exact=False, rtol=1e-6)
check("f32 log", Tensor(abs(f)).log().numpy(), np.log(abs(f)), exact=False, rtol=1e-6, atol=1e-6)
check("f32 sin", Tensor(f).sin().numpy(), np.sin(f), exact=False, rtol=1e-5, atol=1e-6)
check("f32 sqrt", Tensor(abs(f)).sqrt().numpy(), np.sqrt(abs(f)))
check("f32 trunc", Tensor(f * 10).trunc().numpy(), np.trunc(f * np.float32(10)))
check("f32 -> int32 cast", Tensor(f * 100).cast(dtypes.int32).numpy(), (f * np.float32(100)).astype(np.int32))
check("int32 -> f32 cast", Tensor(a32).cast(dtypes.float32).numpy(), a32.astype(np.float32))
check("f32 -> bool -> int", Tensor(f).cast(dtypes.bool).cast(dtypes.int32).numpy(), (f != 0).astype(np.int32))
h = rng.standard_normal(23).astype(np.float16); k = rng.standard_normal(23).astype(np.float16)
# half MULACC is computed as fma.rn.f32 then cvt.rn.f16 (PTX has no f16 fma below sm_53 in tinygrad's renderer)
check("f16 fma via f32", (Tensor(h) * Tensor(k) + Tensor(h)).numpy(), (h.astype(np.float64) * k + h).astype(np.float32).astype(np.float16))
check("f16 add", (Tensor(h) + Tensor(k)).numpy(), h + k)
check("f16 mul", (Tensor(h) * Tensor(k)).numpy(), h * k)
check("f16 -> f32", Tensor(h).cast(dtypes.float32).numpy(), h.astype(np.float32))
check("f32 -> f16", Tensor(f).cast(dtypes.float16).numpy(), f.astype(np.float16))
d = rng.standard_normal(13)
from fractions import Fraction
check("f64 fma", (Tensor(d) * Tensor(d) + 0.25).numpy(), np.array([float(Fraction(v) * Fraction(v) + Fraction(1, 4)) for v in d]))
m = rng.standard_normal((4, 300)).astype(np.float32)
check("sum rows", Tensor(m).sum(1).numpy(), m.sum(1), exact=False, rtol=1e-5, atol=1e-5)
check("max cols", Tensor(m).max(0).numpy(), m.max(0))
big = rng.standard_normal(20000).astype(np.float32)
check("big sum", Tensor(big).sum().numpy(), big.sum(dtype=np.float64), exact=False, rtol=1e-5, atol=1e-3)
ai = rng.integers(-3, 4, 4096).astype(np.int32)
check("int sum (grouped)", Tensor(ai).sum().numpy(), ai.sum())
x = rng.standard_normal((33, 17)).astype(np.float32); y = rng.standard_normal((17, 29)).astype(np.float32)
check("matmul", (Tensor(x) @ Tensor(y)).numpy(), x @ y, exact=False, rtol=1e-5, atol=1e-5)
check("arange cumsum", Tensor.arange(40).cumsum().numpy(), np.arange(40).cumsum())
out({"res": res, "arch": Device[Device.DEFAULT].arch, "shared": any(".shared" in mod.src and "bar.sync" in mod.src for mod in engine._loaded.values())})
"""

def assert_checks(result:dict):
  """All checks passed, enough of them ran, and some kernel used shared memory with bar.sync."""
  failed = [(n, d) for n, ok, d in result["res"] if not ok]
  assert not failed, failed
  assert len(result["res"]) >= 35
  assert result["shared"], "no kernel used shared memory and bar.sync"
