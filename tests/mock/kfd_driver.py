"""A tiny user-space driver over the KFD model (no tinygrad runtime, only its structs): opens GPUs, allocates USERPTR
memory, creates queues, writes packets and rings doorbells. Queues run only when a test calls `run()`."""
import ctypes
from tinygrad.runtime.autogen import kfd
from tinygrad.runtime.autogen.am import pm4_nv
from mockgpu.mock.kfd import KFD
from mockgpu.mock.profiles import profile_for
from mockgpu.mock.sysfs import Device

USERPTR = kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE

def request(fn, struct) -> int:
  d, base, nr, _ = fn.args
  return d << 30 | ctypes.sizeof(struct) << 16 | base << 8 | nr

class Ring:
  """Producer side of one queue: writes dwords modulo the ring, publishes the write pointer and rings the doorbell."""
  def __init__(self, drv, queue, ring_addr, size, unit, doorbell_addr):
    self.drv, self.q, self.addr, self.size, self.unit, self.put = drv, queue, ring_addr, size, unit, 0
    self.dw, self.doorbell = (ctypes.c_uint32 * (size // 4)).from_address(ring_addr), ctypes.c_uint64.from_address(doorbell_addr)
  def write(self, *dwords, ring=True):
    for v in dwords:
      self.dw[(self.put * self.unit // 4) % len(self.dw)] = v
      self.put += 4 // self.unit
    if ring: self.doorbell.value = self.put
    return self
  def pm4(self, op, *payload, ring=True): return self.write(pm4_nv.PACKET3(op, len(payload) - 1), *payload, ring=ring)

class Driver:
  def __init__(self, arch="gfx1100", n_gpus=2):
    self.kfd, self.dev, self.keep = KFD(profile_for(arch), n_gpus, autorun=False), Device("kfd"), []
    self.gpu_ids, self.doorbell_pages = [n.gpu_id for n in self.kfd.nodes], {}
    for gid in self.gpu_ids:
      fd = self.kfd.open_device(Device("render", gid))
      self.io(kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=fd, gpu_id=gid)
  def io(self, fn, dev=None, **kw):
    s = fn.args[3](**kw)
    assert self.kfd.ioctl(dev or self.dev, request(fn, s), s) == 0
    return s
  def host(self, size) -> int:
    buf = ctypes.create_string_buffer(size + 0x1000)
    self.keep.append(buf)
    return (ctypes.addressof(buf) + 0xFFF) & ~0xFFF
  def userptr(self, size, gpus=(0,)) -> tuple[int, int]:
    addr = self.host(size)
    h = self.io(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=addr, size=size, gpu_id=self.gpu_ids[gpus[0]], flags=USERPTR, mmap_offset=addr).handle
    for g in gpus: self.map(h, g)
    return addr, h
  def map(self, handle, gpu):
    ids = (ctypes.c_uint32 * 1)(self.gpu_ids[gpu])
    return self.io(kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=handle, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
  def queue(self, gpu=0, qtype=kfd.KFD_IOC_QUEUE_TYPE_COMPUTE, ring_size=0x1000) -> Ring:
    ring, _ = self.userptr(ring_size, (gpu,))
    gart, _ = self.userptr(0x100, (gpu,))
    q = self.io(kfd.AMDKFD_IOC_CREATE_QUEUE, ring_base_address=ring, ring_size=ring_size, gpu_id=self.gpu_ids[gpu], queue_type=qtype,
                queue_percentage=100, queue_priority=7, write_pointer_address=gart + 0x38, read_pointer_address=gart + 0x80)
    base = q.doorbell_offset & ~0x1FFF
    if gpu not in self.doorbell_pages: self.doorbell_pages[gpu] = self.kfd.mmap(self.dev, 0, 0x2000, 3, 1, base)
    queue = self.kfd.gpus[self.gpu_ids[gpu]].queues[-1]
    return Ring(self, queue, ring, ring_size, 4 if qtype == kfd.KFD_IOC_QUEUE_TYPE_COMPUTE else 1,
                self.doorbell_pages[gpu] + q.doorbell_offset - base)
  def events(self):
    page, h = self.userptr(0x8000)
    self.io(kfd.AMDKFD_IOC_CREATE_EVENT, event_page_offset=h)
    return [self.io(kfd.AMDKFD_IOC_CREATE_EVENT, event_type=t, auto_reset=1) for t in
            (kfd.KFD_IOC_EVENT_SIGNAL, kfd.KFD_IOC_EVENT_MEMORY, kfd.KFD_IOC_EVENT_HW_EXCEPTION)]
  def wait(self, evs, timeout=0):
    arr = (kfd.struct_kfd_event_data * len(evs))(*[kfd.struct_kfd_event_data(event_id=e.event_id) for e in evs])
    r = self.io(kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(arr), num_events=len(evs), wait_for_all=0, timeout=timeout)
    return r, arr
  def run(self): return self.kfd.run_until_idle()
  @staticmethod
  def u32(addr): return ctypes.c_uint32.from_address(addr).value
  @staticmethod
  def u64(addr): return ctypes.c_uint64.from_address(addr).value

