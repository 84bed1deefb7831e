"""The NVIDIA kernel driver as tinygrad's NVKIface uses it under `DEV=MOCK+NV` (contract-pci-usb-nv-cuda.md section 4):
`/dev/nvidiactl`, `/dev/nvidia0` and `/dev/nvidia-uvm`, their ioctls (RM objects, controls, memory maps, UVM) and mmaps.

GPU VA == host address: device memory gets an anonymous mapping at its VA on UVM_CREATE_EXTERNAL_RANGE (unless the range
is already host memory: an OS-descriptor object or a CPU mapping), and every UVM_MAP_EXTERNAL_ALLOCATION registers the
range in `memory`, the registry the GPFIFO engines and the PTX engine check every access against. Command execution
lives in `mockgpu.mock.nv.gpfifo` (device thread). Ioctl failures are what the driver gives: the RM `status` field (tinygrad
raises its `rm_alloc returned ...` error) with a line on stderr naming the unmodelled class or control."""
from __future__ import annotations
import ctypes, errno, itertools, mmap, os, sys, threading
from tinygrad.runtime.autogen import nv_570 as nv, libc
from mockgpu.emu.memory import MemoryMap
from mockgpu.mock.gpu import host_mmap
from mockgpu.mock.ptx import engine

__all__ = ["NVDriver", "NVFile", "driver", "PATHS", "DRIVER_VERSION", "CLASSES"]

PATHS = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0")
DRIVER_VERSION = b"570.00.00"            # keeps tinygrad on the nv_570 structure layouts
# what GET_CLASSLIST reports: Turing usermode, Ampere GPFIFO, Ada compute (QMD v3), Ampere copy
CLASSES = (nv.TURING_USERMODE_A, nv.AMPERE_CHANNEL_GPFIFO_A, nv.ADA_COMPUTE_A, nv.AMPERE_DMA_COPY_B)
GPU_ID, UUID = 0x100, bytes(range(0xA0, 0xB0))
_PLAIN = {nv.NV01_DEVICE_0, nv.NV20_SUBDEVICE_0, nv.NV01_MEMORY_VIRTUAL, nv.FERMI_VASPACE_A, nv.KEPLER_CHANNEL_GROUP_A,
          nv.FERMI_CONTEXT_SHARE_A, nv.GT200_DEBUGGER, nv.TURING_USERMODE_A, nv.ADA_COMPUTE_A, nv.AMPERE_DMA_COPY_B}

class NVFile:
  """One open mock device file: `kind` is "ctl", "uvm" or "gpu"; `fd` the virtual descriptor tinygrad passes around."""
  def __init__(self, kind:str, fd:int): self.kind, self.fd, self.mapping = kind, fd, None

