"""The engine objects a GPFIFO channel binds to its subchannels with SET_OBJECT (mock/nv/gpfifo.py delivers their methods):
ADA_COMPUTE_A (QMD v3 launches into the PTX engine, QMD releases, dependent-QMD chains) and AMPERE_DMA_COPY_B (pitch
copies, semaphore releases). Every method's data is kept in the channel's state; a method neither engine models stops the
channel with a PacketError naming it (its autogen name)."""
from __future__ import annotations
import ctypes, time
from typing import TYPE_CHECKING
from tinygrad.runtime.autogen import nv_570 as nv
from mockgpu.mock.errors import PacketError, QueueFault
from mockgpu.mock.ptx import engine
if TYPE_CHECKING: from mockgpu.mock.nv.gpfifo import Channel

__all__ = ["ENGINES", "ComputeEngine", "CopyEngine", "QMD_FIELDS", "method_name"]

_Q = "NVC6C0_QMDV03_00_"
QMD_FIELDS = {n[len(_Q):]: v for n, v in vars(nv).items() if n.startswith(_Q) and isinstance(v, tuple)}
QMD_BYTES = 0x100
CBUF_BYTES, CBUF_NBUFS, CBUF_NVALS = 0x160, 80, 81      # mock-mode constant buffer 0 (NVArgsState)

def bits(value:int, spec:tuple[int, int]) -> int: return (value >> spec[1]) & ((1 << (spec[0] - spec[1] + 1)) - 1)

def method_name(prefix:str, mthd:int) -> str:
  """The autogen name of method `mthd` of a class (`NVC56F`, `NVC6C0`, `NVC6B5`), for messages: an int constant none of
  whose `_` prefixes names a bit field (those are field values)."""
  for n, v in vars(nv).items():
    if n.startswith(prefix + "_") and v == mthd and isinstance(v, int) and \
       not any(isinstance(getattr(nv, n[:i], None), tuple) for i in range(len(prefix), len(n)) if n[i] == "_"): return n
  return f"{prefix} method {mthd:#x}"

class Engine:
  """An engine object bound to subchannel `sub` of channel `ch`. `method` returns False while blocked (retried later)."""
  cls, prefix, name, state_methods, noop_methods = 0, "", "", frozenset(), frozenset()
  def __init__(self, ch:Channel, sub:int): self.ch, self.sub = ch, sub
  def s(self, mthd:int) -> int: return self.ch.state.get((self.sub, mthd), 0)
  def method(self, mthd:int, v:int, where:str) -> bool:
    if mthd in self.state_methods or mthd in self.noop_methods: return True
    if (fn:=self.actions.get(mthd)) is None:
      raise PacketError(repr(self.ch), where, v, f"method {method_name(self.prefix, mthd)} of {self.name} is not modelled")
    return fn(self, v, where)
  actions: dict = {}

