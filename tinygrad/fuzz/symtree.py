"""Random integer expression trees for the symbolic fuzzer: generation, interval checks, rendering and shrinking.

A tree is JSON: `["v", i]` (variable i), `["c", value]` (int or bool constant), `[op, child, ...]`. Int ops: add sub mul div
(floor) mod (floor) max min neg and or xor shl shr (shift amount is a constant child) where (bool, int, int); bool ops: lt ne
eq band bor bxor not. Case: `{"dtype": "weakint"|"int32"|"uint32", "vars": [[lo, hi], ...], "expr": tree}`.

`interval` computes sound bounds with exact Python ints; a case is *valid* when no divisor interval holds 0, no value leaves
the dtype (uint: no negative value at all) and weakint values stay below 2**40 (so numpy int64 evaluation is exact).
"""
from __future__ import annotations
import math, random
from typing import Iterator

__all__ = ["INT_OPS", "BOOL_OPS", "Invalid", "is_bool", "interval", "validate", "uop_src", "py_src", "size", "generate", "shrink", "domain_size"]

INT_OPS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "mod": 2, "max": 2, "min": 2, "neg": 1, "and": 2, "or": 2, "xor": 2, "shl": 2, "shr": 2,
           "where": 3}
BOOL_OPS = {"lt": 2, "ne": 2, "eq": 2, "band": 2, "bor": 2, "bxor": 2, "not": 1}
LIMITS = {"weakint": (-2**40, 2**40), "int32": (-2**31, 2**31-1), "uint32": (0, 2**32-1)}

class Invalid(Exception):
  """The tree may divide by zero or overflow its dtype; such a case is skipped, never reported."""

def is_bool(t:list) -> bool: return t[0] in BOOL_OPS or (t[0] == "c" and isinstance(t[1], bool))

def _bits(lo:int, hi:int) -> tuple[int, int]:
  k = max(abs(lo), abs(hi) + 1).bit_length()
  return (0, 2**k - 1) if lo >= 0 else (-2**k, 2**k - 1)

