"""AMD GPU model: one `GPU` per topology node, the `Queue` machinery shared by the PM4 and SDMA engines, the 100 MHz GPU
clock, and the `DeviceThread` that runs every queue of every GPU (contract-kfd section 8, approach B: no builtins patching).

The device thread polls each queue's doorbell (the write pointer tinygrad stores after filling the ring), round-robins
runnable queues with a small packet budget, and re-checks blocked waits on every round, so memory written by the CPU or by
another queue (signals, kick signals of HCQGraph) unblocks them. A queue that fails stops; its error is printed to stderr
and reported through the KFD events (memory fault or hardware exception), so tinygrad raises its own error."""
from __future__ import annotations
import contextlib, ctypes, errno, gc, mmap, os, struct, sys, threading, time, traceback, weakref
from typing import TYPE_CHECKING
from tinygrad.runtime.autogen import libc
from mockgpu.emu.memory import MemoryMap
from mockgpu.errors import MockGPUError
from mockgpu.mock import uaccess
from mockgpu.mock.errors import QueueFault
from mockgpu.mock.profiles import GPUProfile
from mockgpu.mock.sysfs import GPUNode
from mockgpu.usage import timed
if TYPE_CHECKING: from mockgpu.mock.kfd import KFD

__all__ = ["gpu_clock", "host_mmap", "device_work", "GPU", "Queue", "DeviceThread", "WaitWatch", "wait_report_s", "DOORBELL_PAGE", "MAP_FIXED", "TRACE", "GONE"]

DOORBELL_PAGE = 0x2000    # bytes of doorbells per GPU; 8-byte slots
TRACE = os.environ.get("MOCKGPU_TRACE", "0") != "0"   # print every executed packet to stderr
MAP_FIXED, MAP_FIXED_NOREPLACE = 0x10, 0x100000   # Linux values (Python's mmap module does not export them)
GONE = ("is mapped to this GPU but is no longer host memory of this process (unmapped or protected by the CPU while still mapped to the "
        "GPU; unmap it from the GPU first)")   # why an engine access failed although the range is mapped

def gpu_clock() -> int:
  """The GPU timestamp counter: 100 MHz, monotonic, shared by all queues and GPUs (tinygrad divides by 100 to get us)."""
  return time.perf_counter_ns() // 10

def host_mmap(addr:int, size:int, fixed:bool=False, replace:bool=True) -> int:
  """A real shared anonymous read-write mapping (exactly at `addr` if `fixed`; with `replace=False` only where nothing is
  mapped yet, MAP_FIXED_NOREPLACE). Raises OSError like mmap(2) (EEXIST if `replace=False` and the range is in use)."""
  flags = mmap.MAP_SHARED | mmap.MAP_ANONYMOUS | ((MAP_FIXED if replace else MAP_FIXED_NOREPLACE) if fixed else 0)
  if (ret:=libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)) in (None, 0xffffffffffffffff, -1):
    raise OSError(ctypes.get_errno(), f"host mmap of {size:#x} bytes at {addr:#x} failed")
  if fixed and ret != addr:   # a kernel before 4.17 takes MAP_FIXED_NOREPLACE for a hint
    libc.munmap(ret, size)
    raise OSError(errno.EEXIST, f"host mmap of {size:#x} bytes at {addr:#x}: the range is in use")
  return ret

def device_work(fn, thread, model):
  """`fn(thread, model)` (one scheduling round of a device thread) with Python's cyclic GC switched off while it runs, if it
  was on (tinygrad's own `disable_gc` around realize does the same). A collection runs the finalizers of what it frees on
  the thread whose allocation started it, and tinygrad's finalizers (HCQGraph.__del__, buffer frees) wait for the GPU,
  i.e. for the device thread: started there, they deadlock the GPU until tinygrad's 30 s wait timeout, and the device
  stays dead. So the device loops allocate no GC-tracked object outside this call (no closures or bound methods: `fn` is
  the plain function, the idle wait a C-level lock), and collections always start on tinygrad's threads."""
  was = gc.isenabled()
  if was: gc.disable()
  try: return fn(thread, model)
  finally:
    if was: gc.enable()

def wait_report_s() -> float:
  """Seconds a queue may wait on one packet before `WaitWatch` reports it: half of tinygrad's signal-wait timeout
  (`HCQDEV_WAIT_TIMEOUT_MS`, default 30 s, read through tinygrad's own getenv), so the report precedes tinygrad's error."""
  from tinygrad.helpers import getenv
  return getenv("HCQDEV_WAIT_TIMEOUT_MS", 30000) / 2000

