"""The device layer the AMD and NVIDIA GPU models share: the memory registry of one device with its checked host copies
(`DeviceMemory`), the one-line report of a stopped queue (`report_stop`), the device-thread loop (`DeviceThread`) and the
host mappings they make (`host_mmap`).

The AMD models (`mock/gpu.py` under the KFD, `mock/am/` under tinygrad's AM driver) and the NVIDIA one (`mock/nv/`) plug
in by subclassing `DeviceMemory` (GPU, NVDriver) and by giving `DeviceThread` a model with `run_once()` (one scheduling
round over its queues or channels). A queue error stops that queue and is reported by the model's driver interface (KFD
events, NV debugger controls); an error of the model outside any queue is printed once per message and the thread keeps
polling (contract: docs/contracts/kfd.md section 8)."""
from __future__ import annotations
import contextlib, ctypes, errno, functools, gc, mmap, os, sys, threading, time, traceback, weakref
from tinygrad.runtime.autogen import libc
from mockgpu.emu.memory import MemoryMap
from mockgpu.errors import MockGPUError
from mockgpu.mock import uaccess
from mockgpu.mock.errors import QueueFault
from mockgpu.usage import timed

__all__ = ["DeviceMemory", "DeviceThread", "WaitWatch", "device_work", "wait_report_s", "report_stop", "host_mmap", "host_spins", "MAP_FIXED",
           "GONE", "UNMAPPED"]

MAP_FIXED, MAP_FIXED_NOREPLACE = 0x10, 0x100000   # Linux values (Python's mmap module does not export them)
UNMAPPED = "is not mapped to this GPU (MMU fault)"
GONE = ("is mapped to this GPU but is no longer host memory of this process (unmapped or protected by the CPU while still mapped to the "
        "GPU; unmap it from the GPU first)")   # why an engine access failed although the range is mapped

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

