"""GPFIFO channels of the mock NVIDIA GPU: the device thread polls each channel's GPPut in USERD and runs the pushbuffer
segments the ring entries point at like the host's PBDMA (docs/contracts/pci-usb-nv-cuda.md sections 4.6 and 4.7): a dword
stream of method headers (every form the NVC56F_DMA_* encoding defines) and their data, delivered one method at a time to
the host (methods below 0x100 on any subchannel) or to the engine object SET_OBJECT bound to the subchannel (compute:
QMD launches into the PTX engine; copy: pitch copies). A semaphore acquire that is not satisfied keeps its place and is
re-checked every round, so CPU-written signals and other channels unblock it. A failing channel stops, prints the error,
and is reported through the debugger controls (tinygrad's on_device_hang)."""
from __future__ import annotations
import ctypes, time
from typing import TYPE_CHECKING
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.mock.errors import PacketError
from mockgpu.mock.device import WaitWatch, report_stop
from mockgpu.mock.nv.engines import ENGINES, Engine, QMD_FIELDS, bits as _bits, method_name
if TYPE_CHECKING: from mockgpu.mock.nv.rm import NVDriver

__all__ = ["Channel", "QMD_FIELDS", "decode_header"]

HOST_METHODS_END = 0x100                                # methods below this byte address belong to the host class on any subchannel

# *** method headers (NVC56F_DMA_*): SEC_OP in bits 31:29. GRP0/GRP2 use TERT_OP (bits 17:16) with the old 11-bit count and
# byte address fields; GRP0 TERT_OP 1..3 are the subdevice-mask operations, header 0 is a zero-count GRP0 increment (NOP).
INC, NON_INC, ONE_INC, IMMD, END_SEGMENT = "inc", "non_inc", "one_inc", "immd", "end"
SET_MASK, STORE_MASK, USE_MASK = "set_mask", "store_mask", "use_mask"
_NEW_FORMS = {nv.NVC56F_DMA_SEC_OP_INC_METHOD: INC, nv.NVC56F_DMA_SEC_OP_NON_INC_METHOD: NON_INC, nv.NVC56F_DMA_SEC_OP_ONE_INC: ONE_INC}
_MASK_OPS = {nv.NVC56F_DMA_SET_SUBDEVICE_MASK_OPCODE_VALUE: SET_MASK, nv.NVC56F_DMA_STORE_SUBDEVICE_MASK_OPCODE_VALUE: STORE_MASK,
             nv.NVC56F_DMA_USE_SUBDEVICE_MASK_OPCODE_VALUE: USE_MASK}

def decode_header(hdr:int) -> tuple[str, int, int, int] | str:
  """One pushbuffer method header -> (form, subchannel, method byte address, count) where count is the number of data
  dwords that follow (for IMMD: the 13-bit data itself; for the mask forms: the 12-bit mask in bits 15:4).
  Returns an error text instead for the reserved encodings."""
  sec, sub = _bits(hdr, nv.NVC56F_DMA_SEC_OP), _bits(hdr, nv.NVC56F_DMA_METHOD_SUBCHANNEL)
  if (form:=_NEW_FORMS.get(sec)) is not None: return form, sub, _bits(hdr, nv.NVC56F_DMA_METHOD_ADDRESS) << 2, _bits(hdr, nv.NVC56F_DMA_METHOD_COUNT)
  if sec == nv.NVC56F_DMA_SEC_OP_IMMD_DATA_METHOD: return IMMD, sub, _bits(hdr, nv.NVC56F_DMA_IMMD_ADDRESS) << 2, _bits(hdr, nv.NVC56F_DMA_IMMD_DATA)
  if sec == nv.NVC56F_DMA_SEC_OP_END_PB_SEGMENT: return END_SEGMENT, 0, 0, 0
  if sec in (nv.NVC56F_DMA_SEC_OP_GRP0_USE_TERT, nv.NVC56F_DMA_SEC_OP_GRP2_USE_TERT):
    if sec == nv.NVC56F_DMA_SEC_OP_GRP0_USE_TERT and (op:=_MASK_OPS.get(_bits(hdr, nv.NVC56F_DMA_SET_SUBDEVICE_MASK_OPCODE))) is not None:
      return op, 0, 0, _bits(hdr, nv.NVC56F_DMA_SET_SUBDEVICE_MASK_VALUE)
    if _bits(hdr, nv.NVC56F_DMA_TERT_OP) == nv.NVC56F_DMA_TERT_OP_GRP0_INC_METHOD:   # == GRP2_NON_INC_METHOD
      return (INC if sec == nv.NVC56F_DMA_SEC_OP_GRP0_USE_TERT else NON_INC), sub, _bits(hdr, nv.NVC56F_DMA_METHOD_ADDRESS_OLD) << 2, \
        _bits(hdr, nv.NVC56F_DMA_METHOD_COUNT_OLD)
    return f"SEC_OP {sec} with TERT_OP {_bits(hdr, nv.NVC56F_DMA_TERT_OP)} is a reserved header encoding"
  return f"SEC_OP {sec} (RESERVED6) is a reserved header encoding"

