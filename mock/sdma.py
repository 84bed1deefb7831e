"""SDMA queue: the DMA engine of one KFD SDMA queue. `SDMA_PACKETS` is the packet table (op name -> handler, packet
dwords); handlers are the `SDMAQueue` methods named after their packet and return False while they must wait.

Pointers are in bytes. tinygrad never splits a packet across the ring end; it zero-fills the tail instead, so NOP (op 0)
is a one-dword packet (longer with its count field). The read pointer is published after progress (tinygrad polls it
for ring space).

Where GPU addresses are host addresses checked against the GPU's MemoryMap alone (the KFD model), the packets tinygrad's
copies use run in C first (mock/sdma.c, `_Fast`): from the queue's step, and from the device thread's idle wait without the
GIL as soon as the doorbell moves (`fast_words`), so a copy runs beside tinygrad's Python instead of waiting for the GIL (a
TRAP's KFD event is raised by the queue's next step or WAIT_EVENTS: `take_traps`). C stops at any packet it cannot complete (a poll
that must wait, a bad address or packet, a changed map) and the
handlers below execute it: they are the reference semantics and report every error. Not with MOCKGPU_TRACE (every packet
is printed from Python)."""
from __future__ import annotations
import ctypes, functools, importlib, struct, time
from typing import NamedTuple
from mockgpu.mock import uaccess
from mockgpu.mock.errors import PacketError, QueueFault
from mockgpu.mock.device import GONE, DeviceMemory
from mockgpu.mock.gpu import GPU, TRACE, Queue, gpu_clock
from mockgpu.mock.pm4 import COMPARE, poll
from mockgpu.emu.memory import Spans

__all__ = ["SDMAQueue", "SDMA_PACKETS", "CopyTotals", "copy_totals"]

M64 = (1 << 64) - 1

_py_copies = [0, 0, 0.0]   # COPY_LINEAR copies, bytes, seconds of the Python handler

class CopyTotals(NamedTuple):
  copies: int; bytes: int; seconds: float
  idle_seconds: float   # the part of `seconds` copied from the device thread's idle wait, outside its rounds (mockgpu.usage device_s)

def copy_totals() -> CopyTotals:
  """Every COPY_LINEAR completed so far in this process, by C and by Python (`mockgpu bench` splits each workload's time with it)."""
  n, b, t = _py_copies
  if (lib:=uaccess.dma_library()) is None: return CopyTotals(n, b, t, 0.0)
  def c(name:str) -> int: return ctypes.c_uint64.in_dll(lib, name).value
  return CopyTotals(n + c("mock_sdma_copies"), b + c("mock_sdma_bytes"), t + c("mock_sdma_ns") / 1e9, c("mock_idle_copy_ns") / 1e9)

class _Fast(ctypes.Structure):   # mock/sdma.c SdmaQ
  _fields_ = [*[(n, ctypes.c_uint64) for n in ("ring", "ring_size", "rptr_addr")], ("doorbell", ctypes.c_void_p), ("rptr", ctypes.c_uint64),
              ("spans", ctypes.c_void_p), ("nspans", ctypes.c_uint64), ("version", ctypes.c_uint64), ("live", ctypes.c_void_p),
              *[(n, ctypes.c_uint32) for n in ("op_nop", "op_copy", "op_fence", "op_poll", "op_timestamp", "op_write", "op_trap", "sub_copy",
                                               "sub_timestamp", "count_mask", "budget")],
              ("trap_ctx", ctypes.c_uint32 * 16), ("traps", ctypes.c_uint64), ("traps_taken", ctypes.c_uint64)]

@functools.cache
def fast_run():
  """mock/sdma.c's `mock_sdma_run` (called holding the GIL), or None: no C library, or MOCKGPU_TRACE."""
  if TRACE or (lib:=uaccess.dma_library()) is None: return None
  (fn:=lib.mock_sdma_run).argtypes, fn.restype = [ctypes.c_void_p], ctypes.c_int
  return fn

