"""The z3 oracle of the symbolic fuzzer: prove a simplified UOp graph equal to the reference semantics of a `symtree` case
over the variables' box (z3 integer theory), and its root's `vmin/vmax` sound, or return counterexample points.

Only weakint (mathematical) graphs are encoded: fixed-width nodes wrap, which the integer theory does not model.
Division semantics match tinygrad exactly (`tinygrad.helpers.floordiv/floormod/cdiv/cmod`, x//0 == 0), built from z3's
euclidean `/`: floor(a/b) = a/b for b > 0 and (-a)/(-b) for b < 0. Int and/or/xor are outside the integer theory
(except x^-1 == -x-1): such graphs raise `Z3Unsupported` and the caller falls back to sampling.
"""
from __future__ import annotations
import dataclasses
import z3
from tinygrad.uop.ops import UOp, Ops
from tinygrad.dtype import dtypes
from mockgpu.tinygrad.fuzz.errors import FuzzError
from mockgpu.tinygrad.fuzz.uopeval import nodes, is_var, var_name

__all__ = ["Z3Oracle", "Z3Result", "Z3Unsupported", "check_gated"]

class Z3Unsupported(FuzzError):
  """The expression uses an operation the z3 encoding does not cover; check it by sampling instead."""

def _fdiv(a, b): return z3.If(b == 0, 0, z3.If(b > 0, a / b, (-a) / (-b)))
def _fmod(a, b): return a - b * _fdiv(a, b)
def _cdiv(a, b):
  q = z3.If(a >= 0, a, -a) / z3.If(b >= 0, b, -b)
  return z3.If(b == 0, 0, z3.If((a >= 0) == (b > 0), q, -q))
def _cmod(a, b): return a - b * _cdiv(a, b)
def _max(a, b): return z3.If(a >= b, a, b)
def _as_int(x): return z3.If(x, 1, 0) if z3.is_bool(x) else x

_TREE = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": _fdiv, "mod": _fmod, "max": _max,
         "min": lambda a, b: z3.If(a <= b, a, b), "neg": lambda a: -a, "lt": lambda a, b: a < b, "ne": lambda a, b: a != b,
         "eq": lambda a, b: a == b, "band": z3.And, "bor": z3.Or, "bxor": z3.Xor, "not": z3.Not, "where": z3.If}

def tree_to_z3(t:list, vs:list):
  """Returns: the z3 term of a `symtree` tree. Raises: Z3Unsupported (int and/or/xor)."""
  if t[0] == "v": return vs[t[1]]
  if t[0] == "c": return z3.BoolVal(t[1]) if isinstance(t[1], bool) else z3.IntVal(t[1])
  if t[0] in ("shl", "shr"): return tree_to_z3(t[1], vs) * 2**t[2][1] if t[0] == "shl" else _fdiv(tree_to_z3(t[1], vs), z3.IntVal(2**t[2][1]))
  if t[0] not in _TREE: raise Z3Unsupported(f"op={t[0]} has no z3 integer encoding")
  return _TREE[t[0]](*[tree_to_z3(s, vs) for s in t[1:]])

def check_gated(solver:z3.Solver, case:dict, outs:list[tuple[UOp|None, UOp|None]]) -> tuple[str, list[tuple[int, dict]]]:
  """Prove rewrites of an index under its valid with `solver` (push/pop): for each (gate, value) of `outs`, the gate equals the
  case's `gate` on the whole box and the value equals the case's `expr` wherever the gate holds (None: not checked).
  Returns: (`unsat` proved / `sat` / `unknown`, [(index into outs, counterexample point)]). Raises: Z3Unsupported."""
  vs = [z3.Int(f"v{i}") for i in range(len(case["vars"]))]
  env = {f"v{i}": v for i, v in enumerate(vs)}
  ref, gate = tree_to_z3(case["expr"], vs), tree_to_z3(case["gate"], vs)
  dom = [z3.And(v >= a, v <= b) for v, (a, b) in zip(vs, case["vars"])]
  queries = [(k, gate != uop_to_z3(gu, env)) for k, (gu, _) in enumerate(outs) if gu is not None] + \
            [(k, z3.And(gate, ref != uop_to_z3(xu, env))) for k, (_, xu) in enumerate(outs) if xu is not None]
  statuses, points = [], []
  for k, q in queries:
    solver.push()
    solver.add(*dom, q)
    statuses.append(str(r:=solver.check()))
    if r == z3.sat: points.append((k, {f"v{i}": solver.model().eval(v, model_completion=True).as_long() for i, v in enumerate(vs)}))
    solver.pop()
  return ("sat" if "sat" in statuses else "unknown" if "unknown" in statuses else "unsat"), points

