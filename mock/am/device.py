"""`PCIGPU`: one mock PCI AMD GPU as tinygrad's AM driver sees it: BAR0 (VRAM), BAR2 (doorbells) and BAR5 (registers) are
memfds the driver mmaps; config space; the discovery table; and the device model behind them, run by the same
`DeviceThread` as the KFD path (`run_once` is one round).

A round: the mailboxes (SMU, PSP), the simple handshakes (fault-register clears, RLC safe mode, HQD dequeue, the MM-hub
invalidation semaphore),
then a snapshot of every queue's doorbell, then the TLB flushes (a GC or MM invalidation request marks the tables dirty; an
MM request is walked *before* it is acknowledged, so the mapping is host memory when `map_range` returns), then queue
activation (compute: CP_HQD_ACTIVE; SDMA: RB_CNTL.rb_enable) and the queues, each run only up to its snapshot: work is never
run against page tables older than the doorbell that announced it. A queue that stops is reported through the IH ring
(`ih.IH`: VM fault entry and fault registers, SQ or CP error), as tinygrad's AM driver reads faults."""
from __future__ import annotations
import ctypes, mmap, os, sys, threading
from typing import Callable, Iterable
from tinygrad.runtime.autogen import libc
from mockgpu.mock.am import discovery
from mockgpu.mock.am.ih import IH
from mockgpu.mock.am.mmu import MMU, HostVA, PageMap
from mockgpu.mock.am.psp import PSP, SMU
from mockgpu.mock.am.regs import BAR5_BYTES, RegisterFile
from mockgpu.mock.errors import MockDeviceError
from mockgpu.mock.device import DeviceThread
from mockgpu.mock.gpu import GPU, Queue
from mockgpu.mock.pm4 import PM4Queue
from mockgpu.mock.profiles import GPUProfile
from mockgpu.mock.sdma import SDMAQueue
from mockgpu.mock.sysfs import GPUNode

__all__ = ["PCIGPU", "BAR2_BYTES", "MAX_RING"]

BAR2_BYTES, MAX_RING = 0x2000, 1 << 28   # doorbell BAR; the largest ring the model accepts (tinygrad uses <= 16 MiB)
GPU_ID = 0xB000

def _map(fd:int, size:int, addr:int=0) -> int:
  flags = mmap.MAP_SHARED | (0x10 if addr else 0)
  if (ret:=libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, fd, 0)) in (None, 0xffffffffffffffff, -1):
    raise OSError(ctypes.get_errno(), f"mapping a {size:#x}-byte mock PCI BAR failed")
  return ret

class _Snapshot:
  """A queue that runs only up to the doorbell value read at the start of the round (`snap`, set by `latch`), not the live
  doorbell. A queue starts empty (the MQD's write pointer is 0): the value its doorbell holds when it is activated is an old
  queue's (tinygrad recovers a faulted queue by setting it up again on the same ring and doorbell), so only a new write counts."""
  snap, stale = 0, None
  def latch(self):
    if (v:=self.doorbell.value) != self.stale: self.snap, self.stale = v, None
  @property
  def put(self) -> int: return self.snap

class AMPM4Queue(_Snapshot, PM4Queue): pass
class AMSDMAQueue(_Snapshot, SDMAQueue): pass

