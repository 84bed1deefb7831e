"""`test.mockgpu.cuda.cuda`: the CUDA driver API tinygrad's ops_cuda.py calls under `DEV=MOCK+CUDA:PTX` (contract section 5).

Types and constants are tinygrad's own (`tinygrad.runtime.autogen.cuda`, served through `__getattr__`); the functions below
model one device: memory is host memory whose address is the device pointer (every allocation is registered in a
`MemoryMap`, so kernels and copies are checked against it), modules are PTX text run by `mockgpu.mock.ptx`, and every call
is synchronous (the stream is always idle). Bad calls return the CUDA error code a driver gives, and `cuGetErrorString`
explains it (with the fault report of a failed launch); a kernel fault is sticky, as on a real context."""
from __future__ import annotations
import ctypes, itertools, time
from tinygrad.runtime.autogen import libc
from mockgpu.emu.errors import EmuError
from mockgpu.emu.memory import MemoryMap
from mockgpu.mock.errors import PTXError
from mockgpu.mock.gpu import host_mmap
from mockgpu.mock.ptx import engine

__all__ = ["cuInit", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceComputeCapability", "cuDeviceCanAccessPeer", "cuCtxCreate_v2",
           "cuCtxSetCurrent", "cuCtxSynchronize", "cuCtxEnablePeerAccess", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemHostAlloc", "cuMemFreeHost",
           "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoDAsync_v2", "cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload",
           "cuFuncSetAttribute", "cuLaunchKernel", "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime",
           "cuEventDestroy_v2", "cuStreamWaitEvent", "cuGetErrorString", "memory", "last_error"]

def __getattr__(name:str):
  if name.startswith("__"): raise AttributeError(name)
  from tinygrad.runtime.autogen import cuda as real
  return getattr(real, name)

SUCCESS, INVALID_VALUE, NOT_INITIALIZED, INVALID_DEVICE, INVALID_IMAGE, INVALID_CONTEXT = 0, 1, 3, 101, 200, 201
INVALID_PTX, INVALID_HANDLE, NOT_FOUND, ILLEGAL_ADDRESS, LAUNCH_OUT_OF_RESOURCES, LAUNCH_TIMEOUT, LAUNCH_FAILED, NOT_SUPPORTED = 218, 400, 500, 700, 701, 702, 719, 801
_TEXT = {0: "no error", 1: "invalid argument", 3: "initialization error", 101: "invalid device ordinal", 200: "device kernel image is invalid",
         201: "invalid device context", 218: "a PTX JIT compilation failed", 400: "invalid resource handle", 500: "named symbol not found", 700: "an illegal memory access was encountered",
         701: "too many resources requested for launch", 702: "the launch timed out and was terminated", 719: "unspecified launch failure",
         801: "operation not supported"}

memory = MemoryMap()                     # device allocations (the ranges kernels and copies may touch)
_bufs: dict[int, int] = {}               # device and host allocations: address -> size (anonymous mappings)
_host: set[int] = set()
_modules: dict[int, engine.Module] = {}
_funcs: dict[int, tuple[engine.Module, str]] = {}
_events: dict[int, float] = {}
_ids = itertools.count(1)
_state = {"init": False, "sticky": 0}
last_error = {"code": 0, "text": ""}     # the detail of the last failing call (cuGetErrorString returns it)
_strings: dict[int, ctypes.Array] = {}   # error strings stay alive: tinygrad reads them after the call returns

def _fail(code:int, detail:str) -> int:
  last_error.update(code=code, text=f"{_TEXT.get(code, 'error')}: {detail}")
  return code

def _val(x) -> int:
  """The integer behind a handle, device pointer or plain int tinygrad passes."""
  if x is None: return 0
  if isinstance(x, int): return x
  if isinstance(x, ctypes._Pointer): return ctypes.cast(x, ctypes.c_void_p).value or 0
  return x.value or 0

def _out(ref, v) -> None:
  obj = ref._obj
  if isinstance(obj, (ctypes.c_float, ctypes.c_double)): obj.value = v
  else: ctypes.memmove(ctypes.addressof(obj), ctypes.byref(ctypes.c_uint64(v)), ctypes.sizeof(obj))

def _ready(call:str) -> int:
  if not _state["init"]: return _fail(NOT_INITIALIZED, f"{call} before cuInit")
  if _state["sticky"]: return _fail(_state["sticky"], f"{call}: the context is unusable after an earlier kernel fault ({last_error['text']})")
  return SUCCESS

def cuInit(flags) -> int:
  if flags != 0: return _fail(INVALID_VALUE, f"cuInit flags={flags}, must be 0")
  _state["init"] = True
  return SUCCESS
