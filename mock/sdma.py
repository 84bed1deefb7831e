"""SDMA queue: the DMA engine of one KFD SDMA queue. `SDMA_PACKETS` is the packet table (op name -> handler, packet
dwords); handlers are the `SDMAQueue` methods named after their packet and return False while they must wait.

Pointers are in bytes. tinygrad never splits a packet across the ring end; it zero-fills the tail instead, so NOP (op 0)
is a one-dword packet (longer with its count field). The read pointer is published after progress (tinygrad polls it
for ring space)."""
from __future__ import annotations
import importlib, struct, time
from typing import Callable
from mockgpu.mock import uaccess
from mockgpu.mock.errors import PacketError, QueueFault
from mockgpu.mock.device import GONE
from mockgpu.mock.gpu import GPU, TRACE, Queue, gpu_clock
from mockgpu.mock.pm4 import COMPARE, poll

__all__ = ["SDMAQueue", "SDMA_PACKETS", "COPY_HOOKS"]

# called as hook(bytes, seconds) after every COPY_LINEAR that completed (`mockgpu bench` splits each workload's time with it);
# costs nothing while empty (the default)
COPY_HOOKS: list[Callable[[int, float], None]] = []

class SDMAQueue(Queue):
  """An SDMA queue (KFD queue type SDMA). Packet formats come from tinygrad's `autogen.am.sdma_*` for the GPU's SDMA IP."""
  engine, put_unit = "SDMA", 4

  def __init__(self, gpu:GPU, *args):
    super().__init__(gpu, *args)
    v = min(gpu.profile.sdma, (6, 0, 0))
    self.sdma = importlib.import_module(f"tinygrad.runtime.autogen.am.sdma_{v[0]}_0_0")
    self.count_mask = self.sdma.SDMA_PKT_COPY_LINEAR_COUNT_count_mask
    self.handlers = {getattr(self.sdma, f"SDMA_OP_{name}"): (name, fn, n) for name, (fn, n) in SDMA_PACKETS.items()}

  def bad(self, msg:str) -> PacketError: return PacketError("SDMA", self.where, self.header, msg)

  def step(self) -> bool:
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
    t0 = time.perf_counter() if COPY_HOOKS else 0.0
    if uaccess.move(dst, src, size) != size:   # mapped to the GPU but unmapped by the CPU since: a fault, never a SIGSEGV
      bad, what = (src, "COPY_LINEAR source") if not uaccess.readable(src, size) else (dst, "COPY_LINEAR destination")
      raise QueueFault("SDMA", bad, size, what, GONE)
    for h in COPY_HOOKS: h(size, time.perf_counter() - t0)
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
