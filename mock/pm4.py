"""PM4 compute queue: the command processor of one KFD compute queue.

`PM4_PACKETS` is the packet table (opcode name -> handler, allowed payload lengths); each handler is the `PM4Queue`
method named after its packet and returns False while it must wait (the packet is retried next round). Unknown or
malformed packets raise PacketError, which stops the queue with a hardware-exception event (never skipped silently).
Ring pointers are in dwords and read modulo the ring; INDIRECT_BUFFER pushes an IB that runs to its end (HCQGraph)."""
from __future__ import annotations
import struct, sys
from mockgpu.mock.device import host_spins
from mockgpu.mock.errors import PacketError
from mockgpu.mock.gpu import GPU, TRACE, Queue, gpu_clock

__all__ = ["PM4Queue", "PM4_PACKETS", "NOOP_EVENTS", "COMPARE", "poll"]

# EVENT_WRITE types that need no action in a model that executes one packet at a time, in order
NOOP_EVENTS = {"CS_PARTIAL_FLUSH", "CS_DONE", "CACHE_FLUSH", "CACHE_FLUSH_AND_INV_EVENT", "PERFCOUNTER_START", "PERFCOUNTER_STOP",
               "PERFCOUNTER_SAMPLE", "PIPELINESTAT_START", "PIPELINESTAT_STOP", "THREAD_TRACE_START", "THREAD_TRACE_STOP",
               "THREAD_TRACE_MARKER", "THREAD_TRACE_FINISH"}
# RELEASE_MEM events that mean "at end of pipe"
EOP_EVENTS = {"CACHE_FLUSH_AND_INV_TS_EVENT", "CACHE_FLUSH_TS", "BOTTOM_OF_PIPE_TS", "CS_DONE"}
# WAIT_REG_MEM / POLL_REGMEM compare functions (bits 0-2 of the info dword)
COMPARE = {0: lambda v, r: True, 1: lambda v, r: v < r, 2: lambda v, r: v <= r, 3: lambda v, r: v == r, 4: lambda v, r: v != r,
           5: lambda v, r: v >= r, 6: lambda v, r: v > r}
COMPARE_OPS = {0: "(always)", 1: "<", 2: "<=", 3: "==", 4: "!=", 5: ">=", 6: ">"}
MAX_IB_DEPTH = 2   # IB1 and IB2, as on the hardware

def poll(q:Queue, what:str, value:int, func:int, ref:int, mask:int) -> bool:
  """One evaluation of a WAIT_REG_MEM / POLL_REGMEM compare `value & mask <func> ref`; records in `q.waits_for` what it waits
  for (the blocked-queue report names it)."""
  q.waits_for = f"{what} & {mask:#x} {COMPARE_OPS[func]} {ref:#x} (now {value & mask:#x})"
  return COMPARE[func](value & mask, ref)

