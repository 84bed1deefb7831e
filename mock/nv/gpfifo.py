"""GPFIFO channels of the mock NVIDIA GPU: the device thread polls each channel's GPPut in USERD, executes the pushbuffer
segments the ring entries point at (host/semaphore methods on subchannel 0, compute on 1, copy on 4), launches QMDs with
the PTX engine and writes the QMD releases (contract-pci-usb-nv-cuda.md sections 4.6 and 4.7). A semaphore acquire that is
not satisfied keeps its place and is re-checked every round, so CPU-written signals and other channels unblock it.
A failing channel stops, prints the error, and is reported through the debugger controls (tinygrad's on_device_hang)."""
from __future__ import annotations
import ctypes, sys, threading, time, traceback, weakref
from typing import TYPE_CHECKING
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.emu.errors import EmuError, GPUFault
from mockgpu.errors import MockGPUError
from mockgpu.mock.errors import PacketError, QueueFault
from mockgpu.mock.gpu import DeviceThread
from mockgpu.mock.ptx import engine
if TYPE_CHECKING: from mockgpu.mock.nv.rm import NVDriver

__all__ = ["Channel", "NVDeviceThread", "QMD_FIELDS"]

_Q = "NVC6C0_QMDV03_00_"
QMD_FIELDS = {n[len(_Q):]: v for n, v in vars(nv).items() if n.startswith(_Q) and isinstance(v, tuple)}
QMD_BYTES = 0x100
CBUF_BYTES, CBUF_NBUFS, CBUF_NVALS = 0x160, 80, 81      # mock-mode constant buffer 0 (NVArgsState)

def _field(raw:int, hi:int, lo:int) -> int: return (raw >> lo) & ((1 << (hi - lo + 1)) - 1)
def _bits(value:int, spec:tuple[int, int]) -> int: return _field(value, *spec)