class NVDriver:
  """Driver state of one process: RM objects by handle, memory objects (VA once DMA-mapped), host-backed ranges, the GPU
  `memory` registry, channels (`gpfifo.Channel`) and the device thread that runs them."""
  def __init__(self):
    self.lock, self.pid = threading.RLock(), os.getpid()
    self.memory = MemoryMap()
    self.objects: dict[int, tuple[int, object]] = {}      # handle -> (class, state)
    self.backed: dict[int, int] = {}                      # host-backed VA -> size (not ours to map or unmap)
    self.ours: dict[int, int] = {}                        # VA -> size of mappings the mock created (munmapped on UVM_FREE)
    self.files: dict[int, NVFile] = {}
    self._fds, self._handles, self._tokens = itertools.count(0x4E560000), itertools.count(0xCAFE0001), itertools.count(1)
    self.channels: list = []
    self.fault = None                                     # (report-like dict) of the first channel that stopped
    self.thread = None

  # *** files
  def open(self, path:str) -> NVFile:
    with self.lock:
      f = NVFile({"/dev/nvidiactl": "ctl", "/dev/nvidia-uvm": "uvm"}.get(path, "gpu"), next(self._fds))
      self.files[f.fd] = f
      return f
  def close(self, f:NVFile):
    with self.lock: self.files.pop(f.fd, None)

  def _status(self, what:str, code:int) -> int:
    print(f"mockgpu NV: {what} (status {code:#x}: {nv.nv_status_codes.get(code, '?')})", file=sys.stderr)
    return code

  # *** ioctls
  def ioctl(self, f:NVFile, request:int, arg) -> int:
    """Execute an ioctl on a mock NVIDIA file. Returns 0 (the RM/UVM status is in the structure) or raises OSError."""
    if os.getpid() != self.pid: raise OSError(errno.EBADF, f"NV ioctl {request:#x}: the mock driver was opened by pid {self.pid}")
    with self.lock:
      if f.kind == "uvm":
        if (fn:=_UVM.get(request)) is None: raise OSError(errno.ENOTTY, f"nvidia-uvm ioctl {request:#x} is not modelled by the mock")
        arg.rmStatus = fn(self, arg) or 0
        return 0
      nr, size = request & 0xFF, (request >> 16) & 0x1FFF
      if (fn:=_ESC.get(nr)) is None: raise OSError(errno.ENOTTY, f"{'nvidiactl' if f.kind == 'ctl' else 'nvidia0'} escape {nr:#x} is not modelled by the mock")
      if size != ctypes.sizeof(arg) & 0x1FFF: raise OSError(errno.EINVAL, f"NV escape {nr:#x}: size {size} != sizeof({type(arg).__name__})")
      fn(self, f, arg)
      return 0

  def _new(self, cls:int, state=None, handle:int|None=None) -> int:
    h = handle or next(self._handles)
    self.objects[h] = (cls, state)
    return h

  def rm_alloc(self, f, p):
    params = p.pAllocParms
    if p.hClass == nv.NV01_ROOT_CLIENT: p.hObjectNew, p.status = self._new(p.hClass), 0; return
    if p.hObjectParent not in self.objects:
      p.status = self._status(f"RM_ALLOC class {p.hClass:#x}: parent {p.hObjectParent:#x} is not an allocated object", nv.NV_ERR_INVALID_OBJECT_PARENT); return
    if p.hClass in (nv.NV1_MEMORY_USER, nv.NV1_MEMORY_SYSTEM):
      size = nv.NV_MEMORY_ALLOCATION_PARAMS.from_address(params).size
      p.hObjectNew = self._new(p.hClass, {"size": size, "va": None})
    elif p.hClass == nv.AMPERE_CHANNEL_GPFIFO_A:
      from mockgpu.mock.nv.gpfifo import Channel
      g = nv.NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS.from_address(params)
      userd_obj = self.objects.get(g.hUserdMemory[0], (0, None))[1]
      if not isinstance(userd_obj, dict) or userd_obj["va"] is None:
        p.status = self._status(f"RM_ALLOC GPFIFO: hUserdMemory[0]={g.hUserdMemory[0]:#x} is not DMA-mapped memory", nv.NV_ERR_INVALID_ARGUMENT); return
      if g.gpFifoEntries == 0:
        p.status = self._status("RM_ALLOC GPFIFO: gpFifoEntries=0 (the ring needs at least one entry)", nv.NV_ERR_INVALID_ARGUMENT); return
      ch = Channel(self, len(self.channels), g.gpFifoOffset, g.gpFifoEntries, userd_obj["va"] + g.userdOffset[0], next(self._tokens))
      self.channels.append(ch)
      p.hObjectNew = self._new(p.hClass, ch)
      self._start()
    elif p.hClass in _PLAIN: p.hObjectNew = self._new(p.hClass)
    else: p.status = self._status(f"RM_ALLOC class {p.hClass:#x} is not modelled (classes: {[hex(c) for c in sorted(_PLAIN)]})", nv.NV_ERR_INVALID_CLASS); return
    p.status = 0

  def rm_free(self, f, p):
    p.status = 0 if self.objects.pop(p.hObjectOld, None) is not None else \
      self._status(f"RM_FREE of unknown handle {p.hObjectOld:#x}", nv.NV_ERR_INVALID_OBJECT_HANDLE)

  def rm_control(self, f, p):
    if p.hObject not in self.objects: p.status = self._status(f"RM_CONTROL {p.cmd:#x} on unknown handle {p.hObject:#x}", nv.NV_ERR_INVALID_OBJECT_HANDLE); return
    if (fn:=_CONTROLS.get(p.cmd)) is None: p.status = self._status(f"RM_CONTROL cmd {p.cmd:#x} is not modelled", nv.NV_ERR_NOT_SUPPORTED); return
    p.status = fn(self, p.hObject, p.params) or 0

  def map_memory(self, f, w):
    """NV_ESC_RM_MAP_MEMORY: remembers which object the next mmap of `w.fd` maps."""
    if (tgt:=self.files.get(w.fd)) is None: w.params.status = self._status(f"RM_MAP_MEMORY: fd {w.fd} is not an open mock NVIDIA file", nv.NV_ERR_INVALID_ARGUMENT); return
    if w.params.hMemory not in self.objects: w.params.status = self._status(f"RM_MAP_MEMORY: unknown memory {w.params.hMemory:#x}", nv.NV_ERR_INVALID_OBJECT_HANDLE); return
    tgt.mapping, w.params.status = (w.params.hMemory, w.params.length), 0

  def map_memory_dma(self, f, p):
    obj = self.objects.get(p.hMemory, (0, None))[1]
    if not isinstance(obj, dict): p.status = self._status(f"RM_MAP_MEMORY_DMA: {p.hMemory:#x} is not a memory object", nv.NV_ERR_INVALID_OBJECT_HANDLE); return
    obj["va"], p.status = p.dmaOffset, 0   # tinygrad chooses the VA (DMA_OFFSET_FIXED) and asserts it comes back unchanged

  def card_info(self, f, arr):
    arr[0].valid, arr[0].gpu_id, arr[0].minor_number = 1, GPU_ID, 0

  def register_fd(self, f, r):
    if r.ctl_fd not in self.files or self.files[r.ctl_fd].kind != "ctl": raise OSError(errno.EINVAL, f"NV_ESC_REGISTER_FD: ctl_fd={r.ctl_fd} is not /dev/nvidiactl")

  def alloc_os_memory(self, f, w):
    p = w.params
    if p.hClass != nv.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR: p.status = self._status(f"RM_ALLOC_MEMORY class {p.hClass:#x} is not modelled", nv.NV_ERR_INVALID_CLASS); return
    self._new(p.hClass, {"size": p.limit + 1, "va": p.pMemory}, handle=p.hObjectNew)
    self.backed[p.pMemory], p.status = p.limit + 1, 0

  # *** mmap
  def mmap(self, f:NVFile, start, size:int, prot:int, flags:int, offset:int) -> int:
    with self.lock:
      if f.mapping is None: raise OSError(errno.EINVAL, f"mmap of mock NVIDIA fd {f.fd} without a preceding NV_ESC_RM_MAP_MEMORY")
      h, length = f.mapping
      cls, obj = self.objects[h]
      if size > length: raise OSError(errno.EINVAL, f"mmap size {size:#x} > RM_MAP_MEMORY length {length:#x} of {h:#x}")
      if cls == nv.TURING_USERMODE_A: return host_mmap(0, size)    # the doorbell page; the device thread polls GPPut instead
      addr = host_mmap(start or 0, size, fixed=bool(start))
      self.backed[addr] = size
      return addr

  def _is_backed(self, base:int, size:int) -> bool:
    return any(b <= base and base + size <= b + s for b, s in self.backed.items())

  # *** UVM
  def uvm_create_range(self, p):
    if not self._is_backed(p.base, p.length) and p.base not in self.ours:
      host_mmap(p.base, p.length, fixed=True)
      self.ours[p.base] = p.length
  def uvm_map(self, p):
    if self.memory.find(p.base, p.length) is None: self.memory.add(p.base, p.length, f"nv@{p.base:#x} ({p.length} bytes)")
  def uvm_free(self, p):
    if (r:=self.memory.find(p.base)) is not None and r.start == p.base: self.memory.remove(p.base)
    if (n:=self.ours.pop(p.base, None)) is not None: libc.munmap(p.base, n)
    self.backed.pop(p.base, None)

  def _start(self):
    if self.thread is None:
      from mockgpu.mock.nv.gpfifo import NVDeviceThread
      self.thread = NVDeviceThread(self)