class ComputeEngine(Engine):
  cls, prefix, name = nv.ADA_COMPUTE_A, "NVC6C0", "ADA_COMPUTE_A"
  state_methods = frozenset({nv.NVC6C0_SEND_PCAS_A, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_B,
    nv.NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A, nv.NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_B, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_A,
    nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_B, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A, nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B,
    nv.NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C})
  # no effect on a model without caches (the PTX engine keeps local and shared memory itself, so the windows are state only)
  noop_methods = frozenset({nv.NVC6C0_NO_OPERATION, nv.NVC6C0_INVALIDATE_SHADER_CACHES, nv.NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI})
  SCHEDULE = {getattr(nv, f"NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_{a}") for a in ("SCHEDULE", "INVALIDATE_COPY_SCHEDULE", "PREFETCH_SCHEDULE",
              "INVALIDATE_PREFETCH_COPY_SCHEDULE", "INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING")}
  NO_LAUNCH = {getattr(nv, f"NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_{a}") for a in ("NOP", "INVALIDATE", "PREFETCH")}

  def send_pcas2(self, v:int, where:str) -> bool:
    """SEND_SIGNALING_PCAS2_B: a scheduling action runs the QMD of SEND_PCAS_A and the chain of QMDs it schedules."""
    if (act:=bits(v, nv.NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION)) in self.SCHEDULE:
      qmd, seen = self.s(nv.NVC6C0_SEND_PCAS_A) << 8, set()
      while qmd:
        if qmd in seen: raise PacketError(repr(self.ch), f"QMD {qmd:#x}", 0, "the dependent-QMD chain loops back to this QMD (the GPU would hang)")
        seen.add(qmd)
        qmd = self.launch(qmd)
    elif act not in self.NO_LAUNCH: raise PacketError(repr(self.ch), where, v, f"SEND_SIGNALING_PCAS2_B action {act} is not modelled")
    return True
  actions = {nv.NVC6C0_SEND_SIGNALING_PCAS2_B: send_pcas2}

  def launch(self, qmd_addr:int) -> int:
    """Run the QMD at `qmd_addr`, write its releases; returns the dependent QMD to run next (0 if none)."""
    ch, raw = self.ch, int.from_bytes(self.ch.read(qmd_addr, QMD_BYTES, "QMD"), "little")
    q = lambda name: bits(raw, QMD_FIELDS[name])
    if (ver:=q("QMD_MAJOR_VERSION")) != 3: raise PacketError(repr(ch), f"QMD {qmd_addr:#x}", 0, f"QMD major version {ver}, ADA_COMPUTE_A takes 3")
    grid = (q("CTA_RASTER_WIDTH"), q("CTA_RASTER_HEIGHT"), q("CTA_RASTER_DEPTH"))
    block = (q("CTA_THREAD_DIMENSION0"), q("CTA_THREAD_DIMENSION1"), q("CTA_THREAD_DIMENSION2"))
    prog = q("PROGRAM_ADDRESS_UPPER") << 32 | q("PROGRAM_ADDRESS_LOWER")
    cbuf = bits(raw, nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_UPPER(0)) << 32 | bits(raw, nv.NVC6C0_QMDV03_00_CONSTANT_BUFFER_ADDR_LOWER(0))
    words = (ctypes.c_uint32 * (CBUF_BYTES // 4)).from_buffer_copy(ch.read(cbuf, CBUF_BYTES, "constant buffer 0"))
    nb, nvals = words[CBUF_NBUFS], words[CBUF_NVALS]
    args = list((ctypes.c_uint64 * (nb + nvals)).from_buffer_copy(ch.read(cbuf + CBUF_BYTES, 8 * (nb + nvals), "kernel arguments")))
    if (r:=ch.drv.memory.find(prog)) is None: raise QueueFault(repr(ch), prog, 1, "program (PTX text)")
    text = ch.read(prog, min(r.end - prog, 1 << 24), "program (PTX text)").split(b"\0", 1)[0]
    mod = engine.load(text)
    if len(mod.kernels) != 1:
      raise PacketError(repr(ch), f"QMD {qmd_addr:#x}", 0, f"the program at {prog:#x} has {len(mod.kernels)} kernels, expected 1")
    mod.launch(next(iter(mod.kernels)), args, grid, block, ch.drv.memory)
    ch.launches += 1
    for i in (0, 1):
      if q(f"RELEASE{i}_ENABLE"):
        addr = q(f"RELEASE{i}_ADDRESS_UPPER") << 32 | q(f"RELEASE{i}_ADDRESS_LOWER")
        payload = q(f"RELEASE{i}_PAYLOAD_UPPER") << 32 | q(f"RELEASE{i}_PAYLOAD_LOWER")
        ch.write(addr, payload.to_bytes(8, "little") + time.perf_counter_ns().to_bytes(8, "little"), f"QMD release{i}")
    if not q("DEPENDENT_QMD0_ENABLE"): return 0
    if (act:=q("DEPENDENT_QMD0_ACTION")) != nv.NVC6C0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE:
      raise PacketError(repr(ch), f"QMD {qmd_addr:#x}", 0, f"DEPENDENT_QMD0_ACTION {act} is not modelled (QMD_SCHEDULE is)")
    return q("DEPENDENT_QMD0_POINTER") << 8

class CopyEngine(Engine):
  cls, prefix, name = nv.AMPERE_DMA_COPY_B, "NVC6B5", "AMPERE_DMA_COPY_B"
  state_methods = frozenset({nv.NVC6B5_OFFSET_IN_UPPER, nv.NVC6B5_OFFSET_IN_LOWER, nv.NVC6B5_OFFSET_OUT_UPPER, nv.NVC6B5_OFFSET_OUT_LOWER,
    nv.NVC6B5_PITCH_IN, nv.NVC6B5_PITCH_OUT, nv.NVC6B5_LINE_LENGTH_IN, nv.NVC6B5_LINE_COUNT, nv.NVC6B5_SET_SEMAPHORE_A, nv.NVC6B5_SET_SEMAPHORE_B,
    nv.NVC6B5_SET_SEMAPHORE_PAYLOAD})
  noop_methods = frozenset({nv.NVC6B5_NOP})
  PITCH_ONLY = ((nv.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT, nv.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH, "block-linear source layout"),
                (nv.NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT, nv.NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH, "block-linear destination layout"),
                (nv.NVC6B5_LAUNCH_DMA_REMAP_ENABLE, nv.NVC6B5_LAUNCH_DMA_REMAP_ENABLE_FALSE, "component remapping"),
                (nv.NVC6B5_LAUNCH_DMA_SRC_TYPE, nv.NVC6B5_LAUNCH_DMA_SRC_TYPE_VIRTUAL, "physical source addressing"),
                (nv.NVC6B5_LAUNCH_DMA_DST_TYPE, nv.NVC6B5_LAUNCH_DMA_DST_TYPE_VIRTUAL, "physical destination addressing"))

  def launch_dma(self, v:int, where:str) -> bool:
    """LAUNCH_DMA: an optional pitch copy (LINE_COUNT lines with MULTI_LINE_ENABLE), then an optional semaphore release."""
    ch, s = self.ch, self.s
    if bits(v, nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_ENABLE) == nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_ENABLE_TRUE:
      raise PacketError(repr(ch), where, v, "LAUNCH_DMA semaphore reduction is not modelled")
    if bits(v, nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE) != nv.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NONE:
      for spec, ok, what in self.PITCH_ONLY:
        if bits(v, spec) != ok: raise PacketError(repr(ch), where, v, f"LAUNCH_DMA {what} is not modelled (pitch copies of virtual addresses are)")
      src = s(nv.NVC6B5_OFFSET_IN_UPPER) << 32 | s(nv.NVC6B5_OFFSET_IN_LOWER)
      dst = s(nv.NVC6B5_OFFSET_OUT_UPPER) << 32 | s(nv.NVC6B5_OFFSET_OUT_LOWER)
      n, multi = s(nv.NVC6B5_LINE_LENGTH_IN), bits(v, nv.NVC6B5_LAUNCH_DMA_MULTI_LINE_ENABLE) == nv.NVC6B5_LAUNCH_DMA_MULTI_LINE_ENABLE_TRUE
      for line in range(s(nv.NVC6B5_LINE_COUNT) if multi else 1):
        ch.write(dst + line * s(nv.NVC6B5_PITCH_OUT), ch.read(src + line * s(nv.NVC6B5_PITCH_IN), n, "copy source"), "copy destination")
    sem, addr = bits(v, nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE), s(nv.NVC6B5_SET_SEMAPHORE_A) << 32 | s(nv.NVC6B5_SET_SEMAPHORE_B)
    payload = s(nv.NVC6B5_SET_SEMAPHORE_PAYLOAD).to_bytes(4, "little")
    if sem == nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE: ch.write(addr, payload, "copy semaphore")
    elif sem == nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE:
      ch.write(addr, payload + bytes(4) + time.perf_counter_ns().to_bytes(8, "little"), "copy semaphore")
    elif sem != nv.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_NONE:
      raise PacketError(repr(ch), where, v, f"LAUNCH_DMA semaphore type {sem} is not modelled (none, one-word and four-word release are)")
    return True
  actions = {nv.NVC6B5_LAUNCH_DMA: launch_dma}

ENGINES: dict[int, type[Engine]] = {e.cls: e for e in (ComputeEngine, CopyEngine)}