class SDMAQueue(Queue):
  """An SDMA queue (KFD queue type SDMA). Packet formats come from tinygrad's `autogen.am.sdma_*` for the GPU's SDMA IP."""
  engine, put_unit = "SDMA", 4
  fast: _Fast|None = None   # the C fast path's state (its rptr is the queue's), None where it does not run

  def __init__(self, gpu:GPU, *args):
    super().__init__(gpu, *args)
    v = min(gpu.profile.sdma, (6, 0, 0))
    self.sdma = importlib.import_module(f"tinygrad.runtime.autogen.am.sdma_{v[0]}_0_0")
    self.count_mask = self.sdma.SDMA_PKT_COPY_LINEAR_COUNT_count_mask
    self.handlers = {getattr(self.sdma, f"SDMA_OP_{name}"): (name, fn, n) for name, (fn, n) in SDMA_PACKETS.items()}
    self.declined, self.spans = -1, None   # the read pointer C last stopped at; the Spans its snapshot reads (kept alive)
    # C reads the doorbell as the write pointer (Queue.put: not the AM model's latched one) and addresses as host addresses
    # checked against the map alone (DeviceMemory.accessible)
    if type(self).put is Queue.put and type(gpu).accessible is DeviceMemory.accessible and fast_run() is not None:
      sd = self.sdma
      ops = {f"op_{k}": getattr(sd, f"SDMA_OP_{op}") for k, op in (("nop", "NOP"), ("copy", "COPY"), ("fence", "FENCE"), ("poll", "POLL_REGMEM"),
                                                                 ("timestamp", "TIMESTAMP"), ("write", "WRITE"), ("trap", "TRAP"))}
      self.fast = _Fast(ring=self.ring, ring_size=self.ring_size, rptr_addr=self.rptr_addr, doorbell=ctypes.addressof(self.doorbell),
                        rptr=self._rptr, version=M64, live=ctypes.addressof(gpu.memory.cversion), sub_copy=sd.SDMA_SUBOP_COPY_LINEAR,
                        sub_timestamp=sd.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL, count_mask=self.count_mask, budget=self.budget, **ops)

  @property
  def rptr(self) -> int: return self._rptr if self.fast is None else self.fast.rptr
  @rptr.setter
  def rptr(self, v:int):
    if self.fast is None: self._rptr = v
    else: self.fast.rptr = v

  def take_traps(self):
    """Raise the KFD events of the TRAPs C ran (it records their contexts), in the order they ran: called under the KFD lock
    by each step after C and by WAIT_EVENTS (TRAPs the idle wait ran, with no round since)."""
    f = self.fast
    while f is not None and f.traps_taken != f.traps:
      self.gpu.kfd.interrupt(self.gpu, f.trap_ctx[f.traps_taken % 16])
      f.traps_taken += 1

  def fast_words(self) -> tuple[_Fast, Spans]|None:
    """What the device thread's idle wait runs this queue's packets with (mock/idle.c; both kept alive meanwhile), or None."""
    if self.fast is None or self.error is not None: return None
    self._snapshot()
    return self.fast, self.spans

  def _snapshot(self):
    """C's copy of the GPU's mapped ranges, at the map's version read before them (a newer one only makes C stop)."""
    if self.fast.version != (v:=self.gpu.memory.version):   # M64 at first: no map has that version
      exact, mapped = self.gpu.memory.spans()
      self.spans = exact if self.gpu.memory.strict else mapped
      self.fast.spans, self.fast.nspans, self.fast.version = ctypes.addressof(self.spans.words()), len(self.spans), v

  def bad(self, msg:str) -> PacketError: return PacketError("SDMA", self.where, self.header, msg)

  def step(self) -> bool:
    before = self.rptr
    if self.fast is not None and before != self.declined:   # C first, from a packet it has not stopped at before
      self._snapshot()
      if fast_run()(ctypes.byref(self.fast)) == 1: self.declined = self.rptr
    self.take_traps()   # the events of the TRAPs C ran (here or in the idle wait) before anything of a packet Python runs
    if self.rptr != before: return True
    pos, end = self.rptr, self.put
    if pos >= end: return False
    self.where, self.header = f"ring byte {pos:#x}", (header:=self.dword(pos // 4))
    if pos % 4: raise self.bad(f"write pointer {end:#x} / read pointer {pos:#x} not dword aligned")
    if end - pos > self.ring_size: raise self.bad(f"ring overrun: write pointer {end:#x} is more than the ring size ahead of {pos:#x}")
    if (h:=self.handlers.get(header & 0xFF)) is None: raise self.bad(f"unknown SDMA opcode {header & 0xFF}")
    name, fn, n = h
    if callable(n) and (n:=n(self, pos, end)) is None:   # its length is in a dword the producer has not published yet
      self.blocked_on = f"the rest of a {name} packet at {self.where}: the write pointer {end:#x} ends before its length field"
      return False
    if 4 * n >= self.ring_size: raise self.bad(f"{name} packet of {n} dwords does not fit the {self.ring_size:#x}-byte ring")
    if pos + 4 * n > end:   # not published yet (tinygrad never does this: reported if it lasts)
      self.blocked_on = f"the rest of a {n}-dword {name} packet at {self.where}: the write pointer {end:#x} ends inside it"
      return False
    payload = self.dwords(pos // 4 + 1, n - 1)
    if not fn(self, header, *payload):
      self.blocked_on = f"{name} at {self.where}: {self.waits_for}"
      return False
    if TRACE: self.trace(name, self.where, payload)
    self.rptr, self.blocked_on = pos + 4 * n, ""
    return True

  def _addr(self, lo:int, hi:int, size:int, what:str) -> int: return self.gpu.check(hi << 32 | lo, size, "SDMA", what)
  def _subop(self, header:int, want:int, name:str):
    if (sub:=(header >> 8) & 0xFF) != want: raise self.bad(f"{name} sub-op {sub} is not modelled (only {want})")

  # *** packet handlers (SDMA_PACKETS) ***
  def nop(self, header:int, *_) -> bool: return True

  def copy(self, header:int, count:int, _param:int, src_lo:int, src_hi:int, dst_lo:int, dst_hi:int) -> bool:
    self._subop(header, self.sdma.SDMA_SUBOP_COPY_LINEAR, "COPY")
    size = (count & self.count_mask) + 1
    dst, src = self._addr(dst_lo, dst_hi, size, "COPY_LINEAR destination"), self._addr(src_lo, src_hi, size, "COPY_LINEAR source")
    t0 = time.perf_counter()
    if uaccess.move(dst, src, size) != size:   # mapped to the GPU but unmapped by the CPU since: a fault, never a SIGSEGV
      bad, what = (src, "COPY_LINEAR source") if not uaccess.readable(src, size) else (dst, "COPY_LINEAR destination")
      raise QueueFault("SDMA", bad, size, what, GONE)
    _py_copies[0] += 1; _py_copies[1] += size; _py_copies[2] += time.perf_counter() - t0
    return True

  def write(self, header:int, lo:int, hi:int, count:int, *data:int) -> bool:
    self.gpu.write(self._addr(lo, hi, 4 * len(data), "WRITE"), struct.pack(f"<{len(data)}I", *data), "SDMA", "WRITE")
    return True

  def fence(self, header:int, lo:int, hi:int, data:int) -> bool:
    self.gpu.write_int(self._addr(lo, hi, 4, "FENCE"), data, 4, "SDMA", "FENCE")
    return True

  def trap(self, header:int, ctx:int) -> bool:
    self.gpu.kfd.interrupt(self.gpu, ctx & 0xFFFFFFF)
    return True

  def poll_regmem(self, header:int, lo:int, hi:int, ref:int, mask:int, _ctl:int) -> bool:
    func, mem_poll = (header >> 28) & 7, header >> 31
    if not mem_poll: raise self.bad("POLL_REGMEM on a register is not modelled (only mem_poll=1)")
    if func not in COMPARE: raise self.bad(f"POLL_REGMEM function {func} is reserved")
    value = self.gpu.u32(addr:=self._addr(lo, hi, 4, "POLL_REGMEM"), "SDMA", "POLL_REGMEM")
    return poll(self, f"memory dword at {addr:#x}", value, func, ref, mask)

  def timestamp(self, header:int, lo:int, hi:int) -> bool:
    self._subop(header, self.sdma.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL, "TIMESTAMP")
    self.gpu.write_int(self._addr(lo, hi, 8, "TIMESTAMP"), gpu_clock(), 8, "SDMA", "TIMESTAMP")
    return True

# op name (sdma_* SDMA_OP_<name>) -> (handler, packet dwords including the header, or a function of the queue, the packet's
# byte position and the write pointer giving them, None while the dword holding the length is not published)
SDMA_PACKETS: dict[str, tuple] = {
  "NOP": (SDMAQueue.nop, lambda q, pos, end: 1 + ((q.dword(pos // 4) >> 16) & 0x3FFF)),
  "COPY": (SDMAQueue.copy, 7), "FENCE": (SDMAQueue.fence, 4), "TRAP": (SDMAQueue.trap, 2),
  "POLL_REGMEM": (SDMAQueue.poll_regmem, 6), "TIMESTAMP": (SDMAQueue.timestamp, 3),
  "WRITE": (SDMAQueue.write, lambda q, pos, end: 5 + (q.dword(pos // 4 + 3) & 0xFFFFF) if pos + 16 <= end else None),
}
