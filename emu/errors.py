"""Errors of the emulator layer (`mockgpu.emu`). All derive from `mockgpu.errors.MockGPUError` through `EmuError`.

Faults carry a structured `FaultReport` so callers (the KFD model, tests) can read the fields instead of parsing text."""
from __future__ import annotations
from dataclasses import dataclass, field
from mockgpu.errors import MockGPUError, BuildError

__all__ = ["EmuError", "GPUFault", "FaultReport", "InvalidInstruction", "WaveTrap", "WatchdogExpired", "Deadlock", "UnsupportedDispatch", "BackendUnavailable", "CaptureError"]

class EmuError(MockGPUError):
  """Base class of every error the emulator raises. `op_counts`: of an error that stopped a running dispatch, the
  wave-instructions per opcode up to and including the one that raised, when the dispatch counted them (api.run op_counts)."""
  op_counts: dict[str, int] | None = None

VA_SPACES = ("global", "code")   # fault spaces whose `address` is a GPU virtual address
OUTSIDE = {"lds": "LDS access at offset {a:#x} outside the workgroup's {n:#x} bytes",   # the other spaces with a limit, in words
           "scratch": "scratch access at offset {a:#x} outside the lane's {n:#x} bytes",
           "gds": "ordered-count access at offset {a:#x} outside its {n:#x} bytes",
           "vgpr": "VGPR index {a} past the wave's {n} VGPRs"}

@dataclass(frozen=True)
class FaultReport:
  """Where and how a wave faulted. `pc` is the byte offset from the dispatch's code address (negative after a jump below
  it), `pc_addr` the absolute address.

  kind: "read" | "write" | "atomic" | "fetch" (instruction fetch) | "invalid" | "watchdog" | "trap" (S_TRAP) | "halt"
  (S_SETHALT / S_SENDMSGHALT) | "deadlock". space: "global" | "lds" | "scratch" | "code" | "gds" (ordered-count memory) |
  "vgpr" (a VGPR index computed from M0 past the wave's register file: `address` is the index, `limit` the file's size) |
  "none". Traps carry `extra["trap_id"]`; deadlocks the `Deadlock` fields. `nearest` is (name, start, size) of the closest
  registered allocation (global faults only) and `offset` the fault address minus its start (negative: below it)."""
  kind: str
  space: str
  address: int
  size: int
  arch: str
  pc: int
  pc_addr: int
  raw: bytes
  disasm: str
  lane: int = -1
  wave: int = -1
  workgroup: tuple[int, int, int] = (0, 0, 0)
  nearest: tuple[str, int, int] | None = None
  offset: int | None = None
  limit: int | None = None
  extra: dict = field(default_factory=dict)

  @property
  def va(self) -> int | None:
    """The GPU virtual address of a memory fault (spaces "global" and "code"), else None: there `address` is an offset
    into the workgroup's LDS, the lane's scratch or the ordered-count memory, or a VGPR index."""
    return self.address if self.space in VA_SPACES else None

  def describe(self) -> str:
    s = (f"{self.kind} fault in {self.space}: addr={self.address:#x} size={self.size} arch={self.arch} pc={self.pc:#x} "
         f"(abs {self.pc_addr:#x}) lane={self.lane} wave={self.wave} workgroup={self.workgroup} inst={self.disasm!r} raw={self.raw.hex()}")
    if self.limit is not None:
      s += f"; {OUTSIDE[self.space].format(a=self.address, n=self.limit)}" if self.space in OUTSIDE else f" limit={self.limit:#x}"
    if self.nearest is not None:
      name, start, size = self.nearest
      s += f"; nearest allocation {name!r} [{start:#x}, {start+size:#x}) offset={self.offset:+#x}"
    elif self.space == "global": s += "; no allocation is registered in the MemoryMap"
    return s

class GPUFault(EmuError):
  """A wave accessed memory it may not touch (global outside every registered range, LDS or scratch out of bounds, an
  instruction fetch outside mapped memory, or a VGPR index computed from M0 past the register file). `report` holds the
  structured fields; host memory was not touched."""
  def __init__(self, report: FaultReport, hint: str = "check the kernel's indexing or register the buffer with MemoryMap.add"):
    self.report = report
    super().__init__(f"{report.describe()}. Next step: {hint}")

