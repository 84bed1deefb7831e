"""Integer expressions with divisions by constants for the `idiv` fuzzer: JSON trees, their exact value (Python integers),
interval bounds, the UOp and Tensor programs they stand for, and shrinking steps.

A tree is a JSON list: `["x", i]` variable i (UOp variable `x<i>`), `["c", k]` a constant, `[op, a, b]` with op in
`add sub mul` (both sides trees), or `[div, a, d]` with div in `cdiv cmod floordiv floormod` (C truncating and Python
floor semantics) and d a non-zero integer constant. A case is valid for a dtype when every node's exact value stays in
the dtype's range over the variables' box (`bounds`), so the exact value is the dtype's value and any mismatch is the
lowering's. `toward(v, target)` and `simple_below(v, ...)` are the shrink steps: bisection toward a target, and the
"simple" numbers (small, powers of two and their neighbours, multiples of a divisor) below v in ascending order.
"""
from __future__ import annotations
import random
import numpy as np
from tinygrad.uop.ops import UOp, Ops
from tinygrad.dtype import DType
from tinygrad.helpers import cdiv, cmod, floordiv, floormod

__all__ = ["DIVS", "ARITH", "OPS", "evaluate", "evaluate_np", "bounds", "valid", "to_uop", "to_tensor", "render", "divisions", "var_ids", "generate",
           "toward", "simple_below", "compact", "tree_shrinks"]

DIVS = ("cdiv", "cmod", "floordiv", "floormod")  # also the shrink order: a later op shrinks to an earlier one
ARITH = ("add", "sub", "mul")
OPS = {"cdiv": cdiv, "cmod": cmod, "floordiv": floordiv, "floormod": floormod, "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
       "mul": lambda a, b: a * b}
_UOPS = {"cdiv": Ops.CDIV, "cmod": Ops.CMOD, "floordiv": Ops.FLOORDIV, "floormod": Ops.FLOORMOD, "add": Ops.ADD, "sub": Ops.SUB, "mul": Ops.MUL}
_SYM = {"add": "+", "sub": "-", "mul": "*", "cdiv": " cdiv ", "cmod": " cmod ", "floordiv": "//", "floormod": "%"}

def evaluate(t:list, xs:list[int]) -> int:
  """Returns: the exact value of tree `t` at the point `xs` (one integer per variable)."""
  if t[0] == "x": return xs[t[1]]
  if t[0] == "c": return t[1]
  return OPS[t[0]](evaluate(t[1], xs), t[2] if t[0] in DIVS else evaluate(t[2], xs))

def evaluate_np(t:list, xs:list[np.ndarray]) -> np.ndarray:
  """Returns: `evaluate` at many points at once: `xs` holds one array per variable, all of the expression's numpy dtype (exact
  when the tree is `valid` for that dtype: nothing wraps)."""
  if t[0] == "x": return xs[t[1]]
  if t[0] == "c": return np.full_like(xs[0], t[1])
  a = evaluate_np(t[1], xs)
  if t[0] in DIVS:
    d = np.array(t[2], dtype=a.dtype)
    q = a // d  # numpy's integer // is floor division; truncation rounds up where the signs differ and it is inexact
    if t[0] in ("cdiv", "cmod"): q = q + ((a % d != 0) & ((a < 0) != (t[2] < 0))).astype(a.dtype)
    return q if t[0] in ("cdiv", "floordiv") else a - q * d
  b = evaluate_np(t[2], xs)
  return a + b if t[0] == "add" else a - b if t[0] == "sub" else a * b

