"""Random integer expression trees for the symbolic fuzzer: generation, typing, interval checks, reference semantics,
rendering and shrinking.

A tree is JSON: `["v", i]` (variable i, of the case dtype), `["c", value]` (int constant of the case dtype, or bool),
`["c", value, dtype]` (constant of another dtype), `["cast", dtype, child]`, `[op, child, ...]`. Int ops: add sub mul
div mod (floor, tinygrad's FLOORDIV/FLOORMOD) cdiv cmod (truncating, CDIV/CMOD) max min neg and or xor shl shr (the shift
amount is a constant child) where (bool, int, int); bool ops: lt ne eq band bor bxor not. The children of an int op have
the op's dtype. Case: `{"dtype": D, "vars": [[lo, hi], ...], "expr": tree}` with D one of `DTYPES`, plus optionally
`"gate": booltree` (an index valid, see symbolic.py).

Semantics (`DTYPES`, one rule per dtype, as tinygrad's renderers compile them; docs/fuzz.md):
* weakint: tinygrad's index type, mathematical integers (it is lowered to int32 or int64 from its bounds and never meant
  to wrap). A case is valid only while every weakint value stays below 2**40 (so numpy int64 evaluation is exact).
* uint8..uint64: arithmetic modulo 2**bits (C, LLVM, PTX and AMD all define unsigned wrap-around).
* int8..int64: two's complement wrap-around (tinygrad's `exec_alu`/`truncate`, the PYTHON backend, PTX, AMD), but a
  signed overflow is undefined in C and poison in LLVM (`add nsw`), so a point where the reference overflows a signed
  value (including `MIN // -1` and `MIN % -1`) is *undefined*: it is skipped unless the fuzzer judges signed wrap.
* casts truncate to the target width (two's complement; C/LLVM/PTX define it for the widths tinygrad emits); casts to
  bool are `!= 0`. Shifts: the amount is a constant in [0, bits-1]; `>>` is arithmetic for signed, logical for unsigned.
* `//` `%` divide by an interval without 0 (a case whose divisor may be 0, even after wrap-around, is invalid).

`interval` computes sound bounds with exact Python ints (a fixed-width node whose exact range leaves its dtype gets the
dtype's full range: it may wrap).
"""
from __future__ import annotations
import math, random
from typing import Iterator
import numpy as np

__all__ = ["INT_OPS", "BOOL_OPS", "DTYPES", "Invalid", "is_bool", "dtype_of", "interval", "validate", "uop_src", "py_src", "size",
           "generate", "shrink", "domain_size", "ref_points", "ref_exact", "fixed_width", "wrap_to", "add_gate", "has_op"]

INT_OPS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "mod": 2, "cdiv": 2, "cmod": 2, "max": 2, "min": 2, "neg": 1, "and": 2, "or": 2,
           "xor": 2, "shl": 2, "shr": 2, "where": 3}
BOOL_OPS = {"lt": 2, "ne": 2, "eq": 2, "band": 2, "bor": 2, "bxor": 2, "not": 1}
# name -> (min, max, bits, signed, numpy dtype); weakint's limits are the fuzzer's validity bound, not a width
DTYPES = {"weakint": (-2**40, 2**40, 64, True, np.int64), "bool": (0, 1, 1, False, np.bool_),
          **{f"int{b}": (-2**(b-1), 2**(b-1)-1, b, True, getattr(np, f"int{b}")) for b in (8, 16, 32, 64)},
          **{f"uint{b}": (0, 2**b-1, b, False, getattr(np, f"uint{b}")) for b in (8, 16, 32, 64)}}
LIMITS = {k: v[:2] for k, v in DTYPES.items()}
_DIVS = ("div", "mod", "cdiv", "cmod")

class Invalid(Exception):
  """The tree may divide by zero or overflow weakint's bound; such a case is skipped, never reported."""

