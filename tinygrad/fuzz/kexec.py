"""Compile one kernel AST with one tinygrad renderer and run it on numpy arrays: the executors the oob and render fuzzers share.

An `Executor` names a renderer (how the AST is lowered) and a runner (where the program runs). The table `EXECUTORS` holds
the ones available on an x86 host with tinygrad 0.14.0: the PYTHON emulator (tinygrad's definition of the uops, with bounds
checks), the CPU device with the CLANG, LLVM and X86 renderers, the same C and LLVM code cross-compiled for aarch64 and
run under unicorn, and the mock AMD GPU (gfx1100 emulator, `amdexec`). A backend is added by appending an `Executor`; tests
pass their own (a renderer with an injected bug) to the fuzzers instead of patching tinygrad.
"""
from __future__ import annotations
import os, shutil, contextlib, faulthandler, io, mmap, signal, struct, importlib.util
from dataclasses import dataclass
from typing import Callable
import numpy as np
from tinygrad.helpers import Target
from tinygrad.uop.ops import UOp, Ops
from tinygrad.renderer import Renderer
from mockgpu.tinygrad.fuzz.errors import ExecFault, ExecutorUnavailable, ParamSlotCollision

__all__ = ["Executor", "check_param_slots", "EXECUTORS", "executor", "compile_ast", "python_executor", "cpu_executor", "unicorn_executor",
           "amd_executor", "amd_worker", "ensure_cc", "quiet",
           "GPU_EXECUTORS", "RemoteExecutor", "gfx950_executor", "nv_executor", "gpu_worker", "run_plain", "compile_run"]

def check_param_slots(ast:UOp, renderer:Renderer, name:str) -> None:
  """Lower `ast` for `renderer` and check that the rendered function takes its PARAMs in the order the CPU runtime passes them:
  every buffer (by slot), then every variable (by slot). tinygrad 0.14.0 numbers variables from the count of buffers, so
  when simplification drops a buffer a variable shares a slot with a buffer or lands before it (finding F1); whether that
  breaks the call depends on the order the renderer emits the PARAMs in (the linearizer's order for C and LLVM, the
  instruction selector's for ISA renderers, both ties broken by the UOps themselves), and for LLVM on unique names
  (`%data<slot>`). Only a broken order, a shared LLVM name, or a tie the linearizer cannot sort (it raises TypeError
  lowering the kernel) is a collision.

  Raises:
    ParamSlotCollision: the rendered function's parameters do not match the runtime's argument order.
  """
  from tinygrad.codegen import full_rewrite_to_sink
  from tinygrad.codegen.late.linearizer import linearize
  from tinygrad.dtype import AddrSpace
  from tinygrad.renderer.isa import ISARenderer, IselContext
  from tinygrad.renderer.llvmir import LLVMRenderer
  with quiet(): sink = full_rewrite_to_sink(ast, renderer, optimize=ast.tag is None)
  params = {u for u in sink.toposort() if u.op is Ops.PARAM}
  bufs = sorted(u.arg.slot for u in params if u.addrspace != AddrSpace.ALU)
  vs = sorted((str(u.arg.name), u.arg.slot) for u in params if u.addrspace == AddrSpace.ALU)
  if not bufs or all(s > bufs[-1] for _, s in vs): return
  # a buffer and a variable on the same slot can tie in the linearizer's sort, whose tie-break then compares None with a tuple
  try: order = [u for u in (IselContext(sink).func_args if isinstance(renderer, ISARenderer) else linearize(sink)) if u.op is Ops.PARAM]
  except TypeError: raise ParamSlotCollision(name, bufs, vs) from None
  kinds = [u.addrspace == AddrSpace.ALU for u in order]
  in_order = kinds == sorted(kinds) and [u.arg.slot for u in order if u.addrspace != AddrSpace.ALU] == bufs
  if not in_order or (isinstance(renderer, LLVMRenderer) and any(s in bufs for _, s in vs)): raise ParamSlotCollision(name, bufs, vs)

