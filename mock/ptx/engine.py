"""The PTX engine's public API: `load(ptx)` parses a module, translates every kernel to C (`cgen`), compiles it with the
system C compiler and keeps the shared library in the library cache (both through `mockgpu.cbuild`, the one
compile-and-cache service: `$MOCKGPU_CC` or `cc`, verified before use) keyed by the PTX text, the generator and the compiler; `Module.launch(...)` runs a whole grid in C with the GIL released and raises `GPUFault`
(a structured `FaultReport`) instead of touching memory outside the registered allocations."""
from __future__ import annotations
import ctypes, os, pathlib, threading
from typing import NamedTuple
from mockgpu import cbuild
from mockgpu.emu.errors import FaultReport, GPUFault, WatchdogExpired
from mockgpu.emu.memory import MemoryMap
from mockgpu.mock.errors import PTXError
from mockgpu.mock.ptx import cgen
from mockgpu.mock.ptx.parse import Kernel, parse

__all__ = ["load", "Module", "LaunchStats", "ARCH", "CFLAGS", "DEFAULT_BUDGET"]

# The compute capability both mocks report: half precision (>= sm_53) but no tensor cores (mma.sync needs >= sm_75), so
# tinygrad's PTXRenderer emits only forms the engine models. MOCKGPU_SM overrides it (e.g. 35, as the upstream mocks report).
def _arch(sm:str) -> str:
  if not sm.isdigit() or not 30 <= int(sm) < 200: raise PTXError(f"MOCKGPU_SM={sm!r}: expected a compute capability like 70 (sm_70) or 35")
  return f"sm_{sm}"
ARCH = _arch(os.environ.get("MOCKGPU_SM", "70"))
# -march=native makes fmaf a hardware instruction (baseline x86-64 calls libm's software fma: ~10x slower matmuls);
# -ffp-contract=off keeps the compiler from fusing what PTX rounds twice (gcc's gnu11 default is to fuse)
CFLAGS = ("-O1", "-march=native", "-mno-avx512f", "-fno-math-errno", "-fPIC", "-std=gnu11", "-fno-strict-aliasing", "-fwrapv",
          "-ffp-contract=off", "-fno-fast-math", "-w")
DEFAULT_BUDGET = int(os.environ.get("MOCKGPU_PTX_BUDGET", str(1 << 40)))   # backward branches per launch (watchdog)
RT = pathlib.Path(__file__).with_name("ptx_rt.h")

class _Ctx(ctypes.Structure):
  _fields_ = [("args", ctypes.POINTER(ctypes.c_uint64)), ("nargs", ctypes.c_uint64), ("grid", ctypes.c_uint32*3), ("block", ctypes.c_uint32*3),
              ("ranges", ctypes.POINTER(ctypes.c_uint64)), ("nranges", ctypes.c_uint64), ("sites", ctypes.c_void_p),
              ("smem", ctypes.c_void_p), ("smem_bytes", ctypes.c_uint64), ("left", ctypes.c_uint64),
              ("f_kind", ctypes.c_uint32), ("f_space", ctypes.c_uint32), ("f_size", ctypes.c_uint32), ("f_line", ctypes.c_uint32),
              ("f_addr", ctypes.c_uint64), ("f_tid", ctypes.c_uint32*3), ("f_ctaid", ctypes.c_uint32*3),
              ("mranges", ctypes.POINTER(ctypes.c_uint64)), ("nmranges", ctypes.c_uint64), ("v_count", ctypes.c_uint64), ("v_addr", ctypes.c_uint64),
              ("v_size", ctypes.c_uint32), ("v_line", ctypes.c_uint32), ("v_tid", ctypes.c_uint32*3), ("v_ctaid", ctypes.c_uint32*3)]

class LaunchStats(NamedTuple):
  """What a launch noticed without stopping: strict-mode reads outside every allocation but inside its mapped granules
  (`MemoryMap(strict=True)` / `MOCKGPU_STRICT=1`; a GPU performs them), and the report of the first one."""
  oob_reads: int = 0
  oob_report: FaultReport | None = None

_lock, _loaded = threading.Lock(), {}

KEEP = 2048     # compiled PTX modules kept in the library cache (least recently used go first; mockgpu.cbuild)

def _build(src:str, kernels:dict[str, Kernel]) -> pathlib.Path:
  def generate() -> tuple[list[str], dict]:
    return ["\n".join([f'#include "{RT.name}"', *(cgen.emit(k, i) for i, k in enumerate(kernels.values()))])], {}
  parts = [src, cgen.GEN_VERSION, RT.read_text(), pathlib.Path(cgen.__file__).read_text()]
  return cbuild.shared_library("ptx-", parts, CFLAGS, generate, KEEP, include=(RT.parent,), what=f"the PTX module ({', '.join(kernels)})")[0]