def bounds(t:list, box:list[list[int]]) -> tuple[int, int]:
  """Returns: (lo, hi) enclosing every value of `t` over `box` (exact for add/sub/mul/div, a superset for mod).
  Raises: ZeroDivisionError for a zero divisor."""
  if t[0] == "x": return box[t[1]][0], box[t[1]][1]
  if t[0] == "c": return t[1], t[1]
  a = bounds(t[1], box)
  if t[0] in ("cdiv", "floordiv"): return tuple(sorted((OPS[t[0]](a[0], t[2]), OPS[t[0]](a[1], t[2]))))  # monotone in a
  if t[0] in ("cmod", "floormod"):
    m = abs(t[2]) - 1
    if t[0] == "cmod": return (max(-m, min(a[0], 0)), min(m, max(a[1], 0)))
    return (0, m) if t[2] > 0 else (-m, 0)
  b = bounds(t[2], box)
  vals = [OPS[t[0]](p, q) for p in a for q in b]
  return min(vals), max(vals)

def valid(t:list, box:list[list[int]], dt:DType) -> bool:
  """Returns: True when every node of `t` (and every divisor) fits `dt` over `box`, so nothing wraps and nothing divides by 0."""
  if any(not (dt.min <= lo <= hi <= dt.max) for lo, hi in box): return False
  def ok(u) -> bool:
    if u[0] == "x": return True
    if u[0] == "c": return dt.min <= u[1] <= dt.max
    if u[0] in DIVS and not (u[2] != 0 and dt.min <= u[2] <= dt.max): return False
    if not ok(u[1]) or (u[0] not in DIVS and not ok(u[2])): return False
    lo, hi = bounds(u, box)
    return dt.min <= lo and hi <= dt.max
  return ok(t)

def to_uop(t:list, box:list[list[int]], dt:DType) -> UOp:
  """Returns: the UOp graph of `t` (variables `x<i>` with their box bounds, all nodes of dtype `dt`)."""
  if t[0] == "x": return UOp.variable(f"x{t[1]}", box[t[1]][0], box[t[1]][1], dtype=dt)
  if t[0] == "c": return UOp.const(t[1], dt)
  a = to_uop(t[1], box, dt)
  return a.alu(_UOPS[t[0]], a.const_like(t[2]) if t[0] in DIVS else to_uop(t[2], box, dt))

def to_tensor(t:list, xs:list):
  """Returns: the Tensor program of `t` over the Tensors `xs` (one per variable; constants stay Python ints, so tinygrad
  knows their values), with tinygrad's public division API: `//` floordiv, `%` floormod, `div(rounding_mode='trunc')` cdiv,
  `fmod` cmod."""
  if t[0] == "x": return xs[t[1]]
  if t[0] == "c": return t[1]
  a = to_tensor(t[1], xs)
  if isinstance(a, int): return evaluate([t[0], ["c", a], t[2]], [])
  if t[0] in DIVS: return {"cdiv": lambda: a.div(t[2], rounding_mode="trunc"), "cmod": lambda: a.fmod(t[2]), "floordiv": lambda: a // t[2],
                           "floormod": lambda: a % t[2]}[t[0]]()
  b = to_tensor(t[2], xs)
  return a + b if t[0] == "add" else a - b if t[0] == "sub" else a * b

def render(t:list) -> str:
  """Returns: `t` as a readable expression, e.g. `(x0*3+x1)//7`."""
  if t[0] == "x": return f"x{t[1]}"
  if t[0] == "c": return str(t[1])
  def side(u): return render(u) if u[0] in ("x", "c") else f"({render(u)})"
  return f"{side(t[1])}{_SYM[t[0]]}{t[2] if t[0] in DIVS else side(t[2])}"

def divisions(t:list) -> list[list]:
  """Returns: the division subtrees of `t`, outermost first."""
  if t[0] in ("x", "c"): return []
  return ([t] if t[0] in DIVS else []) + divisions(t[1]) + ([] if t[0] in DIVS else divisions(t[2]))

def var_ids(t:list) -> list[int]:
  """Returns: the sorted variable indices `t` uses."""
  if t[0] == "x": return [t[1]]
  if t[0] == "c": return []
  return sorted(set(var_ids(t[1]) + ([] if t[0] in DIVS else var_ids(t[2]))))