@contextlib.contextmanager
def quiet():
  """Silence tinygrad's prints to stdout (CHECK_OOB prints the z3 model of every violation)."""
  with contextlib.redirect_stdout(io.StringIO()): yield

def compile_ast(ast:UOp, renderer:Renderer) -> UOp:
  """Lower, render and compile `ast` with `renderer`, bypassing tinygrad's program cache (which ignores CHECK_OOB).

  Args:
    ast: a kernel AST (SINK with KernelInfo).
    renderer: any tinygrad Renderer instance (a test may pass a subclass with an injected bug).
  Returns:
    The PROGRAM UOp (src: SINK, LINEAR, SOURCE, BINARY).
  """
  from tinygrad.codegen import do_to_program
  with quiet(): return do_to_program(ast, renderer)

@dataclass(frozen=True)
class Executor:
  """A renderer plus a place to run what it produces.

  Attributes:
    name: stable name used in reports and on the command line (`PYTHON`, `CLANG`, `LLVM`, `X86`, `CLANG-A64`, `LLVM-A64`).
    renderer: zero-argument factory of the tinygrad Renderer.
    runner: `runner(program, arrays)` runs the compiled PROGRAM on the arrays (one per PARAM slot, updated in place);
      raises ExecFault when the kernel faults.
    threads: the renderer splits kernels over CPU threads (a `core_id` PARAM), so `run` checks the PARAM slots first.
    slack: `slack(nbytes) -> (before, after, guard)`: how many bytes around a buffer an out-of-bounds access may touch without a
      fault (page-granular devices), and how far beyond that every access faults; None: every out-of-bounds access faults.
    warm: starts what the first run would wait for (a GPU worker process) without waiting; None: nothing to start.
    lds_slack: the same for a local (LDS, DEFINE_LOCAL) buffer of `nbytes`: the device's LDS allocation granule.
  """
  name: str
  renderer: Callable[[], Renderer]
  runner: Callable[[UOp, list[np.ndarray]], None]
  threads: bool = False
  slack: Callable[[int], tuple[int, int, int]]|None = None
  warm: Callable[[], None]|None = None
  lds_slack: Callable[[int], tuple[int, int, int]]|None = None
  def run(self, ast:UOp, arrays:list[np.ndarray], programs:dict|None=None) -> str:
    """Compile and run `ast` on `arrays` (updated in place). Returns the rendered source, for reports.

    Args:
      programs: optional cache of compiled programs of this `ast`, keyed by renderer class and target: executors that share a
        renderer (e.g. the mock AMD GPU in its two memory modes) compile once.
    Raises:
      ExecFault: the kernel faulted. ParamSlotCollision: the lowered kernel's ABI is broken (not run).
    """
    ren = self.renderer()
    if self.threads: check_param_slots(ast, ren, self.name)
    if programs is None: prg = compile_ast(ast, ren)
    elif (prg:=programs.get(key:=(type(ren), ren.target))) is None: prg = programs[key] = compile_ast(ast, ren)
    self.runner(prg, arrays)
    return prg.src[2].arg if isinstance(prg.src[2].arg, str) else ""

# *** PYTHON: tinygrad's uop emulator, which raises IndexError on out-of-bounds loads and stores ***

def _run_python(prg:UOp, arrays:list[np.ndarray]) -> None:
  from tinygrad.device import Device
  rt = Device["PYTHON"].runtime(prg.to_elf())
  mvs = [memoryview(arrays[i].view(np.uint8) if arrays[i].dtype == np.bool_ else arrays[i]).cast("B") for i in prg.arg.globals]
  try: rt(*mvs, global_size=prg.arg.global_size, local_size=prg.arg.local_size or (1, 1, 1), vals=prg.arg.vals({}))
  except IndexError as e: raise ExecFault("PYTHON", str(e)) from e

