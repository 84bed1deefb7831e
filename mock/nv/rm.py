"""The NVIDIA kernel driver as tinygrad's NVKIface uses it under `DEV=MOCK+NV` (docs/contracts/pci-usb-nv-cuda.md section 4):
`/dev/nvidiactl`, `/dev/nvidia0` and `/dev/nvidia-uvm`, their ioctls (RM objects, controls, memory maps, UVM) and mmaps.

GPU VA == host address: device memory gets an anonymous mapping at its VA on UVM_CREATE_EXTERNAL_RANGE (unless the range
is already host memory: an OS-descriptor object or a CPU mapping), and every UVM_MAP_EXTERNAL_ALLOCATION registers the
range in `memory`, the registry the GPFIFO engines and the PTX engine check every access against. Command execution
lives in `mockgpu.mock.nv.gpfifo` (run by `mockgpu.mock.device.DeviceThread`). Ioctl failures are what the driver gives: the RM `status` field (tinygrad
raises its `rm_alloc returned ...` error) with a line on stderr naming the unmodelled class or control.

Every caller pointer (the ioctl argument when it is an address, RM_ALLOC's `pAllocParms`, RM_CONTROL's `params` and the
arrays inside them, e.g. `classList`, `grInfoList`) is read and written through `mockgpu.mock.uaccess`, never dereferenced:
a bad pointer is `OSError(EFAULT, "<IOCTL>: <field>=0x.. ...")`, never a SIGSEGV of the host."""
from __future__ import annotations
import ctypes, errno, itertools, os, sys, threading
from tinygrad.runtime.autogen import nv_570 as nv, libc
from mockgpu.emu.errors import EmuError, GPUFault
from mockgpu.emu.memory import PAGE
from mockgpu.mock import uaccess
from mockgpu.mock.device import DeviceMemory, DeviceThread, MAP_FIXED, host_mmap
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

