"""z3 proof mode of the `idiv` fuzzer: prove a lowered (fast_idiv-rewritten) UOp graph equal to the exact value of its
expression tree over the whole variable box, with every node at its real width.

The encoding is linear integer arithmetic, which z3 decides quickly where bit-vector multipliers time out: each node is an
exact integer with known bounds; a node whose exact value may leave its dtype is wrapped (value - k*2**bits with a fresh
k, so wrap-around, sign changes on casts and narrowing are exact); `>>` and `&` by masks, and the divisions by constants
of both the graph and the tree (truncating and floor), become fresh quotients pinned by linear facts. Products of two
non-constant values and ops outside that set raise `Z3Unsupported` (the caller samples instead). `prove` answers `proved`
(unsat: no input differs), `refuted` with a counterexample point (sat), or `unknown` (timeout or z3 gave up), which callers
must never count as a pass.
"""
from __future__ import annotations
import z3
from tinygrad.uop.ops import UOp, Ops
from tinygrad.dtype import dtypes, DType, truncate
from mockgpu.tinygrad.fuzz.errors import FuzzError
from mockgpu.tinygrad.fuzz.uopeval import nodes, is_var, var_name
from mockgpu.tinygrad.fuzz.idivexpr import DIVS, OPS

__all__ = ["prove", "Z3Unsupported"]

class Z3Unsupported(FuzzError):
  """The lowered graph holds an op or dtype the bit-vector encoding does not model; extend `_uop` in idivz3.py."""

class _Enc:
  """Linear integer encoding of a lowered graph: each node is (z3 term, lo, hi) with exact bounds; a node whose exact value
  may leave its dtype is wrapped (value - k*2**bits, k fresh), floor divisions by constants become fresh quotients."""
  def __init__(self): self.facts, self.n = [], 0
  def fresh(self, lo:int, hi:int):
    self.n += 1
    v = z3.Int(f"k{self.n}")
    self.facts.append(z3.And(v >= lo, v <= hi))
    return v
  def wrap(self, v, lo:int, hi:int, dt:DType):
    if dt.min <= lo and hi <= dt.max: return v, lo, hi
    m = 2**dt.bitsize
    k = self.fresh((lo - dt.max) // m, (hi - dt.min) // m + 1)
    r = v - k * m
    self.facts.append(z3.And(r >= dt.min, r <= dt.max))
    return r, dt.min, dt.max
  def div(self, a, lo:int, hi:int, d:int, kind:str):
    # the quotient and remainder of a by the constant d (kind: cdiv/cmod truncate, floordiv/floormod floor)
    qs = [OPS[kind.replace("mod", "div")](x, d) for x in (lo, hi)]
    q = self.fresh(min(qs), max(qs))
    r = a - q * d
    sign_ok = z3.Or(r == 0, (r > 0) == ((a > 0) if kind in ("cdiv", "cmod") else (d > 0)))
    self.facts.append(z3.And(r < abs(d), r > -abs(d), sign_ok))
    if kind.endswith("div"): return q, min(qs), max(qs)
    return r, (-(abs(d) - 1) if lo < 0 or d < 0 and kind == "floormod" else 0), (abs(d) - 1 if hi > 0 or d > 0 and kind == "floormod" else 0)

def _const(u:UOp) -> int|None: return u.arg if u.op is Ops.CONST and isinstance(u.arg, int) else None

def _node(e:_Enc, u:UOp, s:list):
  dt, op = u.dtype, u.op
  if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
    a, b = s[0][0], s[1][0]
    return (a < b if op is Ops.CMPLT else a != b if op is Ops.CMPNE else a == b), 0, 1
  if op is Ops.WHERE: return z3.If(s[0][0], s[1][0], s[2][0]), min(s[1][1], s[2][1]), max(s[1][2], s[2][2])
  if dt is dtypes.bool:
    if op in (Ops.AND, Ops.OR, Ops.XOR): return {Ops.AND: z3.And, Ops.OR: z3.Or, Ops.XOR: z3.Xor}[op](s[0][0], s[1][0]), 0, 1
    if op is Ops.CAST: return (s[0][0] if z3.is_bool(s[0][0]) else s[0][0] != 0), 0, 1
  ints = [(z3.If(v, 1, 0), 0, 1) if z3.is_bool(v) else (v, lo, hi) for v, lo, hi in s]
  if op is Ops.CAST: return e.wrap(*ints[0], dt)
  (a, alo, ahi), c = ints[0], (_const(u.src[1]) if len(u.src) > 1 else None)
  if op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX) or op is Ops.MULACC:
    b, blo, bhi = ints[1]
    if op is Ops.MAX: return z3.If(a < b, b, a), max(alo, blo), max(ahi, bhi)
    if op is Ops.MUL and c is None and _const(u.src[0]) is None and not (alo == ahi or blo == bhi):
      raise Z3Unsupported("a product of two variables is outside linear arithmetic")
    f = {Ops.ADD: lambda x, y: x + y, Ops.SUB: lambda x, y: x - y, Ops.MUL: lambda x, y: x * y, Ops.MULACC: lambda x, y: x * y}[op]
    v, cands = f(a, b), [f(x, y) for x in (alo, ahi) for y in (blo, bhi)]
    if op is Ops.MULACC: v, cands = v + ints[2][0], [x + y for x in cands for y in (ints[2][1], ints[2][2])]
    return e.wrap(v, min(cands), max(cands), dt)
  if op is Ops.NEG: return e.wrap(-a, -ahi, -alo, dt)
  if c is None: raise Z3Unsupported(f"op={op} with a non-constant operand in the lowered graph")
  if op is Ops.SHL: return e.wrap(a * 2**c, alo * 2**c, ahi * 2**c, dt)
  if op is Ops.SHR: return e.div(a, alo, ahi, 2**c, "floordiv") if c > 0 else (a, alo, ahi)  # values are in range: >> is floor
  if op is Ops.AND and c >= 0 and (c + 1) & c == 0: return e.div(a, alo, ahi, c + 1, "floormod")
  kind = {Ops.CDIV: "cdiv", Ops.CMOD: "cmod", Ops.FLOORDIV: "floordiv", Ops.FLOORMOD: "floormod"}.get(op)
  if kind is None or c == 0: raise Z3Unsupported(f"op={op} (constant {c}) has no linear encoding in idivz3")
  return e.div(a, alo, ahi, c, kind)

