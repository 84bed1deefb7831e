"""Real tinygrad on DEV=MOCK+CUDA:PTX (the fake libcuda + the PTX engine), numpy as the oracle (checks in nvidia_checks.py)."""
from nvidia_checks import CHECKS, assert_checks, oob_ptx


def test_tinygrad_on_mock_cuda_ptx(run):
  r = run(CHECKS, dev="MOCK+CUDA:PTX")
  assert r.result["arch"] == "sm_70"
  assert_checks(r.result)

def test_kernel_fault_is_a_cuda_error_with_the_report(run):
  r = run("""
    import ctypes
    from tinygrad import Tensor, Device
    from tinygrad.runtime.ops_cuda import CUDAProgram, check, cuda
    from tinygrad.device import TinyELF
    dev = Device["CUDA"]
    buf = dev.allocator.alloc(16)
    ptx = OOB_PTX
    prg = CUDAProgram(dev, TinyELF(name="oob", lib=ptx.encode(), target=None, signature=()))
    try: prg(buf, local_size=(5, 1, 1))
    except RuntimeError as e: msg = str(e)
    from mockgpu.tinygrad.compat import cuda as mcuda
    out({"msg": msg, "sticky": mcuda.cuCtxSynchronize(), "buf": buf.value})
  """.replace("OOB_PTX", repr(oob_ptx(4))), dev="MOCK+CUDA:PTX")
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