class NVDriver(DeviceMemory):
  """Driver state of one process: RM objects by handle, memory objects (VA once DMA-mapped), host-backed ranges, the GPU
  `memory` registry (`DeviceMemory`: the channels' checked copies), channels (`gpfifo.Channel`) and the device thread that
  runs them."""
  def __init__(self):
    super().__init__()
    self.lock, self.pid = threading.RLock(), os.getpid()
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
    """Execute an ioctl on a mock NVIDIA file. `arg` is the parameter struct (or its address, copied in and out like the
    kernel's nvidia_ioctl does). Returns 0 (the RM/UVM status is in the structure) or raises OSError (EFAULT for a bad pointer)."""
    if os.getpid() != self.pid: raise OSError(errno.EBADF, f"NV ioctl {request:#x}: the mock driver was opened by pid {self.pid}")
    if f.kind == "uvm":
      if (row:=_UVM.get(request)) is None: raise OSError(errno.ENOTTY, f"nvidia-uvm ioctl {request:#x} is not modelled by the mock")
    else:
      nr, size = request & 0xFF, (request >> 16) & 0x1FFF
      if (row:=_ESC.get(nr)) is None: raise OSError(errno.ENOTTY, f"{'nvidiactl' if f.kind == 'ctl' else 'nvidia0'} escape {nr:#x} is not modelled by the mock")
      if size != ctypes.sizeof(row[1]) & 0x1FFF: raise OSError(errno.EINVAL, f"{row[0]}: size {size} != sizeof({row[1].__name__}) & 0x1FFF")
    name, typ, fn = row
    args, user = uaccess.ioctl_arg(typ, arg, f"{name}: argument")
    try:
      with self.lock:
        if f.kind == "uvm": args.rmStatus = fn(self, args) or 0
        else: fn(self, f, args)
    finally:
      if user is not None: uaccess.copy_to_user(user, args, f"{name}: argument")
    return 0

  def _new(self, cls:int, state=None, handle:int|None=None) -> int:
    h = handle or next(self._handles)
    self.objects[h] = (cls, state)
    return h

  def rm_alloc(self, f, p):
    def params(typ): return uaccess.struct_in(typ, p.pAllocParms, f"RM_ALLOC class {p.hClass:#x}: pAllocParms")
    if p.hClass == nv.NV01_ROOT_CLIENT: p.hObjectNew, p.status = self._new(p.hClass), 0; return
    if p.hObjectParent not in self.objects:
      p.status = self._status(f"RM_ALLOC class {p.hClass:#x}: parent {p.hObjectParent:#x} is not an allocated object", nv.NV_ERR_INVALID_OBJECT_PARENT); return
    if p.hClass in (nv.NV1_MEMORY_USER, nv.NV1_MEMORY_SYSTEM):
      p.hObjectNew = self._new(p.hClass, {"size": params(nv.NV_MEMORY_ALLOCATION_PARAMS).size, "va": None})
    elif p.hClass == nv.AMPERE_CHANNEL_GPFIFO_A:
      from mockgpu.mock.nv.gpfifo import Channel
      g = params(nv.NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS)
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
    """NV_ESC_RM_CONTROL: the handler works on a private copy of `params` (`paramsSize` must be the command's struct size,
    as RM checks), copied back afterwards."""
    if p.hObject not in self.objects: p.status = self._status(f"RM_CONTROL {p.cmd:#x} on unknown handle {p.hObject:#x}", nv.NV_ERR_INVALID_OBJECT_HANDLE); return
    if (row:=_CONTROLS.get(p.cmd)) is None: p.status = self._status(f"RM_CONTROL cmd {p.cmd:#x} is not modelled", nv.NV_ERR_NOT_SUPPORTED); return
    typ, fn = row
    if p.paramsSize != ctypes.sizeof(typ):
      p.status = self._status(f"RM_CONTROL cmd {p.cmd:#x}: paramsSize={p.paramsSize} != sizeof({typ.__name__}) = {ctypes.sizeof(typ)}",
                              nv.NV_ERR_INVALID_PARAM_STRUCT); return
    params = uaccess.struct_in(typ, p.params, what:=f"RM_CONTROL cmd {p.cmd:#x}: params")
    try: p.status = fn(self, p.hObject, params) or 0
    finally: uaccess.copy_to_user(p.params, params, what)

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
    if not uaccess.writable(va:=p.pMemory or 0, size:=p.limit + 1):   # the driver pins the pages: they must be memory of the process
      p.status = self._status(f"RM_ALLOC_MEMORY OS descriptor: pMemory={va:#x} limit={p.limit:#x} is not writable memory of this process",
                              nv.NV_ERR_INVALID_ADDRESS); return
    uaccess.pin(va, size, True)
    self._new(p.hClass, {"size": size, "va": va}, handle=p.hObjectNew)
    self.backed[va], p.status = size, 0

  # *** mmap
  def mmap(self, f:NVFile, start, size:int, prot:int, flags:int, offset:int) -> int:
    with self.lock:
      if f.mapping is None: raise OSError(errno.EINVAL, f"mmap of mock NVIDIA fd {f.fd} without a preceding NV_ESC_RM_MAP_MEMORY")
      h, length = f.mapping
      if h not in self.objects: raise OSError(errno.EINVAL, f"mmap of mock NVIDIA fd {f.fd}: memory {h:#x} of its RM_MAP_MEMORY was freed since")
      if size > length: raise OSError(errno.EINVAL, f"mmap size {size:#x} > RM_MAP_MEMORY length {length:#x} of {h:#x}")
      if self.objects[h][0] == nv.TURING_USERMODE_A: return host_mmap(0, size)    # the doorbell page; the device thread polls GPPut instead
      addr = host_mmap(start or 0, size, fixed=bool(flags & MAP_FIXED))   # without MAP_FIXED, `start` is a hint (mmap(2))
      self.backed[addr] = size
      return addr

  def _is_host(self, base:int, size:int, ranges:dict[int, int]) -> bool:
    return any(b <= base and base + size <= b + s for b, s in ranges.items())
  def _bad_range(self, what:str, base:int, length:int) -> int|None:
    """The UVM range check: page-aligned, non-empty, ending at or below 2^64 (NV_ERR_INVALID_ADDRESS otherwise)."""
    if length == 0 or base % PAGE or length % PAGE or base + length > 1 << 64:
      return self._status(f"{what}: base={base:#x} length={length:#x} must be page aligned, non-empty and end at or below 2^64", nv.NV_ERR_INVALID_ADDRESS)
    return None

  # *** UVM
  def uvm_create_range(self, p):
    """Backs the range with anonymous memory (GPU VA == host address) unless it is host memory already; never over other
    mappings of the process (NV_ERR_UVM_ADDRESS_IN_USE, as for a range that overlaps another)."""
    if (bad:=self._bad_range("UVM_CREATE_EXTERNAL_RANGE", p.base, p.length)) is not None: return bad
    if self._is_host(p.base, p.length, self.backed) or p.base in self.ours: return None
    try: host_mmap(p.base, p.length, fixed=True, replace=False)
    except OSError as e:
      return self._status(f"UVM_CREATE_EXTERNAL_RANGE: base={p.base:#x} length={p.length:#x} overlaps memory of the process ({e.strerror})",
                          nv.NV_ERR_UVM_ADDRESS_IN_USE)
    self.ours[p.base] = p.length
  def uvm_map(self, p):
    if (bad:=self._bad_range("UVM_MAP_EXTERNAL_ALLOCATION", p.base, p.length)) is not None or self.memory.find(p.base, p.length) is not None: return bad
    if not self._is_host(p.base, p.length, self.backed) and not self._is_host(p.base, p.length, self.ours):
      return self._status(f"UVM_MAP_EXTERNAL_ALLOCATION: base={p.base:#x} length={p.length:#x} is not inside an external range "
                          "(UVM_CREATE_EXTERNAL_RANGE first)", nv.NV_ERR_INVALID_ADDRESS)
    try: self.memory.add(p.base, p.length, f"nv@{p.base:#x} ({p.length} bytes)")
    except EmuError as e: return self._status(f"UVM_MAP_EXTERNAL_ALLOCATION: {e}", nv.NV_ERR_UVM_ADDRESS_IN_USE)
  def uvm_free(self, p):
    if (r:=self.memory.find(p.base)) is not None and r.start == p.base: self.memory.remove(p.base)
    if (n:=self.ours.pop(p.base, None)) is not None: libc.munmap(p.base, n)
    self.backed.pop(p.base, None)

  # *** the device
  def accessible(self, addr:int, size:int) -> bool:
    """Whether `[addr, addr+size)` lies in one range of UVM_MAP_EXTERNAL_ALLOCATION."""
    return self.memory.find(addr, size) is not None

  def run_once(self) -> bool:
    """One round of the device thread over every channel, under the driver lock (ioctls never change memory under a running
    kernel). Returns True if any channel progressed."""
    with self.lock: return any([ch.run() for ch in list(self.channels)])

  def report_channel_error(self, e:BaseException) -> str:
    """A channel stopped with `e`: the first fault is kept for the debugger controls (an MMU fault at a GPU VA, else an SM
    error whose pc is the PTX line of a kernel fault). Returns what tinygrad's on_device_hang will report."""
    rep = getattr(e, "report", None)
    addr = rep.va if isinstance(e, GPUFault) else getattr(e, "addr", None)
    if self.fault is None:
      self.fault = {"address": addr, "write": bool(rep and rep.kind == "write"), "esr": 0x10 if isinstance(e, EmuError) else 0x20,
                    "pc": getattr(rep, "pc", 0) or 0, "error": e}
    first = self.fault["address"]   # tinygrad reports the first fault only
    return (f"MMU fault: 0x{first:X}" if first is not None else f"SM 0 fault: esr=1 warp_esr={self.fault['esr']:#x}") + ", once its signal wait times out: HCQDEV_WAIT_TIMEOUT_MS shortens that"

  def _start(self):
    if self.thread is None: self.thread = DeviceThread(self, name="mockgpu-nv-device")