def _graph(e:_Enc, root:UOp, xs:dict[str, tuple]):
  v: dict[UOp, tuple] = {}
  for u in nodes(root):
    if u.op is Ops.CONST:
      c = u.arg if u.dtype is dtypes.weakint else truncate[u.dtype](u.arg) if u.dtype in truncate else u.arg
      v[u] = (z3.BoolVal(bool(c)), 0, 1) if u.dtype is dtypes.bool else (z3.IntVal(c), c, c)
    elif u.dtype not in dtypes.ints and u.dtype is not dtypes.bool or u.dtype is dtypes.weakint:
      raise Z3Unsupported(f"dtype={u.dtype} op={u.op} in the lowered graph")
    elif is_var(u): v[u] = xs[var_name(u)]
    else: v[u] = _node(e, u, [v[s] for s in u.src])
  return v[root]

def _tree(e:_Enc, t:list, xs:list):
  if t[0] == "x": return xs[t[1]]
  if t[0] == "c": return z3.IntVal(t[1]), t[1], t[1]
  a, alo, ahi = _tree(e, t[1], xs)
  if t[0] in DIVS: return e.div(a, alo, ahi, t[2], t[0])
  b, blo, bhi = _tree(e, t[2], xs)
  f = OPS[t[0]]
  cands = [f(x, y) for x in (alo, ahi) for y in (blo, bhi)]
  return f(a, b), min(cands), max(cands)

def prove(low:UOp, tree:list, box:list[list[int]], dt:DType, timeout_ms:int=1000) -> tuple[str, list[int]|None]:
  """Prove `low` (the lowered graph of `tree`) equal to the exact value of `tree` for every point of `box`.

  Args:
    low: the lowered graph (variables `x<i>`). tree, box: the expression and its variables' [lo, hi] (valid for `dt`).
    dt: the expression's dtype. timeout_ms: z3's budget; running out gives `unknown`.
  Returns:
    ("proved", None), ("refuted", [x0, x1, ...]) with a point where they differ, or ("unknown", None).
  Raises:
    Z3Unsupported: `low` holds an op or dtype outside the encoding.
  """
  e = _Enc()
  xs = [(z3.Int(f"x{i}"), lo, hi) for i, (lo, hi) in enumerate(box)]
  got = _graph(e, low, {f"x{i}": x for i, x in enumerate(xs)})[0]
  if z3.is_bool(got): got = z3.If(got, 1, 0)
  want = _tree(e, tree, xs)[0]
  s = z3.SolverFor("QF_LIA")  # z3's linear-integer configuration: about twice as fast here as the default solver
  s.set("timeout", timeout_ms)
  s.add(*(z3.And(x >= lo, x <= hi) for x, lo, hi in xs), *e.facts, got != want)
  r = s.check()
  if r == z3.unsat: return "proved", None
  if r != z3.sat: return "unknown", None
  m = s.model()
  return "refuted", [m.eval(x, model_completion=True).as_long() for x, _, _ in xs]