def fixed_width(dt:str) -> bool: return dt not in ("weakint", "bool")
def is_bool(t:list) -> bool: return t[0] in BOOL_OPS or (t[0] == "c" and isinstance(t[1], bool)) or (t[0] == "cast" and t[1] == "bool")

def dtype_of(t:list, dt:str) -> str:
  """Returns: the dtype name of tree `t` in a case of dtype `dt`."""
  if t[0] == "v": return dt
  if t[0] == "c": return "bool" if isinstance(t[1], bool) else t[2] if len(t) > 2 else dt
  if t[0] == "cast": return t[1]
  if t[0] in BOOL_OPS: return "bool"
  return dtype_of(t[2] if t[0] == "where" else t[1], dt)

def _bits(lo:int, hi:int) -> tuple[int, int]:
  k = max(abs(lo), abs(hi) + 1).bit_length()
  return (0, 2**k - 1) if lo >= 0 else (-2**k, 2**k - 1)

def _fit(dt:str, lo:int, hi:int) -> tuple[int, int]:
  a, b = LIMITS[dt]
  return (lo, hi) if not fixed_width(dt) or (a <= lo and hi <= b) else (a, b)

def _cdiv(a:int, b:int) -> int: return abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)

def interval(t:list, vars_:list, dt:str="weakint") -> tuple[int, int]:
  """Returns: sound (lo, hi) of tree `t` over the variable ranges (bools as 0/1; a fixed-width node that may wrap gets its
  dtype's full range). Raises: Invalid on a divisor interval with 0."""
  op = t[0]
  if op == "v": return tuple(vars_[t[1]])
  if op == "c": return (int(t[1]), int(t[1]))
  if op == "cast":
    a, b = interval(t[2], vars_, dt)
    return ((int(a != 0 and b != 0 and (a > 0) == (b > 0)), int(a != 0 or b != 0)) if t[1] == "bool" else _fit(t[1], a, b))
  if op in BOOL_OPS:
    for s in t[1:]: interval(s, vars_, dt)
    return (0, 1)
  r = [interval(s, vars_, dt) for s in t[1:]]
  (a0, a1), (b0, b1) = r[0], r[-1]
  ndt = dtype_of(t, dt)
  if op in _DIVS and b0 <= 0 <= b1: raise Invalid("divisor interval holds 0")
  if op == "add": lo, hi = a0 + b0, a1 + b1
  elif op == "sub": lo, hi = a0 - b1, a1 - b0
  elif op == "neg": lo, hi = -a1, -a0
  elif op == "mul": lo, hi = min(p:=(a0*b0, a0*b1, a1*b0, a1*b1)), max(p)
  elif op in ("div", "cdiv"):
    f = (lambda x, y: x // y) if op == "div" else _cdiv
    lo, hi = min(p:=(f(a0, b0), f(a0, b1), f(a1, b0), f(a1, b1))), max(p)
  elif op == "mod": lo, hi = (0, b1 - 1) if b0 > 0 else (b0 + 1, 0)
  elif op == "cmod":
    m = max(abs(b0), abs(b1)) - 1
    lo, hi = (-m if a0 < 0 else 0, m if a1 > 0 else 0)
  elif op == "max": lo, hi = max(a0, b0), max(a1, b1)
  elif op == "min": lo, hi = min(a0, b0), min(a1, b1)
  elif op in ("shl", "shr"): lo, hi = (a0 << b0, a1 << b0) if op == "shl" else (a0 >> b0, a1 >> b0)
  elif op == "where": lo, hi = min(r[1][0], r[2][0]), max(r[1][1], r[2][1])
  elif op == "and" and a0 >= 0 and b0 >= 0: lo, hi = 0, min(a1, b1)
  elif op == "or" and a0 >= 0 and b0 >= 0: lo, hi = max(a0, b0), max(_bits(a0, a1)[1], _bits(b0, b1)[1])
  else:
    x, y = _bits(a0, a1), _bits(b0, b1)
    lo, hi = min(x[0], y[0]), max(x[1], y[1])  # and/or/xor: stays within the wider two's-complement width
  return _fit(ndt, lo, hi)

def validate(case:dict) -> None:
  """Raises: Invalid if any node of the case may divide by zero, a weakint value may leave +-2**40, a shift amount leaves
  [0, bits-1] or a variable range is empty or outside the dtype (see module doc)."""
  dt = case["dtype"]
  def walk(t):
    if t[0] == "c" and not isinstance(t[1], bool) and not LIMITS[dtype_of(t, dt)][0] <= t[1] <= LIMITS[dtype_of(t, dt)][1]:
      raise Invalid(f"constant {t[1]} outside {dtype_of(t, dt)}")
    if t[0] in ("v", "c"): return
    for s in t[2:] if t[0] == "cast" else t[1:]: walk(s)
    if t[0] in ("shl", "shr") and not 0 <= t[2][1] < (32 if dtype_of(t, dt) == "weakint" else DTYPES[dtype_of(t, dt)][2]):
      raise Invalid("shift amount out of range")
    a, b = interval(t, case["vars"], dt)
    lo, hi = LIMITS[ndt] if (ndt:=dtype_of(t, dt)) != "bool" else (0, 1)
    if a < lo or b > hi: raise Invalid(f"node {t[0]} range [{a}, {b}] leaves {ndt}")
  lo, hi = LIMITS[dt]
  for a, b in case["vars"]:
    if a > b or a < lo or b > hi: raise Invalid("bad variable range")
  walk(case["expr"])
  if "gate" in case: walk(case["gate"])

_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "//", "mod": "%", "and": "&", "or": "|", "xor": "^", "lt": "<",
        "band": "&", "bor": "|", "bxor": "^", "shl": "<<", "shr": ">>"}

