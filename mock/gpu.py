"""AMD GPU model: one `GPU` per topology node, the `Queue` machinery shared by the PM4 and SDMA engines, the 100 MHz GPU
clock; `mock/device.py` has what it shares with the NVIDIA model: the memory registry, the stop report and the
`DeviceThread` that runs every queue of every GPU (docs/contracts/kfd.md section 8, approach B: no builtins patching).

The device thread polls each queue's doorbell (the write pointer tinygrad stores after filling the ring), round-robins
runnable queues with a small packet budget, and re-checks blocked waits on every round, so memory written by the CPU or by
another queue (signals, kick signals of HCQGraph) unblocks them. A queue that fails stops; its error is printed to stderr
and reported through the KFD events (memory fault or hardware exception), so tinygrad raises its own error."""
from __future__ import annotations
import ctypes, os, struct, sys, time
from typing import TYPE_CHECKING
from mockgpu.mock.device import DeviceMemory, WaitWatch, host_mmap, report_stop, UNMAPPED
from mockgpu.mock.profiles import GPUProfile
from mockgpu.mock.sysfs import GPUNode
if TYPE_CHECKING: from mockgpu.mock.kfd import KFD

__all__ = ["gpu_clock", "GPU", "Queue", "DOORBELL_PAGE", "TRACE"]

DOORBELL_PAGE = 0x2000    # bytes of doorbells per GPU; 8-byte slots
TRACE = os.environ.get("MOCKGPU_TRACE", "0") != "0"   # print every executed packet to stderr
def gpu_clock() -> int:
  """The GPU timestamp counter: 100 MHz, monotonic, shared by all queues and GPUs (tinygrad divides by 100 to get us)."""
  return time.perf_counter_ns() // 10

class GPU(DeviceMemory):
  """One emulated GPU: identity, the ranges mapped to it (`memory`, checked by every engine and by the emulator, with the
  checked copies of `DeviceMemory`), its doorbell page and its queues."""
  def __init__(self, kfd:KFD, node:GPUNode, profile:GPUProfile):
    super().__init__()
    self.kfd, self.node, self.profile, self.gpu_id = kfd, node, profile, node.gpu_id
    self.queues: list[Queue] = []
    self.doorbells = host_mmap(0, DOORBELL_PAGE)
    self.stats = {"dispatches": 0, "wave_instructions": 0, "emu_seconds": 0.0, "indirect_buffers": 0, "oob_reads": 0}

  def __repr__(self): return f"GPU(node={self.node.node} gpu_id={self.gpu_id:#x} arch={self.profile.arch})"

  def unmapped(self, addr:int, size:int) -> str:
    """An MMU fault, or the memory object the range is in when the CPU never mmapped it (the mock backs VRAM/GTT with it)."""
    pending = next((a for a in self.kfd.allocs.values() if self.gpu_id in a.mapped and not a.backed and a.va <= addr < a.va + a.size), None)
    return UNMAPPED if pending is None else (f"is in memory object handle={pending.handle:#x} ({pending.kind}), which is mapped to this GPU "
      "but was never mmapped by the CPU: the mock backs VRAM/GTT objects with their renderD mmap (mmap(va, size, MAP_FIXED, mmap_offset)), so map it first")