def python_executor(name:str="PYTHON", renderer:Callable[[], Renderer]|None=None) -> Executor:
  """The PYTHON emulator executor (optionally with another renderer class producing PYTHON programs)."""
  from tinygrad.runtime.ops_python import PythonRenderer
  return Executor(name, renderer or (lambda: PythonRenderer(Target("PYTHON"))), _run_python)

# *** CPU: the host, through tinygrad's own loader (CPUProgram) ***

def ensure_cc() -> str:
  """tinygrad's CPU compiler runs `$CC` or `clang`; point CC at a versioned clang when plain `clang` is missing.

  Raises:
    ExecutorUnavailable: no clang at all (apt-get install clang-19).
  """
  if (cc:=os.environ.get("CC")) and shutil.which(cc): return cc
  for cand in ("clang", *(f"clang-{v}" for v in range(22, 13, -1))):
    if shutil.which(cand):
      if cand != "clang": os.environ["CC"] = cand
      return cand
  raise ExecutorUnavailable("no clang found for tinygrad's CPU backend: apt-get install clang-19 (or set CC)")

@dataclass(frozen=True)
class _HostBuf:
  va_addr: int

def _run_cpu(prg:UOp, arrays:list[np.ndarray], name:str="CPU") -> None:
  # native code may crash the process: run it in a forked child on shared pages (page-aligned: LLVM declares buffers `align 32`)
  from tinygrad.device import Device
  rt = Device["CPU"].runtime(prg.to_elf())
  maps = {i: mmap.mmap(-1, max(arrays[i].nbytes, 1)) for i in prg.arg.globals}
  views = {i: np.frombuffer(m, arrays[i].dtype, arrays[i].size).reshape(arrays[i].shape) for i, m in maps.items()}
  for i, v in views.items(): v[...] = arrays[i]
  if (pid:=os.fork()) == 0:
    faulthandler.disable()  # a crash is the verdict, reported by the parent: no traceback dump from the child
    code = 0
    try: rt(*[_HostBuf(views[i].ctypes.data) for i in prg.arg.globals], global_size=prg.arg.global_size, vals=prg.arg.vals({}))
    except BaseException: code = 3
    os._exit(code)
  _, status = os.waitpid(pid, 0)
  if os.WIFSIGNALED(status): raise ExecFault(name, f"the kernel was killed by {signal.Signals(os.WTERMSIG(status)).name}")
  if os.WEXITSTATUS(status): raise ExecFault(name, "the kernel raised in the child process")
  for i, v in views.items(): arrays[i][...] = v

def cpu_executor(name:str, renderer:Callable[[], Renderer]|None=None) -> Executor:
  """A host CPU executor. `name` is CLANG, LLVM or X86 (the renderer tinygrad's `DEV=CPU:<name>` selects)."""
  ensure_cc()
  from tinygrad.device import Device
  if renderer is None:
    from tinygrad.renderer.cstyle import ClangRenderer
    from tinygrad.renderer.llvmir import CPULLVMRenderer
    from tinygrad.renderer.isa.x86 import X86Renderer
    cls = {"CLANG": ClangRenderer, "LLVM": CPULLVMRenderer, "X86": X86Renderer}[name]
    def renderer(): return cls(Target("CPU", name, Device["CPU"].arch))
  return Executor(name, renderer, lambda prg, arrays: _run_cpu(prg, arrays, name), threads=True)

# *** aarch64 under unicorn: the CPU renderers' code cross-compiled, relocated by tinygrad's jit_loader ***

_CODE, _STACK, _STOP, _DATA, _PAGE = 0x10000000, 0x20000000, 0x2ff00000, 0x40000000, 0x1000
def _up(x:int) -> int: return (x + _PAGE - 1) // _PAGE * _PAGE

