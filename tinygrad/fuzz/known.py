"""The known findings: one entry per finding of docs/findings.md, so campaigns report what is already known apart from what is new.

An entry has the finding's id (`1`, `2`, `F1`..`F18`, the ids of docs/findings.md), the fuzz kinds that meet it, the tinygrad
versions it affects and a signature: a predicate on (failure, case) that matches the finding's failures by their nature (the
failure class, the message tinygrad raises, the shape of the case that triggers it), not one minimised case, and nothing
else. `classify` names the entry a failure matches; a campaign (`core.CampaignConfig.known`) counts those apart, does not
minimise or save them, and exits 0 unless something new is found (`mockgpu fuzz --strict` fails on known ones too).
A signature never matches on a tinygrad version the entry does not list: a finding that persists into a new release is
reported as new until its entry says so.

Signatures read the cases of each kind (symbolic: `symtree` trees, idiv: `{"d": ...}` cases, render: `render_ir` programs,
oob: failure classes only) and treat a case they cannot read as not matching.
"""
from __future__ import annotations
import dataclasses, functools, importlib.metadata, re
from typing import Any, Callable
from mockgpu.tinygrad.fuzz.core import Failure

__all__ = ["Known", "KNOWN", "classify", "tinygrad_version"]

@dataclasses.dataclass(frozen=True)
class Known:
  """One finding of docs/findings.md.

  Args:
    id: the finding's id in docs/findings.md. title: one line. kinds: the fuzz kinds whose failures it can explain.
    versions: the tinygrad versions it affects (`tinygrad_version()` must be one of them for `match` to apply).
    match: the signature, (failure, case) -> bool; it may raise on a case of another shape (that is no match).
  """
  id: str
  title: str
  kinds: tuple[str, ...]
  versions: tuple[str, ...]
  match: Callable[[Failure, Any], bool]
  def matches(self, kind:str, failure:Failure, case:Any, version:str) -> bool:
    """Returns: whether `failure` of `case` (found by `kind` on tinygrad `version`) is this finding."""
    if kind not in self.kinds or version not in self.versions: return False
    try: return bool(self.match(failure, case))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError): return False  # a case of another shape

@functools.cache
def tinygrad_version() -> str:
  """Returns: the installed tinygrad's version (distribution metadata; tinygrad defines no `__version__`)."""
  try: return importlib.metadata.version("tinygrad")
  except importlib.metadata.PackageNotFoundError: return "?"

# *** helpers over the case languages ***

def _sym_nodes(t:list):  # every node of a symtree tree
  yield t
  if t[0] not in ("v", "c"):
    for s in t[1:]:
      if isinstance(s, list): yield from _sym_nodes(s)

def _exe(f:Failure) -> str: return f.cls.split(":", 1)[1] if ":" in f.cls else ""
# the executors (kexec.EXECUTORS) of one renderer family; AMD covers every mock AMD target (`AMD`, `AMD-<arch>`)
_FAMILY = {"CLANG": ("CLANG", "CLANG-A64"), "LLVM": ("LLVM", "LLVM-A64"), "X86": ("X86",)}
def _mismatch(f:Failure, *families:str) -> bool:
  """A render value mismatch on an executor of one of `families` (none given: any executor, test-injected ones included)."""
  if not f.cls.startswith("mismatch:"): return False
  e = _exe(f)
  return not families or any(e in _FAMILY[x] if x in _FAMILY else e == x or e.startswith(x + "-") for x in families)
def _nodes(case:dict) -> list[list]: return case["nodes"]
def _src_dt(case:dict, nd:list, k:int=0) -> str: return case["nodes"][nd[2 + k]][1]
def _has(case:dict, pred:Callable[[list], bool]) -> bool: return any(pred(nd) for nd in _nodes(case))
def _lane(f:Failure) -> tuple[int, int]:
  m = re.search(r"\bout(\d+)\[(\d+)\]", f.message)
  if m is None: raise ValueError("no output lane in the message")
  return int(m[1]), int(m[2])
NARROW_INTS, INTS64 = ("int8", "uint8", "int16", "uint16"), ("int64", "uint64")
FLOATS = ("float16", "bfloat16", "float32", "float64", "fp8e4m3", "fp8e5m2")

def _f8_signed_overflow(f:Failure, case:dict) -> bool:
  # the mismatching lane is undetermined once signed ADD/MUL/SHL may not wrap (C, LLVM `nsw`): the failure is the overflow
  from mockgpu.tinygrad.fuzz import render_ir
  j, lane = _lane(f)
  return render_ir.evaluate(case, signed_overflow=True)[j][lane] is not None and render_ir.evaluate(case, signed_overflow=False)[j][lane] is None