def generate(rng:random.Random, nvars:int, depth:int, pick_d, pick_c) -> list:
  """Returns: a random tree over `nvars` variables whose root is a division; `pick_d()`/`pick_c()` draw divisors/constants."""
  def num(k:int) -> list:
    r = rng.random()
    if k == 0 or r < 0.25: return ["x", rng.randrange(nvars)]
    if r < 0.45: return [rng.choice(DIVS), num(k - 1), pick_d()]
    if r < 0.75: return ["mul", num(k - 1), ["c", pick_c()]] if rng.random() < 0.7 else ["mul", num(k - 1), num(k - 1)]
    return [rng.choice(("add", "sub")), num(k - 1), num(k - 1) if rng.random() < 0.5 else ["c", pick_c()]]
  return [rng.choice(DIVS), num(depth), pick_d()]

# *** shrinking ***

def toward(v:int, target:int=0) -> list[int]:
  """Returns: bisection steps from `v` toward `target`, most aggressive first (target, halfway, 3/4 of the way, ..., v-+1)."""
  out, gap = [target], v - target
  while (gap:=gap // 2 if gap > 0 else -(-gap // 2)) != 0: out.append(v - gap)
  return [x for x in dict.fromkeys(out) if x != v]

def _key(c:int) -> tuple[int, bool]: return abs(c), c < 0

def simple_below(v:int, lo:int, hi:int, d:int=0) -> list[int]:
  """Returns: the "simple" numbers in [lo, hi] smaller than `v` (by magnitude, positive first), in that order: 0..16,
  +-(2**k-2..2**k+2), 10**k and, for a divisor d, the multiples of d next to each 2**k (where division rewrites break).
  A greedy minimiser trying them in this order lands on the smallest simple failing value whatever it started from;
  bisection (`toward`) then continues from there."""
  cands = set(range(17)) | {s * (2**k + e) for k in range(65) for e in (-2, -1, 0, 1, 2) for s in (1, -1)} | {10**k for k in range(20)}
  if d:=abs(d): cands |= {s * (2**k // d * d + e) for k in range(65) for e in (-1, 0, d - 1, d) for s in (1, -1)}
  return sorted((c for c in cands if lo <= c <= hi and _key(c) < _key(v)), key=_key)

def compact(t:list, box:list[list[int]]) -> tuple[list, list[list[int]]]:
  """Returns: (t, box) with the unused variables dropped and the rest renumbered in order of first use."""
  order: list[int] = []
  def first(u):
    if u[0] == "x":
      if u[1] not in order: order.append(u[1])
    elif u[0] != "c": first(u[1]); (None if u[0] in DIVS else first(u[2]))
  first(t)
  def ren(u): return ["x", order.index(u[1])] if u[0] == "x" else u if u[0] == "c" else [u[0], ren(u[1]), u[2] if u[0] in DIVS else ren(u[2])]
  return ren(t), [box[i] for i in order]

def tree_shrinks(t:list, box:list[list[int]]) -> list[tuple[list, list[list[int]]]]:
  """Returns: structurally smaller (tree, box) pairs, most aggressive first: a division subtree alone; a compound numerator
  of a division replaced by one fresh variable spanning its bounds; an add/sub/mul node replaced by one of its sides."""
  out: list[tuple[list, list[list[int]]]] = [(d, box) for d in divisions(t) if d is not t]
  def walk(u:list, put) -> None:
    if u[0] in ("x", "c"): return
    if u[0] in DIVS:
      if u[1][0] not in ("x", "c"):
        lo, hi = bounds(u[1], box)
        out.append((put([u[0], ["x", len(box)], u[2]]), box + [[lo, hi]]))
      walk(u[1], lambda n: put([u[0], n, u[2]]))
      return
    out.extend((put(s), box) for s in (u[1], u[2]))
    walk(u[1], lambda n: put([u[0], n, u[2]]))
    walk(u[2], lambda n: put([u[0], u[1], n]))
  walk(t, lambda n: n)
  return out
