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
from mockgpu.tinygrad.fuzz.errors import FuzzError, Inconclusive
from mockgpu.tinygrad.fuzz.uopeval import nodes, is_var, var_name

__all__ = ["Z3Oracle", "Z3Result", "Z3Unsupported", "check_gated", "check_bv", "tree_to_bv", "uop_to_bv"]

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

# *** bit-vectors: fixed-width dtypes with wrap-around (symtree's reference semantics) ***

_BV_DT = {d: (d.itemsize * 8, d in dtypes.sints) for d in dtypes.ints}
def _bvc(v:int, bits:int): return z3.BitVecVal(v % (1 << bits), bits)
def _bv_ops(op:str, a, b, signed:bool, bits:int, ub:list):
  """One fixed-width op on bit-vectors; appends to `ub` the condition under which a signed op overflows (undefined)."""
  mn = _bvc(-(1 << (bits - 1)), bits)
  if op == "add":
    if signed: ub.append(z3.Not(z3.And(z3.BVAddNoOverflow(a, b, True), z3.BVAddNoUnderflow(a, b))))
    return a + b
  if op == "sub":
    if signed: ub.append(z3.Not(z3.And(z3.BVSubNoOverflow(a, b), z3.BVSubNoUnderflow(a, b, True))))
    return a - b
  if op == "mul":
    if signed: ub.append(z3.Not(z3.And(z3.BVMulNoOverflow(a, b, True), z3.BVMulNoUnderflow(a, b))))
    return a * b
  if op == "neg":
    if signed: ub.append(a == mn)
    return -a
  if op in ("div", "mod", "cdiv", "cmod") and signed: ub.append(z3.And(a == mn, b == _bvc(-1, bits)))
  if op == "div":
    if not signed: return z3.UDiv(a, b)
    q = a / b
    return z3.If(z3.And(z3.SRem(a, b) != 0, (a < 0) != (b < 0)), q - 1, q)
  if op == "mod": return a % b if signed else z3.URem(a, b)  # z3py: % on bit-vectors is bvsmod (sign of the divisor)
  if op == "cdiv": return a / b if signed else z3.UDiv(a, b)
  if op == "cmod": return z3.SRem(a, b) if signed else z3.URem(a, b)
  if op in ("max", "min"): return z3.If((a > b if signed else z3.UGT(a, b)) == (op == "max"), a, b)
  if op == "shl":
    if signed: ub.append((a << b) >> b != a)
    return a << b
  if op == "shr": return a >> b if signed else z3.LShR(a, b)
  if op in ("and", "or", "xor"): return {"and": a & b, "or": a | b, "xor": a ^ b}[op]
  if op in ("lt", "ne", "eq"): return {"lt": a < b if signed else z3.ULT(a, b), "ne": a != b, "eq": a == b}[op]
  raise Z3Unsupported(f"op={op} has no bit-vector encoding")

def _bv_cast(x, src:tuple[int, bool]|None, dst:tuple[int, bool]|None):
  """Convert between (bits, signed) widths; None is bool."""
  if dst is None: return x if src is None else x != 0
  if src is None: return z3.If(x, _bvc(1, dst[0]), _bvc(0, dst[0]))
  if dst[0] < src[0]: return z3.Extract(dst[0] - 1, 0, x)
  if dst[0] > src[0]: return (z3.SignExt if src[1] else z3.ZeroExt)(dst[0] - src[0], x)
  return x

_TREE_OPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "mod": "mod", "cdiv": "cdiv", "cmod": "cmod", "max": "max", "min": "min",
             "and": "and", "or": "or", "xor": "xor", "shl": "shl", "shr": "shr", "lt": "lt", "ne": "ne", "eq": "eq"}