class PCIGPU:
  """The mock PCI GPU `index` (of its bus) for `profile`. `fds[bar]` are the BAR memfds (mapped at `vram`, `doorbells`, `mmio`);
  `config` the 4 KiB config space. `autorun=False` (unit tests): no device thread, call `run_once()`. `windows`, `va_window`,
  `pagemap` and `host`: see `mmu.MMU` (the memory other than host pages the GPU reaches as system memory: the USB bridge's, or
  its peers' VRAM; the host range its GPU VAs are mirrored into; the process's fake frames and host address space, shared by
  the GPUs of one bus, new ones if not given)."""
  def __init__(self, profile:GPUProfile, autorun:bool=True, windows:tuple[tuple[int, int, int], ...]|Callable[[], Iterable[tuple[int, int, int]]]=(),
               va_window:tuple[int, int]|None=None, pagemap:PageMap|None=None, host:HostVA|None=None, index:int=0):
    self.profile, self.index, self.lock, self.vram_size = profile, index, threading.RLock(), profile.vram_bytes
    self.sizes = {0: self.vram_size, 2: BAR2_BYTES, 5: BAR5_BYTES}
    self.fds = {b: os.memfd_create(f"mockgpu-bar{b}", os.MFD_CLOEXEC) for b in self.sizes}
    for b, sz in self.sizes.items(): os.ftruncate(self.fds[b], sz)
    self.vram, self.doorbells, self.mmio = (_map(self.fds[b], sz) for b, sz in self.sizes.items())
    self.config = bytearray(4096)
    self.config[0:4] = (0x1002 | profile.device_id << 16).to_bytes(4, "little")
    self.config[8:12] = (0x03000000).to_bytes(4, "little")   # class: display controller, VGA-compatible
    ctypes.memmove(self.vram + self.vram_size - discovery.OFFSET, discovery.build(profile), discovery.SIZE)
    self.regs = r = RegisterFile(profile, self.mmio)
    r.mem[0xde3] = self.vram_size >> 20   # mmRCC_CONFIG_MEMSIZE (MiB), read before the register tables exist
    r["regMMMC_VM_FB_LOCATION_TOP"] = (self.vram_size - 1) >> 24
    r["regMMVM_INVALIDATE_ENG17_SEM"], r["regGCVM_INVALIDATE_ENG17_ACK"] = 1, 0xFFFF   # GC flushes need no walk: the MM flush follows
    self.psp, self.smu, self.ih = PSP(r, self.vram_at), SMU(r), IH(r, self.vram_at, profile.family)
    self.gpu, self.allocs = GPU(self, GPUNode(index + 1, GPU_ID + index, 128 + index), profile), {}   # allocs: no KFD memory objects on this path
    self.pagemap = PageMap() if pagemap is None else pagemap
    self.mmu = MMU(self.gpu, self.fds[0], self.vram, self.vram_size, self.pagemap, HostVA() if host is None else host, windows, va_window)
    self.pq: AMPM4Queue|None = None
    self.sq: AMSDMAQueue|None = None
    self.pq_key = self.sq_key = None
    self.dirty, self.reported = False, set()
    self.sdma = "regSDMA_GFX" if profile.sdma[:2] == (4,4) else "regSDMA0_QUEUE0"
    self.thread = DeviceThread(self, warm_up=self.profile.arch) if autorun else None

  def __repr__(self): return f"PCIGPU({self.index}, {self.profile.arch}, vram={self.vram_size >> 30} GiB)"

  def vram_at(self, paddr:int, size:int) -> int:
    """Host address of VRAM bytes `[paddr, paddr+size)`. Raises MockDeviceError if they are not all VRAM."""
    if not 0 <= paddr <= self.vram_size - size: raise MockDeviceError(f"VRAM address {paddr:#x}+{size:#x} lies beyond VRAM ({self.vram_size:#x} bytes)")
    return self.vram + paddr

  def report(self, what:str):
    """One stderr line per distinct problem the model found in what the driver programmed (the model goes on)."""
    if what not in self.reported:
      self.reported.add(what)
      print(f"mockgpu: {self}: {what}", file=sys.stderr)

  # *** what the reused GPU and Queue classes call on their owner (the KFD model on the KFD path) ***
  def interrupt(self, gpu:GPU, ctxid:int): pass   # AM polls signals; end-of-pipe interrupts carry nothing it reads

  def report_queue_error(self, gpu:GPU, exc:BaseException) -> str: return self.ih.report(exc)

  # *** one round of the device thread ***
  def run_once(self) -> bool:
    with self.lock:
      r = self.regs
      for part in (self.smu, self.psp):
        try: part.poll()
        except MockDeviceError as e: self.report(str(e))
      self.ih.poll()
      if r["regRLC_SAFE_MODE"] & 1: r["regRLC_SAFE_MODE"] &= ~1   # safe mode entered at once
      if r["regCP_HQD_DEQUEUE_REQUEST"]:
        r["regCP_HQD_DEQUEUE_REQUEST"], r["regCP_HQD_ACTIVE"], self.pq, self.pq_key = 0, 0, None, None
      if r["regMMVM_INVALIDATE_ENG17_SEM"] == 0: r["regMMVM_INVALIDATE_ENG17_ACK"], r["regMMVM_INVALIDATE_ENG17_SEM"] = 0, 1   # released
      queues = [q for q in (self.pq, self.sq) if q is not None]
      for q in queues: q.latch()
      if r["regGCVM_INVALIDATE_ENG17_REQ"]: r["regGCVM_INVALIDATE_ENG17_REQ"], self.dirty = 0, True
      if mm:=r["regMMVM_INVALIDATE_ENG17_REQ"] != 0: r["regMMVM_INVALIDATE_ENG17_REQ"], self.dirty = 0, True
      if self.dirty:
        self.walk()
        self.dirty = False
      if mm: r["regMMVM_INVALIDATE_ENG17_ACK"] = 0xFFFF
      self._activate()
      return any([q.run() for q in queues])

  def walk(self):
    """Walk the VMID 0 page tables (GC hub's, or the MM hub's before the GC hub is programmed)."""
    r = self.regs
    for hub in ("GC", "MM"):
      if (base:=r.u64(f"reg{hub}VM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", f"reg{hub}VM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32")) & 1:
        start = r.u64(f"reg{hub}VM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32", f"reg{hub}VM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32") << 12
        return self.mmu.walk(base & ~1 & ((1 << 48) - 1), start)

  def _queue(self, kind:str, cls, ring:int, size:int, rptr:int, db:int) -> Queue|None:
    if not 0x100 <= size <= MAX_RING: self.report(f"{kind} queue at ring {ring:#x}: ring size {size:#x} is not 256 B .. {MAX_RING:#x}; not started")
    elif not 0 <= db <= BAR2_BYTES - 8: self.report(f"{kind} queue at ring {ring:#x}: doorbell byte {db:#x} lies beyond the {BAR2_BYTES:#x}-byte doorbell BAR; not started")
    else:
      q = cls(self.gpu, len(self.gpu.queues), ring, size, rptr, self.doorbells + db)
      q.stale = q.doorbell.value
      return q
    return None

  def _activate(self):
    r = self.regs
    if r["regCP_HQD_ACTIVE"] & 1:
      key = (r.u64("regCP_HQD_PQ_BASE", "regCP_HQD_PQ_BASE_HI") << 8, 4 << (r.field("regCP_HQD_PQ_CONTROL", "queue_size") + 1),
             r.u64("regCP_HQD_PQ_RPTR_REPORT_ADDR", "regCP_HQD_PQ_RPTR_REPORT_ADDR_HI"), r.field("regCP_HQD_PQ_DOORBELL_CONTROL", "doorbell_offset") * 4)
      if key != self.pq_key: self.pq, self.pq_key = self._queue("compute", AMPM4Queue, *key), key
    s = self.sdma
    if r[f"{s}_RB_CNTL"] & 1:
      key = (r.u64(f"{s}_RB_BASE", f"{s}_RB_BASE_HI") << 8, 4 << r.field(f"{s}_RB_CNTL", "rb_size"),
             r.u64(f"{s}_RB_RPTR_ADDR_LO", f"{s}_RB_RPTR_ADDR_HI"), r.field(f"{s}_DOORBELL_OFFSET", "offset") * 4)
      if key != self.sq_key: self.sq, self.sq_key = self._queue("SDMA", AMSDMAQueue, *key), key
    elif self.sq is not None: self.sq, self.sq_key = None, None
