"""Public API of the emulator: run one dispatch (a whole grid) the way a command processor starts it.

    from mockgpu.emu.api import Dispatch, run
    from mockgpu.emu.memory import MemoryMap
    stats = run(Dispatch("gfx1100", code_addr, grid=(4,1,1), block=(64,1,1), user_sgprs=(lo, hi), rsrc2=0x9e), memory)
"""
from __future__ import annotations
import ctypes, dataclasses, os
from dataclasses import dataclass, field
from typing import Callable
from mockgpu.emu.arch import ARCHS, ArchSpec, get_arch
from mockgpu.emu.errors import EmuError, UnsupportedDispatch, BackendUnavailable, FaultReport
from mockgpu.emu.memory import MemoryMap

__all__ = ["Dispatch", "Stats", "WaveState", "StoreRecord", "WatchReport", "run", "run_code", "warm_up", "DEFAULT_BUDGET", "DEFAULT_RESIDENT",
           "default_threads", "OP_HOOKS", "DISPATCH_HOOKS"]

DEFAULT_BUDGET = int(os.environ.get("MOCKGPU_EMU_BUDGET", str(4_000_000_000)))
# workgroups resident at once: a new one is launched only while every resident one waits (GWS, ordered count), so this
# bounds how many a cross-workgroup barrier can gather (and the emulator memory: one set of wave registers/LDS each)
DEFAULT_RESIDENT = int(os.environ.get("MOCKGPU_EMU_RESIDENT", "64"))