class WaitWatch:
  """Reports, once per wait, a queue that has been waiting on one packet (a memory wait nothing satisfies) for `wait_report_s()`.
  A waiting queue is no fault: the driver reports nothing, so tinygrad's wait times out and its on_device_hang, which finds
  no fault to list, raises `RuntimeError('')`. This stderr line is where the queue, the packet and the value it waits for
  are named. `blocked_on` is the queue's description of its wait ("" when it is not waiting)."""
  def __init__(self): self.since, self.what, self.reported = None, "", False
  def update(self, queue, blocked_on:str, progress:bool):
    """Called after every scheduling round of `queue`. A new wait starts when the round consumed packets (`progress`) or
    the description changed (another packet, or the awaited memory changed without satisfying it)."""
    if not blocked_on:
      self.since = None
      return
    now = time.monotonic()
    if progress or self.since is None or blocked_on != self.what: self.since, self.what, self.reported = now, blocked_on, False
    if not self.reported and now - self.since >= wait_report_s():
      self.reported = True
      print(f"mockgpu: {queue} has been waiting {now - self.since:.1f} s on {blocked_on}; nothing has written a value that satisfies "
            "it (the CPU or another queue must). If tinygrad's signal wait times out next, this wait is the cause: the driver reports no "
            "fault for a waiting queue, so tinygrad raises RuntimeError with an empty message (its 'Wait timeout' error is the context)",
            file=sys.stderr)

