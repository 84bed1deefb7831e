"""Evaluate scalar integer/bool UOp graphs at many points at once (numpy) and at one point exactly (tinygrad's `exec_alu`).

`eval_points` computes every node at its own dtype width with two's-complement wrap-around (numpy arrays of the node's
dtype wrap like the hardware); `weakint` (tinygrad's unbounded index type) uses int64 and flags values that leave the
exact range, so callers confirm a suspicious result with `eval_exact`, which uses tinygrad's own per-op semantics
(`exec_alu`: floor `FLOORDIV/FLOORMOD`, truncating `CDIV/CMOD`, x//0 == 0) and its `truncate` table on Python ints.
"""
from __future__ import annotations
import numpy as np
from tinygrad.uop.ops import UOp, Ops, exec_alu
from tinygrad.dtype import dtypes, DType, truncate
from mockgpu.tinygrad.fuzz.errors import FuzzError

__all__ = ["UnsupportedUOp", "is_var", "var_name", "nodes", "eval_points", "eval_exact", "np_dtype"]

class UnsupportedUOp(FuzzError):
  """The graph holds an op the evaluator does not model; extend `_NP` in uopeval.py (a fuzzer limit, not a tinygrad bug)."""
  def __init__(self, op, dtype):
    super().__init__(f"cannot evaluate op={op} dtype={dtype}: add it to mockgpu.tinygrad.fuzz.uopeval")

def is_var(u:UOp) -> bool: return u.op in (Ops.BUFFER, Ops.PARAM) and getattr(u.arg, "name", None) is not None
def var_name(u:UOp) -> str: return u.arg.name

def nodes(root:UOp) -> list[UOp]:
  """Returns: the value nodes of `root` in dependency order (variables are leaves: their shape sources are skipped)."""
  out, seen, stack = [], set(), [(root, False)]
  while stack:
    u, done = stack.pop()
    if done: out.append(u); continue
    if u in seen: continue
    seen.add(u)
    stack.append((u, True))
    if not is_var(u) and u.op is not Ops.CONST: stack.extend((s, False) for s in reversed(u.src) if s not in seen)
  return out

_NPDT = {dtypes.bool: np.bool_, dtypes.int8: np.int8, dtypes.int16: np.int16, dtypes.int32: np.int32, dtypes.int64: np.int64,
         dtypes.uint8: np.uint8, dtypes.uint16: np.uint16, dtypes.uint32: np.uint32, dtypes.uint64: np.uint64, dtypes.weakint: np.int64}
def np_dtype(dt:DType):
  """Returns: the numpy dtype that holds `dt` (weakint -> int64). Raises: UnsupportedUOp for non-integer dtypes."""
  if dt not in _NPDT: raise UnsupportedUOp("dtype", dt)
  return _NPDT[dt]

def _cdiv(a, b):  # truncating division from floor division (np.abs overflows at the dtype's minimum)
  bb = np.where(b == 0, 1, b)
  q = a // bb
  return np.where(b == 0, 0, np.where((a - q * bb != 0) & ((a < 0) != (bb < 0)), q + 1, q)).astype(a.dtype)
def _fdiv(a, b): return np.where(b == 0, 0, a // np.where(b == 0, 1, b)).astype(a.dtype)
_NP = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.NEG: np.negative, Ops.MAX: np.maximum,
       Ops.CMPLT: np.less, Ops.CMPNE: np.not_equal, Ops.CMPEQ: np.equal, Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or,
       Ops.XOR: np.bitwise_xor, Ops.SHL: np.left_shift, Ops.SHR: np.right_shift, Ops.WHERE: np.where,
       Ops.FLOORDIV: _fdiv, Ops.FLOORMOD: lambda a, b: (a - _fdiv(a, b) * b).astype(a.dtype), Ops.CDIV: _cdiv,
       Ops.CMOD: lambda a, b: (a - _cdiv(a, b) * b).astype(a.dtype), Ops.MULACC: lambda a, b, c: a * b + c}

_WEAK_LIM = 2**62
def eval_points(root:UOp, env:dict[str, np.ndarray]) -> tuple[dict[UOp, np.ndarray], bool]:
  """Evaluate every node of `root` at all points.

  Args:
    root: a scalar UOp graph of int/bool dtypes. env: variable name -> 1-D array of values (one entry per point).
  Returns:
    (node -> values, exact): `exact` is False when a weakint node got near the int64 limits (confirm with `eval_exact`).
  Raises:
    UnsupportedUOp: an op or dtype outside the modelled set. KeyError: a variable missing from `env`.
  """
  n = len(next(iter(env.values()))) if env else 1
  vals: dict[UOp, np.ndarray] = {}
  exact = True
  with np.errstate(all="ignore"):
    for u in nodes(root):
      dt = np_dtype(u.dtype)
      if is_var(u): r = np.asarray(env[var_name(u)]).astype(dt)
      elif u.op is Ops.CONST:
        c = truncate[u.dtype](u.arg) if u.dtype in truncate else u.arg
        if u.dtype is dtypes.weakint and abs(c) >= 2**63: c, exact = max(min(c, 2**63-1), -2**63), False
        r = np.full(n, c, dtype=dt)
      elif u.op is Ops.CAST: r = vals[u.src[0]].astype(dt) if u.dtype is not dtypes.bool else vals[u.src[0]] != 0
      elif u.op in _NP:
        srcs = [vals[s] for s in u.src]
        if u.op in (Ops.SHL, Ops.SHR): srcs = [srcs[0].astype(dt), srcs[1].astype(dt)]
        elif u.op is not Ops.WHERE and u.dtype is not dtypes.bool: srcs = [s.astype(dt) if s.dtype != dt else s for s in srcs]
        r = np.asarray(_NP[u.op](*srcs))
        if u.op not in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ): r = r.astype(dt)
      else: raise UnsupportedUOp(u.op, u.dtype)
      if u.dtype is dtypes.weakint and r.size and (int(r.max()) >= _WEAK_LIM or int(r.min()) <= -_WEAK_LIM): exact = False
      vals[u] = np.broadcast_to(r, (n,)) if r.shape != (n,) else r
  return vals, exact

def eval_exact(root:UOp, env:dict[str, int]) -> dict[UOp, object]:
  """Evaluate every node of `root` at one point with tinygrad's own semantics (`exec_alu`, `truncate`) on Python ints.

  Args: root: the graph. env: variable name -> value. Returns: node -> value. Raises: UnsupportedUOp (e.g. CAST to float)."""
  vals: dict[UOp, object] = {}
  for u in nodes(root):
    if is_var(u): v = env[var_name(u)]
    elif u.op is Ops.CONST: v = truncate[u.dtype](u.arg) if u.dtype in truncate else u.arg  # a CONST may hold an out-of-range arg
    elif u.op is Ops.CAST and u.dtype is dtypes.weakint: v = int(vals[u.src[0]])
    elif u.op is Ops.CAST:
      if u.dtype not in truncate: raise UnsupportedUOp(u.op, u.dtype)
      v = truncate[u.dtype](vals[u.src[0]])
    else:
      try: v = exec_alu(u.op, u.dtype, [vals[s] for s in u.src])
      except KeyError: raise UnsupportedUOp(u.op, u.dtype) from None
    vals[u] = v
  return vals