def cuDeviceGetCount(count) -> int: return _ready("cuDeviceGetCount") or _out(count, 1) or SUCCESS
def cuDeviceGet(dev, ordinal) -> int:
  if ordinal != 0: return _fail(INVALID_DEVICE, f"cuDeviceGet ordinal={ordinal}; the mock has one device (0)")
  return _ready("cuDeviceGet") or _out(dev, 0) or SUCCESS
def cuDeviceComputeCapability(major, minor, dev) -> int:
  if _val(dev) != 0: return _fail(INVALID_DEVICE, f"cuDeviceComputeCapability dev={_val(dev)}")
  sm = int(engine.ARCH[3:])
  return _ready("cuDeviceComputeCapability") or _out(major, sm // 10) or _out(minor, sm % 10) or SUCCESS
def cuDeviceCanAccessPeer(can, dev, peer) -> int: return _ready("cuDeviceCanAccessPeer") or _out(can, 0) or SUCCESS
def cuCtxCreate_v2(ctx, flags, dev) -> int:
  if _val(dev) != 0: return _fail(INVALID_DEVICE, f"cuCtxCreate_v2 dev={_val(dev)}")
  return _ready("cuCtxCreate_v2") or _out(ctx, 0xC7C7) or SUCCESS
def _ctx(ctx, call:str) -> int:
  return _ready(call) or (SUCCESS if _val(ctx) == 0xC7C7 else _fail(INVALID_CONTEXT, f"{call}: context {_val(ctx):#x} was not created by cuCtxCreate_v2"))
def cuCtxSetCurrent(ctx) -> int: return _ctx(ctx, "cuCtxSetCurrent")
def cuCtxSynchronize() -> int: return _ready("cuCtxSynchronize")
def cuCtxEnablePeerAccess(ctx, flags) -> int: return _fail(NOT_SUPPORTED, "cuCtxEnablePeerAccess: the mock has a single device")

def _alloc(out, size:int, call:str, host:bool) -> int:
  if (rc:=_ready(call)): return rc
  if not isinstance(size, int) or size <= 0: return _fail(INVALID_VALUE, f"{call} bytesize={size}, must be > 0")
  addr = host_mmap(0, size)   # lazily zeroed pages, like fresh device memory of a real allocator
  _bufs[addr] = size
  if host: _host.add(addr)
  else: memory.add(addr, size, f"cuMemAlloc#{len(_bufs)} ({size} bytes)")
  _out(out, addr)
  return SUCCESS
def cuMemAlloc_v2(dptr, size) -> int: return _alloc(dptr, size, "cuMemAlloc_v2", host=False)
def cuMemHostAlloc(pp, size, flags) -> int: return _alloc(pp, size, "cuMemHostAlloc", host=True)
def _free(p, call:str, host:bool) -> int:
  a = _val(p)
  if a not in _bufs or (a in _host) != host: return _fail(INVALID_VALUE, f"{call}({a:#x}): not an allocation of {'cuMemHostAlloc' if host else 'cuMemAlloc_v2'}")
  libc.munmap(a, _bufs.pop(a))
  if host: _host.discard(a)
  else: memory.remove(a)
  return SUCCESS
def cuMemFree_v2(dptr) -> int: return _free(dptr, "cuMemFree_v2", host=False)
def cuMemFreeHost(p) -> int: return _free(p, "cuMemFreeHost", host=True)

def _dev(a:int, n:int, call:str, what:str) -> int:
  if memory.find(a, n) is None:
    near = memory.nearest(a)
    return _fail(INVALID_VALUE, f"{call}: {what} [{a:#x}, {a+n:#x}) is not inside one device allocation"
                 + (f" (nearest {near.name} at {near.start:#x})" if near else ""))
  return SUCCESS
def _copy(dst:int, src:int, n:int, call:str, checks) -> int:
  if (rc:=_ready(call)): return rc
  if not isinstance(n, int) or n < 0: return _fail(INVALID_VALUE, f"{call} ByteCount={n}")
  if n and any(rc:=_dev(a, n, call, w) for a, w in checks): return rc
  ctypes.memmove(dst, src, n)
  return SUCCESS
def cuMemcpyHtoDAsync_v2(dst, src, n, stream) -> int: return _copy(_val(dst), _val(src), n, "cuMemcpyHtoDAsync_v2", [(_val(dst), "destination")])
def cuMemcpyDtoH_v2(dst, src, n) -> int: return _copy(_val(dst), _val(src), n, "cuMemcpyDtoH_v2", [(_val(src), "source")])
def cuMemcpyDtoDAsync_v2(dst, src, n, stream) -> int:
  return _copy(_val(dst), _val(src), n, "cuMemcpyDtoDAsync_v2", [(_val(dst), "destination"), (_val(src), "source")])

def cuModuleLoadData(mod, image) -> int:
  if (rc:=_ready("cuModuleLoadData")): return rc
  src = image if isinstance(image, (bytes, str)) else ctypes.string_at(_val(image))
  try: m = engine.load(src)
  except PTXError as e: return _fail(INVALID_PTX, str(e))
  except EmuError as e: return _fail(INVALID_IMAGE, str(e))
  _modules[h:=next(_ids)] = m
  _out(mod, h)
  return SUCCESS
def cuModuleUnload(mod) -> int:
  if _modules.pop(_val(mod), None) is None: return _fail(INVALID_HANDLE, f"cuModuleUnload({_val(mod):#x}): not a loaded module")
  return SUCCESS
def cuModuleGetFunction(fn, mod, name) -> int:
  if (rc:=_ready("cuModuleGetFunction")): return rc
  if (m:=_modules.get(_val(mod))) is None: return _fail(INVALID_HANDLE, f"cuModuleGetFunction: module {_val(mod):#x} is not loaded")
  n = name.decode() if isinstance(name, bytes) else str(name)
  if n not in m.kernels: return _fail(NOT_FOUND, f"cuModuleGetFunction: no kernel {n!r} in the module (it has {', '.join(m.kernels)})")
  _funcs[h:=next(_ids)] = (m, n)
  _out(fn, h)
  return SUCCESS
def cuFuncSetAttribute(fn, attrib, value) -> int:
  if _val(fn) not in _funcs: return _fail(INVALID_HANDLE, f"cuFuncSetAttribute: function {_val(fn):#x} is unknown")
  return _ready("cuFuncSetAttribute")

def _params(extra) -> list[int]:
  """In MOCK mode tinygrad passes its argument struct itself as `extra` (tinygrad's `init_c_struct_t`: `_real_fields_` are
  f0.. buffers, then v0.. scalars, in .param order)."""
  return [_val(getattr(extra, f[0])) for f in extra._real_fields_]

def cuLaunchKernel(fn, gx, gy, gz, lx, ly, lz, smem, stream, params, extra) -> int:
  if (rc:=_ready("cuLaunchKernel")): return rc
  if (f:=_funcs.get(_val(fn))) is None: return _fail(INVALID_HANDLE, f"cuLaunchKernel: function {_val(fn):#x} is unknown")
  if params is not None or not hasattr(extra, "_real_fields_"):
    return _fail(INVALID_VALUE, "cuLaunchKernel: the mock takes the argument struct as `extra` (tinygrad's MOCKGPU path); kernelParams is not modelled")
  m, name = f
  try: m.launch(name, _params(extra), (gx, gy, gz), (lx, ly, lz), memory, dyn_shared=smem)
  except PTXError as e: return _fail(LAUNCH_OUT_OF_RESOURCES if "threads" in str(e) else INVALID_VALUE, str(e))
  except EmuError as e:
    _state["sticky"] = code = LAUNCH_TIMEOUT if type(e).__name__ == "WatchdogExpired" else ILLEGAL_ADDRESS if getattr(e, "report", None) and e.report.space != "none" else LAUNCH_FAILED
    return _fail(code, str(e))
  return SUCCESS

def cuEventCreate(ev, flags) -> int:
  if (rc:=_ready("cuEventCreate")): return rc
  _events[h:=next(_ids)] = 0.0
  _out(ev, h)
  return SUCCESS
def _event(ev, call:str) -> int:
  return _ready(call) or (SUCCESS if _val(ev) in _events else _fail(INVALID_HANDLE, f"{call}: event {_val(ev):#x} is unknown"))
def cuEventRecord(ev, stream) -> int:
  if not (rc:=_event(ev, "cuEventRecord")): _events[_val(ev)] = time.perf_counter()
  return rc
def cuEventSynchronize(ev) -> int: return _event(ev, "cuEventSynchronize")
def cuEventElapsedTime(ms, start, end) -> int:
  if (rc:=_event(start, "cuEventElapsedTime") or _event(end, "cuEventElapsedTime")): return rc
  _out(ms, (_events[_val(end)] - _events[_val(start)]) * 1e3)
  return SUCCESS
def cuEventDestroy_v2(ev) -> int:
  if (rc:=_event(ev, "cuEventDestroy_v2")): return rc
  del _events[_val(ev)]
  return SUCCESS
def cuStreamWaitEvent(stream, ev, flags) -> int: return _event(ev, "cuStreamWaitEvent")

def cuGetErrorString(status, pstr) -> int:
  text = last_error["text"] if last_error["code"] == status else _TEXT.get(status)
  if text is None: return INVALID_VALUE
  buf = _strings[status] = ctypes.create_string_buffer(f"mockgpu: {text}".encode())
  ctypes.cast(ctypes.byref(pstr._obj), ctypes.POINTER(ctypes.c_void_p))[0] = ctypes.addressof(buf)
  return SUCCESS
