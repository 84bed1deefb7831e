"""Errors of the fuzz framework (`mockgpu fuzz`). A fuzzer *finding* a bug is not an error: it is a `Failure` record."""
from mockgpu.errors import MockGPUError

__all__ = ["FuzzError", "UnknownKind", "KindUnavailable", "MissingExtra", "BadFailureDir", "FuzzerCrashed", "Inconclusive", "ExecFault",
           "ParamSlotCollision", "ExecutorUnavailable", "ExecutorCrashed"]

class FuzzError(MockGPUError):
  """Base class of errors raised by the fuzz framework and its fuzzers."""

class UnknownKind(FuzzError):
  """The fuzzer kind is not in the registry table (`mockgpu.tinygrad.fuzz.registry.KINDS`)."""
  def __init__(self, kind:str, known:list[str]):
    self.kind = kind
    super().__init__(f"unknown fuzzer kind={kind!r}: pick one of {', '.join(known)} (`mockgpu fuzz --list`)")

class KindUnavailable(FuzzError):
  """The kind is registered but its module cannot be imported in this build (not written yet, or a dependency is missing)."""
  def __init__(self, kind:str, module:str, reason:str):
    self.kind, self.module = kind, module
    super().__init__(f"fuzzer kind={kind!r} is unavailable: module={module} {reason}")

class MissingExtra(FuzzError):
  """The kind needs an optional dependency of the `fuzz` extra (z3-solver, unicorn) that is not installed."""
  def __init__(self, kind:str, dists:list[str]):
    self.kind, self.dists = kind, dists
    super().__init__(f"fuzzer kind={kind!r} needs {' and '.join(dists)}, not installed: pip install 'mockgpu[fuzz]'")

class BadFailureDir(FuzzError):
  """A directory given to `--replay` holds no readable failure record (failure.json + case.json)."""
  def __init__(self, path:str, reason:str):
    self.path = path
    super().__init__(f"cannot replay path={path}: {reason}; pass a failure directory written by `mockgpu fuzz --out DIR`")

class FuzzerCrashed(FuzzError):
  """A fuzzer's `generate` raised or a campaign worker process died: a bug in the fuzzer, not in tinygrad."""
  def __init__(self, kind:str, index:int, detail:str):
    self.kind, self.index = kind, index
    super().__init__(f"fuzzer kind={kind!r} crashed at case index={index}: {detail}")

class Inconclusive(FuzzError):
  """An oracle could not decide a case (e.g. z3 answered `unknown`: a timeout). Raised from `Fuzzer.check`, it makes the case
  count as `unknown` in the campaign's report: neither a pass nor a failure. Raise the check's z3 timeout to decide more."""

class ExecFault(FuzzError):
  """A kernel faulted while running on an executor (an out-of-bounds access reported by the PYTHON emulator, a unicorn memory
  fault, a signal in the forked CPU child, a GPU fault report of the mock AMD device). `report` holds the executor's
  structured record when it has one (`amdexec.FaultInfo`)."""
  def __init__(self, executor:str, detail:str, report:object=None):
    self.executor, self.detail, self.report = executor, detail, report
    super().__init__(f"executor={executor} faulted: {detail}")

class ParamSlotCollision(FuzzError):
  """tinygrad 0.14.0 numbered a variable PARAM (e.g. the CPU thread id `core_id`) into the buffers' slot range: the runtime
  passes buffers first and variables after them, the rendered function takes its PARAMs in slot order, so the ABI is broken
  (CLANG gets a pointer as the thread id and segfaults, LLVM rejects a duplicate argument). The kernel is not run."""
  def __init__(self, executor:str, buffers:list[int], variables:list[tuple[str, int]]):
    self.executor, self.buffers, self.variables = executor, buffers, variables
    super().__init__(f"executor={executor}: variable PARAMs {variables} are numbered inside the buffer slots {buffers}; "
                     "tinygrad's pm_number_params starts variables at the count of buffers, not past the highest slot, so a buffer "
                     "dropped by simplification shifts them into the buffer range")

class ExecutorUnavailable(FuzzError):
  """The executor's toolchain is missing (no clang, no unicorn) or its name is unknown. Install it or drop the executor."""

class ExecutorCrashed(FuzzError):
  """An executor's runner failed for a reason that is not a kernel fault: the AMD worker process raised, died or hung."""
  def __init__(self, executor:str, detail:str):
    self.executor, self.detail = executor, detail
    super().__init__(f"executor={executor} crashed: {detail.strip().splitlines()[-1] if detail.strip() else 'no detail'}; "
                     "rerun the case with `mockgpu fuzz --replay` to see the whole traceback")