def tree_to_bv(t:list, vs:list, dt:str, ub:list):
  """Returns: the bit-vector term of a fixed-width `symtree` tree (case dtype `dt`); `ub` collects signed-overflow conditions.
  Raises: Z3Unsupported (weakint nodes)."""
  from mockgpu.tinygrad.fuzz.symtree import dtype_of
  def w(name): return None if name == "bool" else _BV_DT[getattr(dtypes, name)] if name != "weakint" else _unsup(name)
  op, ndt = t[0], dtype_of(t, dt)
  if op == "v": return vs[t[1]]
  if op == "c": return z3.BoolVal(t[1]) if isinstance(t[1], bool) else _bvc(t[1], w(ndt)[0])
  if op == "cast": return _bv_cast(tree_to_bv(t[2], vs, dt, ub), w(dtype_of(t[2], dt)), w(t[1]))
  s = [tree_to_bv(x, vs, dt, ub) for x in t[1:]]
  if op in ("band", "bor", "bxor", "not"): return {"band": z3.And, "bor": z3.Or, "bxor": z3.Xor, "not": z3.Not}[op](*s)
  if op == "where": return z3.If(*s)
  bits, signed = w(dtype_of(t[1], dt)) or (1, False)
  if op in ("lt", "ne", "eq") and z3.is_bool(s[0]): return {"lt": z3.And(z3.Not(s[0]), s[1]), "ne": s[0] != s[1], "eq": s[0] == s[1]}[op]
  return _bv_ops(_TREE_OPS.get(op, op), s[0], s[-1], signed, bits, ub)

def _unsup(name): raise Z3Unsupported(f"dtype {name} has no bit-vector encoding")

_UOP_OPS = {Ops.ADD: "add", Ops.SUB: "sub", Ops.MUL: "mul", Ops.NEG: "neg", Ops.FLOORDIV: "div", Ops.FLOORMOD: "mod", Ops.CDIV: "cdiv",
            Ops.CMOD: "cmod", Ops.MAX: "max", Ops.AND: "and", Ops.OR: "or", Ops.XOR: "xor", Ops.SHL: "shl", Ops.SHR: "shr",
            Ops.CMPLT: "lt", Ops.CMPNE: "ne", Ops.CMPEQ: "eq"}
def uop_to_bv(root:UOp, env:dict):
  """Returns: the bit-vector term of a fixed-width UOp graph (tinygrad's semantics: every result truncated to its dtype).
  Raises: Z3Unsupported (weakint nodes other than constants, ops without an encoding)."""
  m: dict[UOp, object] = {}
  for u in nodes(root):
    if u.dtype is dtypes.weakint and u.op is not Ops.CONST: raise Z3Unsupported(f"op={u.op} dtype=weakint: no bit-vector encoding")
    w = None if u.dtype is dtypes.bool else _BV_DT.get(u.dtype)
    if is_var(u): r = env[var_name(u)]
    elif u.op is Ops.CONST: r = z3.BoolVal(bool(u.arg)) if u.dtype is dtypes.bool else int(u.arg) if w is None else _bvc(int(u.arg), w[0])
    elif u.op is Ops.CAST:
      s = u.src[0]
      r = _bv_cast(m[s], None if s.dtype is dtypes.bool else _BV_DT.get(s.dtype) or _unsup(s.dtype), w)
    elif u.op is Ops.WHERE: r = z3.If(m[u.src[0]], *[_bvc(m[x], w[0]) if isinstance(m[x], int) else m[x] for x in u.src[1:]])
    elif u.op in _UOP_OPS:
      sw = None if u.src[0].dtype is dtypes.bool else _BV_DT.get(u.src[0].dtype, w)  # an operand's width (a weak const takes the node's)
      if sw is None and (u.src[0].dtype is dtypes.bool):
        a, b = m[u.src[0]], m[u.src[1]]
        if u.op is Ops.NEG: raise Z3Unsupported("bool NEG")
        r = {Ops.AND: z3.And, Ops.OR: z3.Or, Ops.XOR: z3.Xor, Ops.CMPNE: lambda x, y: x != y, Ops.CMPEQ: lambda x, y: x == y,
             Ops.CMPLT: lambda x, y: z3.And(z3.Not(x), y), Ops.MUL: z3.And, Ops.ADD: z3.Or, Ops.MAX: z3.Or}[u.op](a, b)
      else:
        if sw is None: raise Z3Unsupported(f"op={u.op} on {u.src[0].dtype}")
        s = [_bvc(m[x], sw[0]) if isinstance(m[x], int) else m[x] for x in u.src]
        if any(z3.is_bool(x) or x.size() != sw[0] for x in s): raise Z3Unsupported(f"op={u.op} on operands of different widths")
        r = _bv_ops(_UOP_OPS[u.op], s[0], s[-1], sw[1], sw[0], [])
    else: raise Z3Unsupported(f"op={u.op} dtype={u.dtype} has no bit-vector encoding")
    m[u] = r
  return m[root]