class InvalidInstruction(EmuError):
  """The decoder met bytes that are not a valid (or not a supported) instruction for the arch. Names arch, PC, raw bytes
  and the closest decode (format and opcode number) in `report`."""
  def __init__(self, report: FaultReport, reason: str):
    self.report, self.reason = report, reason
    super().__init__(f"invalid instruction arch={report.arch} pc={report.pc:#x} (abs {report.pc_addr:#x}) raw={report.raw.hex()} "
                     f"closest decode: {report.disasm}: {reason}. Next step: check the code object targets {report.arch} "
                     f"and that code_addr points at its first instruction; unsupported encodings are listed in docs/emu.md")

class WaveTrap(EmuError):
  """A wave executed S_TRAP (`report.kind == "trap"`, `report.extra["trap_id"]`) or halted itself (S_SETHALT 1,
  S_SENDMSGHALT: kind "halt"). No trap handler is installed (tinygrad's runtime sets none) and nothing resumes a halted wave,
  so the dispatch stops here; `report.address` is the absolute PC of the instruction."""
  def __init__(self, report: FaultReport):
    self.report = report
    what = f"S_TRAP {report.extra.get('trap_id', 0):#x}" if report.kind == "trap" else "the wave halted itself"
    super().__init__(f"{what} at pc={report.pc:#x} (abs {report.pc_addr:#x}) arch={report.arch} wave={report.wave} "
                     f"workgroup={report.workgroup} inst={report.disasm!r}. Next step: the kernel asked to stop here (a trap "
                     f"is how compilers lower __builtin_trap / failed device asserts); find which condition led to it")

class WatchdogExpired(EmuError):
  """A workgroup executed more wave-instructions than the budget (runaway loop or a too small `budget`), or the dispatch ran longer
  than its wall-clock `timeout` (seconds; None when the budget ran out). `report.extra["timeout"]` is the same."""
  def __init__(self, report: FaultReport, budget: int, timeout: float | None = None):
    self.report, self.budget, self.timeout = report, budget, timeout
    where = f"at pc={report.pc:#x} (abs {report.pc_addr:#x}) wave={report.wave} workgroup={report.workgroup} inst={report.disasm!r}"
    if timeout is not None:
      super().__init__(f"watchdog: wall-clock timeout of {timeout:g} s expired {where}. Next step: raise `timeout` "
                       f"(api.run(..., timeout=S)) if the kernel is just slow, else look for a loop that never exits")
    else:
      super().__init__(f"watchdog: budget of {budget} wave-instructions per workgroup exceeded {where}. Next step: raise `budget` "
                       f"(api.run(..., budget=N) or MOCKGPU_EMU_BUDGET) if the kernel is just long, else look for a loop that never exits")

class Deadlock(EmuError):
  """Every resident wave waits (GWS semaphore or barrier, ordered count) and no workgroup is left to launch, or the resident
  limit is reached. `report` names the first blocked wave's instruction (pc, disasm, wave, workgroup) and its `extra`: "op"
  (e.g. "DS_GWS_SEMA_P"), "wait" ("semaphore" / "barrier" / "ordered"), "gws_id" and "counter" (the resource's signed
  counter) or "ordered_index" and "waiting_for_wave" (creation ordinal of the earlier wave holding the turn),
  "blocked_waves", "resident_workgroups", "message"."""
  def __init__(self, report: FaultReport):
    self.report = report
    e = report.extra
    what = f"gws_id={e['gws_id']} counter={e['counter']}" if "gws_id" in e else f"ordered_index={e['ordered_index']} waiting_for_wave={e['waiting_for_wave']}"
    super().__init__(f"deadlock: {e['op']} ({e['wait']}) {what} at pc={report.pc:#x} (abs {report.pc_addr:#x}) arch={report.arch} "
                     f"wave={report.wave} workgroup={report.workgroup}; {e['blocked_waves']} waves blocked, {e['message']}. Next step: "
                     f"check the GWS initial values (DS_GWS_INIT) against the number of waves that arrive or signal, or raise "
                     f"run(..., resident=N) if the kernel needs more workgroups resident at once")

class UnsupportedDispatch(EmuError):
  """The dispatch asks for something this emulator does not model (unknown arch, zero-sized grid, too many threads...)."""

class BackendUnavailable(EmuError, BuildError):
  """The requested execution backend cannot run here (no C compiler, build failure, unsupported arch for the backend). A
  `BuildError` too: the emulator raises it where `mockgpu.cbuild` could not build its library."""

class CaptureError(EmuError):
  """A capture directory (mockgpu.emu.capture) that cannot be read or written: no or a malformed manifest, a format version
  this mockgpu does not read, a truncated launch log, a missing or corrupt blob. The message names the file and the next step."""