def _run_unicorn(prg:UOp, arrays:list[np.ndarray]) -> None:
  from unicorn import Uc, UcError, UC_ARCH_ARM64, UC_MODE_ARM
  from unicorn import arm64_const as a
  from tinygrad.runtime.support.elf import jit_loader
  img = jit_loader(prg.src[3].arg, base=_CODE)
  uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
  uc.mem_map(_CODE, _up(len(img))+_PAGE)
  uc.mem_write(_CODE, img)
  uc.mem_map(_STACK, 0x100000)
  uc.mem_map(_STOP, _PAGE)
  addrs, off = [], _DATA
  for i in prg.arg.globals:
    addrs.append(off)
    uc.mem_map(off, n:=_up(max(arrays[i].nbytes, 1)))
    uc.mem_write(off, arrays[i].tobytes())
    off += n + _PAGE  # an unmapped guard page between buffers
  elf = prg.to_elf()
  args: list[int] = addrs + [0] * (len(elf.signature) - len(addrs))
  core = {slot for nm, slot, *_ in elf.signature if nm == "core_id"}
  sp = _STACK + 0xff000 - (8 * max(0, len(args) - 8) + 15) // 16 * 16
  for tid in range(int(prg.arg.global_size[0])):
    for s in core: args[s] = tid
    # AAPCS64: x0-x7, then 8-byte stack slots from sp upwards
    for k, v in enumerate(args[:8]): uc.reg_write(a.UC_ARM64_REG_X0 + k, v)
    for k, v in enumerate(args[8:]): uc.mem_write(sp + 8*k, struct.pack("<Q", v & (2**64-1)))
    uc.reg_write(a.UC_ARM64_REG_SP, sp)
    uc.reg_write(a.UC_ARM64_REG_LR, _STOP)
    try: uc.emu_start(_CODE, _STOP, count=50_000_000)
    except UcError as e: raise ExecFault("unicorn", f"{e} at pc=0x{uc.reg_read(a.UC_ARM64_REG_PC):x}") from e
    if uc.reg_read(a.UC_ARM64_REG_PC) != _STOP: raise ExecFault("unicorn", "instruction budget exhausted (runaway kernel)")
  for i, addr in zip(prg.arg.globals, addrs):
    arrays[i][...] = np.frombuffer(bytes(uc.mem_read(addr, arrays[i].nbytes)), dtype=arrays[i].dtype).reshape(arrays[i].shape)

def unicorn_executor(name:str, renderer:Callable[[], Renderer]|None=None) -> Executor:
  """An aarch64 executor under unicorn. `name` is CLANG-A64 (clang --target=aarch64) or LLVM-A64 (LLVM's AArch64 target).

  Raises:
    ExecutorUnavailable: unicorn or clang is missing.
  """
  ensure_cc()
  if importlib.util.find_spec("unicorn") is None: raise ExecutorUnavailable(f"executor={name} needs unicorn: pip install unicorn")
  if renderer is None:
    from tinygrad.renderer.cstyle import ClangRenderer
    from tinygrad.renderer.llvmir import CPULLVMRenderer
    cls, rn = {"CLANG-A64": (ClangRenderer, "CLANG"), "LLVM-A64": (CPULLVMRenderer, "LLVM")}[name]
    def renderer(): return cls(Target("CPU", rn, "arm64,generic"))
  return Executor(name, renderer, _run_unicorn, threads=True)

# *** the mock AMD GPU: tinygrad's AMD LLVM renderer, run by the gfx1100 emulator in a worker process (amdexec) ***

_AMD_WORKERS: dict[tuple[int, str], object] = {}
def amd_worker(arch:str="gfx1100"):
  """Returns: this process's `amdexec.AmdWorker` for `arch` (one per process: forked campaign jobs get their own)."""
  from mockgpu.tinygrad.fuzz.amdexec import AmdWorker
  if (key:=(os.getpid(), arch)) not in _AMD_WORKERS: _AMD_WORKERS[key] = AmdWorker(arch)
  return _AMD_WORKERS[key]

