"""Errors of the fuzz framework (`mockgpu fuzz`). A fuzzer *finding* a bug is not an error: it is a `Failure` record."""
from mockgpu.errors import MockGPUError

__all__ = ["FuzzError", "UnknownKind", "KindUnavailable", "BadFailureDir", "FuzzerCrashed"]

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
