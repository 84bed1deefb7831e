"""The KFD driver model: `/dev/kfd` and renderD ioctls, mmaps, memory objects and events for every mock GPU of the process.

`KFD_IOCTLS` is the ioctl table (nr -> name, argument struct, handler); handlers are `KFD` methods named after the ioctl.
Failures are what the kernel would return: `OSError(errno, message naming the ioctl and the bad field)`; an unknown request
is ENOTTY. One `KFD` instance per process (`system()`), shared by all GPUs, like the real `/dev/kfd`."""
from __future__ import annotations
import collections, ctypes, errno, itertools, os, threading, time
from dataclasses import dataclass, field
from tinygrad.runtime.autogen import kfd, amdgpu_drm
from mockgpu.emu.errors import EmuError, GPUFault
from mockgpu.emu.memory import PAGE
from mockgpu.mock import uaccess
from mockgpu.mock.errors import QueueFault
from mockgpu.mock.device import DeviceThread, MAP_FIXED, host_mmap
from mockgpu.mock.gpu import GPU, DOORBELL_PAGE
from mockgpu.mock.aql import AQLQueue
from mockgpu.mock.pm4 import PM4Queue
from mockgpu.mock.profiles import GPUProfile, profile_for
from mockgpu.mock.sdma import SDMAQueue
from mockgpu.mock.sysfs import Device, GPUNode, build_tree, virtual_roots

__all__ = ["KFD", "KFD_IOCTLS", "DRM_IOCTLS", "Ioctl", "Allocation", "Event", "system", "DEFAULT_GPUS"]

DEFAULT_GPUS = 6
GPU_ID_BASE, RENDER_MINOR_BASE = 0xA000, 128
# mmap offset encoding of the kernel's kfd_priv.h: type in bits 62-63, gpu_id in bits 46-61
MMAP_TYPE_DOORBELL, MMAP_GPU_ID_SHIFT, BO_MMAP_BASE = 3 << 62, 46, 1 << 40
MAX_QUEUES_PER_GPU, MAX_WAIT_EVENTS = DOORBELL_PAGE // 8, 4096
TRAP_POLL_S = 0.001   # how often WAIT_EVENTS looks for TRAPs the SDMA fast path ran (tinygrad sleeps in it only after 200 ms of spinning)
_MEM_TYPES = kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM | kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR \
           | kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | kfd.KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP

@dataclass(frozen=True)
class Ioctl:
  """One row of an ioctl table."""
  name: str
  struct: type
  handler: str

@dataclass
class Allocation:
  """A memory object (ALLOC_MEMORY_OF_GPU). `mapped` holds the gpu_ids it is mapped to. `backed`: host memory holds it (a
  USERPTR range checked at ALLOC, a VRAM/GTT object once the CPU mmapped it); only then do its GPU mappings reach the
  GPUs' memory maps, so engines and kernels never touch a range that is not host memory."""
  handle: int
  gpu_id: int
  va: int
  size: int
  flags: int
  mmap_offset: int
  mapped: set[int] = field(default_factory=set)
  backed: bool = False
  @property
  def kind(self) -> str:
    return next((n for n in ("VRAM", "GTT", "USERPTR", "DOORBELL", "MMIO_REMAP") if self.flags & getattr(kfd, f"KFD_IOC_ALLOC_MEM_FLAGS_{n}")), "?")

@dataclass
class Event:
  """A KFD event. Signal events own a slot of the event page; memory/HW-exception events carry fault data once fired."""
  event_id: int
  type: int
  auto_reset: bool
  signaled: bool = False
  data: kfd.struct_kfd_event_data|None = None