def check_bv(solver:z3.Solver, case:dict, simp:UOp, signed_wrap:bool=False) -> tuple[str, list[dict]]:
  """Prove a fixed-width case's simplified graph equal to its reference (wrap-around; points where the reference overflows a
  signed value are undefined unless `signed_wrap`) over the box. Returns: (`unsat`/`sat`/`unknown`, counterexample points).
  Raises: Z3Unsupported."""
  bits, signed = _BV_DT[getattr(dtypes, case["dtype"])]
  vs = [z3.BitVec(f"v{i}", bits) for i in range(len(case["vars"]))]
  ub: list = []
  try: ref, got = tree_to_bv(case["expr"], vs, case["dtype"], ub), uop_to_bv(simp, {f"v{i}": v for i, v in enumerate(vs)})
  except z3.Z3Exception as e: raise Z3Unsupported(f"no bit-vector encoding: {e}") from None
  if isinstance(got, int) or z3.is_bool(ref) != z3.is_bool(got): raise Z3Unsupported("the simplified graph changed its dtype")
  if ref.sort() != got.sort(): raise Z3Unsupported(f"the simplified graph has sort {got.sort()}, the expression {ref.sort()}")
  le = (lambda x, y: x <= y) if signed else z3.ULE
  dom = [z3.And(le(_bvc(a, bits), v), le(v, _bvc(b, bits))) for v, (a, b) in zip(vs, case["vars"])]
  solver.push()
  solver.add(*dom, ref != got, *([] if signed_wrap or not ub else [z3.Not(z3.Or(*ub))]))
  r = solver.check()
  pts = [{f"v{i}": _val(solver.model().eval(v, model_completion=True), signed) for i, v in enumerate(vs)}] if r == z3.sat else []
  solver.pop()
  return str(r), pts

def _val(x, signed:bool) -> int: return x.as_signed_long() if signed else x.as_long()

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
  """status: `unsat` (proved) or `sat` (counterexamples found; `Z3Oracle.check` raises Inconclusive for `unknown`). Points map var
  names to ints."""
  status: str
  mismatch_points: list[dict]
  bounds_points: list[dict]

class Z3Oracle:
  """One reusable z3 solver (push/pop per query) with a per-query timeout in milliseconds."""
  def __init__(self, timeout_ms:int=2000):
    self.solver = z3.Solver()
    self.solver.set("timeout", timeout_ms)
    self.timeout_ms = timeout_ms
  def check(self, case:dict, simp:UOp) -> Z3Result:
    """Args: case: a symtree case. simp: its simplified graph. Returns: a Z3Result.
    Raises: Z3Unsupported. Inconclusive: z3 answered `unknown` (timeout) and found no counterexample: never a pass."""
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
    if status == "unknown": raise Inconclusive(f"z3 answered unknown (timeout={self.timeout_ms}ms) on {case['dtype']} {case['vars']}")
    return Z3Result(status, out[0], out[1] if len(out) > 1 else [])
