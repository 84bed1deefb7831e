"""`test.mockgpu.cuda.cuda`: the CUDA driver API tinygrad's ops_cuda.py calls under `DEV=MOCK+CUDA:PTX` (docs/contracts/pci-usb-nv-cuda.md section 5).

Types and constants are tinygrad's own (`tinygrad.runtime.autogen.cuda`, served through `__getattr__`); the functions below
model one device: memory is host memory whose address is the device pointer (every allocation is registered in a
`MemoryMap`, so kernels and copies are checked against it), modules are PTX text run by `mockgpu.mock.ptx`, and every call
is synchronous (the stream is always idle). Bad calls return the CUDA error code a driver gives, and `cuGetErrorString`
explains it (with the fault report of a failed launch).

Allocations are 256-byte aligned and granular, as cuMemAlloc's are: a kernel may touch the whole 256-byte granules an
allocation covers (a 12-byte buffer read as one 16-byte vector does not fault), copies must stay inside the requested size.
With `MOCKGPU_STRICT=1` kernels are checked byte-exact: reads past an allocation inside its granule are performed and
printed (the first, with a count), writes there fault.
A kernel fault is sticky, as on a real context: every later call in that context returns the fault's code with a short
reference to it (`fault #N`, the one full report is the failed launch's), until cuCtxDestroy_v2; a new context works again."""
from __future__ import annotations
import ctypes, itertools, sys, time
from tinygrad.runtime.autogen import libc
from mockgpu.emu.errors import EmuError, WatchdogExpired
from mockgpu.emu.memory import MemoryMap
from mockgpu.mock.errors import PTXError
from mockgpu.mock.device import host_mmap
from mockgpu.mock.ptx import engine
from mockgpu.usage import timed

__all__ = ["cuInit", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceComputeCapability", "cuDeviceCanAccessPeer", "cuCtxCreate_v2", "cuCtxSetCurrent",
           "cuCtxDestroy_v2", "cuCtxSynchronize", "cuCtxEnablePeerAccess", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemHostAlloc", "cuMemFreeHost",
           "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoDAsync_v2", "cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload",
           "cuFuncSetAttribute", "cuLaunchKernel", "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime",
           "cuEventDestroy_v2", "cuStreamWaitEvent", "cuGetErrorString", "memory", "last_error", "GRANULE"]

def __getattr__(name:str):
  if name.startswith("__"): raise AttributeError(name)
  from tinygrad.runtime.autogen import cuda as real
  return getattr(real, name)

SUCCESS, INVALID_VALUE, OUT_OF_MEMORY, NOT_INITIALIZED, INVALID_DEVICE, INVALID_IMAGE, INVALID_CONTEXT = 0, 1, 2, 3, 101, 200, 201
INVALID_PTX, INVALID_HANDLE, NOT_FOUND, ILLEGAL_ADDRESS, LAUNCH_OUT_OF_RESOURCES, LAUNCH_TIMEOUT, LAUNCH_FAILED, NOT_SUPPORTED = 218, 400, 500, 700, 701, 702, 719, 801
_TEXT = {0: "no error", 1: "invalid argument", 2: "out of memory", 3: "initialization error", 101: "invalid device ordinal", 200: "device kernel image is invalid",
         201: "invalid device context", 218: "a PTX JIT compilation failed", 400: "invalid resource handle", 500: "named symbol not found", 700: "an illegal memory access was encountered",
         701: "too many resources requested for launch", 702: "the launch timed out and was terminated", 719: "unspecified launch failure",
         801: "operation not supported"}

memory = MemoryMap()                     # device allocations (the ranges kernels and copies may touch)
GRANULE = 256                            # cuMemAlloc's alignment and size granule (the mapping a kernel may touch)
_bufs: dict[int, int] = {}               # device and host allocations: address -> requested size (anonymous mappings)
_host: set[int] = set()
_modules: dict[int, engine.Module] = {}
_funcs: dict[int, tuple[engine.Module, str]] = {}
_events: dict[int, float] = {}
_owner: dict[int, int] = {}              # allocation address or module/function/event handle -> the context that made it
_ctxs: dict[int, tuple[int, str]|None] = {}   # live contexts -> None, or the sticky fault's (code, "fault #N (...)")
_ids = itertools.count(1)
_state = {"init": False, "cur": 0, "faults": 0, "allocs": 0}
last_error = {"code": 0, "text": ""}     # the detail of the last failing call (cuGetErrorString returns it)
_strings: dict[int, ctypes.Array] = {}   # error strings stay alive: tinygrad reads them after the call returns

