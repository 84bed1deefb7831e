"""Errors raised by the pseudocode compiler. Every message names the opcode, the arch and, when known, line and column."""
from mockgpu.errors import MockGPUError
__all__ = ["PcodeError", "PcodeSyntaxError", "PcodeTypeError", "PcodeUnsupported", "PcodeRuntimeError"]

class PcodeError(MockGPUError):
  """Base class of pseudocode errors. `op`, `arch`, `line`, `col` are kept as attributes for callers and tests."""
  def __init__(self, msg:str, op:str|None=None, arch:str|None=None, line:int|None=None, col:int|None=None):
    self.msg, self.op, self.arch, self.line, self.col = msg, op, arch, line, col
    super().__init__(self._format())
  def _format(self) -> str:
    where = " ".join(f"{k}={v}" for k,v in (("op",self.op),("arch",self.arch),("line",self.line),("col",self.col)) if v is not None)
    return f"{where}: {self.msg}" if where else self.msg
  def at(self, op:str|None=None, arch:str|None=None) -> "PcodeError":
    """Fill in the opcode and arch once the caller knows them; returns self so it can be re-raised."""
    self.op, self.arch = self.op or op, self.arch or arch
    self.args = (self._format(),)
    return self

class PcodeSyntaxError(PcodeError):
  """The text is not valid pseudocode (lexing or parsing failed). Fix the entry or add it to `corrections.FIXES`."""

class PcodeTypeError(PcodeError):
  """The pseudocode parsed but a width, signedness, float format or name is inconsistent or unknown."""

class PcodeUnsupported(PcodeError):
  """A backend cannot translate a construct (e.g. an unknown built-in); add it to `builtins` or the prose table."""

class PcodeRuntimeError(PcodeError):
  """The reference evaluator hit something it cannot execute (e.g. a loop that never ends, a missing input). `hook` names
  the machine hook when one was not provided (the C backend's `pc_ext_missing` reports the same name)."""
  def __init__(self, msg:str, hook:str|None=None):
    super().__init__(msg)
    self.hook = hook