def interval(t:list, vars_:list, memo:dict|None=None) -> tuple[int, int]:
  """Returns: sound (lo, hi) of tree `t` over the variable ranges (bools as 0/1). Raises: Invalid on a divisor interval with 0."""
  op = t[0]
  if op == "v": return tuple(vars_[t[1]])
  if op == "c": return (int(t[1]), int(t[1]))
  if op in BOOL_OPS:
    for s in t[1:]: interval(s, vars_)
    return (0, 1)
  r = [interval(s, vars_) for s in t[1:]]
  (a0, a1), (b0, b1) = r[0], r[-1]
  if op == "add": return (a0 + b0, a1 + b1)
  if op == "sub": return (a0 - b1, a1 - b0)
  if op == "neg": return (-a1, -a0)
  if op == "mul": return (min(p:=(a0*b0, a0*b1, a1*b0, a1*b1)), max(p))
  if op in ("div", "mod"):
    if b0 <= 0 <= b1: raise Invalid("divisor interval holds 0")
    if op == "div": return (min(p:=(a0//b0, a0//b1, a1//b0, a1//b1)), max(p))
    return (0, b1 - 1) if b0 > 0 else (b0 + 1, 0)
  if op == "max": return (max(a0, b0), max(a1, b1))
  if op == "min": return (min(a0, b0), min(a1, b1))
  if op in ("shl", "shr"): return (a0 << b0, a1 << b0) if op == "shl" else (a0 >> b0, a1 >> b0)
  if op == "where": return (min(r[1][0], r[2][0]), max(r[1][1], r[2][1]))
  if op == "and" and a0 >= 0 and b0 >= 0: return (0, min(a1, b1))
  if op == "or" and a0 >= 0 and b0 >= 0: return (max(a0, b0), max(_bits(a0, a1)[1], _bits(b0, b1)[1]))
  x, y = _bits(a0, a1), _bits(b0, b1)
  return (min(x[0], y[0]), max(x[1], y[1]))  # and/or/xor: stays within the wider two's-complement width

def validate(case:dict) -> None:
  """Raises: Invalid if any node of the case may divide by zero or leave the dtype's range (see module doc)."""
  lo, hi = LIMITS[case["dtype"]]
  def walk(t):
    for s in t[1:] if t[0] not in ("v", "c") else (): walk(s)
    a, b = interval(t, case["vars"])
    if a < lo or b > hi: raise Invalid(f"node {t[0]} range [{a}, {b}] leaves {case['dtype']}")
  for a, b in case["vars"]:
    if a > b or a < lo or b > hi: raise Invalid("bad variable range")
  walk(case["expr"])

_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "//", "mod": "%", "and": "&", "or": "|", "xor": "^", "lt": "<",
        "band": "&", "bor": "|", "bxor": "^", "shl": "<<", "shr": ">>"}

def uop_src(t:list) -> str:
  """Returns: Python source building `t` with tinygrad's UOp operators (names `v0..vn` and `C(value)` must be in scope)."""
  op, a = t[0], [uop_src(s) for s in t[1:]] if t[0] not in ("v", "c") else []
  if op == "v": return f"v{t[1]}"
  if op == "c": return f"C({t[1]!r})"
  if op in ("shl", "shr"): return f"({a[0]} {_BIN[op]} {t[2][1]})"
  if op in _BIN: return f"({a[0]} {_BIN[op]} {a[1]})"
  if op in ("max", "min"): return f"{a[0]}.{op}imum({a[1]})"
  if op in ("ne", "eq"): return f"{a[0]}.{op}({a[1]})"
  if op == "neg": return f"(-{a[0]})"
  if op == "not": return f"{a[0]}.logical_not()"
  return f"{a[0]}.where({a[1]}, {a[2]})"

def py_src(t:list) -> str:
  """Returns: Python source of the reference semantics of `t` (floor `//` and `%` as tinygrad's FLOORDIV/FLOORMOD), using
  helpers `MAX MIN WHERE NOT` so the same text runs on Python ints and on numpy arrays."""
  op, a = t[0], [py_src(s) for s in t[1:]] if t[0] not in ("v", "c") else []
  if op == "v": return f"v{t[1]}"
  if op == "c": return repr(t[1])
  if op in ("shl", "shr"): return f"({a[0]} {_BIN[op]} {t[2][1]})"
  if op in _BIN: return f"({a[0]} {_BIN[op]} {a[1]})"
  if op in ("ne", "eq"): return f"({a[0]} {'!=' if op == 'ne' else '=='} {a[1]})"
  if op == "neg": return f"(-{a[0]})"
  return f"{op.upper()}({', '.join(a)})"

def size(t:list) -> int: return 1 if t[0] in ("v", "c") else 1 + sum(size(s) for s in t[1:])

# *** generation ***

def _var_range(rng:random.Random, dtype:str, big:bool) -> list[int]:
  n = rng.choice([1, 2, 3, 4, 7, 8, 15, 16, 31, 100, 255, 1000, 4096, 100000, 2**20]) if big else rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 31])
  kind = "nonneg" if dtype == "uint32" else rng.choice(["nonneg", "nonneg", "pos", "signed", "neg"])
  if kind == "nonneg": return [0, n]
  if kind == "pos": return [1, n]
  if kind == "neg": return [-n, -1]
  return [-rng.randint(1, n), rng.randint(0, n)]

def _const(rng:random.Random, dtype:str) -> int:
  c = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 31, 32, 64, 100, 127, 128, 255, 256, 1024, 4096])
  return c if dtype == "uint32" or rng.random() < 0.7 else -c

def generate(rng:random.Random, dtype:str|None=None, max_depth:int=4) -> dict:
  """Draw a valid case (retrying nodes that would be invalid). Returns: the case dict (see module doc)."""
  dtype = dtype or rng.choice(["weakint"] * 6 + ["int32", "int32", "uint32"])
  big = rng.random() < 0.3
  vars_ = [_var_range(rng, dtype, big) for _ in range(rng.choice([1, 2, 2, 3, 3] if not big else [1, 2, 3]))]
  bitwise = not big  # int and/or/xor only where brute force applies (z3's integer theory has no bitwise ops)
  case = {"dtype": dtype, "vars": vars_, "expr": None}
  def leaf(want_bool):
    if want_bool:
      if rng.random() < 0.2: return ["c", rng.random() < 0.5]
      return [rng.choice(["lt", "lt", "ne", "eq"]), ["v", rng.randrange(len(vars_))], ["c", _const(rng, dtype)]]
    return ["v", rng.randrange(len(vars_))] if rng.random() < 0.7 else ["c", _const(rng, dtype)]
  def ok(t):
    try: case["expr"] = t; validate(case); return True
    except Invalid: return False
  def gen(depth, want_bool):
    if depth <= 0 or (depth < top and rng.random() < 0.15): return leaf(want_bool)
    for _ in range(4):
      if want_bool:
        op = rng.choice(["lt", "lt", "ne", "eq", "band", "bor", "bxor", "not"])
        kids = [gen(depth-1, op in ("band", "bor", "bxor", "not")) for _ in range(BOOL_OPS[op])]
      else:
        ops = ["add", "add", "sub", "mul", "mul", "div", "div", "mod", "mod", "max", "min", "where", "shl", "shr", "neg"]
        if dtype == "uint32": ops = [o for o in ops if o not in ("sub", "neg")]
        op = rng.choice(ops + (["and", "or", "xor"] if bitwise else []))
        if op in ("shl", "shr"): kids = [gen(depth-1, False), ["c", rng.randint(0, 4)]]
        elif op == "where": kids = [gen(depth-1, True), gen(depth-1, False), gen(depth-1, False)]
        elif op in ("div", "mod") and rng.random() < 0.6:
          nz = [i for i, (a, b) in enumerate(vars_) if a > 0 or b < 0]
          d = ["v", rng.choice(nz)] if nz and rng.random() < 0.4 else ["c", rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 100]) *
                                                                            (1 if dtype == "uint32" or rng.random() < 0.8 else -1)]
          kids = [gen(depth-1, False), d]
        else: kids = [gen(depth-1, False) for _ in range(INT_OPS[op])]
      if ok(t:=[op, *kids]): return t
    return leaf(want_bool)
  top = rng.randint(1, max_depth)
  case["expr"] = gen(top, rng.random() < 0.15)
  validate(case)
  return case