# *** RM controls: cmd -> handler(driver, hObject, params address) returning a status (None = 0)
def _build_version(d, h, a):
  p = nv.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS.from_address(a)
  p.driverVersionBuffer = DRIVER_VERSION
def _id_info(d, h, a):
  p = nv.NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS.from_address(a)
  if p.gpuId != GPU_ID: return d._status(f"GPU_GET_ID_INFO_V2 gpuId={p.gpuId:#x} (the mock GPU is {GPU_ID:#x})", nv.NV_ERR_INVALID_ARGUMENT)
  p.deviceInstance = 0
def _classlist(d, h, a):
  p = nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS.from_address(a)
  if p.numClasses and p.classList:
    if p.numClasses < len(CLASSES): return nv.NV_ERR_INVALID_ARGUMENT
    (ctypes.c_uint32 * len(CLASSES)).from_address(p.classList)[:] = CLASSES
  p.numClasses = len(CLASSES)
def _gid(d, h, a):
  p = nv.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS.from_address(a)
  p.length = 16
  for i, b in enumerate(UUID): p.data[i] = b
def _token(d, h, a):
  ch = d.objects[h][1]
  if not hasattr(ch, "token"): return d._status(f"GET_WORK_SUBMIT_TOKEN on {h:#x}, which is not a GPFIFO channel", nv.NV_ERR_INVALID_OBJECT_HANDLE)
  nv.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS.from_address(a).workSubmitToken = ch.token