class Module:
  """A loaded PTX module. `kernels` maps entry names to their parsed form (parameters in `.param` order)."""
  def __init__(self, src:str, arch:str=ARCH):
    self.src, self.arch = src, arch
    self.kernels = parse(src)
    self.lines = src.splitlines()
    self.lib = ctypes.CDLL(str(_build(src, self.kernels)))
    self._fns = {n: getattr(self.lib, f"ptx_kernel_{i}") for i, n in enumerate(self.kernels)}
    for f in self._fns.values(): f.argtypes, f.restype = [ctypes.POINTER(_Ctx)], ctypes.c_int

  def launch(self, name:str, args:list[int], grid:tuple[int, int, int], block:tuple[int, int, int], memory:MemoryMap,
             dyn_shared:int=0, budget:int=DEFAULT_BUDGET) -> LaunchStats:
    """Run kernel `name` over the whole grid.

    Args:
      args: raw parameter values in `.param` order (buffer addresses, scalars as their bits; the low bits of each are used).
      grid, block: CTAs and threads per CTA in x, y, z.
      memory: the allocations global loads and stores may touch: an access faults outside their mapped granules; if the map is
        strict, a write outside the allocations faults too and a read there is performed and counted in the result.
      dyn_shared: extra shared bytes after the kernel's static `.shared` arrays.
      budget: backward branches the whole launch may take before the watchdog stops it.
    Returns: LaunchStats (strict-mode over-reads). Raises: PTXError (unknown kernel, wrong argument count, bad dimensions),
      GPUFault (out-of-range access or divergent barrier, with the thread, block and PTX line), WatchdogExpired."""
    if name not in self._fns: raise PTXError(f"kernel {name!r} is not in this PTX module (it has {', '.join(self._fns)})")
    k = self.kernels[name]
    if len(args) != len(k.params): raise PTXError(f"kernel {name!r} takes {len(k.params)} parameters, got {len(args)} arguments")
    if any(not isinstance(x, int) or x < 1 for x in (*grid, *block)) or len(grid) != 3 or len(block) != 3:
      raise PTXError(f"kernel {name!r}: grid={grid} block={block} must be three positive integers each")
    if block[0] * block[1] * block[2] > 1024: raise PTXError(f"kernel {name!r}: block={block} has more than 1024 threads")
    exact, mapped = memory.spans()
    rs = exact if memory.strict else mapped
    ranges, mranges = ctypes.cast(rs.words(), ctypes.POINTER(ctypes.c_uint64)), ctypes.cast(mapped.words(), ctypes.POINTER(ctypes.c_uint64))
    av = (ctypes.c_uint64 * max(1, len(args)))(*[x & (2**64-1) for x in args])
    smem = (ctypes.c_uint8 * max(1, k.shared_bytes + dyn_shared))()
    ctx = _Ctx(av, len(args), (ctypes.c_uint32*3)(*grid), (ctypes.c_uint32*3)(*block), ranges, len(rs), None,
               ctypes.addressof(smem), k.shared_bytes + dyn_shared, budget, mranges=mranges, nmranges=len(mapped) if memory.strict else 0)
    if self._fns[name](ctypes.byref(ctx)) != 0: self._fault(name, ctx, memory, budget)
    if not ctx.v_count: return LaunchStats()
    why = "read outside the allocation, inside its mapped granule: the hardware performs it (strict mode)"
    return LaunchStats(ctx.v_count, self._report(name, ctx, memory, "read", 1, ctx.v_addr, ctx.v_size, ctx.v_line, tuple(ctx.v_tid),
                                                 tuple(ctx.v_ctaid), message=why, count=ctx.v_count))

  def _report(self, name:str, c:_Ctx, memory:MemoryMap, kind:str, sp:int, addr:int, size:int, line_no:int, tid:tuple, cta:tuple,
              **extra) -> FaultReport:
    line = self.lines[line_no - 1].strip() if 0 < line_no <= len(self.lines) else ""
    lin = tid[0] + c.block[0] * (tid[1] + c.block[1] * tid[2])
    space = {1: "global", 2: "shared"}.get(sp, "none")
    near = memory.nearest(addr) if space == "global" else None
    return FaultReport(kind, space, addr, size, self.arch, line_no, 0, b"", line, lane=lin % 32, wave=lin // 32, workgroup=cta,
                       nearest=(near.name, near.start, near.size) if near else None, offset=(addr - near.start) if near else None,
                       limit=c.smem_bytes if space == "shared" else None, extra={"kernel": name, "tid": tid, "line": line_no, **extra})

  def _fault(self, name:str, c:_Ctx, memory:MemoryMap, budget:int):
    tid, cta = tuple(c.f_tid), tuple(c.f_ctaid)
    kind = {1: "read", 2: "write", 3: "watchdog", 4: "barrier", 5: "host"}[c.f_kind]
    rep = self._report(name, c, memory, kind, c.f_space, c.f_addr, c.f_size, c.f_line, tid, cta)
    if kind == "watchdog": raise WatchdogExpired(rep, budget)
    if kind == "barrier":
      raise GPUFault(rep, f"threads of block {cta} wait at different bar.sync (lines {c.f_addr} and {c.f_line}); bar.sync must be reached by every thread of the CTA")
    if kind == "host": raise PTXError(f"kernel {name!r}: out of host memory for the barrier save area")
    strict = rep.space == "global" and memory.strict and memory.spans()[1].find(c.f_addr, max(c.f_size, 1)) is not None
    raise GPUFault(rep, f"kernel {name!r} thread {tid} of block {cta} at PTX line {c.f_line}: check its indexing, or that the buffer is allocated"
                   + ("; a GPU would write there silently: a write outside every allocation but inside its mapped granule faults only "
                      "in strict mode (MOCKGPU_STRICT=1)" if strict else ""))

def load(src:str|bytes, arch:str=ARCH) -> Module:
  """Parse and compile a PTX module (cached in-process by text and on disk by hash).

  Args: src: PTX text; bytes may carry trailing NULs. arch: recorded in fault reports.
  Returns: the Module. Raises: PTXError (malformed or unmodelled PTX, naming the line), BuildError (no C compiler, compile error)."""
  text = src.decode(errors="replace").rstrip("\0") if isinstance(src, bytes) else src
  with _lock:
    if (m:=_loaded.get((text, arch))) is None: m = _loaded[(text, arch)] = Module(text, arch)
  return m