def _fail(code:int, detail:str) -> int:
  last_error.update(code=code, text=f"{_TEXT.get(code, 'error')}: {detail}")
  return code

def _val(x) -> int:
  """The integer behind a handle, device pointer or plain int tinygrad passes."""
  if x is None: return 0
  if isinstance(x, int): return x
  if isinstance(x, (ctypes._Pointer, ctypes.c_char_p)): return ctypes.cast(x, ctypes.c_void_p).value or 0
  if isinstance(x, ctypes.Array): return ctypes.addressof(x)     # a host buffer passed as itself (its address, as C would take)
  return x.value or 0

def _out(ref, v) -> None:
  obj = ref._obj
  if isinstance(obj, (ctypes.c_float, ctypes.c_double)): obj.value = v
  else: ctypes.memmove(ctypes.addressof(obj), ctypes.byref(ctypes.c_uint64(v)), ctypes.sizeof(obj))

def _inited(call:str) -> int: return SUCCESS if _state["init"] else _fail(NOT_INITIALIZED, f"{call} before cuInit")
def _ready(call:str) -> int:
  """A call that works in the current context: it must exist and not be stopped by an earlier kernel fault (sticky)."""
  if (rc:=_inited(call)): return rc
  if (c:=_state["cur"]) not in _ctxs: return _fail(INVALID_CONTEXT, f"{call}: no current context; call cuCtxCreate_v2 or cuCtxSetCurrent first")
  if (f:=_ctxs[c]): return _fail(f[0], f"{call}: context {c:#x} is unusable since {f[1]}; the launch that faulted returned the full report. "
                                 "As on a real GPU this lasts until cuCtxDestroy_v2 (a new context, or process, works again)")
  return SUCCESS

def cuInit(flags) -> int:
  if flags != 0: return _fail(INVALID_VALUE, f"cuInit flags={flags}, must be 0")
  _state["init"] = True
  return SUCCESS
def cuDeviceGetCount(count) -> int: return _inited("cuDeviceGetCount") or _out(count, 1) or SUCCESS
def cuDeviceGet(dev, ordinal) -> int:
  if ordinal != 0: return _fail(INVALID_DEVICE, f"cuDeviceGet ordinal={ordinal}; the mock has one device (0)")
  return _inited("cuDeviceGet") or _out(dev, 0) or SUCCESS