def default_threads(host_waits: bool = False) -> int:
  """Threads a dispatch may use (run(threads=None)): $MOCKGPU_EMU_THREADS, else the CPUs this process may run on, shared
  among pytest-xdist's worker processes ($PYTEST_XDIST_WORKER_COUNT), less one when `host_waits` (a mock device: tinygrad
  spins on its signal while the dispatch runs), at least 1 and at most 16. Measured: tinygrad's test_ops with `-n 2` on two
  cores took 336.6 s with two threads per worker against 286.5 s with one (docs/emu.md "Multi-core dispatch")."""
  v = os.environ.get("MOCKGPU_EMU_THREADS", "")
  if v:
    if not v.isdigit() or int(v) < 1: raise UnsupportedDispatch(f"MOCKGPU_EMU_THREADS={v!r}: give a number of threads >= 1 (1: one thread), or unset it")
    return int(v)
  cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
  w = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
  return max(1, min(16, cpus // (int(w) if w.isdigit() and int(w) > 0 else 1) - int(host_waits)))

# called as hook(arch name, {"FORMAT OPNAME": wave-instructions}) after every dispatch that ran, also one that stopped with an
# error (its counts include the instruction that raised); while one is installed every dispatch counts its opcodes (as
# op_counts=True). `mockgpu emu fidelity --update-coverage` records which instructions each test executed with it (docs/fidelity.md)
OP_HOOKS: list[Callable[[str, dict[str, int]], None]] = []
# called as hook(dispatch, stats) after every dispatch that completed (`mockgpu bench` reports each kernel's wave-instructions/s
# with it); costs nothing while empty (the default)
DISPATCH_HOOKS: list[Callable[["Dispatch", "Stats"], None]] = []

@dataclass(frozen=True)
class Dispatch:
  """The state a command processor has at DISPATCH_DIRECT (docs/contracts/kfd.md section 6).

  arch: "gfx1100" | "gfx1201" | "gfx950" | "gfx942". code_addr: host address of the first instruction (must lie in the MemoryMap).
  grid: workgroups (x, y, z). block: threads per workgroup (x, y, z). user_sgprs: COMPUTE_USER_DATA_0.. as u32, loaded
  into s0.. (only the first RSRC2.USER_SGPR_COUNT are used; missing ones read as 0). rsrc1/rsrc2/rsrc3: COMPUTE_PGM_RSRC*
  (RSRC1's FLOAT_MODE, DX10_CLAMP and IEEE_MODE initialise each wave's MODE register; default None: the arch's
  ArchSpec.default_rsrc1, what LLVM's assembler writes for a kernel descriptor: f32 denormals flushed, f16/f64 kept, DX10_CLAMP
  and IEEE_MODE set on gfx6-gfx11).
  wave64: wave size 64 instead of 32 (always True on gfx9). lds_bytes: LDS per workgroup (0: from RSRC2 LDS_SIZE x 512).
  scratch_bytes_per_lane: private memory per lane (descriptor private_segment_fixed_size)."""
  arch: str
  code_addr: int
  grid: tuple[int, int, int] = (1, 1, 1)
  block: tuple[int, int, int] = (32, 1, 1)
  user_sgprs: tuple[int, ...] = ()
  rsrc1: int | None = None
  rsrc2: int = 0
  rsrc3: int = 0
  wave64: bool = False
  lds_bytes: int = 0
  scratch_bytes_per_lane: int = 0

  def __post_init__(self):
    if self.rsrc1 is None and self.arch in ARCHS: object.__setattr__(self, "rsrc1", ARCHS[self.arch].default_rsrc1)

  @property
  def user_sgpr_count(self) -> int: return (self.rsrc2 >> 1) & 0x1f
  @property
  def wave_size(self) -> int: return 64 if self.wave64 else 32
  @property
  def lds_size(self) -> int: return self.lds_bytes or ((self.rsrc2 >> 15) & 0x1ff) * 512

@dataclass(frozen=True)
class WaveState:
  """Registers of one wave at S_ENDPGM (captured for workgroup (0,0,0), wave 0 when `capture=True`).
  vgprs[r][lane] as u32; sgprs[i] as u32; exec/vcc 64-bit; pc is the byte offset of the S_ENDPGM; mode is the MODE
  register (FP_ROUND [3:0], FP_DENORM [7:4], DX10_CLAMP [8], IEEE [9], see docs/emu.md)."""
  sgprs: tuple[int, ...]
  vgprs: tuple[tuple[int, ...], ...]
  exec: int
  vcc: int
  scc: int
  m0: int
  pc: int
  mode: int

@dataclass(frozen=True)
class StoreRecord:
  """One memory write into a watched range, as the emulator performs it (a lane's 128-bit store is four dword writes):
  `addr` and `size` of that write, the lane, wave (index in its workgroup) and workgroup that issued it, the instruction's
  byte offset `pc` from the code address and its disassembly."""
  addr: int
  size: int
  lane: int
  wave: int
  workgroup: tuple[int, int, int]
  pc: int
  disasm: str

@dataclass(frozen=True)
class WatchReport:
  """The stores into the range `run(watch=(addr, size))` watched: `count` writes overlapped it (StoreRecord says what one
  write is), the first and the last (None when nothing wrote there). The last one wrote the final value."""
  addr: int
  size: int
  count: int
  first: StoreRecord | None
  last: StoreRecord | None

@dataclass(frozen=True)
class Stats:
  """What a dispatch did. `instructions` counts wave-instructions (one per wave per executed instruction, VOPD = 1).
  `op_counts` maps "FORMAT OPNAME" to counts when requested. `seconds` is wall time of the backend call. `oob_reads` (strict
  MemoryMaps only) counts reads outside every allocation but inside its mapped granules, which the hardware performs;
  `oob_report` describes the first of them (a FaultReport of kind "read"). `lds_read` / `lds_written`: LDS bytes every
  lane's accesses read / wrote (DS instructions, LDS_DIRECT, buffer loads to LDS). `watch`: the stores into the watched
  range (run's `watch`)."""
  instructions: int
  workgroups: int
  waves: int
  seconds: float
  backend: str
  op_counts: dict[str, int] | None = None
  state: WaveState | None = None
  extra: dict = field(default_factory=dict)
  oob_reads: int = 0
  oob_report: FaultReport | None = None
  lds_read: int = 0
  lds_written: int = 0
  watch: WatchReport | None = None

def check_dispatch(d: Dispatch) -> ArchSpec:
  """Validate a Dispatch against its arch. Returns the ArchSpec. Raises UnsupportedDispatch naming the bad field."""
  a = get_arch(d.arch)
  if d.wave_size not in a.wave_sizes: raise UnsupportedDispatch(f"arch={a.name} has no wave{d.wave_size}; supported: {a.wave_sizes}")
  if len(d.grid) != 3 or len(d.block) != 3 or min(d.grid) < 1 or min(d.block) < 1:
    raise UnsupportedDispatch(f"grid={d.grid} block={d.block}: need three positive dims each (grid counts workgroups)")
  if (n := d.block[0]*d.block[1]*d.block[2]) > a.max_threads:
    raise UnsupportedDispatch(f"block={d.block} has {n} threads > {a.max_threads} per workgroup on {a.name}")
  if d.lds_size > a.max_lds: raise UnsupportedDispatch(f"lds={d.lds_size} bytes > {a.max_lds} per workgroup on {a.name}")
  if d.user_sgpr_count > len(d.user_sgprs) and d.user_sgpr_count > 16:
    raise UnsupportedDispatch(f"RSRC2.USER_SGPR_COUNT={d.user_sgpr_count} is more than the hardware's 16")
  if any(not 0 <= v < 1 << 32 for v in d.user_sgprs): raise UnsupportedDispatch(f"user_sgprs={d.user_sgprs}: each must be a u32")
  if d.scratch_bytes_per_lane < 0 or d.scratch_bytes_per_lane > 1 << 20:
    raise UnsupportedDispatch(f"scratch_bytes_per_lane={d.scratch_bytes_per_lane}: must be in [0, 1 MiB]")
  return a

def run(dispatch: Dispatch, memory: MemoryMap, *, budget: int | None = None, timeout: float | None = None, backend: str = "c",
        op_counts: bool = False, capture: bool = False, resident: int | None = None, watch: tuple[int, int] | None = None,
        threads: int | None = None, hold_gil: Callable[[], bool] | None = None, threads_held: int | None = None) -> Stats:
  """Execute a whole dispatch synchronously (all workgroups, all waves, barriers) and return its statistics.

  Args:
    dispatch: the command processor state (see Dispatch).
    memory: the host ranges the kernel may touch; global accesses and instruction fetches are checked against a snapshot
      taken at the start of the call: against the mapped granules, or byte-exact if the map is strict (see MemoryMap).
    budget: maximum wave-instructions one workgroup may execute before WatchdogExpired (default MOCKGPU_EMU_BUDGET or 4e9).
    timeout: optional wall-clock limit in seconds, also reported as WatchdogExpired (its `timeout` set, the message naming it).
    backend: "c" (generated C, compiled once per arch and cached) or "python" (reference, slow).
    op_counts: also count executed wave-instructions per opcode (Stats.op_counts).
    capture: record the registers of workgroup 0 / wave 0 at S_ENDPGM (Stats.state).
    resident: most workgroups resident at once (default MOCKGPU_EMU_RESIDENT or 64); more are launched only while all
      resident ones wait on GWS / ordered count (docs/emu.md, "Scheduling").
    watch: (address, size): record the stores into these bytes (Stats.watch: count, first and last writer with lane, wave,
      workgroup, instruction). They must lie inside one registered allocation (one mapped span). Accesses to the range
      leave the backends' fast paths, so watch a few bytes, not a whole buffer.
    threads: most threads the C backend runs the workgroups on (default default_threads()); results, counts and fault
      reports are the same for every count (docs/emu.md, "Multi-core dispatch"). Stats.extra["threads"] says how many ran.
    hold_gil: the C backend's GIL policy (None: the GIL is released for the whole call, as for any foreign call). Asked, with
      the GIL held, at the start; while it returns True the dispatch keeps the GIL, gives the other Python threads a turn
      every 100 ms and asks again after each, and may run on `threads_held` threads (default `threads`); while it returns
      False the dispatch runs released and asks again 1 ms later, then after twice as long each time up to every 10 ms. The mock GPUs
      pass mockgpu.mock.device.host_spins: tinygrad's thread spinning on the dispatch's signal then sleeps instead of taking
      a core from the emulator (docs/emu.md, "The GIL").
  Returns: Stats.
  Raises: GPUFault (memory violation, with a FaultReport), InvalidInstruction, WaveTrap (S_TRAP / a halted wave), WatchdogExpired,
    Deadlock (every resident wave blocked on GWS / ordered count), UnsupportedDispatch, BackendUnavailable (no C compiler / arch not supported by the backend)."""
  arch = check_dispatch(dispatch)
  budget = DEFAULT_BUDGET if budget is None else budget
  resident = DEFAULT_RESIDENT if resident is None else resident
  if resident < 1: raise UnsupportedDispatch(f"resident={resident}: at least one workgroup must be resident")
  threads = default_threads() if threads is None else threads
  threads_held = threads if threads_held is None else threads_held
  for n, v in (("threads", threads), ("threads_held", threads_held)):
    if not isinstance(v, int) or v < 1: raise UnsupportedDispatch(f"{n}={v!r}: give a number of threads >= 1")
  if watch is not None:
    exact, mapped = memory.spans()
    if watch[1] < 1 or (exact if memory.strict else mapped).carve(watch[0], watch[0] + watch[1]) is None:
      raise UnsupportedDispatch(f"watch=({watch[0]:#x}, {watch[1]}): the watched bytes must lie inside one registered allocation; "
                                "register the buffer in the MemoryMap or watch fewer bytes")
  if backend == "c":
    try: from mockgpu.emu import cbackend
    except ImportError as e: raise BackendUnavailable(f"the C backend is not available in this build ({e}); use backend='python'") from e
    be = cbackend
  elif backend == "python":
    try: from mockgpu.emu import pybackend
    except ImportError as e: raise BackendUnavailable(f"the Python backend is not available in this build ({e}); use backend='c'") from e
    be = pybackend
  else: raise BackendUnavailable(f"backend={backend!r}: choose 'c' or 'python'")
  hooks = list(OP_HOOKS)
  try: st = be.run(arch, dispatch, memory, budget=budget, timeout=timeout, op_counts=op_counts or bool(hooks), capture=capture, resident=resident,
                   watch=watch, threads=threads, **({"hold_gil": hold_gil, "threads_held": threads_held} if hold_gil is not None and backend == "c" else {}))
  except EmuError as e:
    if hooks and e.op_counts is not None:
      for h in hooks: h(arch.name, e.op_counts)
      if not op_counts: e.op_counts = None
    raise
  for h in hooks: h(arch.name, st.op_counts)
  st = st if op_counts or not hooks else dataclasses.replace(st, op_counts=None)
  for dh in DISPATCH_HOOKS: dh(dispatch, st)
  return st

def warm_up(arch: str, backend: str = "c") -> str:
  """Build (first use on this machine, ~1 min) or load the backend for `arch` now, e.g. when a mock device opens, so the
  first dispatch does not spend that time while tinygrad waits on a signal.

  Returns: a one-line description of the library. Raises: UnsupportedDispatch (unknown arch), BackendUnavailable."""
  a = get_arch(arch)
  if backend == "python": return f"python backend for {a.name}"
  from mockgpu.emu import cbackend
  _, lib = cbackend.load(a)
  return f"{lib.path} ({'built in %.1f s' % lib.build_seconds if lib.built else 'cached'})"

def run_code(code: bytes, memory: MemoryMap | None = None, *, arch: str = "gfx1100", name: str = "code", **kw) -> Stats:
  """Test/CLI helper: copy `code` into a fresh 256-byte aligned host buffer, register it in `memory` for the duration of
  the call, and run it. Keyword arguments are Dispatch fields (grid, block, user_sgprs, rsrc2, ...) or run() options.

  Returns: Stats. Raises: whatever run() raises."""
  memory = MemoryMap() if memory is None else memory
  run_keys = {"budget", "timeout", "backend", "op_counts", "capture", "resident", "watch", "threads", "hold_gil", "threads_held"}
  rkw = {k: kw.pop(k) for k in list(kw) if k in run_keys}
  buf = ctypes.create_string_buffer(len(code) + 512)
  addr = (ctypes.addressof(buf) + 255) & ~255
  ctypes.memmove(addr, code, len(code))
  memory.add(addr, len(code), name)
  try: return run(Dispatch(arch=arch, code_addr=addr, **kw), memory, **rkw)
  finally: memory.remove(addr)