def _f3_wide_shift_of_index(case:dict) -> bool:
  # a 64-bit SHL/SHR of a loop index (or its cast) by an amount that is not a constant below 32: narrowed to an i32 shift
  nodes = _nodes(case)
  def of_idx(i:int) -> bool: return nodes[i][0] == "idx" or (nodes[i][0] == "CAST" and nodes[nodes[i][2]][0] == "idx")
  return any(nd[0] in ("SHL", "SHR") and nd[1] in INTS64 and of_idx(nd[2]) and not (nodes[nd[3]][0] == "const" and nodes[nd[3]][2] < 32)
             for nd in nodes)

def _f14_const_product(case:dict) -> bool:
  # MAX/CMPLT of an unsigned product of constants: symbolic decides it on the unwrapped product
  nodes = _nodes(case)
  muls = {i for i, nd in enumerate(nodes) if nd[0] == "MUL" and nd[1] in ("uint32", "uint64") and all(nodes[a][0] == "const" for a in nd[2:4])}
  return any(nd[0] in ("MAX", "CMPLT") and any(a in muls for a in nd[2:4]) for nd in nodes)

def _f16_div_of_cast_const(case:dict) -> bool:
  nodes = _nodes(case)
  casts = {i for i, nd in enumerate(nodes) if nd[0] == "CAST" and nodes[nd[2]][0] == "const" and nd[1] in NARROW_INTS + ("uint32",)
           and nd[1].startswith("u")}
  return any(nd[0] in ("CDIV", "CMOD") and nd[2] in casts for nd in nodes)

def _f18_udiv_large_const_by_mask(case:dict) -> bool:
  nodes = _nodes(case)
  return any(nd[0] in ("CDIV", "CMOD") and nd[1] == "uint32" and nodes[nd[2]][0] == "const" and nodes[nd[2]][2] >= 2**31
             and nodes[nd[3]][0] == "AND" for nd in nodes)

def _sym_casts(case:dict, const:bool) -> bool:
  # a narrowing cast (to a fixed-width int) whose operand is (const=True) / is not (const=False) a constant
  return any(n[0] == "cast" and n[1] not in ("weakint", "bool") and (n[2][0] == "c") == const for n in _sym_nodes(case["expr"]))

def _sym_unsigned(t:list, case:dict) -> bool:
  from mockgpu.tinygrad.fuzz import symtree
  return symtree.dtype_of(t, case["dtype"]).startswith("uint")

def _sym_unsigned_const_wrap(case:dict) -> bool:
  # an unsigned -c, c0 - c1, c0 + c1, c0 * c1 or c0 << c1 of constants only: folded without wrapping
  return any(n[0] in ("neg", "sub", "add", "mul", "shl") and all(m[0] == "c" for m in n[1:]) and _sym_unsigned(n, case) for n in _sym_nodes(case["expr"]))

def _sym_compare_over_wrap(case:dict) -> bool:
  # a comparison or max/min of an unsigned operand computed by a wrapping op: decided as if it could not wrap
  wrapping = ("add", "sub", "mul", "neg", "shl")
  return any(n[0] in ("lt", "ne", "eq", "max", "min") and any(m[0] in wrapping and _sym_unsigned(m, case) for c in n[1:] for m in _sym_nodes(c))
             for n in _sym_nodes(case["expr"]))

def _f20_div_of_unsigned_to_signed_cast(case:dict) -> bool:
  # CDIV/CMOD of CAST(signed, unsigned value): the cast's range is [0, max], so the division is lowered as a shift
  nodes = _nodes(case)
  casts = {i for i, nd in enumerate(nodes) if nd[0] == "CAST" and nd[1].startswith("int") and _src_dt(case, nd).startswith("uint")}
  return any(nd[0] in ("CDIV", "CMOD") and nd[2] in casts for nd in nodes)

def _f21_float_times_zero(case:dict) -> bool:
  nodes = _nodes(case)
  return any(nd[0] == "MUL" and nd[1] in FLOATS and any(nodes[a][0] == "const" and nodes[a][2] in (0, 0.0) for a in nd[2:4]) for nd in nodes)

