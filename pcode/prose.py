"""PROSE: entries whose pseudocode is prose, example assembly or machine-level behaviour the compiler does not translate.
Each has the reason and the module that implements it by hand. Built from RULES (regex over '<EnumClass>_<MEMBER>' names,
optionally per arch); `PROSE[(arch, name)]` lists every covered entry explicitly, and the tests check that every rule
matches something and that no entry is both compiled and listed here."""
import functools, re
from dataclasses import dataclass
from mockgpu.pcode.tables import ARCHS, entries
__all__ = ["ProseEntry", "RULES", "prose", "PROSE", "is_prose"]

@dataclass(frozen=True)
class ProseEntry:
  reason: str
  impl: str      # where the hand-written semantics live

_EMU_MATRIX, _EMU_WAVE, _EMU_MEM, _EMU_SCHED = "mockgpu.emu.matrix", "mockgpu.emu (wave-level ops)", "mockgpu.emu (memory)", "mockgpu.emu (scheduler)"
# (regex, archs or None for all, reason, impl)
RULES: list[tuple[str, tuple[str, ...]|None, str, str]] = [
  (r"VOP3POp_V_(WMMA|SWMMAC|MFMA|SMFMAC)_\w+", None, "matrix op: the pseudocode is the formula `D = A (MxK) * B (KxN) + C`, not code", _EMU_MATRIX),
  (r"DSOp_DS_SWIZZLE_B32", None, "prose table of swizzle patterns / C-like sketch with for(;;) and braces", _EMU_WAVE),
  (r"DSOp_DS_(CONSUME|APPEND)", None, "prose: counts valid lanes into an LDS counter (`countbits(valid mask)`)", _EMU_WAVE),
  (r"DSOp_DS_(ADD|SUB)_GS_REG_RTN", None, "geometry-shader registers (GS_REGS), `if` without `then`; graphics only", _EMU_MEM),
  (r"LDSDIROp_LDS_DIRECT_LOAD", None, "field descriptions (`OFFSET0 = Unsigned byte offset ...`), not code", _EMU_MEM),
  (r"(MIMGOp|VSAMPLEOp)_IMAGE_GET_LOD", None, "prose (`VDATA[1] = rawLOD.`); texture sampling is not modelled", _EMU_MEM),
  (r"(MTBUFOp|MUBUFOp|VBUFFEROp)_T?BUFFER_STORE(_D16)?(_HI)?_FORMAT\w*", None,
   "format conversion stores `MEM[...] = ConvertToFormat(...)`: the access size depends on the buffer descriptor's format", _EMU_MEM),
  (r"SOP1Op_S_(BARRIER_SIGNAL|BARRIER_SIGNAL_ISFIRST|GET_BARRIER_STATE)", None, "named-barrier state (BARRIER_STATE[...].signalCnt) of the workgroup", _EMU_SCHED),
  (r"SOPPOp_S_BARRIER_WAIT", None, "waits on WAVE_BARRIER_COMPLETE: a scheduler operation", _EMU_SCHED),
  (r"SOPKOp_S_(GETREG|SETREG|SETREG_IMM32)_B32", None, "hardware registers (HW_REGISTERS[hwRegId]) with per-field write masks", _EMU_WAVE),
  (r"SOPKOp_S_WAITCNT_(EXPCNT|LGKMCNT|VMCNT|VSCNT)", None, "prose (`vscnt <= S0.u[5:0] + S1.u[5:0].`); counters are a timing concept", _EMU_SCHED),
  (r"SOPPOp_S_WAITCNT", None, "prose/field layout of the counters; the emulator executes in order so waits complete immediately", _EMU_SCHED),
  (r"SOPPOp_S_(CODE_END|DELAY_ALU)", None, "example assembly, no semantics beyond a no-op for a functional emulator", _EMU_SCHED),
  (r"SOPPOp_S_SLEEP", None, "example assembly; the emulator's S_SLEEP yields the wave for one scheduling round", _EMU_SCHED),
  (r"SOPPOp_S_SETPRIO", None, "prose about wave priority; no functional effect", _EMU_SCHED),
  (r"SOPPOp_S_TRAP", None, "trap entry: a string statement and trap temporaries (TTMP, TBA); the emulator reports traps as errors", _EMU_SCHED),
  (r"VGLOBALOp_GLOBAL_ATOMIC_ORDERED_ADD_B64", None, "ordered-count hardware (VGT_GS_MAX_WAVE_ID); graphics only", _EMU_MEM),
]

@functools.cache
def prose(arch:str) -> dict[str, ProseEntry]:
  """{entry name: ProseEntry} for `arch`: every entry of the arch matched by a rule."""
  out = {}
  for name in entries(arch):
    for rx, archs, reason, impl in RULES:
      if (archs is None or arch in archs) and re.fullmatch(rx, name):
        out[name] = ProseEntry(reason, impl)
        break
  return out

def is_prose(arch:str, name:str) -> bool:
  """True if entry `name` of `arch` is implemented by hand (see `prose`)."""
  return name in prose(arch)

class _Prose(dict):
  def __missing__(self, key): raise KeyError(f"{key!r} is not a prose entry")

PROSE = _Prose({(a, n): e for a in ARCHS for n, e in prose(a).items()})