class Queue:
  """A ring buffer queue as the KFD creates it. Subclasses implement `step()` (execute one packet or report blocked).

  Pointers count dwords (PM4) or bytes (SDMA, `put_unit` 4). `rptr` is the next position to execute; it is published to
  `rptr_addr` after progress. The doorbell slot holds the producer's write pointer (tinygrad stores the same value to the
  write pointer in memory first), so the doorbell is both the trigger and the limit.

  Like the CP's prefetcher, `dwords` fetches the published part of the ring ahead of the packet being executed (up to
  `FETCH` dwords, in one checked read): the producer may not rewrite those dwords before the read pointer passes them.
  One read per round instead of two per packet matters because every read releases the GIL, which tinygrad's signal
  wait, spinning in Python on the other thread, then holds for a switch interval."""
  engine = "queue"
  budget = 64   # packets per scheduling round, so one busy queue cannot starve the others
  put_unit = 1   # bytes per unit of the read / write pointers divided by 4: 1 when they count dwords
  FETCH = 4096   # most dwords one ring read fetches ahead

  def __init__(self, gpu:GPU, qid:int, ring:int, ring_size:int, rptr_addr:int, doorbell_addr:int):
    self.gpu, self.qid, self.ring, self.ring_size, self.rptr_addr = gpu, qid, ring, ring_size, rptr_addr
    self.doorbell = ctypes.c_uint64.from_address(doorbell_addr)
    self.rptr, self.error, self.blocked_on, self.waits_for, self.watch = 0, None, "", "", WaitWatch()
    self.fetched: list = [0, []]   # [first dword position, the dwords fetched from there] (ahead)
    self.seen = 0   # the doorbell's value when the last round of this queue started

  def __repr__(self): return f"{self.engine} queue {self.qid} of {self.gpu}"
  @property
  def put(self) -> int: return self.doorbell.value

  def run(self) -> bool:
    """Execute up to `budget` packets. Returns True if anything was consumed. Errors stop the queue (see `stop`)."""
    if self.error is not None: return False
    progress, self.seen = False, self.doorbell.value   # what an idle wait compares the doorbell against (KFD.idle_words)
    try:
      for _ in range(self.budget):
        if not self.step(): break
        progress = True
      if progress: self.gpu.write_int(self.rptr_addr, self.rptr, 8, self.engine, "read pointer")
    except Exception as e: self.stop(e)
    self.watch.update(self, "" if self.error is not None else self.blocked_on, progress)
    return progress

  def step(self) -> bool: raise NotImplementedError

  def trace(self, name:str, where:str, payload:list[int]):
    """With MOCKGPU_TRACE=1: one stderr line per executed packet."""
    print(f"mockgpu: {self} {where}: {name} {' '.join(f'{v:#x}' for v in payload[:12])}{' ...' if len(payload) > 12 else ''}", file=sys.stderr)

  def dword(self, pos:int) -> int:
    """Ring dword at pointer position `pos` (in dwords), read modulo the ring."""
    return self.dwords(pos, 1)[0]

  def ahead(self, cache:list, pos:int, n:int, end:int, read) -> list[int]:
    """`n` dwords at position `pos` of a ring or IB published up to `end`: from `cache` ([first position, the dwords],
    updated in place), else `read(pos, k)` fetches them with the dwords after them up to `end` (at most FETCH). Dwords
    past `end` (a length probe of a packet published in part) are returned but never kept."""
    start, got = cache
    if start <= pos and pos + n <= start + len(got): return got[pos - start:pos - start + n]
    out = read(pos, max(n, min(end - pos, self.FETCH)))
    if pos + len(out) <= end: cache[:] = [pos, out]
    return out[:n]

  def dwords(self, pos:int, n:int) -> list[int]:
    """`n` ring dwords from pointer position `pos` (in dwords, not yet wrapped), read modulo the ring through the GPU's
    checked reads (a ring freed or unmapped while the queue lives is a QueueFault, not a crash). The dwords up to the write
    pointer are fetched with them (see the class doc)."""
    return self.ahead(self.fetched, pos, n, self.put // self.put_unit, self._ring_read)

  def _ring_read(self, pos:int, n:int) -> list[int]:
    size, p, out = self.ring_size // 4, pos % (self.ring_size // 4), []
    while n > 0:
      k = min(n, size - p)
      out += struct.unpack(f"<{k}I", self.gpu.read(self.ring + 4 * p, 4 * k, self.engine, "ring"))
      n, p = n - k, 0
    return out

  def stop(self, exc:BaseException):
    """Stop this queue for good: print a report to stderr and raise the KFD event tinygrad will see."""
    self.error = exc
    report_stop(self, f"rptr={self.rptr:#x}", self.gpu.kfd.report_queue_error(self.gpu, exc), exc)