# *** shrinking ***

def _paths(t:list, p=()) -> Iterator[tuple]:
  yield p
  if t[0] not in ("v", "c"):
    for i, s in enumerate(t[1:]): yield from _paths(s, p + (i + 1,))

def _get(t:list, p:tuple) -> list:
  for i in p: t = t[i]
  return t

def _put(t:list, p:tuple, new:list) -> list:
  if not p: return new
  return t[:p[0]] + [_put(t[p[0]], p[1:], new)] + t[p[0]+1:]

def _used(t:list, acc:set) -> set:
  if t[0] == "v": acc.add(t[1])
  elif t[0] != "c":
    for s in t[1:]: _used(s, acc)
  return acc

def _renum(t:list, m:dict) -> list:
  if t[0] == "v": return ["v", m[t[1]]]
  return t if t[0] == "c" else [t[0]] + [_renum(s, m) for s in t[1:]]

def _toward0(c:int) -> list[int]:
  return [x for x in dict.fromkeys([0, 1, int(c / 2), c - (1 if c > 0 else -1), abs(c)]) if abs(x) < abs(c) or (x == abs(c) and c < 0)]

def shrink(case:dict) -> Iterator[dict]:
  """Yield smaller variants: subtree hoisting, node-to-leaf, constants toward 0, fewer variables, narrower ranges, weakint."""
  e, vs = case["expr"], case["vars"]
  def with_(**kw): return {**case, **kw}
  subs = sorted((p for p in _paths(e) if p), key=lambda p: size(_get(e, p)))
  for p in subs:
    if is_bool(_get(e, p)) == is_bool(e): yield with_(expr=_get(e, p))
  for p in _paths(e):
    t = _get(e, p)
    if t[0] in ("v", "c"): continue
    leaves = [["c", False], ["c", True]] if is_bool(t) else [["c", 0], ["c", 1]] + [["v", i] for i in range(len(vs))]
    for s in t[1:]:
      if is_bool(s) == is_bool(t) and not (t[0] in ("shl", "shr") and s is t[2]): yield with_(expr=_put(e, p, s))
    for l in leaves: yield with_(expr=_put(e, p, l))
  for p in _paths(e):
    t = _get(e, p)
    if t[0] == "c" and not isinstance(t[1], bool):
      for c in _toward0(t[1]): yield with_(expr=_put(e, p, ["c", c]))
  used = sorted(_used(e, set()))
  if len(used) < len(vs): yield with_(vars=[vs[i] for i in used], expr=_renum(e, {u: i for i, u in enumerate(used)}))
  for i, (lo, hi) in enumerate(vs):
    mid = lo + (hi - lo) // 2
    cands = ([[0, hi], [lo, 0]] if lo < 0 < hi else []) + [[lo, mid], [mid + 1, hi], [lo + 1, hi], [lo, hi - 1]]
    if lo > 1: cands.append([1, hi - lo + 1])
    if hi < -1: cands.append([lo - hi - 1, -1])
    for r in cands:
      if r[0] <= r[1] and r != [lo, hi] and r[1] - r[0] <= hi - lo and max(map(abs, r)) <= max(abs(lo), abs(hi)):
        yield with_(vars=vs[:i] + [r] + vs[i+1:])
  if case["dtype"] != "weakint": yield with_(dtype="weakint")

def domain_size(case:dict) -> int:
  """Returns: the number of points of the variables' box."""
  return math.prod(b - a + 1 for a, b in case["vars"])