class Channel:
  """One GPFIFO: ring of `entries` u64 at `ring`, USERD at `userd` (GPGet +0x88, GPPut +0x8C), doorbell token `token`."""
  def __init__(self, drv:NVDriver, idx:int, ring:int, entries:int, userd:int, token:int):
    self.drv, self.idx, self.ring, self.entries, self.userd, self.token = drv, idx, ring, entries, userd, token
    self.get, self.pos, self.error = 0, 0, None          # ring index; dword offset inside the current segment
    self.state: dict[tuple[int, int], int] = {}          # (subchannel, method byte address) -> last data
    self.gpget = nv.AmpereAControlGPFifo.GPGet.offset
    self.gpput = nv.AmpereAControlGPFifo.GPPut.offset
    self.launches = 0

  def __repr__(self): return f"GPFIFO channel {self.idx} (token {self.token})"

  def _read(self, addr:int, size:int, what:str) -> bytes:
    if self.drv.memory.find(addr, size) is None: raise QueueFault(repr(self), addr, size, what)
    return ctypes.string_at(addr, size)
  def _u64(self, addr:int, what:str) -> int: return int.from_bytes(self._read(addr, 8, what), "little")
  def _write(self, addr:int, data:bytes, what:str):
    if self.drv.memory.find(addr, len(data)) is None: raise QueueFault(repr(self), addr, len(data), what)
    ctypes.memmove(addr, data, len(data))

  def run(self) -> bool:
    """Execute ready work. Returns True if anything progressed."""
    if self.error is not None: return False
    progress = False
    try:
      while self.get != (put:=int.from_bytes(self._read(self.userd + self.gpput, 4, "USERD GPPut"), "little") % self.entries):
        entry = self._u64(self.ring + 8 * self.get, "GP entry")
        addr, n = entry & ((1 << 40) - 4), (entry >> 42) & 0x1FFFFF
        words = (ctypes.c_uint32 * n).from_buffer_copy(self._read(addr, 4 * n, "pushbuffer segment")) if n else []
        while self.pos < n:
          hdr = words[self.pos]
          typ, cnt, sub, mthd = hdr >> 28, (hdr >> 16) & 0x1FFF, (hdr >> 13) & 7, (hdr & 0x1FFF) << 2
          if typ != 2 or self.pos + 1 + cnt > n:
            raise PacketError(repr(self), f"segment {addr:#x}+{4*self.pos:#x}", hdr, "only incrementing method headers (SEC_OP 2) fitting the segment are modelled")
          data = list(words[self.pos + 1:self.pos + 1 + cnt])
          for i, v in enumerate(data): self.state[(sub, mthd + 4 * i)] = v
          if not self._method(sub, mthd, data, f"segment {addr:#x}+{4*self.pos:#x}", hdr): return progress   # blocked
          self.pos += 1 + cnt
          progress = True
        self.get, self.pos, progress = (self.get + 1) % self.entries, 0, True
        self._write(self.userd + self.gpget, self.get.to_bytes(4, "little"), "USERD GPGet")
    except (MockGPUError, OSError) as e: self._stop(e)
    return progress

  def _method(self, sub:int, mthd:int, data:list[int], where:str, hdr:int) -> bool:
    """Act on the methods of one header whose last data word lands on an action method. False = blocked (retry later)."""
    last = mthd + 4 * (len(data) - 1)
    s = self.state
    if sub == 0 and last == nv.NVC56F_SEM_EXECUTE:
      v = data[-1]
      addr = s.get((0, nv.NVC56F_SEM_ADDR_LO), 0) | s.get((0, nv.NVC56F_SEM_ADDR_HI), 0) << 32
      payload = s.get((0, nv.NVC56F_SEM_PAYLOAD_LO), 0) | s.get((0, nv.NVC56F_SEM_PAYLOAD_HI), 0) << 32
      op, wide = _bits(v, nv.NVC56F_SEM_EXECUTE_OPERATION), _bits(v, nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE) == nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT
      if op == nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE:
        self._write(addr, (payload & ((1 << (64 if wide else 32)) - 1)).to_bytes(8 if wide else 4, "little"), "semaphore release")
        if _bits(v, nv.NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP): self._write(addr + 8, time.perf_counter_ns().to_bytes(8, "little"), "semaphore timestamp")
        return True
      cur = int.from_bytes(self._read(addr, 8 if wide else 4, "semaphore acquire"), "little")
      if op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ: return cur >= payload if wide else ((cur - payload) & 0xFFFFFFFF) < 0x80000000
      if op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND: return (cur & payload) != 0
      if op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR: return (~(cur | payload) & 0xFFFFFFFF) != 0
      raise PacketError(repr(self), where, hdr, f"SEM_EXECUTE operation {op} is not modelled (release, acq_circ_geq, acq_and, acq_nor are)")
    if sub == 1 and last == nv.NVC6C0_SEND_SIGNALING_PCAS2_B:
      qmd = s.get((1, nv.NVC6C0_SEND_PCAS_A), 0) << 8
      while qmd: qmd = self._launch(qmd)
      return True
    if sub == 4 and last == nv.NVC6B5_LAUNCH_DMA: self._dma(data[-1], where, hdr)
    return True

  def _dma(self, v:int, where:str, hdr:int):
    s = self.state
    kind, sem = _bits(v, nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE), _bits(v, nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE)
    if kind != nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NONE:
      src = s.get((4, nv.NVC6B5_OFFSET_IN_UPPER), 0) << 32 | s.get((4, nv.NVC6B5_OFFSET_IN_LOWER), 0)
      dst = s.get((4, nv.NVC6B5_OFFSET_OUT_UPPER), 0) << 32 | s.get((4, nv.NVC6B5_OFFSET_OUT_LOWER), 0)
      n = s.get((4, nv.NVC6B5_LINE_LENGTH_IN), 0)
      self._write(dst, self._read(src, n, "copy source"), "copy destination")
    if sem == nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE:
      addr = s.get((4, nv.NVC6B5_SET_SEMAPHORE_A), 0) << 32 | s.get((4, nv.NVC6B5_SET_SEMAPHORE_B), 0)
      self._write(addr, s.get((4, nv.NVC6B5_SET_SEMAPHORE_PAYLOAD), 0).to_bytes(8, "little") + time.perf_counter_ns().to_bytes(8, "little"), "copy semaphore")
    elif sem != nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_NONE:
      raise PacketError(repr(self), where, hdr, f"LAUNCH_DMA semaphore type {sem} is not modelled (none, four-word release are)")

  def _launch(self, qmd_addr:int) -> int:
    """Run the QMD at `qmd_addr`, write its releases; returns the dependent QMD to run next (0 if none)."""
    raw = int.from_bytes(self._read(qmd_addr, QMD_BYTES, "QMD"), "little")
    q = lambda name: _field(raw, *QMD_FIELDS[name])
    grid = (q("CTA_RASTER_WIDTH"), q("CTA_RASTER_HEIGHT"), q("CTA_RASTER_DEPTH"))
    block = (q("CTA_THREAD_DIMENSION0"), q("CTA_THREAD_DIMENSION1"), q("CTA_THREAD_DIMENSION2"))
    prog = q("PROGRAM_ADDRESS_UPPER") << 32 | q("PROGRAM_ADDRESS_LOWER")
    cbuf = _field(raw, *nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_UPPER(0)) << 32 | _field(raw, *nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_LOWER(0))
    words = (ctypes.c_uint32 * (CBUF_BYTES // 4)).from_buffer_copy(self._read(cbuf, CBUF_BYTES, "constant buffer 0"))
    nb, nvals = words[CBUF_NBUFS], words[CBUF_NVALS]
    args = list((ctypes.c_uint64 * (nb + nvals)).from_buffer_copy(self._read(cbuf + CBUF_BYTES, 8 * (nb + nvals), "kernel arguments")))
    r = self.drv.memory.find(prog)
    if r is None: raise QueueFault(repr(self), prog, 1, "program (PTX text)")
    text = ctypes.string_at(prog, min(r.end - prog, 1 << 24)).split(b"\0", 1)[0]
    mod = engine.load(text)
    if len(mod.kernels) != 1: raise PacketError(repr(self), f"QMD {qmd_addr:#x}", 0, f"the program at {prog:#x} has {len(mod.kernels)} kernels, expected 1")
    mod.launch(next(iter(mod.kernels)), args, grid, block, self.drv.memory)
    self.launches += 1
    for i in (0, 1):
      if q(f"RELEASE{i}_ENABLE"):
        addr = q(f"RELEASE{i}_ADDRESS_UPPER") << 32 | q(f"RELEASE{i}_ADDRESS_LOWER")
        payload = q(f"RELEASE{i}_PAYLOAD_UPPER") << 32 | q(f"RELEASE{i}_PAYLOAD_LOWER")
        self._write(addr, payload.to_bytes(8, "little") + time.perf_counter_ns().to_bytes(8, "little"), f"QMD release{i}")
    if q("DEPENDENT_QMD0_ENABLE") and q("DEPENDENT_QMD0_ACTION") == nv.NVC6C0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE:
      return q("DEPENDENT_QMD0_POINTER") << 8
    return 0

  def _stop(self, e:BaseException):
    self.error = e
    rep = getattr(e, "report", None)
    addr = rep.address if isinstance(e, GPUFault) and rep.space == "global" else getattr(e, "addr", None)
    if self.drv.fault is None:
      self.drv.fault = {"address": addr, "write": bool(rep and rep.kind == "write"), "esr": 0x10 if isinstance(e, EmuError) else 0x20, "error": e}
    print(f"mockgpu: NV {self!r} stopped at GPGet={self.get} (tinygrad sees the fault after its wait times out; "
          f"HCQDEV_WAIT_TIMEOUT_MS shortens that): {type(e).__name__}: {e}", file=sys.stderr)

class NVDeviceThread:
  """The daemon thread that runs every channel of the mock NVIDIA GPU (polling GPPut, round-robin, 0.1-0.5 ms idle sleeps).
  Holds the driver lock while it executes, so ioctls (frees, maps) never change memory under a running kernel."""
  def __init__(self, drv:NVDriver):
    self.drv = weakref.ref(drv)
    if sys.getswitchinterval() == 0.005 and DeviceThread.SWITCH_INTERVAL > 0: sys.setswitchinterval(DeviceThread.SWITCH_INTERVAL)
    self.thread = threading.Thread(target=self._loop, name="mockgpu-nv-device", daemon=True)
    self.thread.start()

  def _loop(self):
    delay = DeviceThread.POLL_MIN
    while (drv:=self.drv()) is not None:
      try:
        with drv.lock: progress = any([ch.run() for ch in drv.channels])
      except Exception:
        traceback.print_exc(file=sys.stderr)
        progress = False
      del drv
      if progress: delay = DeviceThread.POLL_MIN
      else:
        time.sleep(delay)
        delay = min(delay * 2, DeviceThread.POLL_MAX)