def uop_src(t:list) -> str:
  """Returns: Python source building `t` with tinygrad's UOp operators (names `v0..vn`, `Ops`, `dtypes` and `C(value[, dtype])`
  must be in scope)."""
  op = t[0]
  if op == "v": return f"v{t[1]}"
  if op == "c": return f"C({t[1]!r})" if len(t) == 2 else f"C({t[1]!r}, {t[2]!r})"
  if op == "cast": return f"{uop_src(t[2])}.cast(dtypes.{t[1]})"
  a = [uop_src(s) for s in t[1:]]
  if op in ("shl", "shr"): return f"({a[0]} {_BIN[op]} {t[2][1]})"
  if op in _BIN: return f"({a[0]} {_BIN[op]} {a[1]})"
  if op in ("cdiv", "cmod"): return f"{a[0]}.alu(Ops.{op.upper()}, {a[1]})"
  if op in ("max", "min"): return f"{a[0]}.{op}imum({a[1]})"
  if op in ("ne", "eq"): return f"{a[0]}.{op}({a[1]})"
  if op == "neg": return f"(-{a[0]})"
  if op == "not": return f"{a[0]}.logical_not()"
  return f"{a[0]}.where({a[1]}, {a[2]})"

def py_src(t:list) -> str:
  """Returns: readable Python-like source of `t` (`//` `%` floor, `cdiv`/`cmod` truncating, `T(x)` a cast to dtype T)."""
  op, a = t[0], [py_src(s) for s in t[1:]] if t[0] not in ("v", "c", "cast") else []
  if op == "v": return f"v{t[1]}"
  if op == "c": return repr(t[1])
  if op == "cast": return f"{t[1]}({py_src(t[2])})"
  if op in ("shl", "shr"): return f"({a[0]} {_BIN[op]} {t[2][1]})"
  if op in _BIN: return f"({a[0]} {_BIN[op]} {a[1]})"
  if op in ("ne", "eq"): return f"({a[0]} {'!=' if op == 'ne' else '=='} {a[1]})"
  if op == "neg": return f"(-{a[0]})"
  return f"{op.upper()}({', '.join(a)})"

