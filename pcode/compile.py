"""Front end driver: parse + type-check every entry of an arch, with instruction calls resolved and results cached."""
import copy, functools
from mockgpu.pcode.tables import entries, ARCHS
from mockgpu.pcode.parser import parse
from mockgpu.pcode.typecheck import check
from mockgpu.pcode.nodes import Program
from mockgpu.pcode.errors import PcodeError
__all__ = ["program", "try_program", "parsed", "resolve_call"]

_CALL_CLASSES = ("VOP3Op", "VOP2Op", "VOP1Op", "SOP2Op", "SOP1Op", "VOP3POp")

@functools.cache
def parsed(arch:str, name:str) -> Program:
  """The untyped parse of entry `name` ('<EnumClass>_<MEMBER>'); raises PcodeSyntaxError with op and arch set."""
  if name not in (ents := entries(arch)):
    raise PcodeError(f"no pseudocode entry {name!r} (names look like VOP2Op_V_ADD_F32_E32; see tables.entries)", op=name, arch=arch)
  e = ents[name]
  try: return parse(e.text)
  except PcodeError as ex: raise ex.at(name, arch) from None

def resolve_call(arch:str, fname:str):
  """Body of the instruction an instruction-call names (`v_max_f32` -> VOP3Op_V_MAX_F32 or VOP2Op_V_MAX_F32_E32), or None.
  An instruction the arch itself lacks (CDNA's V_MAXIMUM3_F32 calls v_maximum_f32) is taken from the other archs, in ARCHS order."""
  for a in (arch,) + tuple(x for x in ARCHS if x != arch):
    ents = entries(a)
    for cls in _CALL_CLASSES:
      for suf in ("", "_E64", "_E32"):
        n = f"{cls}_{fname.upper()}{suf}"
        if n in ents: return copy.deepcopy(parsed(a, n).body)
  return None

@functools.cache
def program(arch:str, name:str) -> Program:
  """Parsed and type-checked entry. Raises PcodeError (syntax or type) naming op, arch, line, col."""
  prog = copy.deepcopy(parsed(arch, name))
  try: return check(prog, arch, name, functools.partial(resolve_call, arch))
  except PcodeError as ex: raise ex.at(name, arch) from None

def try_program(arch:str, name:str) -> tuple[Program|None, PcodeError|None]:
  """(program, None) or (None, error): for coverage reports."""
  try: return program(arch, name), None
  except PcodeError as ex: return None, ex
