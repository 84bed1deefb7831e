"""The pseudocode tables shipped in the tinygrad wheel, with `corrections.FIXES` applied. One place that knows where they live."""
import functools, hashlib, importlib
from dataclasses import dataclass
__all__ = ["ARCHS", "Entry", "entries", "operands", "source_hash"]

ARCHS = ("rdna3", "rdna4", "cdna")

@dataclass(frozen=True)
class Entry:
  """One pseudocode entry: `name` is '<EnumClass>_<MEMBER>' (the C function suffix), `op` the enum member."""
  arch: str
  op: object
  text: str
  fixes: tuple = ()   # the `corrections.Fix` entries applied to AMD's text, in order
  @property
  def fixed(self) -> bool: return bool(self.fixes)
  @property
  def cls(self) -> str: return type(self.op).__name__
  @property
  def name(self) -> str: return f"{self.cls}_{self.op.name}"

def _mod(arch:str, what:str):
  if arch not in ARCHS: raise ValueError(f"unknown arch {arch!r}: expected one of {', '.join(ARCHS)}")
  return importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.{what}")

@functools.cache
def entries(arch:str) -> dict[str, Entry]:
  """All pseudocode entries of `arch`, keyed by '<EnumClass>_<MEMBER>', in the wheel's order, corrections applied."""
  from mockgpu.pcode.corrections import FIXES
  from mockgpu.pcode.errors import PcodeError
  out = {}
  for op, text in _mod(arch, "str_pcode").PCODE.items():
    name = f"{type(op).__name__}_{op.name}"
    fixes = FIXES.get((arch, name), ())
    for i, fix in enumerate(fixes):
      if fix.old not in text:
        raise PcodeError(f"corrections.FIXES entry {i} is stale: {fix.old!r} is not in the text (after the fixes before it); update or remove it", op=name, arch=arch)
      text = text.replace(fix.old, fix.new)
    out[name] = Entry(arch, op, text, fixes)
  for (a, n) in FIXES:
    if a == arch and n not in out: raise PcodeError("corrections.FIXES names an entry the table does not have", op=n, arch=arch)
  return out

@functools.cache
def operands(arch:str) -> dict:
  """`OPERANDS` of `arch`: {op: {field: (Fmt, size_bits, OpType)}}."""
  return _mod(arch, "operands").OPERANDS

@functools.cache
def source_hash(arch:str) -> str:
  """sha256 over the (corrected) pseudocode of `arch`; part of the C emitter's cache key."""
  h = hashlib.sha256()
  for name, e in entries(arch).items(): h.update(f"{name}\0{e.text}\0".encode())
  return h.hexdigest()