def has_op(t:list, op:str) -> bool: return t[0] == op or any(has_op(s, op) for s in _kids(t))
def size(t:list) -> int: return 1 + sum(size(s) for s in _kids(t))

def _kids(t:list) -> list: return [] if t[0] in ("v", "c") else [t[2]] if t[0] == "cast" else t[1:]

# *** reference semantics ***

def wrap_to(v:int, dt:str) -> int:
  """Returns: `v` converted to dtype `dt` (two's complement truncation; bool: `v != 0` as 0/1; weakint: unchanged)."""
  if dt == "bool": return int(v != 0)
  if not fixed_width(dt): return v
  lo, _, bits, signed, _ = DTYPES[dt]
  v &= (1 << bits) - 1
  return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v

def ref_exact(case:dict, env:dict[str, int], wrap:bool=True, tree:list|None=None) -> tuple[int|bool, set[str]]:
  """Evaluate the case's expression (or `tree`) at one point on Python ints.

  Args: wrap: fixed-width arithmetic wraps (True) or is unbounded (False; casts still truncate). Returns: (value, flags);
    flags holds `wrap` (some fixed-width arithmetic left its dtype), `signed-overflow` (it was a signed dtype) and
    `cast-wrap` (a cast changed a value)."""
  dt, flags = case["dtype"], set()
  def ev(t):
    op = t[0]
    if op == "v": return env[f"v{t[1]}"]
    if op == "c": return t[1]
    if op == "cast":
      v = ev(t[2])
      if t[1] == "bool": return bool(v)
      if (r:=wrap_to(int(v), t[1])) != v: flags.add("cast-wrap")
      return r
    s = [ev(x) for x in t[1:]]
    if op in BOOL_OPS:
      return {"lt": lambda a, b: a < b, "ne": lambda a, b: a != b, "eq": lambda a, b: a == b, "band": lambda a, b: a and b,
              "bor": lambda a, b: a or b, "bxor": lambda a, b: a != b, "not": lambda a: not a}[op](*s)
    if op == "where": return s[1] if s[0] else s[2]
    a, b = s[0], s[-1]
    r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "neg": lambda: -a, "div": lambda: a // b,
         "mod": lambda: a - a // b * b, "cdiv": lambda: _cdiv(a, b), "cmod": lambda: a - _cdiv(a, b) * b, "max": lambda: max(a, b),
         "min": lambda: min(a, b), "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b, "shl": lambda: a << b,
         "shr": lambda: a >> b}[op]()
    ndt = dtype_of(t, dt)
    if fixed_width(ndt):
      lo, hi, _, signed, _ = DTYPES[ndt]
      if not lo <= r <= hi or (signed and op in ("mod", "cmod") and a == lo and b == -1):
        flags.update({"wrap", "signed-overflow"} if signed else {"wrap"})
        if wrap: r = wrap_to(r, ndt)
    return r
  return ev(case["expr"] if tree is None else tree), flags

_CMP = {"lt": np.less, "ne": np.not_equal, "eq": np.equal, "band": np.logical_and, "bor": np.logical_or, "bxor": np.not_equal}
def _np_cdiv(a, b):  # truncating division from numpy's floor division (np.abs would overflow at the dtype's minimum)
  q = a // b
  return np.where((a - q * b != 0) & ((a < 0) != (b < 0)), q + 1, q).astype(q.dtype)