_V = ("0.14.0",)
KNOWN: tuple[Known, ...] = (
  Known("1", "UOp.simplify raises ZeroDivisionError on 0 // e and 0 % e when e's range is unknown (a bitwise divisor)", ("symbolic",), _V,
        lambda f, c: (f.cls == "exception:simplify:ZeroDivisionError" and "by zero" in f.message and
        any(n[0] in ("div", "mod", "cdiv", "cmod") and any(m[0] in ("and", "or", "xor") for m in _sym_nodes(n[2])) for n in _sym_nodes(c["expr"])))
        or (f.cls == "exception:valid:ZeroDivisionError" and "by zero" in f.message and  # the same gcd, the divisor's range from a valid
        any(n[0] in ("div", "mod", "cdiv", "cmod") and n[1] == ["c", 0] for n in _sym_nodes(c["expr"])))),
  Known("2", "DISABLE_FAST_IDIV=0: a non-negative signed value divided by a negative constant crashes codegen (fast_idiv asserts d > 0)",
        ("idiv",), _V, lambda f, c: f.cls.startswith("exception:") and f.cls.endswith("AssertionError") and
        "Sign should have been taken out of divisor" in f.message),
  Known("4", "a narrowing integer CAST's bounds are clamped to the target dtype instead of covering the wrapped values", ("symbolic",), _V,
        lambda f, c: f.cls == "cast-bounds" or (f.cls == "cast-mismatch" and _sym_casts(c, const=False))),
  Known("5", "sym's pm_simplify_valid rewrites an integer (bitwise) AND as a product", ("symbolic",), _V,
        lambda f, c: f.cls == "valid-mismatch" and f.message.startswith("sym:") and any(n[0] == "and" for n in _sym_nodes(c["expr"]))),
  Known("6", "unsigned constants fold to negative values (weakint), a CAST of a constant folds without truncating", ("symbolic",), _V,
        lambda f, c: f.cls in ("unwrapped-const", "dtype-changed") or (f.cls == "cast-mismatch" and _sym_casts(c, const=True))
        or (f.cls == "wrap-mismatch" and _sym_unsigned_const_wrap(c))),
  Known("7", "bounds, comparisons and max/min are decided as if an unsigned add/sub/mul/neg/shl could not wrap", ("symbolic",), _V,
        lambda f, c: f.cls == "wrap-bounds" or (f.cls == "wrap-mismatch" and _sym_compare_over_wrap(c))),
  Known("F1", "pm_number_params numbers a variable PARAM (core_id) into the buffer slots when a buffer is dropped", ("render", "oob"), _V,
        lambda f, c: f.cls.startswith("param-slot-collision:") or (f.cls.startswith("crash:LLVM") and "redefinition of argument" in f.message)),
  Known("F2", "C renderer: 8/16-bit integer arithmetic is not truncated (C integer promotion)", ("render",), _V,
        lambda f, c: _mismatch(f, "CLANG") and _has(c, lambda nd: nd[0] in ("ADD", "SUB", "MUL", "SHL", "NEG") and nd[1] in NARROW_INTS)),
  Known("F3", "a 64-bit shift by >= 32 of a loop index is narrowed to an undefined i32 shift", ("render",), _V,
        lambda f, c: _mismatch(f) and _exe(f) != "PYTHON" and _f3_wide_shift_of_index(c)),
  Known("F4", "X86 renderer: an unrolled int8 where() stores nondeterministic garbage", ("render",), _V,
        lambda f, c: _mismatch(f, "X86") and _has(c, lambda nd: nd[0] == "WHERE" and nd[1] in ("int8", "uint8"))),
  Known("F5", "LLVM renderer: sqrt(-inf) is inf and sqrt is not correctly rounded", ("render",), _V,
        lambda f, c: _mismatch(f, "LLVM") and _has(c, lambda nd: nd[0] == "SQRT")),
  Known("F6", "transcendental lowering: float64 sin loses accuracy (unrelated to sin at |x| ~ 5e10)", ("render",), _V,
        lambda f, c: _mismatch(f) and _exe(f) != "PYTHON" and _has(c, lambda nd: nd[0] == "SIN" and nd[1] == "float64")),
  Known("F7", "PYTHON backend: casting inf/NaN to an integer raises", ("render",), _V,
        lambda f, c: f.cls == "cast-nonfinite:PYTHON"),
  Known("F8", "signed integer overflow is undefined in the lowering (C, LLVM nsw, constant folding) while PYTHON/numpy wrap", ("render",), _V,
        lambda f, c: _mismatch(f) and _f8_signed_overflow(f, c)),
  Known("F9", "SHL of two int64 constants is folded without wrapping (CLANG cannot compile the literal)", ("render",), _V,
        lambda f, c: f.cls.startswith(("crash:", "mismatch:")) and _has(c, lambda nd: nd[0] == "SHL" and nd[1] in INTS64 and
                                                                         all(c["nodes"][a][0] == "const" for a in nd[2:4]))),
  Known("F10", "X86 renderer: uint64 -> float conversion is not correctly rounded", ("render",), _V,
        lambda f, c: _mismatch(f, "X86") and _has(c, lambda nd: nd[0] == "CAST" and nd[1] in FLOATS and _src_dt(c, nd) == "uint64")),
  Known("F11", "codegen asserts 'memory coalescing should be on INDEX, not Ops.PARAM'", ("render", "oob"), _V,
        lambda f, c: "memory coalescing should be on INDEX" in f.message),
  Known("F12", "CHECK_OOB skips INDEX/SHRINK with more than two sources: upcast (vector) accesses are never checked", ("oob",), _V,
        lambda f, c: f.cls == "static-miss:vectorized"),
  Known("F13", "X86 renderer: a float < fused into a select is true for NaN operands", ("render",), _V,
        lambda f, c: _mismatch(f, "X86") and _has(c, lambda nd: nd[0] == "WHERE") and
        _has(c, lambda nd: nd[0] in ("CMPLT", "CMPNE", "CMPEQ") and _src_dt(c, nd) in FLOATS)),
  Known("F14", "symbolic decides max(c1*c2, c3) / c3 < c1*c2 on the unwrapped unsigned product", ("render",), _V,
        lambda f, c: _mismatch(f) and _f14_const_product(c)),
  Known("F15", "log2 of a negative denormal is -inf on CPU (NaN expected)", ("render",), _V,
        lambda f, c: _mismatch(f) and _has(c, lambda nd: nd[0] == "LOG2") and re.search(r"= -inf\b.*reference nan", f.message) is not None),
  Known("F16", "symbolic folds CDIV/CMOD of CAST(narrow unsigned, constant) wrongly", ("render",), _V,
        lambda f, c: _mismatch(f) and _f16_div_of_cast_const(c)),
  Known("F17", "AMD LLVM renderer: an out-of-range float -> 8/16-bit cast (poison) corrupts the neighbouring element", ("render",), _V,
        lambda f, c: _mismatch(f, "AMD") and c["n"] >= 2 and
        _has(c, lambda nd: nd[0] == "CAST" and nd[1] in NARROW_INTS and _src_dt(c, nd) in FLOATS)),
  Known("F18", "LLVM AMDGPU: udiv i32 C, (x & m) with C >= 2**31 masks the quotient with m", ("render",), _V,
        lambda f, c: _mismatch(f, "AMD") and _f18_udiv_large_const_by_mask(c)),
  Known("F19", "AMD: float64 RECIPROCAL of +-0 is NaN (fdiv afn -> v_rcp_f64 + Newton steps, fma(-0, inf, 1))", ("render",), _V,
        lambda f, c: _mismatch(f, "AMD") and _has(c, lambda nd: nd[0] == "RECIPROCAL" and nd[1] == "float64")
        and re.search(r"= -?nan\(nan\), reference -?inf", f.message) is not None),
  Known("F20", "a CAST of an unsigned value to a signed int gets the range [0, max], so CDIV/CMOD by a constant becomes a shift", ("render",), _V,
        lambda f, c: _mismatch(f) and _f20_div_of_unsigned_to_signed_cast(c)),
  Known("F21", "x * 0 folds to 0 for floats, so NaN * 0 and inf * 0 are 0", ("render",), _V,
        lambda f, c: _mismatch(f) and _f21_float_times_zero(c) and "reference nan" in f.message),
  Known("F22", "a looped fp8e4m3 MAX reduction starts from -inf, stored as NaN", ("render",), _V,
        lambda f, c: _mismatch(f) and c.get("red", {}).get("op") == "MAX" and c["red"]["k"] > 8 and
        any(i["dtype"] == "fp8e4m3" for i in c["inputs"]) and re.search(r"= -?nan\(", f.message) is not None),
  Known("F23", "X86 renderer: the arange kernel of an int16 division (n >= 1024) crashes the process", ("idiv",), _V,
        lambda f, c: f.cls == "kernel-fault" and c["dev"] == "X86" and c["dtype"] in ("int16", "uint16") and "n" in c),
  Known("F24", "float16 emulated as float32 (PYTHON on Python < 3.12) leaves AFTER(CAST(local/reg buffer)), which the spec rejects", ("oob",),
        _V, lambda f, c: f.cls in ("dynamic-crash:PYTHON", "static-crash") and
        re.search(r"UOp verification failed at \d+ on Ops\.AFTER dtypes\.float", f.message) is not None),
)

def classify(kind:str, failure:Failure, case:Any, version:str|None=None) -> str|None:
  """Name the known finding a failure is.

  Args:
    kind: the fuzz kind that found it. failure, case: the failure and its case.
    version: the tinygrad version (default: the installed one).
  Returns:
    the id of the first matching entry of `KNOWN`, or None when the failure is new.
  """
  v = tinygrad_version() if version is None else version
  return next((k.id for k in KNOWN if k.matches(kind, failure, case, v)), None)