class GPU:
  """One emulated GPU: identity, the ranges mapped to it (`memory`, checked by every engine and by the emulator), its
  doorbell page and its queues."""
  def __init__(self, kfd:KFD, node:GPUNode, profile:GPUProfile):
    self.kfd, self.node, self.profile, self.gpu_id = kfd, node, profile, node.gpu_id
    self.memory = MemoryMap()
    self.queues: list[Queue] = []
    self.doorbells = host_mmap(0, DOORBELL_PAGE)
    self.stats = {"dispatches": 0, "wave_instructions": 0, "emu_seconds": 0.0, "indirect_buffers": 0, "oob_reads": 0}

  def __repr__(self): return f"GPU(node={self.node.node} gpu_id={self.gpu_id:#x} arch={self.profile.arch})"

  def check(self, addr:int, size:int, engine:str, what:str) -> int:
    """Raise QueueFault unless `[addr, addr+size)` is mapped to this GPU (whole pages, as the driver maps them; byte-exact
    in strict mode). Returns `addr`."""
    if not self.memory.mapped(addr, size):
      pending = next((a for a in self.kfd.allocs.values() if self.gpu_id in a.mapped and not a.backed and a.va <= addr < a.va + a.size), None)
      raise QueueFault(engine, addr, size, what, "is not mapped to this GPU (MMU fault)" if pending is None else
                       f"is in memory object handle={pending.handle:#x} ({pending.kind}), which is mapped to this GPU but was never mmapped by "
                       "the CPU: the mock backs VRAM/GTT objects with their renderD mmap (mmap(va, size, MAP_FIXED, mmap_offset)), so map it first")
    return addr

  def read(self, addr:int, size:int, engine:str, what:str) -> bytearray:
    """The bytes at `[addr, addr+size)` after `check`; QueueFault if they are mapped but no longer host memory (never a SIGSEGV)."""
    try: return uaccess.copy_from_user(self.check(addr, size, engine, what), size, what)
    except OSError: raise QueueFault(engine, addr, size, what, GONE) from None

  def write(self, addr:int, data:bytes, engine:str, what:str):
    """Write `data` at `addr` after `check`; QueueFault if the range is mapped but no longer host memory."""
    try: uaccess.copy_to_user(self.check(addr, len(data), engine, what), data, what)
    except OSError: raise QueueFault(engine, addr, len(data), what, GONE) from None

  def u32(self, addr:int, engine:str, what:str) -> int: return int.from_bytes(self.read(addr, 4, engine, what), "little")
  def write_int(self, addr:int, value:int, size:int, engine:str, what:str):
    self.write(addr, (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"), engine, what)

class Queue:
  """A ring buffer queue as the KFD creates it. Subclasses implement `step()` (execute one packet or report blocked).

  Pointers count dwords (PM4) or bytes (SDMA). `rptr` is the next position to execute; it is published to `rptr_addr`
  after progress. The doorbell slot holds the producer's write pointer (tinygrad stores the same value to the write
  pointer in memory first), so the doorbell is both the trigger and the limit."""
  engine = "queue"
  budget = 64   # packets per scheduling round, so one busy queue cannot starve the others

  def __init__(self, gpu:GPU, qid:int, ring:int, ring_size:int, rptr_addr:int, doorbell_addr:int):
    self.gpu, self.qid, self.ring, self.ring_size, self.rptr_addr = gpu, qid, ring, ring_size, rptr_addr
    self.doorbell = ctypes.c_uint64.from_address(doorbell_addr)
    self.rptr, self.error, self.blocked_on, self.waits_for, self.watch = 0, None, "", "", WaitWatch()

  def __repr__(self): return f"{self.engine} queue {self.qid} of {self.gpu}"
  @property
  def put(self) -> int: return self.doorbell.value

  def run(self) -> bool:
    """Execute up to `budget` packets. Returns True if anything was consumed. Errors stop the queue (see `stop`)."""
    if self.error is not None: return False
    progress = False
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

  def dwords(self, pos:int, n:int) -> list[int]:
    """`n` ring dwords from pointer position `pos` (in dwords), read modulo the ring through the GPU's checked reads (a ring
    freed or unmapped while the queue lives is a QueueFault, not a crash)."""
    size, pos, out = self.ring_size // 4, pos % (self.ring_size // 4), []
    while n > 0:
      k = min(n, size - pos)
      out += struct.unpack(f"<{k}I", self.gpu.read(self.ring + 4 * pos, 4 * k, self.engine, "ring"))
      n, pos = n - k, 0
    return out

  def stop(self, exc:BaseException):
    """Stop this queue for good: print a report to stderr and raise the KFD event tinygrad will see."""
    self.error = exc
    tb = "" if isinstance(exc, Exception) and type(exc).__module__.startswith("mockgpu.") else "".join(traceback.format_exception(exc))
    seen_as = self.gpu.kfd.report_queue_error(self.gpu, exc)
    print(f"mockgpu: {self} stopped at rptr={self.rptr:#x} (tinygrad sees: {seen_as}): {type(exc).__name__}: {exc}" + (f"\n{tb}" if tb else ""),
          file=sys.stderr)

class DeviceThread:
  """The per-process daemon thread that executes all queues. Started by the first CREATE_QUEUE; polls every 0.1-0.5 ms.

  tinygrad busy-waits on signals for 200 ms before it makes any call into the mock, holding the GIL, which it hands over
  only every `sys.getswitchinterval()`. So the interval bounds the submit-to-completion latency: unless the user changed
  it, it is lowered from Python's 5 ms to `MOCKGPU_SWITCH_INTERVAL` (default 0.2 ms) when the thread starts."""
  POLL_MIN, POLL_MAX = 0.0001, 0.0005
  SWITCH_INTERVAL = float(os.environ.get("MOCKGPU_SWITCH_INTERVAL", "0.0002"))

  def __init__(self, kfd:KFD):
    self.kfd = weakref.ref(kfd)   # the thread ends when its KFD is collected (tests make many)
    if sys.getswitchinterval() == 0.005 and self.SWITCH_INTERVAL > 0: sys.setswitchinterval(self.SWITCH_INTERVAL)
    self.thread = threading.Thread(target=self._loop, name="mockgpu-device", daemon=True)
    self.thread.start()
    threading.Thread(target=self._warm_up, args=(kfd.profile.arch,), name="mockgpu-warm-up", daemon=True).start()

  @staticmethod
  def _warm_up(arch:str):
    """Build (first use on a machine) or load the emulator while tinygrad compiles its first kernel. A failure here
    resurfaces, with the same message, at the first dispatch, which reports it through tinygrad's error path."""
    from mockgpu.emu.api import warm_up
    with contextlib.suppress(MockGPUError): warm_up(arch)

  def _round(self, kfd:KFD) -> bool:
    try:
      with timed("device_s"): return kfd.run_once()
    except Exception:   # a bug in the model itself: keep the GPU alive and say so
      traceback.print_exc(file=sys.stderr)
      return False

  def _loop(self):
    delay = self.POLL_MIN
    while (kfd:=self.kfd()) is not None:
      progress = device_work(DeviceThread._round, self, kfd)   # GC off meanwhile: see device_work
      del kfd
      if progress: delay = self.POLL_MIN
      else:   # idle: time.sleep and plain arithmetic allocate no GC-tracked object (min() or a lock's timeout would: a tuple)
        time.sleep(delay)
        delay = delay * 2 if delay * 2 < self.POLL_MAX else self.POLL_MAX