def ref_points(case:dict, env:dict[str, np.ndarray], tree:list|None=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Evaluate the case's expression (or `tree`) at many points with the reference semantics of the module doc.

  Args: env: var name -> int64 array. Returns: (values in the root's numpy dtype, wrap mask, signed-overflow mask)."""
  dt = case["dtype"]
  n = len(next(iter(env.values()))) if env else 1
  wrap, sover = np.zeros(n, bool), np.zeros(n, bool)
  def ev(t):
    nonlocal wrap, sover
    op, ndt = t[0], dtype_of(t, dt)
    npdt = DTYPES[ndt][4]
    if op == "v": return np.asarray(env[f"v{t[1]}"]).astype(npdt)
    if op == "c": return np.full(n, t[1], dtype=npdt)
    if op == "cast":
      v = ev(t[2])
      return v != 0 if ndt == "bool" else v.astype(npdt)
    s = [ev(x) for x in t[1:]]
    if op in BOOL_OPS: return np.logical_not(s[0]) if op == "not" else _CMP[op](s[0], s[1])
    if op == "where": return np.where(s[0], s[1], s[2])
    a, b = s[0], s[-1]
    if op in ("max", "min", "and", "or", "xor", "shr"):
      return {"max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
              "shr": np.right_shift}[op](a, b).astype(npdt)
    if not fixed_width(ndt): over = None  # weakint: exact in int64 by validity
    lo, hi, bits, signed, _ = DTYPES[ndt]
    if op in _DIVS:
      r = (a // b if op == "div" else a - a // b * b if op == "mod" else _np_cdiv(a, b) if op == "cdiv" else a - _np_cdiv(a, b) * b)
      over = (a == lo) & (b == -1) if signed and fixed_width(ndt) else None
    elif not fixed_width(ndt) or bits <= 32:
      w = np.uint64 if op == "mul" and not signed else np.int64
      aw, bw = a.astype(w), b.astype(w)
      r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "neg": lambda x, _: -x, "shl": np.left_shift}[op](aw, bw)
      if fixed_width(ndt): over = (r < lo) | (r > hi) if w is np.int64 else r > hi
    else:  # 64-bit: wrapped result, exact overflow tests
      r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "neg": lambda x, _: (0 - x).astype(npdt), "shl": np.left_shift}[op](a, b)
      if op == "add": over = (r < a) if not signed else ((a ^ r) & (b ^ r)) < 0
      elif op == "sub": over = (a < b) if not signed else ((a ^ b) & (a ^ r)) < 0
      elif op == "neg": over = (a != 0) if not signed else a == lo
      elif op == "shl": over = np.right_shift(r, b) != a
      else: over = ((b != 0) & (r // np.where(b == 0, 1, b) != a)) | ((a == lo) & (b == -1) if signed else False)
    if over is not None:
      wrap = wrap | over
      if signed: sover = sover | over
    return np.asarray(r).astype(npdt)
  with np.errstate(all="ignore"): v = ev(case["expr"] if tree is None else tree)
  return np.broadcast_to(v, (n,)), wrap, sover

# *** generation ***

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

def _var_range(rng:random.Random, dtype:str, big:bool) -> list[int]:
  lo, hi = LIMITS[dtype]
  if big and fixed_width(dtype) and rng.random() < 0.4:  # realistic magnitudes up to the dtype's limits
    a, b = sorted(rng.choice([lo, hi, 0, lo + 1, hi - 1, rng.randint(lo, hi), hi // 2, hi // 2 + 1]) for _ in range(2))
    return [a, b]
  n = rng.choice([1, 2, 3, 4, 7, 8, 15, 16, 31, 100, 255, 1000, 4096, 100000, 2**20, 2**31 - 1, 2**31, 2**32]) if big else \
    rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 31])  # weakint up to where its lowering switches int32 -> int64 and beyond
  kind = "nonneg" if lo == 0 else rng.choice(["nonneg", "nonneg", "pos", "signed", "neg"])
  if fixed_width(dtype) and rng.random() < 0.25:  # near the top or bottom of the dtype: wraps with small boxes
    n = min(n, 255)
    return [hi - n, hi] if lo == 0 or rng.random() < 0.5 else [lo, lo + n]
  r = {"nonneg": [0, n], "pos": [1, n], "neg": [-n, -1], "signed": [-rng.randint(1, n), rng.randint(0, n)]}[kind]
  return [max(lo, r[0]), min(hi, r[1])]

def _const(rng:random.Random, dtype:str) -> int:
  lo, hi = LIMITS[dtype]
  if fixed_width(dtype) and rng.random() < 0.15: return rng.choice([lo, hi, hi // 2, hi // 2 + 1, lo + 1, hi - 1])
  if dtype == "weakint" and rng.random() < 0.05: return rng.choice([2**31 - 1, 2**31, -2**31, 2**32, 2**20])
  c = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 31, 32, 64, 100, 127, 128, 255, 256, 1024, 4096])
  c = c if lo == 0 or rng.random() < 0.7 else -c
  return c if lo <= c <= hi else wrap_to(c, dtype)

def _pick_dtype(rng:random.Random) -> str:
  return rng.choice(["weakint"] * 5 + ["int32", "int32", "uint32", "uint32"] + list(INT_DTYPES))

def generate(rng:random.Random, dtype:str|None=None, max_depth:int=4, casts:bool=True, ops:list[str]|None=None) -> dict:
  """Draw a valid case (retrying nodes that would be invalid). `ops` restricts the int ops (None: all of INT_OPS; a cast
  also needs `casts`). Returns: the case dict (see module doc)."""
  dtype = dtype or _pick_dtype(rng)
  big = rng.random() < 0.3
  vars_ = [_var_range(rng, dtype, big) for _ in range(rng.choice([1, 2, 2, 3, 3] if not big else [1, 2, 3]))]
  bitwise = not big or fixed_width(dtype)  # weakint int and/or/xor only where brute force applies (z3's integer theory has none)
  case = {"dtype": dtype, "vars": vars_, "expr": None}
  def leaf(dt):
    if dt == "bool":
      if rng.random() < 0.2: return ["c", rng.random() < 0.5]
      return [rng.choice(["lt", "lt", "ne", "eq"]), ["v", rng.randrange(len(vars_))], ["c", _const(rng, dtype)]]
    if dt == dtype: return ["v", rng.randrange(len(vars_))] if rng.random() < 0.7 else ["c", _const(rng, dtype)]
    return ["cast", dt, ["v", rng.randrange(len(vars_))]] if rng.random() < 0.6 else ["c", _const(rng, dt), dt]
  def ok(t):
    try: case["expr"] = t; validate(case); return True
    except Invalid: return False
  def const(dt, c): return ["c", c] if dt == dtype else ["c", c, dt]
  def gen(depth, dt):
    if depth <= 0 or (depth < top and rng.random() < 0.15): return leaf(dt)
    for _ in range(4):
      if dt == "bool":
        op = rng.choice(["lt", "lt", "ne", "eq", "band", "bor", "bxor", "not"] + (["cast"] if casts else []))
        if op == "cast": t = ["cast", "bool", gen(depth-1, rng.choice([dtype, dtype, rng.choice(INT_DTYPES)]))]
        elif op in ("band", "bor", "bxor", "not"): t = [op, *[gen(depth-1, "bool") for _ in range(BOOL_OPS[op])]]
        else:
          sdt = dtype if rng.random() < 0.8 or not casts else rng.choice(INT_DTYPES)
          t = [op, gen(depth-1, sdt), gen(depth-1, sdt)]
      else:
        ops = ["add", "add", "sub", "mul", "mul", "div", "div", "mod", "mod", "max", "min", "where", "shl", "shr", "neg"]
        if fixed_width(dt): ops += ["cdiv", "cmod"] + (["cast", "cast"] if casts else [])
        elif casts and dt == "weakint" and rng.random() < 0.1: ops.append("cast")
        if dt == "weakint" and dtype != "weakint": ops = ["cast"]
        ops += ["and", "or", "xor"] if bitwise else []
        if allowed is not None and not (ops:=[o for o in ops if o in allowed or o == "cast"]): return leaf(dt)
        op = rng.choice(ops)
        bits = 32 if dt == "weakint" else DTYPES[dt][2]
        if op == "cast":
          src = rng.choice([s for s in ("weakint", *INT_DTYPES, "bool") if s != dt and (s != "weakint" or dtype == "weakint")])
          t = ["cast", dt, gen(depth-1, src)]
        elif op in ("shl", "shr"):
          k = rng.randint(0, 8) if dt == "weakint" else rng.randint(0, 4) if rng.random() < 0.5 else \
            rng.choice([bits - 1, bits // 2, rng.randrange(bits)])
          t = [op, gen(depth-1, dt), const(dt, k)]
        elif op == "where": t = [op, gen(depth-1, "bool"), gen(depth-1, dt), gen(depth-1, dt)]
        elif op in _DIVS and rng.random() < 0.6:
          nz = [i for i, (a, b) in enumerate(vars_) if a > 0 or b < 0]
          sign = 1 if LIMITS[dt][0] == 0 or rng.random() < 0.8 else -1
          d = ["v", rng.choice(nz)] if nz and dt == dtype and rng.random() < 0.4 else \
              const(dt, sign * rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 100, 127]))
          t = [op, gen(depth-1, dt), d]
        else: t = [op, *[gen(depth-1, dt) for _ in range(INT_OPS[op])]]
      if ok(t): return t
    return leaf(dt)
  allowed, top = ops, rng.randint(1, max_depth)
  case["expr"] = gen(top, "bool" if rng.random() < 0.15 else dtype)
  validate(case)
  return case

def add_gate(rng:random.Random, case:dict) -> dict:
  """Give a weakint case an index valid: `gate` is an AND of 1-3 clauses `e < c`, `c < e` or `not (e < c)` (the forms
  tinygrad's `parse_valid` reads) over small index expressions `e`, with `c` inside e's range; half the time the expression
  gets one of the gate's `e` added, so `uop_given_valid` has something to substitute. Returns: the case (unchanged if the
  gated case would be invalid)."""
  vs = case["vars"]
  def v(): return ["v", rng.randrange(len(vs))]
  def idx():
    k = rng.random()
    if k < 0.3: return v()
    if k < 0.55: return ["add", ["mul", v(), ["c", rng.choice([2, 3, 4, 8, 16])]], v()]
    if k < 0.7: return [rng.choice(["div", "mod"]), v(), ["c", rng.choice([2, 3, 4, 8])]]
    if k < 0.85: return ["add", v(), ["c", rng.choice([-4, -1, 1, 3])]]
    return ["add", v(), v()]
  clauses, es = [], []
  for _ in range(rng.choice([1, 1, 2, 2, 3])):
    es.append(e:=idx())
    lo, hi = interval(e, vs)
    c = ["c", rng.randint(lo, hi + 1)]
    clauses.append(rng.choice([["lt", e, c], ["lt", c, e], ["not", ["lt", e, c]]]))
  g = clauses[0]
  for cl in clauses[1:]: g = ["band", g, cl]
  new = {**case, "gate": g, "expr": ["add", rng.choice(es), case["expr"]] if rng.random() < 0.5 else case["expr"]}
  try: validate(new)
  except Invalid: return case
  return new

# *** shrinking ***

def _paths(t:list, p=()) -> Iterator[tuple]:
  yield p
  if t[0] == "cast": yield from _paths(t[2], p + (2,))
  elif t[0] not in ("v", "c"):
    for i, s in enumerate(t[1:]): yield from _paths(s, p + (i + 1,))

def _get(t:list, p:tuple) -> list:
  for i in p: t = t[i]
  return t

def _put(t:list, p:tuple, new:list) -> list:
  if not p: return new
  return t[:p[0]] + [_put(t[p[0]], p[1:], new)] + t[p[0]+1:]

def _used(t:list, acc:set) -> set:
  if t[0] == "v": acc.add(t[1])
  for s in _kids(t): _used(s, acc)
  return acc

def _renum(t:list, m:dict) -> list:
  if t[0] == "v": return ["v", m[t[1]]]
  if t[0] == "cast": return ["cast", t[1], _renum(t[2], m)]
  return t if t[0] == "c" else [t[0]] + [_renum(s, m) for s in t[1:]]

def _bisect(v:int) -> list[int]:
  """Distances to move `v` toward 0, largest first: v, then halving (v - v/2, v - v/4, ..., 1), the order of the framework's
  canonical integer shrinking: with the greedy minimiser a threshold ends at the same value from any start."""
  out, d = [abs(v)], abs(v)
  while d > 1: out.append(d := d // 2)
  return list(dict.fromkeys(out + [1])) if v else []

def _toward0(c:int) -> list[int]:
  """Shrink candidates of a constant: 0, 1, -c (same magnitude, positive), then bisection toward 0."""
  return [x for x in dict.fromkeys([0, 1, -c, *(c - d if c > 0 else c + d for d in _bisect(c))])
          if abs(x) < abs(c) or (x == -c and c < 0)]

def _shrink_tree(case:dict, key:str) -> Iterator[dict]:
  e, vs, dt = case[key], case["vars"], case["dtype"]
  def with_(t): return {**case, key: t}
  edt = dtype_of(e, dt)
  subs = sorted((p for p in _paths(e) if p), key=lambda p: size(_get(e, p)))
  for p in subs:
    if dtype_of(_get(e, p), dt) == edt: yield with_(_get(e, p))
  for p in _paths(e):
    t = _get(e, p)
    if t[0] in ("v", "c"): continue
    tdt = dtype_of(t, dt)
    leaves = [["c", False], ["c", True]] if tdt == "bool" else [["c", 0], ["c", 1]] + [["v", i] for i in range(len(vs))] if tdt == dt \
      else [["c", 0, tdt], ["c", 1, tdt]]
    for s in _kids(t):
      if dtype_of(s, dt) == tdt and not (t[0] in ("shl", "shr") and s is t[2]): yield with_(_put(e, p, s))
    for l in leaves: yield with_(_put(e, p, l))
  for p in _paths(e):
    t = _get(e, p)
    if t[0] == "c" and not isinstance(t[1], bool):
      for c in _toward0(t[1]): yield with_(_put(e, p, ["c", c, *t[2:]]))

def shrink(case:dict) -> Iterator[dict]:
  """Yield smaller variants: subtree hoisting, node-to-leaf, constants toward 0, fewer variables, narrower ranges (halving
  toward 0), weakint; for gated cases also the gate's own variants and dropping the gate."""
  if "gate" in case:
    yield {k: v for k, v in case.items() if k != "gate"}
    yield from _shrink_tree(case, "gate")
  yield from _shrink_tree(case, "expr")
  e, vs = case["expr"], case["vars"]
  used = sorted(_used(e, _used(case.get("gate", ["c", 0]), set())))
  if len(used) < len(vs):
    m = {u: i for i, u in enumerate(used)}
    yield {**case, "vars": [vs[i] for i in used], "expr": _renum(e, m), **({"gate": _renum(case["gate"], m)} if "gate" in case else {})}
  for i, (lo, hi) in enumerate(vs):
    mid = lo + (hi - lo) // 2
    cands = ([[0, hi], [lo, 0]] if lo < 0 < hi else []) + [[lo, mid], [mid + 1, hi], [lo + 1, hi], [lo, hi - 1]]
    if lo > 0: cands += [[lo - d, hi - d] for d in _bisect(lo) + [lo - 1]]  # the same width, moved toward 0 (or to start at 1)
    if hi < 0: cands += [[lo + d, hi + d] for d in _bisect(hi) + [-hi - 1]]
    for r in cands:
      if r[0] <= r[1] and r != [lo, hi] and r[1] - r[0] <= hi - lo and max(map(abs, r)) <= max(abs(lo), abs(hi)):
        yield {**case, "vars": vs[:i] + [r] + vs[i+1:]}
  if case["dtype"] != "weakint": yield {**case, "dtype": "weakint"}

def domain_size(case:dict) -> int:
  """Returns: the number of points of the variables' box."""
  return math.prod(b - a + 1 for a, b in case["vars"])