def amd_executor(name:str="AMD", renderer:Callable[[], Renderer]|None=None, arch:str="gfx1100", strict:bool=False) -> Executor:
  """The mock AMD GPU executor: `AMDLLVMRenderer` for `arch` (what `DEV=AMD` picks without comgr), compiled here, run by
  the emulator behind `DEV=MOCKKFD+AMD` in a persistent worker process; GPU fault reports become ExecFault. `strict`: the
  same worker runs these kernels in the mock's strict mode (byte-exact buffers; `amdexec.AmdWorker`)."""
  from mockgpu.tinygrad.fuzz.amdexec import slack, strict_slack, lds_slack
  if renderer is None:
    from tinygrad.renderer.llvmir import AMDLLVMRenderer
    def renderer(): return AMDLLVMRenderer(Target("AMD", "LLVM", arch))
  return Executor(name, renderer, lambda prg, arrays: amd_worker(arch).run(prg, arrays, strict), slack=strict_slack if strict else slack,
                  lds_slack=lds_slack, warm=lambda: amd_worker(arch).start())

# *** more mock GPUs (opt-in, see GPU_EXECUTORS): gfx1201 as AMD above; gfx950, compiled in its worker with a libLLVM >= 20;
# NVIDIA through tinygrad's PTX renderer on MOCK+NV. These use plain device buffers (no guard model: render only) ***

def run_plain(device:str, elf, global_size, local_size, vals, arrays:dict[int, np.ndarray]) -> dict[int, np.ndarray]:
  """Run a compiled program on tinygrad device `device` with plain allocator buffers (runs in a GPU worker, `AmdWorker.call`).
  Returns: the arrays after the run."""
  from tinygrad.device import Device
  dev = Device[device]
  al = dev.allocator
  bufs = {i: al.alloc(max(a.nbytes, 1)) for i, a in arrays.items()}
  for i, a in arrays.items(): al._copyin(bufs[i], memoryview(a.view(np.uint8)).cast("B"))
  dev.runtime(elf)(*bufs.values(), global_size=global_size, local_size=local_size, vals=vals, wait=True)
  for i, a in arrays.items(): al._copyout(memoryview(a.view(np.uint8)).cast("B"), bufs[i])
  for i, b in bufs.items(): al.free(b, max(arrays[i].nbytes, 1))
  return arrays

def compile_run(device:str, ast:UOp, arch:str, arrays:list[np.ndarray]) -> dict[int, np.ndarray]:
  """Lower and compile `ast` with `AMDLLVMRenderer` for `arch` in this (worker) process, then `run_plain` it. Returns: the arrays."""
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  prg = compile_ast(ast, AMDLLVMRenderer(Target("AMD", "LLVM", arch)))
  return run_plain(device, prg.to_elf(), tuple(prg.arg.global_size), tuple(prg.arg.local_size or (1, 1, 1)), tuple(prg.arg.vals({})),
                   {i: arrays[i] for i in prg.arg.globals})

def _gpu_call(worker, fn:str, *args) -> dict[int, np.ndarray]:
  state, out = worker.call("mockgpu.tinygrad.fuzz.kexec", fn, *args)
  if state == "raised":
    from tinygrad.codegen.opt import KernelOptError
    if out.startswith("KernelOptError"): raise KernelOptError(out)  # the worker lowered (gfx950): an Opt it cannot apply
    raise RuntimeError(f"the GPU worker raised {out}")
  return out

_GPU_WORKERS: dict[tuple[int, str], object] = {}
def gpu_worker(key:str, arch:str, env:dict[str, str]):
  """Returns: this process's `amdexec.AmdWorker` called `key` (started with `env`)."""
  from mockgpu.tinygrad.fuzz.amdexec import AmdWorker
  if (k:=(os.getpid(), key)) not in _GPU_WORKERS: _GPU_WORKERS[k] = AmdWorker(arch, env=env)
  return _GPU_WORKERS[k]

@dataclass(frozen=True)
class RemoteExecutor(Executor):
  """An executor whose worker process also lowers and compiles (`remote(ast, arrays)`): a target the parent's libLLVM lacks.
  `renderer` is still built here, for `supported_dtypes` and reports."""
  remote: Callable[[UOp, list[np.ndarray]], None]|None = None
  def run(self, ast:UOp, arrays:list[np.ndarray], programs:dict|None=None) -> str:
    assert self.remote is not None
    self.remote(ast, arrays)
    return ""

