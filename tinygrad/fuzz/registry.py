"""The table of fuzzer kinds. A kind is a module under `mockgpu.tinygrad.fuzz` defining one `Fuzzer` subclass whose `name` is
the kind; the class is found by that name, so adding a kind is one row here plus the module (see docs/fuzz.md)."""
from __future__ import annotations
import importlib, importlib.util, inspect
from mockgpu.tinygrad.fuzz.core import Fuzzer
from mockgpu.tinygrad.fuzz.errors import UnknownKind, KindUnavailable, MissingExtra

__all__ = ["KINDS", "NEEDS", "load", "available", "require"]

# kind -> (module, one-line help)
KINDS: dict[str, tuple[str, str]] = {
  "symbolic": ("mockgpu.tinygrad.fuzz.symbolic", "random integer expressions through UOp.simplify; brute-force/z3 equivalence, vmin/vmax"),
  "idiv": ("mockgpu.tinygrad.fuzz.idiv", "fast_idiv magic-number division, bit-exact at 8/16/32/64 bits; CPU kernels vs numpy"),
  "oob": ("mockgpu.tinygrad.fuzz.oob", "OOB indexing: static CHECK_OOB against dynamic execution"),
  "render": ("mockgpu.tinygrad.fuzz.render", "the same programs on several renderers/backends, compared bit for bit"),
}

# kind -> the optional modules (the `fuzz` extra) it imports, as (import name, pip distribution). symbolic proves with z3,
# oob runs tinygrad's CHECK_OOB (z3), render runs aarch64 code under unicorn (its *-A64 executors, in the default set)
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {"symbolic": (("z3", "z3-solver"),), "oob": (("z3", "z3-solver"),),
                                                 "render": (("unicorn", "unicorn"),)}

def require(kind:str, options:dict|None=None) -> None:
  """Raises: MissingExtra when `kind` (with `options`) needs a module of the `fuzz` extra that is not installed."""
  needs = NEEDS.get(kind, ())
  if kind == "render" and "executors" in (options or {}) and not any(str(e).endswith("-A64") for e in options["executors"]): needs = ()
  if (miss:=[dist for mod, dist in needs if importlib.util.find_spec(mod) is None]): raise MissingExtra(kind, miss)

def fuzzer_class(kind:str) -> type[Fuzzer]:
  """Returns: the `Fuzzer` subclass of `kind`.
  Raises: UnknownKind: not in `KINDS`. KindUnavailable: its module is missing, fails to import or defines no such class."""
  if kind not in KINDS: raise UnknownKind(kind, list(KINDS))
  modname = KINDS[kind][0]
  try: mod = importlib.import_module(modname)
  except Exception as e: raise KindUnavailable(kind, modname, f"cannot be imported ({type(e).__name__}: {e})") from e  # any import failure
  found = [c for _, c in inspect.getmembers(mod, inspect.isclass) if issubclass(c, Fuzzer) and c is not Fuzzer and c.__module__ == modname
           and getattr(c, "name", None) == kind]
  if len(found) != 1: raise KindUnavailable(kind, modname, f"defines {len(found)} Fuzzer subclasses with name={kind!r}, need exactly 1")
  return found[0]

def load(kind:str, options:dict|None=None) -> Fuzzer:
  """Args: kind: a key of `KINDS`. options: constructor keywords (as saved by `Fuzzer.options`).
  Returns: a fuzzer instance. Raises: UnknownKind, KindUnavailable, MissingExtra."""
  if kind in KINDS: require(kind, options)
  return fuzzer_class(kind)(**(options or {}))

def available() -> dict[str, str|None]:
  """Returns: kind -> None if usable, else the reason it is unavailable."""
  out: dict[str, str|None] = {}
  for k in KINDS:
    try: require(k); fuzzer_class(k); out[k] = None
    except (KindUnavailable, MissingExtra) as e: out[k] = str(e)
  return out