def _gr_info(d, h, a):
  p = nv.NV2080_CTRL_GR_GET_INFO_PARAMS.from_address(a)
  sm = int(engine.ARCH[3:])
  for info in (nv.NV2080_CTRL_GR_INFO * p.grInfoListSize).from_address(p.grInfoList):
    info.data = ((sm // 10) << 8 | sm % 10) if info.index == nv.NV2080_CTRL_GR_INFO_INDEX_SM_VERSION else 1
def _sm_errors(d, h, a):
  p = nv.NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS.from_address(a)
  if d.fault is None: return
  if d.fault["address"] is not None: p.mmuFault.valid = 1
  else: p.smErrorStateArray[0].hwwGlobalEsr, p.smErrorStateArray[0].hwwWarpEsr, p.smErrorStateArray[0].hwwWarpEsrPc64 = 1, d.fault["esr"], d.fault["pc"]
def _mmu_faults(d, h, a):
  p = nv.NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS.from_address(a)
  if d.fault is None or d.fault["address"] is None: p.count = 0; return
  p.count, e = 1, p.mmuFaultInfoList[0]
  e.faultAddress, e.faultType = d.fault["address"], nv.NV_PFAULT_FAULT_TYPE_PTE
  e.accessType = nv.NV_PFAULT_ACCESS_TYPE_VIRT_WRITE if d.fault["write"] else nv.NV_PFAULT_ACCESS_TYPE_VIRT_READ
_OK = lambda d, h, a: None
_CONTROLS = {nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: _build_version, nv.NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: _id_info,
             nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST: _classlist, nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO: _gid,
             nv.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: _token, nv.NV2080_CTRL_CMD_GR_GET_INFO: _gr_info,
             nv.NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES: _sm_errors, nv.NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO: _mmu_faults,
             nv.NV2080_CTRL_CMD_PERF_BOOST: _OK, nv.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: _OK, nv.NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE: _OK}

# *** escapes on nvidiactl / nvidia0: nr -> (method, struct the arg must be)
_ESC = {nv.NV_ESC_RM_ALLOC: NVDriver.rm_alloc, nv.NV_ESC_RM_FREE: NVDriver.rm_free, nv.NV_ESC_RM_CONTROL: NVDriver.rm_control,
        nv.NV_ESC_RM_MAP_MEMORY: NVDriver.map_memory, nv.NV_ESC_RM_MAP_MEMORY_DMA: NVDriver.map_memory_dma, nv.NV_ESC_CARD_INFO: NVDriver.card_info,
        nv.NV_ESC_REGISTER_FD: NVDriver.register_fd, nv.NV_ESC_RM_ALLOC_MEMORY: NVDriver.alloc_os_memory}
# *** UVM commands (the request is the raw command number)
_UVM = {nv.UVM_INITIALIZE: lambda d, p: 0, nv.UVM_MM_INITIALIZE: lambda d, p: 0, nv.UVM_REGISTER_GPU: lambda d, p: 0,
        nv.UVM_REGISTER_GPU_VASPACE: lambda d, p: 0, nv.UVM_REGISTER_CHANNEL: lambda d, p: 0, nv.UVM_ENABLE_PEER_ACCESS: lambda d, p: 0,
        nv.UVM_CREATE_EXTERNAL_RANGE: NVDriver.uvm_create_range, nv.UVM_MAP_EXTERNAL_ALLOCATION: NVDriver.uvm_map, nv.UVM_FREE: NVDriver.uvm_free}

_driver: NVDriver | None = None
def driver() -> NVDriver:
  """The process's mock NVIDIA driver (created on first use; a forked child gets a fresh one)."""
  global _driver
  if _driver is None or _driver.pid != os.getpid(): _driver = NVDriver()
  return _driver