def gfx950_executor(name:str="AMD-gfx950") -> Executor:
  """The mock gfx950 (MI350) GPU: tinygrad 0.14.0 needs libLLVM >= 20 to compile for it, so its worker runs with `LLVM_PATH` set
  to one (`checks.find_libllvm(20)`) and compiles there; the parent keeps its own libLLVM for the other executors.

  Raises:
    ExecutorUnavailable: no libLLVM >= 20 on this machine.
  """
  from mockgpu.tinygrad.checks import find_libllvm
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  if (path:=os.environ.get("MOCKGPU_LLVM20") or find_libllvm(20)) is None:
    raise ExecutorUnavailable(f"executor={name} needs libLLVM >= 20 for gfx950: apt install libllvm20 (or set MOCKGPU_LLVM20 to its path)")
  def remote(ast:UOp, arrays:list[np.ndarray]) -> None:
    for i, a in _gpu_call(gpu_worker(name, "gfx950", {"LLVM_PATH": path}), "compile_run", ast, "gfx950", arrays).items(): arrays[i][...] = a
  def renderer() -> Renderer:  # for supported_dtypes only: constructing its compiler would make this process's libLLVM warn about gfx950
    ren = AMDLLVMRenderer.__new__(AMDLLVMRenderer)
    Renderer.__init__(ren, Target("AMD", "LLVM", "gfx950"))
    return ren
  return RemoteExecutor(name, renderer, lambda prg, arrays: None, warm=lambda: gpu_worker(name, "gfx950", {"LLVM_PATH": path}).start(), remote=remote)

def nv_executor(name:str="NV", arch:str="sm_70") -> Executor:
  """The mock NVIDIA GPU (`DEV=MOCK+NV:PTX`, its PTX engine) with tinygrad's `PTXRenderer` for `arch` (what the mock reports)."""
  from tinygrad.renderer.ptx import PTXRenderer
  env = {"DEV": "MOCK+NV:PTX", "MOCKGPU_FUZZ_DEVICE": "NV"}
  def runner(prg:UOp, arrays:list[np.ndarray]) -> None:
    out = _gpu_call(gpu_worker(name, arch, env), "run_plain", prg.to_elf(), tuple(prg.arg.global_size), tuple(prg.arg.local_size or (1, 1, 1)),
                    tuple(prg.arg.vals({})), {i: arrays[i] for i in prg.arg.globals})
    for i, a in out.items(): arrays[i][...] = a
  return Executor(name, lambda: PTXRenderer(Target("NV", "PTX", arch, "MOCK")), runner, warm=lambda: gpu_worker(name, arch, env).start())

_FACTORIES: dict[str, Callable[[], Executor]] = {
  "PYTHON": python_executor, **{n: (lambda n=n: cpu_executor(n)) for n in ("CLANG", "LLVM", "X86")},
  **{n: (lambda n=n: unicorn_executor(n)) for n in ("CLANG-A64", "LLVM-A64")}, "AMD": amd_executor}
EXECUTORS: tuple[str, ...] = tuple(_FACTORIES)
# opt-in (not in EXECUTORS, the default set): a worker start and an emulator build per arch each
_FACTORIES.update({"AMD-gfx1201": lambda: amd_executor("AMD-gfx1201", arch="gfx1201"), "AMD-gfx950": gfx950_executor, "NV": nv_executor})
GPU_EXECUTORS: tuple[str, ...] = ("AMD", "AMD-gfx1201", "AMD-gfx950", "NV")

def executor(name:str) -> Executor:
  """The executor called `name` (one of EXECUTORS, or of the opt-in GPU_EXECUTORS).

  Raises:
    ExecutorUnavailable: unknown name, or its toolchain is missing.
  """
  if name not in _FACTORIES: raise ExecutorUnavailable(f"unknown executor {name!r}: pick from {', '.join(_FACTORIES)}")
  return _FACTORIES[name]()
