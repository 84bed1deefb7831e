"""Real tinygrad on DEV=MOCK+CUDA:PTX (the fake libcuda + the PTX engine), numpy as the oracle. One subprocess runs many
small kernels (tinygrad's start-up dominates); each check reports (name, ok, detail) and the test asserts all of them."""
import pytest

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
out({"res": res, "arch": Device["CUDA"].arch, "shared": any(".shared" in mod.src and "bar.sync" in mod.src for mod in engine._loaded.values())})
"""

def test_tinygrad_on_mock_cuda_ptx(run):
  r = run(CHECKS, dev="MOCK+CUDA:PTX")
  assert r.result["arch"] == "sm_70"
  failed = [(n, d) for n, ok, d in r.result["res"] if not ok]
  assert not failed, failed
  assert len(r.result["res"]) >= 35
  assert r.result["shared"], "no kernel used shared memory and bar.sync"

def test_kernel_fault_is_a_cuda_error_with_the_report(run):
  r = run("""
    import ctypes
    from tinygrad import Tensor, Device
    from tinygrad.runtime.ops_cuda import CUDAProgram, check, cuda
    from tinygrad.device import TinyELF
    dev = Device["CUDA"]
    buf = dev.allocator.alloc(16)
    ptx = '''.version 7.5
    .target sm_70
    .address_size 64
    .visible .entry oob (.param .u64 data0)
    {
      .reg .u64 %a<3>; .reg .u32 %t; .reg .f32 %f;
      ld.param.u64 %a0, [data0+0];
      mov.u32 %t, %tid.x;
      cvt.u64.u32 %a1, %t;
      mad.lo.s64 %a2, %a1, 4, %a0;
      mov.b32 %f, 0f3F800000;
      st.global.f32 [%a2+0], %f;
      ret;
    }'''
    prg = CUDAProgram(dev, TinyELF(name="oob", lib=ptx.encode(), target=None, signature=()))
    try: prg(buf, local_size=(5, 1, 1))
    except RuntimeError as e: msg = str(e)
    from mockgpu.tinygrad.compat import cuda as mcuda
    out({"msg": msg, "sticky": mcuda.cuCtxSynchronize(), "buf": buf.value})
  """, dev="MOCK+CUDA:PTX")
  msg = r.result["msg"]
  assert msg.startswith("CUDA Error 700, mockgpu: an illegal memory access was encountered: write fault in global")
  assert f"addr={r.result['buf'] + 16:#x} size=4" in msg and "workgroup=(0, 0, 0)" in msg and "thread (4, 0, 0)" in msg
  assert "st.global.f32 [%a2+0], %f;" in msg and "offset=+0x10" in msg
  assert r.result["sticky"] == 700

def test_driver_shim_and_error_codes(run):
  r = run("""
    import ctypes
    from test.mockgpu.cuda import cuda
    from tinygrad.runtime.autogen import cuda as real
    p, m, s = cuda.CUdeviceptr(), cuda.CUmodule(), ctypes.POINTER(ctypes.c_char)()
    codes = {"before_init": cuda.cuMemAlloc_v2(ctypes.byref(p), 16), "init": cuda.cuInit(0), "zero": cuda.cuMemAlloc_v2(ctypes.byref(p), 0),
             "free_unknown": cuda.cuMemFree_v2(cuda.CUdeviceptr(12345)), "alloc": cuda.cuMemAlloc_v2(ctypes.byref(p), 16),
             "dtoh_oob": cuda.cuMemcpyDtoH_v2(ctypes.create_string_buffer(32), p, 32), "load": cuda.cuModuleLoadData(ctypes.byref(m), b"not ptx")}
    cuda.cuGetErrorString(codes["load"], ctypes.byref(s))
    out({"codes": codes, "text": ctypes.string_at(s).decode(), "types": cuda.CUdeviceptr is real.CUdeviceptr, "pkg": hasattr(cuda, "__path__")})
  """, dev="MOCK+CUDA:PTX")
  assert r.result["codes"] == {"before_init": 3, "init": 0, "zero": 1, "free_unknown": 1, "alloc": 0, "dtoh_oob": 1, "load": 218}
  assert r.result["text"].startswith("mockgpu: a PTX JIT compilation failed: no '.entry' kernel in the PTX module")
  assert r.result["types"] and not r.result["pkg"]