def uop_to_z3(root:UOp, env:dict):
  """Returns: the z3 term of a UOp graph whose variables are in `env` (name -> z3 Int). Raises: Z3Unsupported."""
  m: dict[UOp, object] = {}
  for u in nodes(root):
    if u.dtype not in (dtypes.weakint, dtypes.bool): raise Z3Unsupported(f"op={u.op} dtype={u.dtype}: fixed-width values wrap")
    s = [m[x] for x in u.src] if not is_var(u) and u.op is not Ops.CONST else []
    if is_var(u): r = env[var_name(u)]
    elif u.op is Ops.CONST: r = z3.BoolVal(bool(u.arg)) if u.dtype is dtypes.bool else z3.IntVal(int(u.arg))
    elif u.op is Ops.ADD: r = s[0] + s[1]
    elif u.op is Ops.SUB: r = s[0] - s[1]
    elif u.op is Ops.MUL: r = s[0] * s[1]
    elif u.op is Ops.NEG: r = -s[0]
    elif u.op is Ops.MAX: r = _max(s[0], s[1])
    elif u.op in (Ops.FLOORDIV, Ops.FLOORMOD, Ops.CDIV, Ops.CMOD):
      r = {Ops.FLOORDIV: _fdiv, Ops.FLOORMOD: _fmod, Ops.CDIV: _cdiv, Ops.CMOD: _cmod}[u.op](s[0], s[1])
    elif u.op is Ops.CMPLT: r = s[0] < s[1]
    elif u.op is Ops.CMPNE: r = s[0] != s[1]
    elif u.op is Ops.CMPEQ: r = s[0] == s[1]
    elif u.op is Ops.WHERE: r = z3.If(s[0], s[1], s[2])
    elif u.op in (Ops.AND, Ops.OR, Ops.XOR) and u.dtype is dtypes.bool: r = {Ops.AND: z3.And, Ops.OR: z3.Or, Ops.XOR: z3.Xor}[u.op](s[0], s[1])
    elif u.op is Ops.XOR and u.src[1].op is Ops.CONST and u.src[1].arg in (-1, u.dtype.max) and dtypes.is_int(u.dtype):
      r = (-1 if u.src[1].arg == -1 else u.dtype.max) - s[0] if u.src[1].arg == u.dtype.max and dtypes.is_unsigned(u.dtype) else -s[0] - 1
    elif u.op in (Ops.SHL, Ops.SHR) and u.src[1].op is Ops.CONST:
      r = s[0] * 2**u.src[1].arg if u.op is Ops.SHL else _fdiv(s[0], z3.IntVal(2**u.src[1].arg))
    elif u.op is Ops.CAST and u.dtype is dtypes.bool: r = _as_int(s[0]) != 0
    elif u.op is Ops.CAST and u.dtype is dtypes.weakint: r = _as_int(s[0])  # a cast to a fixed width would truncate: unsupported
    else: raise Z3Unsupported(f"op={u.op} dtype={u.dtype} has no z3 integer encoding")
    m[u] = r
  return m[root]

@dataclasses.dataclass
class Z3Result:
  """status: `unsat` (proved), `sat` (counterexamples found) or `unknown` (timeout). Points map var names to ints."""
  status: str
  mismatch_points: list[dict]
  bounds_points: list[dict]

class Z3Oracle:
  """One reusable z3 solver (push/pop per query) with a per-query timeout in milliseconds."""
  def __init__(self, timeout_ms:int=2000):
    self.solver = z3.Solver()
    self.solver.set("timeout", timeout_ms)
  def check(self, case:dict, simp:UOp) -> Z3Result:
    """Args: case: a symtree case. simp: its simplified graph. Returns: a Z3Result. Raises: Z3Unsupported."""
    vs = [z3.Int(f"v{i}") for i in range(len(case["vars"]))]
    ref, got = tree_to_z3(case["expr"], vs), uop_to_z3(simp, {f"v{i}": v for i, v in enumerate(vs)})
    if z3.is_bool(ref) != z3.is_bool(got): ref, got = _as_int(ref), _as_int(got)
    dom = [z3.And(v >= a, v <= b) for v, (a, b) in zip(vs, case["vars"])]
    statuses, out = [], []
    queries = [ref != got]
    if not z3.is_bool(got) and isinstance(simp.vmin, int): queries.append(z3.Or(got < simp.vmin, got > simp.vmax))
    for q in queries:
      self.solver.push()
      self.solver.add(*dom, q)
      r = self.solver.check()
      statuses.append(str(r))
      out.append([{f"v{i}": self.solver.model().eval(v, model_completion=True).as_long() for i, v in enumerate(vs)}] if r == z3.sat else [])
      self.solver.pop()
    status = "sat" if "sat" in statuses else "unknown" if "unknown" in statuses else "unsat"
    return Z3Result(status, out[0], out[1] if len(out) > 1 else [])
