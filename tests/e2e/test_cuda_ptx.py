"""Real tinygrad on DEV=MOCK+CUDA:PTX (the fake libcuda + the PTX engine), numpy as the oracle (checks in nvidia_checks.py)."""
from nvidia_checks import CHECKS, assert_checks, oob_ptx


def test_tinygrad_on_mock_cuda_ptx(run):
  r = run(CHECKS, dev="MOCK+CUDA:PTX")
  assert r.result["arch"] == "sm_70"
  assert_checks(r.result)

# A kernel that reads a 3-float (12-byte) buffer as one 16-byte vector, as tinygrad's PTX does when it upcasts loads: on a
# GPU the read stays inside cuMemAlloc's 256-byte granule, so it must not fault; the first three lanes are the buffer.
V4_PTX = """.version 7.5
.target sm_70
.address_size 64
.visible .entry v4 (.param .u64 data0, .param .u64 data1)
{
  .reg .u64 %a<2>; .reg .f32 %f<4>;
  ld.param.u64 %a0, [data0+0];
  ld.param.u64 %a1, [data1+0];
  ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%a1+0];
  add.f32 %f0, %f0, %f1;
  add.f32 %f0, %f0, %f2;
  st.global.f32 [%a0+0], %f0;
  ret;
}"""

def test_vector_read_inside_the_allocation_granule_does_not_fault(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, Device, dtypes
    from tinygrad.runtime.ops_cuda import CUDAProgram
    from tinygrad.device import TinyELF
    dev, src, res = Device["CUDA"], np.array([1.5, -2.25, 40.0], np.float32), np.zeros(1, np.float32)
    x, o = dev.allocator.alloc(src.nbytes), dev.allocator.alloc(4)
    dev.allocator._copyin(x, memoryview(bytearray(src.tobytes())))
    prg = CUDAProgram(dev, TinyELF(name="v4", lib=PTX.encode(), target=None, signature=()))
    prg(o, x)
    dev.allocator._copyout(memoryview(res).cast("B"), o)
    out({"nbytes": src.nbytes, "sum": float(res[0]), "after": (Tensor(src) * 2).tolist()})
  """.replace("PTX", repr(V4_PTX)), dev="MOCK+CUDA:PTX")
  assert r.result["nbytes"] == 12
  assert r.result["sum"] == float(1.5 + -2.25 + 40.0)             # exact in f32
  assert r.result["after"] == [3.0, -4.5, 80.0]                    # the context is still usable

def test_kernel_fault_is_one_cuda_error_with_the_report(run):
  # thread t writes at buf + 64*t: thread 4 lands at +256, the first byte past the 16-byte allocation's 256-byte granule
  r = run("""
    from tinygrad import Tensor, Device
    from tinygrad.runtime.ops_cuda import CUDAProgram
    from tinygrad.device import TinyELF
    dev = Device["CUDA"]
    buf = dev.allocator.alloc(16)
    prg = CUDAProgram(dev, TinyELF(name="oob", lib=OOB_PTX.encode(), target=None, signature=()))
    try: prg(buf, local_size=(5, 1, 1))
    except RuntimeError as e: msg = str(e)
    later = []
    for _ in range(10):                          # tinygrad keeps calling the driver; each call fails with a short reference
      try: (Tensor([1.0, 2.0]) + 1).realize()
      except Exception as e: later.append([str(e), str(e.__cause__ or e.__context__)])
    from mockgpu.tinygrad.compat import cuda as mcuda
    out({"msg": msg, "later": later, "sticky": mcuda.cuCtxSynchronize(), "buf": buf.value})
  """.replace("OOB_PTX", repr(oob_ptx(64))), dev="MOCK+CUDA:PTX")
  msg, buf = r.result["msg"], r.result["buf"]
  assert msg.startswith(f"CUDA Error 700, mockgpu: an illegal memory access was encountered: fault #1 (CUDA error 700: write of 4 bytes at "
                        f"{buf + 256:#x} in global, kernel 'oob' PTX line 12): write fault in global: addr={buf + 256:#x} size=4")
  assert "workgroup=(0, 0, 0)" in msg and "thread (4, 0, 0)" in msg and "st.global.f32 [%a2+0], %f;" in msg and "offset=+0x100" in msg
  assert msg.count("fault in global") == 1
  assert r.result["sticky"] == 700 and len(r.result["later"]) == 10
  for top, cuda_err in r.result["later"]:   # tinygrad's MemoryError("Allocation of ... failed") carries the CUDA error as its cause
    assert top.startswith("Allocation of") and cuda_err.startswith("CUDA Error 700, mockgpu: an illegal memory access was encountered: "), top
    assert "is unusable since fault #1 (CUDA error 700: write of 4 bytes" in cuda_err and cuda_err.count("fault #1") == 1, cuda_err
    assert "fault in global" not in cuda_err and len(cuda_err) < 600, cuda_err

def test_fault_reference_stays_bounded_over_many_faults(run):
  # the shim directly: fault, use the dead context a few times, destroy it, start again; messages never embed earlier ones
  r = run("""
    import ctypes
    from test.mockgpu.cuda import cuda
    from tinygrad.runtime.ops_cuda import encode_args
    def text(code):
      s = ctypes.POINTER(ctypes.c_char)(); cuda.cuGetErrorString(code, ctypes.byref(s)); return ctypes.string_at(s).decode()
    assert cuda.cuInit(0) == 0
    rounds = []
    for n in range(6):
      ctx, p, m, f = cuda.CUcontext(), cuda.CUdeviceptr(), cuda.CUmodule(), cuda.CUfunction()
      rc = [cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0), cuda.cuMemAlloc_v2(ctypes.byref(p), 16), cuda.cuModuleLoadData(ctypes.byref(m), OOB_PTX.encode()),
            cuda.cuModuleGetFunction(ctypes.byref(f), m, b"oob")]
      args, _ = encode_args([p], (), ())
      launch = cuda.cuLaunchKernel(f, 1, 1, 1, 5, 1, 1, 0, None, None, args)
      first, later = text(launch), []
      for _ in range(8):
        later.append((cuda.cuCtxSynchronize(), text(700)))
        later.append((cuda.cuMemAlloc_v2(ctypes.byref(cuda.CUdeviceptr()), 64), text(700)))
        later.append((cuda.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, None, args), text(700)))
      rounds.append({"setup": rc, "launch": launch, "first": first, "later": later, "destroy": cuda.cuCtxDestroy_v2(ctx),
                     "dead": cuda.cuCtxSetCurrent(ctx)})
    ctx, p = cuda.CUcontext(), cuda.CUdeviceptr()
    out({"rounds": rounds, "fresh": [cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0), cuda.cuMemAlloc_v2(ctypes.byref(p), 16)]})
  """.replace("OOB_PTX", repr(oob_ptx(64))), dev="MOCK+CUDA:PTX")
  rounds = r.result["rounds"]
  for n, rd in enumerate(rounds, 1):
    assert rd["setup"] == [0, 0, 0, 0] and rd["launch"] == 700 and rd["destroy"] == 0 and rd["dead"] == 201
    assert rd["first"].startswith(f"mockgpu: an illegal memory access was encountered: fault #{n} (CUDA error 700: write of 4 bytes")
    assert rd["first"].count("fault in global") == 1
    for code, t in rd["later"]:
      assert code == 700 and f"unusable since fault #{n} (" in t and "fault in global" not in t and t.count("fault #") == 1, t
  lens = [max(len(t) for _, t in rd["later"]) for rd in rounds]
  assert max(lens) < 400 and max(lens) - min(lens) <= 2, lens          # only the fault number's digits may differ
  assert r.result["fresh"] == [0, 0]

def test_driver_shim_and_error_codes(run):
  r = run("""
    import ctypes
    from test.mockgpu.cuda import cuda
    from tinygrad.runtime.autogen import cuda as real
    p, m, s, ctx = cuda.CUdeviceptr(), cuda.CUmodule(), ctypes.POINTER(ctypes.c_char)(), cuda.CUcontext()
    codes = {"before_init": cuda.cuMemAlloc_v2(ctypes.byref(p), 16), "init": cuda.cuInit(0), "no_ctx": cuda.cuMemAlloc_v2(ctypes.byref(p), 16),
             "ctx": cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0), "zero": cuda.cuMemAlloc_v2(ctypes.byref(p), 0),
             "free_unknown": cuda.cuMemFree_v2(cuda.CUdeviceptr(12345)), "wraps": cuda.cuMemAlloc_v2(ctypes.byref(p), 2**64 - 1),
             "too_big": cuda.cuMemAlloc_v2(ctypes.byref(p), 1 << 47), "alloc": cuda.cuMemAlloc_v2(ctypes.byref(p), 16),
             "dtoh_oob": cuda.cuMemcpyDtoH_v2(ctypes.create_string_buffer(32), p, 32), "dtoh_17": cuda.cuMemcpyDtoH_v2(ctypes.create_string_buffer(32), p, 17),
             "dtoh_16": cuda.cuMemcpyDtoH_v2(ctypes.create_string_buffer(32), p, 16), "load": cuda.cuModuleLoadData(ctypes.byref(m), b"not ptx")}
    cuda.cuGetErrorString(codes["load"], ctypes.byref(s))
    aligned = [cuda.cuMemAlloc_v2(ctypes.byref(q:=cuda.CUdeviceptr()), n) == 0 and q.value % 256 == 0 for n in (1, 12, 255, 257, 4097)]
    out({"codes": codes, "text": ctypes.string_at(s).decode(), "types": cuda.CUdeviceptr is real.CUdeviceptr, "pkg": hasattr(cuda, "__path__"),
         "aligned": aligned})
  """, dev="MOCK+CUDA:PTX")
  # copies must stay inside the requested 16 bytes (the rest of the 256-byte granule is not the caller's): 17 is invalid
  # a size whose mapping would wrap past 2^64, or more than the host's address space: OUT_OF_MEMORY, and the context goes on
  assert r.result["codes"] == {"before_init": 3, "init": 0, "no_ctx": 201, "ctx": 0, "zero": 1, "free_unknown": 1, "wraps": 2, "too_big": 2,
                               "alloc": 0, "dtoh_oob": 1, "dtoh_17": 1, "dtoh_16": 0, "load": 218}
  assert r.result["text"].startswith("mockgpu: a PTX JIT compilation failed: no '.entry' kernel in the PTX module")
  assert r.result["types"] and not r.result["pkg"]
  assert r.result["aligned"] == [True] * 5