# *** RM controls: cmd -> (params struct, handler(driver, hObject, private copy of the params) returning a status (None = 0))
def _build_version(d, h, p): p.driverVersionBuffer = DRIVER_VERSION
def _id_info(d, h, p):
  if p.gpuId != GPU_ID: return d._status(f"GPU_GET_ID_INFO_V2 gpuId={p.gpuId:#x} (the mock GPU is {GPU_ID:#x})", nv.NV_ERR_INVALID_ARGUMENT)
  p.deviceInstance = 0
def _classlist(d, h, p):
  if p.numClasses and p.classList:
    if p.numClasses < len(CLASSES): return nv.NV_ERR_INVALID_ARGUMENT
    uaccess.copy_to_user(p.classList, (ctypes.c_uint32 * len(CLASSES))(*CLASSES), "GPU_GET_CLASSLIST: classList")
  p.numClasses = len(CLASSES)
def _gid(d, h, p):
  p.length = 16
  for i, b in enumerate(UUID): p.data[i] = b
def _token(d, h, p):
  ch = d.objects[h][1]
  if not hasattr(ch, "token"): return d._status(f"GET_WORK_SUBMIT_TOKEN on {h:#x}, which is not a GPFIFO channel", nv.NV_ERR_INVALID_OBJECT_HANDLE)
  p.workSubmitToken = ch.token