def cuDeviceComputeCapability(major, minor, dev) -> int:
  if _val(dev) != 0: return _fail(INVALID_DEVICE, f"cuDeviceComputeCapability dev={_val(dev)}")
  sm = int(engine.ARCH[3:])
  return _inited("cuDeviceComputeCapability") or _out(major, sm // 10) or _out(minor, sm % 10) or SUCCESS
def cuDeviceCanAccessPeer(can, dev, peer) -> int: return _inited("cuDeviceCanAccessPeer") or _out(can, 0) or SUCCESS
def cuCtxCreate_v2(ctx, flags, dev) -> int:
  if _val(dev) != 0: return _fail(INVALID_DEVICE, f"cuCtxCreate_v2 dev={_val(dev)}")
  if (rc:=_inited("cuCtxCreate_v2")): return rc
  _ctxs[h:=0xC7C70000 + next(_ids)] = None
  _state["cur"] = h
  return _out(ctx, h) or SUCCESS
def _ctx(ctx, call:str) -> int:
  if (rc:=_inited(call)): return rc
  return SUCCESS if _val(ctx) in _ctxs else _fail(INVALID_CONTEXT, f"{call}: context {_val(ctx):#x} is not a live context of cuCtxCreate_v2")
def cuCtxSetCurrent(ctx) -> int:
  if _val(ctx) == 0: _state["cur"] = 0; return SUCCESS
  if not (rc:=_ctx(ctx, "cuCtxSetCurrent")): _state["cur"] = _val(ctx)
  return rc
def cuCtxDestroy_v2(ctx) -> int:
  """Frees everything the context made (allocations, modules, functions, events) and ends its sticky fault."""
  if (rc:=_ctx(ctx, "cuCtxDestroy_v2")): return rc
  c = _val(ctx)
  for h in [h for h, o in _owner.items() if o == c]:
    if h in _bufs: _release(h)
    for d in (_modules, _funcs, _events, _owner): d.pop(h, None)
  del _ctxs[c]
  if _state["cur"] == c: _state["cur"] = 0
  return SUCCESS
def cuCtxSynchronize() -> int: return _ready("cuCtxSynchronize")
def cuCtxEnablePeerAccess(ctx, flags) -> int: return _fail(NOT_SUPPORTED, "cuCtxEnablePeerAccess: the mock has a single device")

def _alloc(out, size:int, call:str, host:bool) -> int:
  if (rc:=_ready(call)): return rc
  if not isinstance(size, int) or size <= 0: return _fail(INVALID_VALUE, f"{call} bytesize={size}, must be > 0")
  mapped = -(-size // GRANULE) * GRANULE
  # a size the host cannot back is the driver's OUT_OF_MEMORY: nothing is allocated and the context stays usable
  if mapped >= 1 << 63: return _fail(OUT_OF_MEMORY, f"{call} bytesize={size:#x} is larger than any address space")
  try: addr = host_mmap(0, mapped)   # page aligned (so 256-byte aligned), lazily zeroed pages like fresh device memory
  except OSError as e: return _fail(OUT_OF_MEMORY, f"{call} bytesize={size:#x}: the host cannot map that much ({e.strerror})")
  _bufs[addr], _owner[addr] = size, _state["cur"]
  _state["allocs"] += 1
  if host: _host.add(addr)
  else: memory.add(addr, size, f"cuMemAlloc#{_state['allocs']} ({size} bytes)", granule=GRANULE)
  _out(out, addr)
  return SUCCESS
def cuMemAlloc_v2(dptr, size) -> int: return _alloc(dptr, size, "cuMemAlloc_v2", host=False)
def cuMemHostAlloc(pp, size, flags) -> int: return _alloc(pp, size, "cuMemHostAlloc", host=True)
def _release(a:int) -> None:
  libc.munmap(a, -(-_bufs.pop(a) // GRANULE) * GRANULE)
  if a in _host: _host.discard(a)
  else: memory.remove(a)
  _owner.pop(a, None)
def _free(p, call:str, host:bool) -> int:
  a = _val(p)
  if a not in _bufs or (a in _host) != host:
    return _fail(INVALID_VALUE, f"{call}({a:#x}): not an allocation of {'cuMemHostAlloc' if host else 'cuMemAlloc_v2'}")
  if (rc:=_ready(call)): return rc
  _release(a)
  return SUCCESS
def cuMemFree_v2(dptr) -> int: return _free(dptr, "cuMemFree_v2", host=False)
def cuMemFreeHost(p) -> int: return _free(p, "cuMemFreeHost", host=True)

def _dev(a:int, n:int, call:str, what:str) -> int:
  """Copies stay inside the requested size of one cuMemAlloc (the rest of its last granule is not the caller's)."""
  if memory.find(a, n) is None:
    near = memory.nearest(a)
    return _fail(INVALID_VALUE, f"{call}: {what} [{a:#x}, {a+n:#x}) is not inside one device allocation"
                 + (f" (nearest {near.name} at {near.start:#x})" if near else ""))
  return SUCCESS
def _copy(dst:int, src:int, n:int, call:str, checks) -> int:
  if (rc:=_ready(call)): return rc
  if not isinstance(n, int) or n < 0: return _fail(INVALID_VALUE, f"{call} ByteCount={n}")
  if n and any(rc:=_dev(a, n, call, w) for a, w in checks): return rc
  with timed("device_s"): ctypes.memmove(dst, src, n)
  return SUCCESS
def cuMemcpyHtoDAsync_v2(dst, src, n, stream) -> int: return _copy(_val(dst), _val(src), n, "cuMemcpyHtoDAsync_v2", [(_val(dst), "destination")])
def cuMemcpyDtoH_v2(dst, src, n) -> int: return _copy(_val(dst), _val(src), n, "cuMemcpyDtoH_v2", [(_val(src), "source")])
def cuMemcpyDtoDAsync_v2(dst, src, n, stream) -> int:
  return _copy(_val(dst), _val(src), n, "cuMemcpyDtoDAsync_v2", [(_val(dst), "destination"), (_val(src), "source")])

def cuModuleLoadData(mod, image) -> int:
  if (rc:=_ready("cuModuleLoadData")): return rc
  src = image if isinstance(image, (bytes, str)) else ctypes.string_at(_val(image))
  try:
    with timed("driver_s"): m = engine.load(src)   # parse and compile the PTX (cached on disk)
  except PTXError as e: return _fail(INVALID_PTX, str(e))
  except EmuError as e: return _fail(INVALID_IMAGE, str(e))
  _modules[h:=next(_ids)], _owner[h] = m, _state["cur"]
  _out(mod, h)
  return SUCCESS
def cuModuleUnload(mod) -> int:
  if _modules.pop(_val(mod), None) is None: return _fail(INVALID_HANDLE, f"cuModuleUnload({_val(mod):#x}): not a loaded module")
  _owner.pop(_val(mod), None)
  return SUCCESS
def cuModuleGetFunction(fn, mod, name) -> int:
  if (rc:=_ready("cuModuleGetFunction")): return rc
  if (m:=_modules.get(_val(mod))) is None: return _fail(INVALID_HANDLE, f"cuModuleGetFunction: module {_val(mod):#x} is not loaded")
  n = name.decode() if isinstance(name, bytes) else str(name)
  if n not in m.kernels: return _fail(NOT_FOUND, f"cuModuleGetFunction: no kernel {n!r} in the module (it has {', '.join(m.kernels)})")
  _funcs[h:=next(_ids)], _owner[h] = (m, n), _state["cur"]
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
  try:
    with timed("device_s"): st = m.launch(name, _params(extra), (gx, gy, gz), (lx, ly, lz), memory, dyn_shared=smem)
  except PTXError as e: return _fail(LAUNCH_OUT_OF_RESOURCES if "threads" in str(e) else INVALID_VALUE, str(e))
  except EmuError as e:
    r, _state["faults"] = getattr(e, "report", None), _state["faults"] + 1
    code = LAUNCH_TIMEOUT if isinstance(e, WatchdogExpired) else ILLEGAL_ADDRESS if r is not None and r.space != "none" else LAUNCH_FAILED
    what = (f"{r.kind} of {r.size} bytes at {r.address:#x} in {r.space}" if r is not None and r.space != "none" else
            "watchdog expired" if code == LAUNCH_TIMEOUT else r.kind if r is not None else type(e).__name__)
    ref = f"fault #{_state['faults']} (CUDA error {code}: {what}, kernel {name!r}" + (f" PTX line {r.pc})" if r is not None else ")")
    _ctxs[_state["cur"]] = (code, ref)
    return _fail(code, f"{ref}: {e}")
  if st.oob_reads:   # strict mode only (MOCKGPU_STRICT=1): a GPU performs these reads, so the kernel went on
    print(f"mockgpu: cuLaunchKernel {name!r}: {st.oob_reads} read(s) outside every allocation but inside its 256-byte granule (strict mode); "
          f"the first: {st.oob_report.describe()}", file=sys.stderr)
  return SUCCESS

def cuEventCreate(ev, flags) -> int:
  if (rc:=_ready("cuEventCreate")): return rc
  _events[h:=next(_ids)], _owner[h] = 0.0, _state["cur"]
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
  del _events[_val(ev)], _owner[_val(ev)]
  return SUCCESS
def cuStreamWaitEvent(stream, ev, flags) -> int: return _event(ev, "cuStreamWaitEvent")

def cuGetErrorString(status, pstr) -> int:
  text = last_error["text"] if last_error["code"] == status else _TEXT.get(status)
  if text is None: return INVALID_VALUE
  buf = _strings[status] = ctypes.create_string_buffer(f"mockgpu: {text}".encode())
  ctypes.cast(ctypes.byref(pstr._obj), ctypes.POINTER(ctypes.c_void_p))[0] = ctypes.addressof(buf)
  return SUCCESS