class Channel:
  """One GPFIFO: ring of `entries` u64 at `ring`, USERD at `userd` (GPGet +0x88, GPPut +0x8C), doorbell token `token`.
  The parser state (pending method, data count, subdevice mask) lives across segments, as in the PBDMA."""
  def __init__(self, drv:NVDriver, idx:int, ring:int, entries:int, userd:int, token:int):
    self.drv, self.idx, self.ring, self.entries, self.userd, self.token = drv, idx, ring, entries, userd, token
    self.get, self.pos, self.error = 0, 0, None          # ring index; dword offset inside the current segment
    self.sub, self.mthd, self.left, self.mode = 0, 0, 0, INC   # the method header being consumed (`left` data dwords to go)
    self.mask, self.stored_mask = 0xFFF, 0xFFF           # subdevice masks: this GPU is subdevice 0 (bit 0)
    self.state: dict[tuple[int, int], int] = {}          # (subchannel, method byte address) -> last data; host methods under -1
    self.objects: dict[int, Engine] = {}                 # subchannel -> engine object bound by SET_OBJECT
    self.launches, self.blocked_on, self.watch = 0, "", WaitWatch()   # blocked_on: the semaphore acquire it waits on, for `watch`

  def __repr__(self): return f"GPFIFO channel {self.idx} (token {self.token})"

  def read(self, addr:int, size:int, what:str) -> bytes:
    """The bytes at `[addr, addr+size)`: QueueFault unless they are registered GPU memory (UVM_MAP_EXTERNAL_ALLOCATION) and
    still host memory of the process (the driver's checked copies, `DeviceMemory`)."""
    return bytes(self.drv.read(addr, size, repr(self), what))
  def _uint(self, addr:int, size:int, what:str) -> int: return self.drv.uint(addr, size, repr(self), what)
  def write(self, addr:int, data:bytes, what:str): self.drv.write(addr, data, repr(self), what)

  def run(self) -> bool:
    """Execute ready work. Returns True if anything progressed. Any error stops this channel only (see `_stop`)."""
    if self.error is not None: return False
    progress = False
    try:
      while self.get != (put:=self._uint(self.userd + nv.AmpereAControlGPFifo.GPPut.offset, 4, "USERD GPPut")):
        if put >= self.entries:
          raise PacketError(repr(self), "USERD GPPut", put, f"GPPut={put} is outside the ring of {self.entries} entries (write put % entries)")
        entry = self._uint(self.ring + 8 * self.get, 8, "GP entry")
        lo, hi, where = entry & 0xFFFFFFFF, entry >> 32, f"GP entry {self.get} ({entry:#018x})"
        if (n:=_bits(hi, nv.NVC56F_GP_ENTRY1_LENGTH)) == 0:
          if (op:=_bits(hi, nv.NVC56F_GP_ENTRY1_OPCODE)) != nv.NVC56F_GP_ENTRY1_OPCODE_NOP:
            raise PacketError(repr(self), where, hi, f"control entry opcode {op} is not modelled (NOP is; ILLEGAL, GP_CRC, PB_CRC stop the channel)")
        else:
          if _bits(lo, nv.NVC56F_GP_ENTRY0_FETCH) == nv.NVC56F_GP_ENTRY0_FETCH_CONDITIONAL:
            raise PacketError(repr(self), where, lo, "conditional fetch is not modelled (clear GP_ENTRY0_FETCH)")
          addr = _bits(hi, nv.NVC56F_GP_ENTRY1_GET_HI) << 32 | _bits(lo, nv.NVC56F_GP_ENTRY0_GET) << 2
          words = (ctypes.c_uint32 * n).from_buffer_copy(self.read(addr, 4 * n, "pushbuffer segment"))
          if not self._segment(addr, words): break      # blocked on a semaphore acquire
        self.get, self.pos, progress, self.blocked_on = (self.get + 1) % self.entries, 0, True, ""
        self.write(self.userd + nv.AmpereAControlGPFifo.GPGet.offset, self.get.to_bytes(4, "little"), "USERD GPGet")
    except Exception as e: self._stop(e)
    self.watch.update(self, "" if self.error is not None else self.blocked_on, progress)
    return progress

  def _segment(self, addr:int, words) -> bool:
    """Consume the segment from `self.pos`. False = blocked (the dword at `self.pos` is retried next round)."""
    while self.pos < len(words):
      v, where = words[self.pos], f"segment {addr:#x}+{4*self.pos:#x}"
      if self.left:                                      # a data dword of the current header
        if self.mask & 1 and not self._method(self.sub, self.mthd, v, where): return False
        self.left -= 1
        if self.mode != NON_INC: self.mthd += 4
        if self.mode == ONE_INC: self.mode = NON_INC
      else:
        if isinstance(d:=decode_header(v), str): raise PacketError(repr(self), where, v, d + " (NVC56F_DMA_SEC_OP)")
        form, sub, mthd, cnt = d
        if form == END_SEGMENT: break
        if form == IMMD:
          if self.mask & 1 and not self._method(sub, mthd, cnt, where): return False
        elif form == SET_MASK: self.mask = cnt
        elif form == STORE_MASK: self.stored_mask = cnt
        elif form == USE_MASK: self.mask = self.stored_mask
        else: self.sub, self.mthd, self.left, self.mode = sub, mthd, cnt, form
      self.pos += 1
    return True

  # *** method delivery: one (subchannel, method, data) at a time. Returns False when blocked.
  def _method(self, sub:int, mthd:int, v:int, where:str) -> bool:
    if mthd < HOST_METHODS_END:
      if mthd == nv.NVC56F_SET_OBJECT: return self._set_object(sub, v, where)
      self.state[(-1, mthd)] = v
      return self._host(mthd, v, where)
    self.state[(sub, mthd)] = v
    if (eng:=self.objects.get(sub)) is not None: return eng.method(mthd, v, where)
    raise PacketError(repr(self), where, mthd, f"method {mthd:#x} on subchannel {sub}, which has no object (send SET_OBJECT with the class first)")

  def _set_object(self, sub:int, v:int, where:str) -> bool:
    if (cls:=_bits(v, nv.NVC56F_SET_OBJECT_NVCLASS)) not in ENGINES:
      raise PacketError(repr(self), where, v, f"SET_OBJECT class {cls:#x} on subchannel {sub} is not an engine of the mock GPU "
                                              f"(ADA_COMPUTE_A {nv.ADA_COMPUTE_A:#x}, AMPERE_DMA_COPY_B {nv.AMPERE_DMA_COPY_B:#x})")
    self.objects[sub] = ENGINES[cls](self, sub)
    return True

  def _host(self, mthd:int, v:int, where:str) -> bool:
    if mthd in _HOST_STATE or mthd in _HOST_NOOP: return True
    if mthd == nv.NVC56F_SEM_EXECUTE: return self._sem_execute(v, where)
    if mthd == nv.NVC56F_SEMAPHORED: return self._semaphore_d(v, where)
    if mthd == nv.NVC56F_SET_REFERENCE:
      self.write(self.userd + nv.AmpereAControlGPFifo.Reference.offset, v.to_bytes(4, "little"), "USERD Reference")
      return True
    if mthd == nv.NVC56F_ILLEGAL: raise PacketError(repr(self), where, v, "the ILLEGAL host method stops the channel")
    raise PacketError(repr(self), where, v, f"host method {method_name('NVC56F', mthd)} is not modelled")

  def _sem_execute(self, v:int, where:str) -> bool:
    s = self.state
    addr = s.get((-1, nv.NVC56F_SEM_ADDR_LO), 0) | s.get((-1, nv.NVC56F_SEM_ADDR_HI), 0) << 32
    payload = s.get((-1, nv.NVC56F_SEM_PAYLOAD_LO), 0) | s.get((-1, nv.NVC56F_SEM_PAYLOAD_HI), 0) << 32
    op, wide = _bits(v, nv.NVC56F_SEM_EXECUTE_OPERATION), _bits(v, nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE) == nv.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT
    size = 8 if wide else 4
    mask = (1 << (8 * size)) - 1
    if op == nv.NVC56F_SEM_EXECUTE_OPERATION_RELEASE:
      self.write(addr, (payload & mask).to_bytes(size, "little"), "semaphore release")
      if _bits(v, nv.NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP): self.write(addr + 8, time.perf_counter_ns().to_bytes(8, "little"), "semaphore timestamp")
      return True
    cur, payload = self._uint(addr, size, "semaphore acquire"), payload & mask
    if op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE: ok, rel = cur == payload, "=="
    elif op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ: ok, rel = cur >= payload, ">="
    elif op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ: ok, rel = ((cur - payload) & mask) <= mask >> 1, ">= (circular)"
    elif op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND: ok, rel = (cur & payload) != 0, "& (nonzero)"
    elif op == nv.NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR: ok, rel = (~(cur | payload) & mask) != 0, "nor (nonzero)"
    else: raise PacketError(repr(self), where, v, f"SEM_EXECUTE operation {op} (reduction) is not modelled (release and the acquires are)")
    return self._acquire(ok, "SEM_EXECUTE", where, addr, 8 * size, rel, payload, cur)

  def _semaphore_d(self, v:int, where:str) -> bool:
    """The older four-method semaphore (SEMAPHOREA..D): 32-bit payload; a 16-byte release adds the ns timestamp at +8."""
    s = self.state
    addr = s.get((-1, nv.NVC56F_SEMAPHOREA), 0) << 32 | (s.get((-1, nv.NVC56F_SEMAPHOREB), 0) & ~3)
    payload, op = s.get((-1, nv.NVC56F_SEMAPHOREC), 0), _bits(v, nv.NVC56F_SEMAPHORED_OPERATION)
    if op == nv.NVC56F_SEMAPHORED_OPERATION_RELEASE:
      four = _bits(v, nv.NVC56F_SEMAPHORED_RELEASE_SIZE) == nv.NVC56F_SEMAPHORED_RELEASE_SIZE_4BYTE
      ts = b"" if four else bytes(4) + time.perf_counter_ns().to_bytes(8, "little")
      self.write(addr, payload.to_bytes(4, "little") + ts, "semaphore release")
      return True
    cur = self._uint(addr, 4, "semaphore acquire")
    if op == nv.NVC56F_SEMAPHORED_OPERATION_ACQUIRE: ok, rel = cur == payload, "=="
    elif op == nv.NVC56F_SEMAPHORED_OPERATION_ACQ_GEQ: ok, rel = ((cur - payload) & 0xFFFFFFFF) < 0x80000000, ">= (circular)"
    elif op == nv.NVC56F_SEMAPHORED_OPERATION_ACQ_AND: ok, rel = (cur & payload) != 0, "& (nonzero)"
    else: raise PacketError(repr(self), where, v, f"SEMAPHORED operation {op:#x} is not modelled (acquire, release, acq_geq, acq_and are)")
    return self._acquire(ok, "SEMAPHORED", where, addr, 32, rel, payload, cur)

  def _acquire(self, ok:bool, name:str, where:str, addr:int, bits:int, rel:str, payload:int, cur:int) -> bool:
    """A semaphore acquire's outcome; a failing one records what it waits for (the blocked-channel report names it)."""
    if not ok: self.blocked_on = f"{name} acquire at GP entry {self.get} {where}: {bits}-bit semaphore at {addr:#x} {rel} {payload:#x} (now {cur:#x})"
    return ok

  def _stop(self, e:BaseException):
    """Stop this channel for good: the driver records the first fault for its debugger controls; print the report."""
    self.error = e
    report_stop(self, f"GPGet={self.get}", self.drv.report_channel_error(e), e)

# *** what each class does with a method besides storing its data (anything else stops the channel, naming the method)
_HOST_STATE = {nv.NVC56F_SEM_ADDR_LO, nv.NVC56F_SEM_ADDR_HI, nv.NVC56F_SEM_PAYLOAD_LO, nv.NVC56F_SEM_PAYLOAD_HI, nv.NVC56F_SEMAPHOREA,
               nv.NVC56F_SEMAPHOREB, nv.NVC56F_SEMAPHOREC, nv.NVC56F_MEM_OP_A, nv.NVC56F_MEM_OP_B, nv.NVC56F_MEM_OP_C}
# no effect in a model that runs every method to completion in order, without caches, TLBs or interrupts to deliver
_HOST_NOOP = {nv.NVC56F_NOP, nv.NVC56F_NON_STALL_INTERRUPT, nv.NVC56F_FB_FLUSH, nv.NVC56F_WFI, nv.NVC56F_YIELD, nv.NVC56F_MEM_OP_D,
              nv.NVC56F_CLEAR_FAULTED}