class KFD:
  """Driver state of the process: GPUs, memory objects, events, queues, open device files. All entry points take `lock`."""
  def __init__(self, profile:GPUProfile, n_gpus:int=DEFAULT_GPUS, autorun:bool=True):
    """`autorun=False` (unit tests): no device thread; call `run_until_idle()` to execute queued work."""
    self.profile, self.autorun, self.lock = profile, autorun, threading.RLock()
    self.cond = threading.Condition(self.lock)
    self.ioctls = ctypes.c_uint64(0)   # ioctls served (idle_words)
    # the engines' C is mapped before any guest memory exists: loaded later, it could land in a range the CPU unmapped while the
    # GPU still maps it, and an engine's write there (C or syscall alike) would overwrite the library
    uaccess.dma_library()
    self.nodes = [GPUNode(n, GPU_ID_BASE + n, RENDER_MINOR_BASE + n - 1) for n in range(1, n_gpus + 1)]
    self.tree, self.roots = build_tree(profile, self.nodes), virtual_roots(self.nodes)
    self.gpus: dict[int, GPU] = {}
    self.allocs: dict[int, Allocation] = {}
    self.vram_used: collections.Counter[int] = collections.Counter()   # gpu_id -> bytes of its live VRAM objects
    self.bo_offsets: dict[int, Allocation] = {}
    self.events: dict[int, Event] = {}
    self.open_files: dict[int, Device] = {}
    self.event_page: Allocation|None = None
    self._fds, self._handles, self._bo = itertools.count(1 << 24), itertools.count(1), itertools.count(1)
    self._nonsignal = itertools.count(kfd.KFD_SIGNAL_EVENT_LIMIT)   # non-signal event ids follow the signal slots
    self.thread: DeviceThread|None = None
    self.runtime_enabled, self.acquired_vms, self.pid = False, set(), os.getpid()
    self.injected: dict[int, bytes] = {}   # caller-array address -> the memory-exception data a MOCKGPU_EMU_FAULTADDR wait wrote there

  # *** files ***
  def lookup(self, path:str):
    """The virtual node at `path`: file text, Dir or Device; None if the path is not the model's (use the real OS);
    raises FileNotFoundError for a missing path inside the model's trees."""
    path = os.path.normpath(path) if path else path
    if (node:=self.tree.get(path)) is not None: return node
    if any(path == r or path.startswith(r + "/") for r in self.roots): raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    return None

  def open_device(self, dev:Device) -> int:
    with self.lock:
      self.open_files[fd:=next(self._fds)] = dev
      return fd
  def close_device(self, fd:int):
    if os.getpid() != self.pid: return   # a forked child: the lock may have been held by the parent's device thread
    with self.lock: self.open_files.pop(fd, None)

  def gpu(self, gpu_id:int, ioctl:str) -> GPU:
    """The GPU with `gpu_id` (created on first use). Raises OSError(EINVAL) naming the ioctl for an unknown id."""
    if gpu_id not in self.gpus:
      if (node:=next((n for n in self.nodes if n.gpu_id == gpu_id), None)) is None:
        raise OSError(errno.EINVAL, f"{ioctl}: gpu_id={gpu_id:#x} is not a GPU of this system (gpu_ids: {[hex(n.gpu_id) for n in self.nodes]})")
      self.gpus[gpu_id] = GPU(self, node, self.profile)
    return self.gpus[gpu_id]

  # *** ioctl and mmap entry points ***
  def ioctl(self, dev:Device, request:int, arg) -> int:
    """Execute `request` on a device file. `arg` is the ctypes struct (or its address). Returns 0 or raises OSError."""
    if os.getpid() != self.pid:   # like the kernel's per-process KFD state, nothing survives fork (the device thread does not)
      raise OSError(errno.EBADF, f"ioctl {request:#x}: this mock KFD was opened by pid {self.pid}; a forked child must not use it")
    table, tname = (KFD_IOCTLS, "KFD") if dev.kind == "kfd" else (DRM_IOCTLS, "DRM")
    nr, typ, size = request & 0xFF, (request >> 8) & 0xFF, (request >> 16) & 0x3FFF
    if (io:=table.get((typ, nr))) is None:
      mod = kfd if dev.kind == "kfd" else amdgpu_drm   # name the request if tinygrad's autogen knows it
      known = next((n for n in dir(mod) if n.startswith(("AMDKFD_IOC_", "DRM_IOCTL_"))
                    and getattr(getattr(mod, n), "args", ())[1:3] == (typ, nr)), None)
      raise OSError(errno.ENOTTY, f"{tname} ioctl request {request:#x} (type {chr(typ)!r} nr {nr:#x}{', ' + known if known else ''}) "
                                  f"is not implemented by the mock {dev.kind} device")
    if size != ctypes.sizeof(io.struct):
      raise OSError(errno.EINVAL, f"{io.name}: argument size {size} != sizeof({io.struct.__name__}) = {ctypes.sizeof(io.struct)}")
    # tinygrad passes the struct itself; an address is copied in and out like the kernel's kfd_ioctl (EFAULT for a bad pointer)
    args, user = uaccess.ioctl_arg(io.struct, arg, f"{io.name}: argument", copy_in=bool(request >> 30 & 1))
    try:
      with self.lock:
        self.ioctls.value += 1   # wakes the device thread's idle wait (a new queue, memory a wait needs)
        getattr(self, io.handler)(args)
    finally:
      if user is not None and request >> 30 & 2: uaccess.copy_to_user(user, args, f"{io.name}: argument")
    return 0

  def mmap(self, dev:Device, start:int, size:int, prot:int, flags:int, offset:int) -> int:
    """mmap on /dev/kfd (doorbell pages) or renderD (memory objects). Returns the address or raises OSError(EINVAL)."""
    with self.lock:
      if dev.kind == "kfd":
        gpu_id = (offset >> MMAP_GPU_ID_SHIFT) & 0xFFFF
        if offset & (3 << 62) != MMAP_TYPE_DOORBELL or gpu_id not in self.gpus or size != DOORBELL_PAGE:
          raise OSError(errno.EINVAL, f"/dev/kfd mmap offset={offset:#x} size={size:#x}: only the {DOORBELL_PAGE:#x}-byte doorbell page of a "
                                      "GPU with queues (CREATE_QUEUE's doorbell_offset & ~0x1fff) can be mapped")
        return self.gpus[gpu_id].doorbells
      if (a:=self.bo_offsets.get(offset)) is None or a.gpu_id != dev.gpu_id:
        raise OSError(errno.EINVAL, f"renderD{dev.gpu_id - GPU_ID_BASE + RENDER_MINOR_BASE - 1} mmap offset={offset:#x}: not the mmap_offset of "
                                    "a memory object of this GPU (use the value ALLOC_MEMORY_OF_GPU returned)")
      if start != a.va or size != a.size or not flags & MAP_FIXED:
        raise OSError(errno.EINVAL, f"renderD mmap of handle {a.handle:#x}: the mock maps GPU VA == CPU VA, so call it with MAP_FIXED at "
                                    f"va={a.va:#x} size={a.size:#x} (got start={start:#x} size={size:#x} flags={flags:#x})")
      ret = host_mmap(a.va, a.size, fixed=True)
      if not a.backed:   # its GPU mappings become real now (MAP before the CPU mmap left them pending)
        a.backed = True
        for gpu_id in a.mapped: self._add(a, self.gpus[gpu_id], "renderD mmap")
      return ret

  # *** KFD ioctl handlers (KFD_IOCTLS) ***
  def get_version(self, a):
    a.major_version, a.minor_version = kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION

  def acquire_vm(self, a):
    gpu = self.gpu(a.gpu_id, "ACQUIRE_VM")
    if (dev:=self.open_files.get(a.drm_fd)) is None or dev.kind != "render":
      raise OSError(errno.EBADF, f"ACQUIRE_VM: drm_fd={a.drm_fd} is not an open /dev/dri/renderD* file of the mock")
    if dev.gpu_id != gpu.gpu_id: raise OSError(errno.EINVAL, f"ACQUIRE_VM: drm_fd={a.drm_fd} belongs to gpu_id={dev.gpu_id:#x}, not {a.gpu_id:#x}")
    self.acquired_vms.add(gpu.gpu_id)

  def runtime_enable(self, a):   # mode_mask 0 disables the debugger runtime (what tinygrad sends, once per GPU): nothing to do
    if a.mode_mask & ~1: raise OSError(errno.EINVAL, f"RUNTIME_ENABLE: mode_mask={a.mode_mask:#x} has unknown bits")
    self.runtime_enabled = bool(a.mode_mask & 1)

  def alloc_memory_of_gpu(self, a):
    gpu, f = self.gpu(a.gpu_id, "ALLOC_MEMORY_OF_GPU"), a.flags
    if gpu.gpu_id not in self.acquired_vms: raise OSError(errno.EINVAL, f"ALLOC_MEMORY_OF_GPU: call ACQUIRE_VM for gpu_id={a.gpu_id:#x} first")
    if a.size == 0 or a.va_addr == 0 or a.va_addr + a.size > 1 << 64:
      raise OSError(errno.EINVAL, f"ALLOC_MEMORY_OF_GPU: va_addr={a.va_addr:#x} size={a.size:#x} must be non-zero and end at or below 2^64")
    if bin(f & _MEM_TYPES).count("1") != 1:
      raise OSError(errno.EINVAL, f"ALLOC_MEMORY_OF_GPU: flags={f:#x} must name exactly one of VRAM, GTT, USERPTR, DOORBELL, MMIO_REMAP")
    if f & (kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | kfd.KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP):
      raise OSError(errno.EINVAL, f"ALLOC_MEMORY_OF_GPU: flags={f:#x}: DOORBELL and MMIO_REMAP objects are not modelled")
    if f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR and a.mmap_offset != a.va_addr:
      raise OSError(errno.EINVAL, f"ALLOC_MEMORY_OF_GPU: USERPTR at {a.mmap_offset:#x} with va_addr={a.va_addr:#x}; the mock needs GPU VA == CPU VA")
    if f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR:   # the kernel pins the user pages here: EFAULT unless they are memory of the process
      access = "writable" if f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE else "readable"
      if not getattr(uaccess, access)(a.va_addr, a.size): raise uaccess.efault("ALLOC_MEMORY_OF_GPU: USERPTR va_addr", a.va_addr, a.size, access)
      uaccess.pin(a.va_addr, a.size, access == "writable")
    if f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM:
      if (used:=self.vram_used[gpu.gpu_id]) + a.size > self.profile.vram_bytes:
        raise OSError(errno.ENOMEM, f"ALLOC_MEMORY_OF_GPU: {a.size:#x} bytes of VRAM requested, {self.profile.vram_bytes - used:#x} free")
    handle = gpu.gpu_id << 32 | next(self._handles)
    offset = a.mmap_offset if f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR else BO_MMAP_BASE + (next(self._bo) << 24)
    self.allocs[handle] = alloc = Allocation(handle, gpu.gpu_id, a.va_addr, a.size, f, offset, backed=bool(f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR))
    if f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM: self.vram_used[gpu.gpu_id] += a.size
    if not f & kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR: self.bo_offsets[offset] = alloc
    a.handle, a.mmap_offset = handle, offset

  def _alloc(self, handle:int, ioctl:str) -> Allocation:
    if (a:=self.allocs.get(handle)) is None: raise OSError(errno.EINVAL, f"{ioctl}: handle={handle:#x} is not a live memory object")
    return a

  def free_memory_of_gpu(self, a):
    alloc = self._alloc(a.handle, "FREE_MEMORY_OF_GPU")
    for gpu_id in list(alloc.mapped): self._unmap(alloc, self.gpus[gpu_id])
    del self.allocs[alloc.handle]
    if alloc.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM: self.vram_used[alloc.gpu_id] -= alloc.size
    self.bo_offsets.pop(alloc.mmap_offset, None)
    if self.event_page is alloc: self.event_page = None

  def _device_ids(self, a, ioctl:str) -> list[GPU]:
    if not 0 < a.n_devices <= len(self.nodes) or not a.device_ids_array_ptr:
      raise OSError(errno.EINVAL, f"{ioctl}: n_devices={a.n_devices} device_ids_array_ptr={a.device_ids_array_ptr:#x} "
                                  f"(1..{len(self.nodes)} ids needed)")
    return [self.gpu(i, ioctl) for i in uaccess.struct_in(ctypes.c_uint32 * a.n_devices, a.device_ids_array_ptr, f"{ioctl}: device_ids_array_ptr")]

  def map_memory_to_gpu(self, a):
    alloc = self._alloc(a.handle, "MAP_MEMORY_TO_GPU")
    gpus = self._device_ids(a, "MAP_MEMORY_TO_GPU")
    if alloc.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR and not uaccess.readable(alloc.va, alloc.size):   # unmapped since ALLOC
      raise uaccess.efault(f"MAP_MEMORY_TO_GPU: handle={alloc.handle:#x} USERPTR va_addr", alloc.va, alloc.size)
    for i, gpu in enumerate(gpus):
      if gpu.gpu_id not in alloc.mapped:
        if alloc.backed: self._add(alloc, gpu, "MAP_MEMORY_TO_GPU")
        alloc.mapped.add(gpu.gpu_id)
      a.n_success = i + 1

  def _add(self, alloc:Allocation, gpu:GPU, what:str):
    try: gpu.memory.add(alloc.va, alloc.size, f"{alloc.kind} handle={alloc.handle:#x}", granule=PAGE)   # the driver maps whole pages
    except EmuError as e: raise OSError(errno.EINVAL, f"{what} handle={alloc.handle:#x} on gpu_id={gpu.gpu_id:#x}: {e}") from e

  def _unmap(self, alloc:Allocation, gpu:GPU):
    if alloc.backed: gpu.memory.remove(alloc.va)
    alloc.mapped.discard(gpu.gpu_id)

  def unmap_memory_from_gpu(self, a):
    alloc = self._alloc(a.handle, "UNMAP_MEMORY_FROM_GPU")
    for i, gpu in enumerate(self._device_ids(a, "UNMAP_MEMORY_FROM_GPU")):
      if gpu.gpu_id not in alloc.mapped:
        raise OSError(errno.EINVAL, f"UNMAP_MEMORY_FROM_GPU: handle={alloc.handle:#x} is not mapped to gpu_id={gpu.gpu_id:#x}")
      self._unmap(alloc, gpu)
      a.n_success = i + 1

  def create_event(self, a):
    if a.event_page_offset:
      if self.event_page is not None: raise OSError(errno.EINVAL, "CREATE_EVENT: the event page is already set for this process")
      self.event_page = page = self._alloc(a.event_page_offset, "CREATE_EVENT(event_page_offset)")
      if page.size < kfd.KFD_SIGNAL_EVENT_LIMIT * 8:
        raise OSError(errno.EINVAL, f"CREATE_EVENT: event page of {page.size:#x} bytes < {kfd.KFD_SIGNAL_EVENT_LIMIT * 8:#x}")
    if a.event_type not in (kfd.KFD_IOC_EVENT_SIGNAL, kfd.KFD_IOC_EVENT_MEMORY, kfd.KFD_IOC_EVENT_HW_EXCEPTION, kfd.KFD_IOC_EVENT_NODECHANGE,
                            kfd.KFD_IOC_EVENT_DEVICESTATECHANGE, kfd.KFD_IOC_EVENT_SYSTEM_EVENT, kfd.KFD_IOC_EVENT_DEBUG_EVENT,
                            kfd.KFD_IOC_EVENT_PROFILE_EVENT, kfd.KFD_IOC_EVENT_QUEUE_EVENT):
      raise OSError(errno.EINVAL, f"CREATE_EVENT: event_type={a.event_type} is not a KFD event type")
    if a.event_type == kfd.KFD_IOC_EVENT_SIGNAL:   # signal events: id == slot of the event page, as in the kernel
      if (eid:=next((i for i in range(kfd.KFD_SIGNAL_EVENT_LIMIT) if i not in self.events), None)) is None:
        raise OSError(errno.ENOSPC, f"CREATE_EVENT: all {kfd.KFD_SIGNAL_EVENT_LIMIT} signal event slots are in use")
      a.event_slot_index = eid
    else: eid = next(self._nonsignal)
    self.events[eid] = Event(eid, a.event_type, bool(a.auto_reset))
    a.event_id, a.event_trigger_data = eid, eid

  def wait_events(self, a):
    if not 0 < a.num_events <= MAX_WAIT_EVENTS or not a.events_ptr:
      raise OSError(errno.EINVAL, f"WAIT_EVENTS: num_events={a.num_events} events_ptr={a.events_ptr:#x}")
    size, mo, what = ctypes.sizeof(kfd.struct_kfd_event_data), kfd.struct_kfd_event_data.memory_exception_data.offset, "WAIT_EVENTS: events_ptr"
    data = uaccess.struct_in(kfd.struct_kfd_event_data * a.num_events, a.events_ptr, what)   # a private copy; results are copied out
    evs = [self.events.get(d.event_id) for d in data]
    if None in evs: raise OSError(errno.EINVAL, f"WAIT_EVENTS: event_id={data[evs.index(None)].event_id} does not exist")
    if (fa:=os.environ.get("MOCKGPU_EMU_FAULTADDR")) and (inj:=self._injected_fault(fa, evs)) is not None:
      for i, e in enumerate(evs):   # an injected fault belongs to this wait only: the events themselves are left as they are
        if e.type == kfd.KFD_IOC_EVENT_MEMORY:
          uaccess.copy_to_user(dst:=a.events_ptr + i * size + mo, inj, what)
          self.injected[dst] = bytes(inj)
      a.wait_result = kfd.KFD_IOC_WAIT_RESULT_COMPLETE
      return
    for i, d in enumerate(data):   # the first wait after it takes back what the injection wrote, if the caller's array still holds it
      if (inj:=self.injected.pop(dst:=a.events_ptr + i * size + mo, None)) is not None and bytes(m:=d.memory_exception_data) == inj:
        uaccess.copy_to_user(dst, bytes(ctypes.sizeof(m)), what)
    done = (all if a.wait_for_all else any)
    def fired() -> bool:
      self._take_traps()
      return done(e.signaled for e in evs)
    end = time.monotonic() + a.timeout / 1000   # a TRAP run in C (mock/sdma.c) notifies no one: look every TRAP_POLL_S
    while not fired() and (left:=end - time.monotonic()) > 0: self.cond.wait(min(left, TRAP_POLL_S))
    a.wait_result = kfd.KFD_IOC_WAIT_RESULT_COMPLETE if done(e.signaled for e in evs) else kfd.KFD_IOC_WAIT_RESULT_TIMEOUT
    out = [(i, bytes(e.data)[:32]) for i, e in enumerate(evs) if e.data is not None and e.signaled]
    for e in evs:
      if e.signaled and e.auto_reset: e.signaled = False
    for i, b in out: uaccess.copy_to_user(a.events_ptr + i * size, b, what)   # as the kernel: memory / HW-exception data of fired events

  def _injected_fault(self, fa:str, evs:list[Event]) -> kfd.struct_kfd_hsa_memory_exception_data|None:
    """MOCKGPU_EMU_FAULTADDR (tinygrad's test_on_device_hang sets it around one call): while it is set, a wait that includes a
    memory event returns a page fault at that address on the first GPU, as if the GPU had just faulted. Nothing is recorded,
    so the GPU works again once the variable is gone; the next wait also clears the fault data it wrote into the caller's
    array (tinygrad checks that array after every wait)."""
    try: va = int(fa, 0)
    except ValueError: raise OSError(errno.EINVAL, f"WAIT_EVENTS: MOCKGPU_EMU_FAULTADDR={fa!r} is not an integer address (e.g. 0xDEADBEE1)") from None
    if not self.gpus or not any(e.type == kfd.KFD_IOC_EVENT_MEMORY for e in evs): return None
    m = kfd.struct_kfd_hsa_memory_exception_data(gpu_id=next(iter(self.gpus)), va=va)
    m.failure.NotPresent = 1
    return m

  def create_queue(self, a):
    gpu = self.gpu(a.gpu_id, "CREATE_QUEUE")
    qtypes = {kfd.KFD_IOC_QUEUE_TYPE_COMPUTE: PM4Queue, kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: AQLQueue, kfd.KFD_IOC_QUEUE_TYPE_SDMA: SDMAQueue,
              kfd.KFD_IOC_QUEUE_TYPE_SDMA_XGMI: SDMAQueue}
    if (cls:=qtypes.get(a.queue_type)) is None:
      raise OSError(errno.EINVAL, f"CREATE_QUEUE: queue_type={a.queue_type} is not modelled (COMPUTE=0, SDMA=1, COMPUTE_AQL=2, SDMA_XGMI=3)")
    if a.ring_size < 0x100 or a.ring_size & (a.ring_size - 1):
      raise OSError(errno.EINVAL, f"CREATE_QUEUE: ring_size={a.ring_size:#x} is not a power of two >= 256")
    if (a.queue_percentage & 0xFF) > kfd.KFD_MAX_QUEUE_PERCENTAGE or a.queue_priority > kfd.KFD_MAX_QUEUE_PRIORITY:
      raise OSError(errno.EINVAL, f"CREATE_QUEUE: queue_percentage={a.queue_percentage & 0xFF} queue_priority={a.queue_priority} out of range")
    for what, addr, size in (("ring_base_address", a.ring_base_address, a.ring_size), ("read_pointer_address", a.read_pointer_address, 8),
                             ("write_pointer_address", a.write_pointer_address, 8)):
      if gpu.memory.find(addr, size) is None:
        raise OSError(errno.EINVAL, f"CREATE_QUEUE: {what}={addr:#x} (+{size:#x}) is not mapped to gpu_id={gpu.gpu_id:#x}")
    if len(gpu.queues) >= MAX_QUEUES_PER_GPU: raise OSError(errno.ENOSPC, f"CREATE_QUEUE: gpu_id={gpu.gpu_id:#x} has {MAX_QUEUES_PER_GPU} queues")
    slot = len(gpu.queues)
    for what, addr in (("read_pointer_address", a.read_pointer_address), ("write_pointer_address", a.write_pointer_address)):
      try: gpu.write_int(addr, 0, 8, "CREATE_QUEUE", what)
      except QueueFault as e: raise OSError(errno.EFAULT, f"CREATE_QUEUE: {e}") from None
    gpu.queues.append(cls(gpu, slot, a.ring_base_address, a.ring_size, a.read_pointer_address, gpu.doorbells + slot * 8,
                          *((a.write_pointer_address,) if cls is AQLQueue else ())))
    a.queue_id = sum(len(g.queues) for g in self.gpus.values()) - 1
    a.doorbell_offset = MMAP_TYPE_DOORBELL | gpu.gpu_id << MMAP_GPU_ID_SHIFT | slot * 8
    if self.thread is None and self.autorun: self.thread = DeviceThread(self, warm_up=self.profile.arch)

  # *** the GPU side: scheduling, interrupts and errors ***
  def run_once(self) -> bool:
    """One scheduling round over every queue of every GPU (round-robin). Returns True if any queue made progress."""
    with self.lock:
      progress = False
      for q in [q for g in self.gpus.values() for q in g.queues]: progress |= q.run()
      if progress: self.cond.notify_all()
      return progress

  def _take_traps(self):
    for g in self.gpus.values():
      for q in g.queues:
        if isinstance(q, SDMAQueue): q.take_traps()

  def idle_words(self) -> list[tuple[ctypes.c_uint64, int, tuple|None]] | None:
    """For the device thread's idle wait: (word, value seen, what C runs the queue with or None) of the ioctl counter and of
    every live queue's doorbell (in the GPUs' doorbell pages, which are never unmapped); an SDMA queue's packets run in C
    right when its doorbell moves (SDMAQueue.fast_words). None while a queue waits on guest memory or a packet's rest, which
    only a round in Python can re-check."""
    with self.lock:
      qs = [q for g in self.gpus.values() for q in g.queues if q.error is None]
      if any(q.blocked_on for q in qs): return None
      return [(self.ioctls, self.ioctls.value, None), *[(q.doorbell, q.seen, q.fast_words() if isinstance(q, SDMAQueue) else None) for q in qs]]

  def run_until_idle(self, max_rounds:int=10000) -> int:
    """Run rounds until no queue makes progress (all done or blocked). Returns the number of rounds with progress."""
    for n in range(max_rounds):
      if not self.run_once(): return n
    return max_rounds

  # *** DRM ioctl handlers (DRM_IOCTLS) ***
  def amdgpu_info(self, a):
    if a.query != amdgpu_drm.AMDGPU_INFO_DEV_INFO: raise OSError(errno.EINVAL, f"DRM AMDGPU_INFO: query={a.query:#x} is not modelled (only DEV_INFO)")
    p, props = self.profile, dict(self.profile.props)
    info = amdgpu_drm.struct_drm_amdgpu_info_device(device_id=p.device_id, family=p.family, gpu_counter_freq=100000,
      num_shader_engines=(se:=props["array_count"] // props["simd_arrays_per_engine"]), num_shader_arrays_per_engine=props["simd_arrays_per_engine"],
      cu_active_number=props["simd_count"] // props["simd_per_cu"])
    for s in range(se):
      for sa in range(props["simd_arrays_per_engine"]): info.cu_bitmap[s % 4][sa + (s // 4) * 2] = (1 << props["cu_per_simd_array"]) - 1
    uaccess.copy_to_user(a.return_pointer, bytes(info)[:a.return_size], "DRM AMDGPU_INFO: return_pointer")

  def interrupt(self, gpu:GPU, ctxid:int):
    """An end-of-pipe interrupt with context `ctxid` (RELEASE_MEM int_sel, SDMA TRAP): fire that signal event, or every
    signal event if the id names none (gfx9 sends 0), like the kernel's interrupt handler."""
    with self.lock:
      if (ev:=self.events.get(ctxid)) is not None and ev.type == kfd.KFD_IOC_EVENT_SIGNAL: ev.signaled = True
      else:
        for ev in self.events.values():
          if ev.type == kfd.KFD_IOC_EVENT_SIGNAL: ev.signaled = True
      self.cond.notify_all()

  def _fire_fault(self, gpu:GPU|None, va:int|None, reset_cause:int|None):
    if gpu is None: return
    for ev in self.events.values():
      if va is not None and ev.type == kfd.KFD_IOC_EVENT_MEMORY and ev.data is None:
        ev.data = kfd.struct_kfd_event_data(event_id=ev.event_id)
        ev.data.memory_exception_data.gpu_id, ev.data.memory_exception_data.va = gpu.gpu_id, va
        ev.data.memory_exception_data.failure.NotPresent, ev.signaled = 1, True
      if reset_cause is not None and ev.type == kfd.KFD_IOC_EVENT_HW_EXCEPTION and ev.data is None:
        ev.data = kfd.struct_kfd_event_data(event_id=ev.event_id)
        hw = ev.data.hw_exception_data
        hw.gpu_id, hw.reset_type, hw.reset_cause, hw.memory_lost = gpu.gpu_id, kfd.KFD_HW_EXCEPTION_PER_ENGINE_RESET, reset_cause, 0
        ev.signaled = True
    self.cond.notify_all()

  def report_queue_error(self, gpu:GPU, exc:BaseException) -> str:
    """A queue of `gpu` stopped with `exc`: faults at a GPU virtual address (global accesses, instruction fetches, engines
    touching unmapped memory) fire the MEMORY events (tinygrad: "MMU fault: 0x<va>"), anything else the HW_EXCEPTION events
    (tinygrad: "HW fault: ..."), also LDS/scratch/ordered-count/VGPR faults, whose address is an offset or index (FaultReport.va;
    the queue's stderr line says what it was). Returns what tinygrad will report."""
    with self.lock:
      if (va:=exc.report.va if isinstance(exc, GPUFault) else exc.addr if isinstance(exc, QueueFault) else None) is not None:
        self._fire_fault(gpu, va, None)
        return f"MMU fault: 0x{va:X}"
      self._fire_fault(gpu, None, kfd.KFD_HW_EXCEPTION_GPU_HANG)
      return "HW fault"

def _table(mod, prefix:str, rows:dict[str, str]) -> dict[tuple[int, int], Ioctl]:
  out = {}
  for name, handler in rows.items():
    _, base, nr, struct = getattr(mod, prefix + name).args
    out[(base, nr)] = Ioctl(name, struct, handler)
  return out

# ioctl name (AMDKFD_IOC_<name> in tinygrad.runtime.autogen.kfd) -> KFD method
KFD_IOCTLS = _table(kfd, "AMDKFD_IOC_", {
  "GET_VERSION": "get_version", "ACQUIRE_VM": "acquire_vm", "RUNTIME_ENABLE": "runtime_enable",
  "ALLOC_MEMORY_OF_GPU": "alloc_memory_of_gpu", "FREE_MEMORY_OF_GPU": "free_memory_of_gpu",
  "MAP_MEMORY_TO_GPU": "map_memory_to_gpu", "UNMAP_MEMORY_FROM_GPU": "unmap_memory_from_gpu",
  "CREATE_EVENT": "create_event", "WAIT_EVENTS": "wait_events", "CREATE_QUEUE": "create_queue",
})
# ioctl name (DRM_IOCTL_<name> in tinygrad.runtime.autogen.amdgpu_drm) -> KFD method, on /dev/dri/renderD*
DRM_IOCTLS = _table(amdgpu_drm, "DRM_IOCTL_", {"AMDGPU_INFO": "amdgpu_info"})

_system: KFD|None = None
_system_lock = threading.Lock()

def system() -> KFD:
  """The process-wide KFD model, created on first use from DEV's AMD arch and `MOCKGPU_GPUS` (default 6).

  Raises:
    UnknownArchError: DEV names an arch without a profile.
  """
  global _system
  with _system_lock:
    if _system is None:
      from tinygrad.helpers import DEV
      _system = KFD(profile_for(DEV.target("AMD").arch), int(os.environ.get("MOCKGPU_GPUS", DEFAULT_GPUS)))
    return _system