def _gr_info(d, h, p):
  if not 0 < p.grInfoListSize <= nv.NV2080_CTRL_GR_INFO_MAX_SIZE:
    return d._status(f"GR_GET_INFO: grInfoListSize={p.grInfoListSize} (1..{nv.NV2080_CTRL_GR_INFO_MAX_SIZE})", nv.NV_ERR_INVALID_ARGUMENT)
  infos = uaccess.struct_in(nv.NV2080_CTRL_GR_INFO * p.grInfoListSize, p.grInfoList, what:="GR_GET_INFO: grInfoList")
  sm = int(engine.ARCH[3:])
  for info in infos: info.data = ((sm // 10) << 8 | sm % 10) if info.index == nv.NV2080_CTRL_GR_INFO_INDEX_SM_VERSION else 1
  uaccess.copy_to_user(p.grInfoList, infos, what)
def _sm_errors(d, h, p):
  if d.fault is None: return
  if d.fault["address"] is not None: p.mmuFault.valid = 1
  else: p.smErrorStateArray[0].hwwGlobalEsr, p.smErrorStateArray[0].hwwWarpEsr, p.smErrorStateArray[0].hwwWarpEsrPc64 = 1, d.fault["esr"], d.fault["pc"]
def _mmu_faults(d, h, p):
  if d.fault is None or d.fault["address"] is None: p.count = 0; return
  p.count, e = 1, p.mmuFaultInfoList[0]
  e.faultAddress, e.faultType = d.fault["address"], nv.NV_PFAULT_FAULT_TYPE_PTE
  e.accessType = nv.NV_PFAULT_ACCESS_TYPE_VIRT_WRITE if d.fault["write"] else nv.NV_PFAULT_ACCESS_TYPE_VIRT_READ
_OK = lambda d, h, p: None
_CONTROLS = {nv.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: (nv.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS, _build_version),
             nv.NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: (nv.NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, _id_info),
             nv.NV0080_CTRL_CMD_GPU_GET_CLASSLIST: (nv.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS, _classlist),
             nv.NV2080_CTRL_CMD_GPU_GET_GID_INFO: (nv.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, _gid),
             nv.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: (nv.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS, _token),
             nv.NV2080_CTRL_CMD_GR_GET_INFO: (nv.NV2080_CTRL_GR_GET_INFO_PARAMS, _gr_info),
             nv.NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES: (nv.NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, _sm_errors),
             nv.NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO: (nv.NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS, _mmu_faults),
             nv.NV2080_CTRL_CMD_PERF_BOOST: (nv.NV2080_CTRL_PERF_BOOST_PARAMS, _OK),
             nv.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: (nv.NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS, _OK),
             nv.NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE: (nv.NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS, _OK)}

# *** escapes on nvidiactl / nvidia0: nr -> (name, the argument struct, method)
_ESC = {nv.NV_ESC_RM_ALLOC: ("NV_ESC_RM_ALLOC", nv.NVOS21_PARAMETERS, NVDriver.rm_alloc),
        nv.NV_ESC_RM_FREE: ("NV_ESC_RM_FREE", nv.NVOS00_PARAMETERS, NVDriver.rm_free),
        nv.NV_ESC_RM_CONTROL: ("NV_ESC_RM_CONTROL", nv.NVOS54_PARAMETERS, NVDriver.rm_control),
        nv.NV_ESC_RM_MAP_MEMORY: ("NV_ESC_RM_MAP_MEMORY", nv.nv_ioctl_nvos33_parameters_with_fd, NVDriver.map_memory),
        nv.NV_ESC_RM_MAP_MEMORY_DMA: ("NV_ESC_RM_MAP_MEMORY_DMA", nv.NVOS46_PARAMETERS, NVDriver.map_memory_dma),
        nv.NV_ESC_CARD_INFO: ("NV_ESC_CARD_INFO", nv.nv_ioctl_card_info_t * 64, NVDriver.card_info),   # tinygrad asks for 64 entries
        nv.NV_ESC_REGISTER_FD: ("NV_ESC_REGISTER_FD", nv.nv_ioctl_register_fd_t, NVDriver.register_fd),
        nv.NV_ESC_RM_ALLOC_MEMORY: ("NV_ESC_RM_ALLOC_MEMORY", nv.nv_ioctl_nvos02_parameters_with_fd, NVDriver.alloc_os_memory)}
# *** UVM commands (the request is the raw command number): cmd -> (name, UVM_<name>_PARAMS, handler returning the rmStatus)
_UVM = {getattr(nv, n): (n, getattr(nv, n + "_PARAMS"), fn) for n, fn in {
  "UVM_INITIALIZE": lambda d, p: 0, "UVM_MM_INITIALIZE": lambda d, p: 0, "UVM_REGISTER_GPU": lambda d, p: 0,
  "UVM_REGISTER_GPU_VASPACE": lambda d, p: 0, "UVM_REGISTER_CHANNEL": lambda d, p: 0, "UVM_ENABLE_PEER_ACCESS": lambda d, p: 0,
  "UVM_CREATE_EXTERNAL_RANGE": NVDriver.uvm_create_range, "UVM_MAP_EXTERNAL_ALLOCATION": NVDriver.uvm_map, "UVM_FREE": NVDriver.uvm_free}.items()}

_driver: NVDriver | None = None
def driver() -> NVDriver:
  """The process's mock NVIDIA driver (created on first use; a forked child gets a fresh one)."""
  global _driver
  if _driver is None or _driver.pid != os.getpid(): _driver = NVDriver()
  return _driver