class PM4Queue(Queue):
  """A PM4 compute queue (KFD queue type COMPUTE) with its own register state (SH, UCONFIG, the HDP flush pair)."""
  engine = "PM4"

  def __init__(self, gpu:GPU, *args):
    super().__init__(gpu, *args)
    p = gpu.profile
    self.pm4, self.regs, self.ibs = p.pm4, {}, []   # ibs: stack of [addr, size_dw, pos, fetched] (see _read)
    self.handlers = {getattr(self.pm4, f"PACKET3_{name}"): (name, fn, lens) for name, (fn, lens) in PM4_PACKETS.items()}
    self.event_names = p.soc.enum_VGT_EVENT_TYPE
    self.hdp_done = {p.nbif_reg(f"regBIF_BX_PF{pf}_GPU_HDP_FLUSH_REQ"): p.nbif_reg(f"regBIF_BX_PF{pf}_GPU_HDP_FLUSH_DONE") for pf in "01"}
    self.sqtt_regs = {r.addr[0] for n, r in p.gc_regs.regs.items() if n.startswith(("regSQ_THREAD_TRACE_", "mmSQ_THREAD_TRACE_"))}

  def _where(self, pos:int) -> str: return f"IB {self.ibs[-1][0]:#x} dword {pos:#x}" if self.ibs else f"ring dword {pos:#x}"
  def _read(self, pos:int, n:int=1) -> list[int]:
    if not self.ibs: return self.dwords(pos, n)
    ib = self.ibs[-1]   # [addr, size_dw, pos, fetched]: fetched ahead like the ring (Queue.ahead)
    return self.ahead(ib[3], pos, n, ib[1], lambda p, k: list(struct.unpack(f"<{k}I", self.gpu.read(ib[0] + p * 4, 4 * k, "PM4", "INDIRECT_BUFFER"))))
  def bad(self, msg:str) -> PacketError: return PacketError("PM4", self.where, self.header, msg)

  def step(self) -> bool:
    src = self.ibs[-1] if self.ibs else None
    if src is not None:
      pos, end = src[2], src[1]
      if pos >= end:
        self.ibs.pop()
        return True
      self.gpu.check(src[0], end * 4, "PM4", "INDIRECT_BUFFER (unmapped while in use)")
    else:
      pos, end = self.rptr, self.put
      if pos >= end: return False
      if end - pos > self.ring_size // 4: raise PacketError("PM4", self._where(pos), 0, f"ring overrun: write pointer {end:#x} is more "
                                                          f"than the ring size ahead of the read pointer {pos:#x}")
    self.where, self.header = self._where(pos), (header:=self._read(pos)[0])
    if header >> 30 != 3: raise self.bad(f"type-{header >> 30} packet; only type-3 packets are modelled")
    count, op = ((header >> 16) & 0x3FFF) + 1, (header >> 8) & 0xFF
    if count >= self.ring_size // 4: raise self.bad(f"packet claims {count} payload dwords, more than the ring holds")
    if pos + 1 + count > end:
      if src is None:   # the producer has not published the rest yet (tinygrad never does this: reported if it lasts)
        self.blocked_on = f"the rest of a {count + 1}-dword packet at {self.where}: the write pointer {end:#x} ends inside it"
        return False
      raise self.bad(f"packet of {count} payload dwords runs past the end of the IB ({end} dwords)")
    if (h:=self.handlers.get(op)) is None: raise self.bad(f"unknown PM4 opcode {op:#x}")
    name, fn, lens = h
    if lens is not None and count not in lens: raise self.bad(f"{name} with {count} payload dwords; expected {' or '.join(map(str, lens))}")
    payload = self._read(pos + 1, count)
    if not fn(self, *payload):
      self.blocked_on = f"{name} at {self.where}: {self.waits_for}"
      return False
    if TRACE: self.trace(name, self.where, payload)
    if src is not None: src[2] = pos + 1 + count
    else: self.rptr = pos + 1 + count
    self.blocked_on = ""
    return True

  # *** memory and registers ***
  def _addr(self, lo:int, hi:int, size:int, what:str) -> int:
    addr = (hi << 32) | lo
    if addr % min(size, 4): raise self.bad(f"{what} address {addr:#x} is not {min(size, 4)}-byte aligned")
    return self.gpu.check(addr, size, "PM4", what)
  def _write(self, addr:int, value:int, size:int, what:str): self.gpu.write_int(addr, value, size, "PM4", what)
  def _write_reg(self, reg:int, value:int):
    if reg in self.sqtt_regs: raise self.bad(f"register {reg:#x} belongs to the SQ thread trace (SQTT), which is not modelled; unset SQTT "
                                             "(and VIZ>=2); PROFILE=1 and PMC=1 work")
    self.regs[reg] = value
    if (done:=self.hdp_done.get(reg)) is not None: self.regs[done] = value   # an HDP flush completes at once

  # *** packet handlers (PM4_PACKETS) ***
  def set_sh_reg(self, off:int, *vals:int) -> bool:
    if off + len(vals) > self.pm4.PACKET3_SET_SH_REG_END - self.pm4.PACKET3_SET_SH_REG_START:
      raise self.bad(f"SET_SH_REG offset {off:#x} + {len(vals)} registers is outside the SH register window")
    for i, v in enumerate(vals): self._write_reg(self.pm4.PACKET3_SET_SH_REG_START + off + i, v)
    return True

  def set_uconfig_reg(self, off:int, *vals:int) -> bool:
    if off + len(vals) > 0x10000: raise self.bad(f"SET_UCONFIG_REG offset {off:#x} is outside the UCONFIG register window")
    for i, v in enumerate(vals): self._write_reg(self.pm4.PACKET3_SET_UCONFIG_REG_START + off + i, v)
    return True

  def acquire_mem(self, *_) -> bool: return True   # caches are coherent in the model

  def release_mem(self, event_dw:int, sel:int, addr_lo:int, addr_hi:int, data_lo:int, data_hi:int, ctxid:int=0) -> bool:
    if (ev:=self.event_names.get(event_dw & 0x3F)) not in EOP_EVENTS:
      raise self.bad(f"RELEASE_MEM event {ev or event_dw & 0x3F} is not an end-of-pipe event")
    data_sel, int_sel = (sel >> 29) & 7, (sel >> 24) & 7
    if data_sel == 1: self._write(self._addr(addr_lo, addr_hi, 4, "RELEASE_MEM"), data_lo, 4, "RELEASE_MEM")
    elif data_sel == 2: self._write(self._addr(addr_lo, addr_hi, 8, "RELEASE_MEM"), data_hi << 32 | data_lo, 8, "RELEASE_MEM")
    elif data_sel in (3, 4): self._write(self._addr(addr_lo, addr_hi, 8, "RELEASE_MEM timestamp"), gpu_clock(), 8, "RELEASE_MEM timestamp")
    elif data_sel != 0: raise self.bad(f"RELEASE_MEM data_sel={data_sel} is not modelled (0 none, 1/2 data, 3/4 clock)")
    if int_sel > 3: raise self.bad(f"RELEASE_MEM int_sel={int_sel} is not modelled")
    if int_sel in (1, 2, 3): self.gpu.kfd.interrupt(self.gpu, ctxid)
    return True

  def wait_reg_mem(self, info:int, a1:int, a2:int, ref:int, mask:int, _interval:int) -> bool:
    func, mem_space, operation = info & 7, (info >> 4) & 3, (info >> 6) & 3
    if func not in COMPARE: raise self.bad(f"WAIT_REG_MEM function {func} is reserved")
    if mem_space == 1:
      if operation != 0: raise self.bad(f"WAIT_REG_MEM operation {operation} on memory is not modelled")
      value, what = self.gpu.u32(addr:=self._addr(a1 & ~3, a2, 4, "WAIT_REG_MEM"), "PM4", "WAIT_REG_MEM"), f"memory dword at {addr:#x}"
    elif mem_space == 0:
      if operation == 1:   # write-then-wait: write `ref` to a1, poll a2 (only the HDP flush pair has an effect in the model)
        if self.hdp_done.get(a1) != a2: raise self.bad(f"WAIT_REG_MEM write-then-wait on registers {a1:#x}/{a2:#x} is not modelled "
                                                       f"(only the HDP flush pairs {', '.join(f'{k:#x}/{v:#x}' for k, v in self.hdp_done.items())})")
        self._write_reg(a1, ref)
      elif operation != 0: raise self.bad(f"WAIT_REG_MEM operation {operation} is not modelled")
      value, what = self.regs.get(reg:=a2 if operation == 1 else a1, 0), f"register {reg:#x}"
    else: raise self.bad(f"WAIT_REG_MEM mem_space {mem_space} is not modelled")
    return poll(self, what, value, func, ref, mask)

  def dispatch_direct(self, gx:int, gy:int, gz:int, initiator:int) -> bool:
    from mockgpu.emu.api import Dispatch
    p = self.gpu.profile
    def sh(name:str, i:int=0) -> int: return self.regs.get(p.reg(name) + i, 0)
    if not initiator & 1: raise self.bad(f"DISPATCH_DIRECT initiator {initiator:#x} without COMPUTE_SHADER_EN")
    if any(sh(f"regCOMPUTE_START_{d}") for d in "XYZ"): raise self.bad("COMPUTE_START_X/Y/Z != 0 is not modelled")
    d = Dispatch(arch=p.arch, code_addr=(sh("regCOMPUTE_PGM_HI") << 32 | sh("regCOMPUTE_PGM_LO")) << 8, grid=(gx, gy, gz),
                 block=tuple(sh(f"regCOMPUTE_NUM_THREAD_{d}") & 0x3FF for d in "XYZ"),
                 user_sgprs=tuple(sh("regCOMPUTE_USER_DATA_0", i) for i in range(16)),
                 rsrc1=sh("regCOMPUTE_PGM_RSRC1"), rsrc2=sh("regCOMPUTE_PGM_RSRC2"), rsrc3=sh("regCOMPUTE_PGM_RSRC3"),
                 wave64=p.wave_size == 64 or not (initiator >> 15) & 1,
                 scratch_bytes_per_lane=((sh("regCOMPUTE_TMPRING_SIZE") >> 12) & 0x3FFFF) * p.scratch_granule // 64)
    return self.launch(d)

  def launch(self, dispatch) -> bool:
    """Run one grid on the emulator (`mockgpu.emu.api.run`) against this GPU's mapped ranges; errors stop the queue."""
    from mockgpu.emu.api import default_threads, run
    from mockgpu.mock import recorder
    cap = rec.begin(self, dispatch) if (rec:=recorder.active()) is not None else None   # MOCKGPU_CAPTURE (mockgpu replay capture)
    try:   # while tinygrad spins on the signal, the dispatch keeps the GIL and that core runs the emulator too (host_spins)
      stats = run(dispatch, self.gpu.memory, threads=default_threads(host_waits=True), hold_gil=host_spins, threads_held=default_threads())
    except Exception as e:
      if cap is not None: cap.end(e)
      raise
    if cap is not None: cap.end()
    if stats.oob_reads:   # strict mode only (MOCKGPU_STRICT=1): the hardware performs these reads, so the kernel goes on
      self.gpu.stats["oob_reads"] += stats.oob_reads
      print(f"mockgpu: {self}: {stats.oob_reads} read(s) outside every allocation but inside its mapped page (strict mode); the first: "
            f"{stats.oob_report.describe()}", file=sys.stderr)
    self.gpu.stats["dispatches"] += 1
    self.gpu.stats["wave_instructions"] += stats.instructions
    self.gpu.stats["emu_seconds"] += stats.seconds
    return True

  def event_write(self, dw:int, *_) -> bool:
    if (name:=self.event_names.get(dw & 0x3F)) not in NOOP_EVENTS: raise self.bad(f"EVENT_WRITE of event {name or dw & 0x3F} is not modelled")
    return True

  def indirect_buffer(self, lo:int, hi:int, ctl:int) -> bool:
    if not ctl & self.pm4.INDIRECT_BUFFER_VALID: raise self.bad("INDIRECT_BUFFER without the VALID bit")
    if len(self.ibs) >= MAX_IB_DEPTH: raise self.bad(f"INDIRECT_BUFFER nested deeper than {MAX_IB_DEPTH} levels")
    if (size:=ctl & 0xFFFFF) == 0: raise self.bad("INDIRECT_BUFFER with IB_SIZE=0 (an empty IB) is not modelled; give the IB's length in dwords")
    self.ibs.append([self._addr(lo & ~3, hi & 0xFFFF, size * 4, "INDIRECT_BUFFER"), size, 0, [0, []]])
    self.gpu.stats["indirect_buffers"] += 1
    return True

  def copy_data(self, ctrl:int, src_lo:int, src_hi:int, dst_lo:int, dst_hi:int) -> bool:
    src_sel, dst_sel, wide = ctrl & 0xF, (ctrl >> 8) & 0xF, (ctrl >> 16) & 1
    if src_sel in (0, 4): value = self.regs.get(src_lo, 0)        # memory-mapped / perf-counter register
    elif src_sel == 5: value = src_hi << 32 | src_lo if wide else src_lo   # immediate
    elif src_sel == 9: value = gpu_clock()
    else: raise self.bad(f"COPY_DATA src_sel={src_sel} is not modelled (0/4 register, 5 immediate, 9 clock)")
    if dst_sel == 0: self._write_reg(dst_lo, value & 0xFFFFFFFF)
    elif dst_sel in (2, 5): self._write(self._addr(dst_lo, dst_hi, 8 if wide else 4, "COPY_DATA"), value, 8 if wide else 4, "COPY_DATA")
    else: raise self.bad(f"COPY_DATA dst_sel={dst_sel} is not modelled (0 register, 2/5 memory)")
    return True

  def nop(self, *_) -> bool: return True

# opcode name (pm4_nv/pm4_soc15 PACKET3_<name>) -> (handler, allowed payload dword counts or None for any)
PM4_PACKETS: dict[str, tuple] = {
  "SET_SH_REG": (PM4Queue.set_sh_reg, None), "SET_UCONFIG_REG": (PM4Queue.set_uconfig_reg, None),
  "ACQUIRE_MEM": (PM4Queue.acquire_mem, (6, 7)), "RELEASE_MEM": (PM4Queue.release_mem, (6, 7)),
  "WAIT_REG_MEM": (PM4Queue.wait_reg_mem, (6,)), "DISPATCH_DIRECT": (PM4Queue.dispatch_direct, (4,)),
  "EVENT_WRITE": (PM4Queue.event_write, (1, 3)), "INDIRECT_BUFFER": (PM4Queue.indirect_buffer, (3,)),
  "COPY_DATA": (PM4Queue.copy_data, (5,)), "NOP": (PM4Queue.nop, None),
}