class DeviceMemory:
  """The ranges mapped to one device (`memory`, a `MemoryMap`: every engine and both emulators check their accesses against
  it) and checked copies through it: an access outside it is a `QueueFault` (an MMU fault), one inside it whose host memory
  is gone a `QueueFault` too, never a SIGSEGV. Subclasses say what is accessible and why an access is not."""
  def __init__(self): self.memory = MemoryMap()

  def accessible(self, addr:int, size:int) -> bool:
    """Whether `[addr, addr+size)` is mapped (whole pages, as the driver maps them; byte-exact in strict mode)."""
    return self.memory.mapped(addr, size)
  def unmapped(self, addr:int, size:int) -> str:
    """Why `[addr, addr+size)` is not accessible, for the QueueFault (a model may name a pending allocation)."""
    return UNMAPPED

  def check(self, addr:int, size:int, engine:str, what:str) -> int:
    """Raise QueueFault unless `[addr, addr+size)` is accessible. Returns `addr`."""
    if not self.accessible(addr, size): raise QueueFault(engine, addr, size, what, self.unmapped(addr, size))
    return addr

  def read(self, addr:int, size:int, engine:str, what:str) -> bytearray:
    """The bytes at `[addr, addr+size)` after `check`; QueueFault if they are mapped but no longer host memory."""
    try: return uaccess.copy_from_user(self.check(addr, size, engine, what), size, what)
    except OSError: raise QueueFault(engine, addr, size, what, GONE) from None

  def write(self, addr:int, data:bytes, engine:str, what:str):
    """Write `data` at `addr` after `check`; QueueFault if the range is mapped but no longer host memory."""
    try: uaccess.copy_to_user(self.check(addr, len(data), engine, what), data, what)
    except OSError: raise QueueFault(engine, addr, len(data), what, GONE) from None

  def uint(self, addr:int, size:int, engine:str, what:str) -> int: return int.from_bytes(self.read(addr, size, engine, what), "little")
  def u32(self, addr:int, engine:str, what:str) -> int: return self.uint(addr, 4, engine, what)
  def write_int(self, addr:int, value:int, size:int, engine:str, what:str):
    self.write(addr, (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"), engine, what)

def report_stop(queue:object, at:str, seen_as:str, exc:BaseException):
  """The stderr line of a queue (or channel) that stopped for good with `exc`: where it stopped, what tinygrad will see, the
  error; the traceback too when the error is not one of mockgpu's own (a bug in the model, not in the guest)."""
  tb = "" if isinstance(exc, MockGPUError) else "\n" + "".join(traceback.format_exception(exc))
  print(f"mockgpu: {queue} stopped at {at} (tinygrad sees: {seen_as}): {type(exc).__name__}: {exc}{tb}", file=sys.stderr)

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

def host_spins() -> bool:
  """The mock GPUs' GIL policy for a dispatch (`mockgpu.emu.api.run`'s hold_gil): True while a Python thread spins in tinygrad's
  `HCQSignal.wait`. The dispatch then keeps the GIL: the spinning thread sleeps, and its core runs the emulator (docs/emu.md,
  "The GIL"). Other threads get a turn every 100 ms of a held dispatch: which of them want the GIL cannot be told from their
  frames (a thread blocked in a foreign call and one preempted right after it look alike)."""
  from tinygrad.runtime.support.hcq import HCQSignal
  wait, me = HCQSignal.wait.__code__, threading.get_ident()
  for tid, f in sys._current_frames().items():
    while tid != me and f is not None:
      if f.f_code is wait: return True
      f = f.f_back
  return False

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

@functools.cache
def idle_waiter():
  """The C idle wait (`mock/idle.c` in uaccess.dma_library: `mock_idle_set`, `mock_idle_wait`, called with the GIL released),
  or None without a C compiler (the device thread then polls in Python)."""
  if (dma:=uaccess.dma_library()) is None: return None
  lib = ctypes.CDLL(dma._name)
  lib.mock_idle_set.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]
  lib.mock_idle_set.restype, lib.mock_idle_wait.argtypes, lib.mock_idle_wait.restype = None, [], ctypes.c_int
  return lib

class DeviceThread:
  """The per-device daemon thread that executes all queues of a model: `model.run_once()` is one round (every queue or
  channel, round-robin; True if any progressed), polled every 0.1-0.5 ms. Queue errors stop their queue inside the round;
  an exception escaping the round is a bug of the model: printed with its traceback once per message, and polling goes on.

  Idle, a model that names the words whose change means work (`model.idle_words()`: [(c_uint64, value seen)], only words
  the model owns and never unmaps, such as its doorbell pages; None while it must be polled, e.g. a queue waits on guest
  memory) is waited for in C without the GIL (`idle_waiter`: read every 20 us, after 1 ms backing off to 200 us; a round
  at least every `IDLE_TIMEOUT_US`): a Python poll takes the GIL from tinygrad every 0.1-0.5 ms (figures: docs/mock.md).

  tinygrad busy-waits on signals for 200 ms before it makes any call into the mock, holding the GIL, which it hands over
  only every `sys.getswitchinterval()`. So the interval bounds the submit-to-completion latency: unless the user changed
  it, it is lowered from Python's 5 ms to `MOCKGPU_SWITCH_INTERVAL` (default 0.2 ms) when the thread starts.

  Args: model: the device model (held weakly: the thread ends when it is collected; tests make many). name: the thread's
    name. warm_up: an AMD arch whose emulator a second thread builds or loads meanwhile (None: nothing to warm up)."""
  POLL_MIN, POLL_MAX = 0.0001, 0.0005
  IDLE_NAP_MIN_US, IDLE_NAP_MAX_US, IDLE_TIMEOUT_US = 20, 200, 50_000
  SWITCH_INTERVAL = float(os.environ.get("MOCKGPU_SWITCH_INTERVAL", "0.0002"))

  def __init__(self, model, name:str="mockgpu-device", warm_up:str|None=None):
    self.model, self.reported = weakref.ref(model), set()
    self.waiter, self.idle, self.watched = None, False, None   # the C idle wait once loaded; its words (kept alive)
    if sys.getswitchinterval() == 0.005 and self.SWITCH_INTERVAL > 0: sys.setswitchinterval(self.SWITCH_INTERVAL)
    self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
    self.thread.start()
    if hasattr(model, "idle_words"): threading.Thread(target=self._load_waiter, name="mockgpu-idle-wait", daemon=True).start()
    if warm_up is not None: threading.Thread(target=self._warm_up, args=(warm_up,), name="mockgpu-warm-up", daemon=True).start()

  def _load_waiter(self): self.waiter = idle_waiter()

  @staticmethod
  def _warm_up(arch:str):
    """Build (first use on a machine) or load the emulator while tinygrad compiles its first kernel. A failure here
    resurfaces, with the same message, at the first dispatch, which reports it through tinygrad's error path."""
    from mockgpu.emu.api import warm_up
    with contextlib.suppress(MockGPUError): warm_up(arch)

  def _round(self, model) -> bool:
    self.idle = False
    try:
      with timed("device_s"): progress = model.run_once()
      if not progress and self.waiter is not None and (ws:=model.idle_words()) is not None:   # set up here, with the GC off
        self.watched = ((ctypes.c_void_p * len(ws))(*[ctypes.addressof(w) for w, _, _ in ws]), (ctypes.c_uint64 * len(ws))(*[v for _, v, _ in ws]),
                        (ctypes.c_void_p * len(ws))(*[ctypes.addressof(f[0]) if f else None for _, _, f in ws]),
                        ws)   # the words and a queue's C state are kept alive while the thread waits on them, the model need not be
        self.waiter.mock_idle_set(self.watched[0], self.watched[1], self.watched[2], len(ws), self.IDLE_NAP_MIN_US, self.IDLE_NAP_MAX_US,
                                  self.IDLE_TIMEOUT_US)
        self.idle = True
      return progress
    except Exception as e:   # a bug in the model itself, outside any queue: say so once, keep the GPU alive
      if (msg:=f"{type(e).__name__}: {e}") not in self.reported:
        self.reported.add(msg)
        print(f"mockgpu: {self.thread.name} error (its queues keep running):\n" + "".join(traceback.format_exception(e)), file=sys.stderr)
      return False

  def _loop(self):
    delay = self.POLL_MIN
    while (model:=self.model()) is not None:
      progress = device_work(DeviceThread._round, self, model)   # GC off meanwhile: see device_work
      if progress: delay = self.POLL_MIN
      elif self.idle:   # waited for in C, without the GIL; the call takes no arguments, so it allocates nothing (an argument
        del model                      # tuple could start a collection)
        self.waiter.mock_idle_wait()
        delay = self.POLL_MIN
      else:   # idle: time.sleep and plain arithmetic allocate no GC-tracked object (min() or a lock's timeout would: a tuple)
        del model
        time.sleep(delay)
        delay = delay * 2 if delay * 2 < self.POLL_MAX else self.POLL_MAX
      model = None
