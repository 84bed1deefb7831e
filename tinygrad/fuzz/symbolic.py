"""`symbolic` fuzzer: random integer expressions built as tinygrad UOps, simplified with tinygrad's own rewrite
(`UOp.simplify`, i.e. `graph_rewrite(u, tinygrad.uop.symbolic.symbolic)`), judged by three oracles:

* equivalence: the simplified graph must equal the reference semantics of the tree (floor `//` and `%`, as tinygrad's
  FLOORDIV/FLOORMOD) at every point of the variables' box. Small boxes (<= `brute_max` points) are evaluated exhaustively
  with numpy at each node's dtype width; larger ones are proved with z3 (integer theory; `//`/`%` encoded with floor
  semantics from z3's euclidean division); graphs z3's integer theory cannot express (int and/or/xor) fall back to sampling.
* bounds soundness: every node's `vmin/vmax` (simplified and original graph) must contain every value it takes (all nodes
  on brute-forced boxes, the root under z3).
* no exception while building or simplifying.

Every counterexample is confirmed at its point with tinygrad's own op semantics (`exec_alu`) before it is reported.
Cases are `symtree` cases (JSON). Failure classes: `mismatch`, `bounds`, `build-mismatch` (the unsimplified UOp graph
already differs from the tree), `exception:<where>:<Type>`.
"""
from __future__ import annotations
import collections, json, random, zlib
from typing import Iterator
import numpy as np
from tinygrad.uop.ops import UOp, Ops, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure
from mockgpu.tinygrad.fuzz import symtree
from mockgpu.tinygrad.fuzz.uopeval import nodes, eval_points, eval_exact, UnsupportedUOp
from mockgpu.tinygrad.fuzz.z3oracle import Z3Oracle, Z3Unsupported

__all__ = ["SymbolicFuzzer", "build"]

DTYPES = {"weakint": dtypes.weakint, "int32": dtypes.int32, "uint32": dtypes.uint32}

_NP = {"MAX": np.maximum, "MIN": np.minimum, "WHERE": np.where, "NOT": np.logical_not}
_PY = {"MAX": max, "MIN": min, "WHERE": lambda c, a, b: a if c else b, "NOT": lambda a: not a}

def build(case:dict) -> tuple[UOp, list[UOp]]:
  """Build the case's expression with tinygrad's UOp operators. Returns: (expression, variables v0..vn)."""
  dt = DTYPES[case["dtype"]]
  vs = [UOp.variable(f"v{i}", lo, hi, dtype=dt) for i, (lo, hi) in enumerate(case["vars"])]
  ns = {f"v{i}": v for i, v in enumerate(vs)} | {"C": lambda x: UOp.const(x, dtypes.bool if isinstance(x, bool) else dt)}
  return eval(symtree.uop_src(case["expr"]), ns), vs  # pylint: disable=eval-used  # our own generated source

def _point_str(env:dict) -> str: return ", ".join(f"{k}={v}" for k, v in sorted(env.items()))

class SymbolicFuzzer(Fuzzer):
  """Fuzz tinygrad's symbolic simplifier.

  Args:
    extra_rules: a PatternMatcher tried before tinygrad's own rules (test-only bug injection; not saved for replay).
    oracle: `auto` (brute force when the box has <= brute_max points, else z3), `z3` (always z3) or `brute` (sampling
      on large boxes).
    brute_max: the largest box evaluated exhaustively. max_depth: tree depth. case_dtypes: allowed case dtypes (None: all).
    z3_timeout_ms: per-query z3 timeout (an `unknown` answer counts as a pass and is tallied in `stats`).
  """
  name = "symbolic"
  def __init__(self, extra_rules:PatternMatcher|None=None, oracle:str="auto", brute_max:int=1 << 16, max_depth:int=4,
               case_dtypes:list[str]|None=None, z3_timeout_ms:int=2000):
    if oracle not in ("auto", "z3", "brute"): raise ValueError(f"oracle={oracle!r}: use auto, z3 or brute")
    self.extra_rules, self.oracle, self.brute_max, self.max_depth = extra_rules, oracle, brute_max, max_depth
    self.case_dtypes, self.z3_timeout_ms = case_dtypes, z3_timeout_ms
    self.counts: collections.Counter = collections.Counter()
    self._z3: Z3Oracle|None = None
  def options(self) -> dict:
    return {"oracle": self.oracle, "brute_max": self.brute_max, "max_depth": self.max_depth, "case_dtypes": self.case_dtypes,
            "z3_timeout_ms": self.z3_timeout_ms}
  def stats(self) -> dict: return dict(self.counts)

  def generate(self, rng:random.Random) -> dict:
    return symtree.generate(rng, rng.choice(self.case_dtypes) if self.case_dtypes else None, self.max_depth)
  def shrink(self, case:dict) -> Iterator[dict]: return symtree.shrink(case)
  def describe(self, case:dict) -> str: return f"{case['dtype']} {case['vars']} {symtree.py_src(case['expr'])}"

  def simplify(self, u:UOp) -> UOp:
    """Returns: `u` simplified by tinygrad (with the injected `extra_rules` first, if any)."""
    if self.extra_rules is None: return u.simplify()
    from tinygrad.uop.symbolic import symbolic
    return graph_rewrite(u, self.extra_rules + symbolic, name="fuzz simplify")

  def check(self, case:dict) -> Failure|None:
    f = self.find(case)
    return None if f is None else f[0]

  def find(self, case:dict) -> tuple[Failure, dict]|None:
    """Judge a case. Returns: None, or (failure, the point {var name: value} where it shows; empty for exceptions)."""
    try: symtree.validate(case)
    except symtree.Invalid:
      self.counts["invalid"] += 1
      return None
    try: orig, _ = build(case)
    except Exception as e: return Failure(f"exception:build:{type(e).__name__}", f"building {symtree.uop_src(case['expr'])}: {e}"), {}
    try: simp = self.simplify(orig)
    except Exception as e: return Failure(f"exception:simplify:{type(e).__name__}", f"simplifying {orig.render(simplify=False)}: {e}"), {}
    use_brute = self.oracle == "brute" or (self.oracle == "auto" and symtree.domain_size(case) <= self.brute_max)
    if not use_brute:
      try: return self._z3_check(case, orig, simp)
      except Z3Unsupported: self.counts["z3-unsupported"] += 1
    return self._brute_check(case, orig, simp, exhaustive=symtree.domain_size(case) <= self.brute_max)

  # *** oracles ***

  def _points(self, case:dict, exhaustive:bool) -> dict[str, np.ndarray]:
    vs = case["vars"]
    if not vs: return {}
    if exhaustive:
      grids = np.meshgrid(*[np.arange(a, b + 1, dtype=np.int64) for a, b in vs], indexing="ij")
      return {f"v{i}": g.reshape(-1) for i, g in enumerate(grids)}
    rng = np.random.default_rng(zlib.crc32(json.dumps(case, sort_keys=True).encode()))
    n = self.brute_max
    cols = []
    for a, b in vs:
      edge = np.array(sorted({a, b, 0 if a <= 0 <= b else a, min(a + 1, b), max(b - 1, a)}), dtype=np.int64)
      cols.append(np.concatenate([np.resize(edge, n // 4), rng.integers(a, b + 1, n - n // 4, dtype=np.int64)]))
      rng.shuffle(cols[-1])
    return {f"v{i}": c for i, c in enumerate(cols)}

  def _ref_exact(self, case:dict, env:dict) -> object:
    return eval(symtree.py_src(case["expr"]), dict(_PY, **env))  # pylint: disable=eval-used

  def _brute_check(self, case, orig, simp, exhaustive:bool) -> tuple[Failure, dict]|None:
    self.counts["brute" if exhaustive else "sampled"] += 1
    env = self._points(case, exhaustive)
    n = len(next(iter(env.values()))) if env else 1
    with np.errstate(all="ignore"): ref = np.broadcast_to(eval(symtree.py_src(case["expr"]), dict(_NP, **env)), n)  # pylint: disable=eval-used
    try:
      sv, _ = eval_points(simp, env)
      ov, _ = eval_points(orig, env)
    except UnsupportedUOp as e: return Failure("exception:eval:UnsupportedUOp", str(e)), {}
    for root, vals, cls in ((simp, sv, "mismatch"), (orig, ov, "build-mismatch")):
      for j in np.nonzero(vals[root] != ref)[0][:8]:
        if (f:=self._confirm_value(case, root, {k: int(v[j]) for k, v in env.items()}, cls)) is not None: return f
    for root, vals in ((simp, sv), (orig, ov)):
      for u in nodes(root):
        if u.op is Ops.CONST: continue
        bad = np.nonzero((vals[u] < u.vmin) | (vals[u] > u.vmax))[0] if not isinstance(u.vmin, float) else []
        for j in bad[:4]:
          if (f:=self._confirm_bounds(case, root, u, {k: int(v[j]) for k, v in env.items()})) is not None: return f
    return None

  def _confirm_value(self, case, root, env, cls) -> tuple[Failure, dict]|None:
    want, got = self._ref_exact(case, env), eval_exact(root, env)[root]
    if want == got: return None
    return Failure(cls, f"at {_point_str(env)}: expected {want!r}, {'simplified' if cls == 'mismatch' else 'built'} graph gives {got!r}\n"
                        f"  expr       {symtree.py_src(case['expr'])}  ({case['dtype']}, ranges {case['vars']})\n"
                        f"  simplified {root.render(simplify=False)}"), env

  def _confirm_bounds(self, case, root, u, env) -> tuple[Failure, dict]|None:
    v = eval_exact(root, env)[u]
    if u.vmin <= v <= u.vmax: return None
    return Failure("bounds", f"at {_point_str(env)}: node {u.op.name} {u.render(simplify=False)} has vmin={u.vmin} vmax={u.vmax} but takes {v!r}\n"
                             f"  expr       {symtree.py_src(case['expr'])}  ({case['dtype']}, ranges {case['vars']})\n"
                             f"  graph      {root.render(simplify=False)}"), env

  def _z3_check(self, case, orig, simp) -> tuple[Failure, dict]|None:
    if self._z3 is None: self._z3 = Z3Oracle(self.z3_timeout_ms)
    res = self._z3.check(case, simp)
    self.counts[f"z3-{res.status}"] += 1
    for env in res.mismatch_points:
      if (f:=self._confirm_value(case, simp, env, "mismatch")) is not None: return f
      self.counts["z3-unconfirmed"] += 1
    for env in res.bounds_points:
      if (f:=self._confirm_bounds(case, simp, simp, env)) is not None: return f
      self.counts["z3-unconfirmed"] += 1
    return None

  def repro(self, case:dict) -> str:
    f = self.find(case)
    env = f[1] if f else {}
    ranges = ", ".join(f"v{i}=({a}, {b})" for i, (a, b) in enumerate(case["vars"]))
    note = "\nNOTE: found with test-only injected rewrite rules, which this script does not apply." if self.extra_rules is not None else ""
    names = [f"v{i}" for i in range(len(case["vars"]))]
    return _REPRO.format(note=note, cls=f[0].cls if f else "none (the case passes now)", dtype=case["dtype"], ranges=ranges,
                         nvars=len(names), unpack=f"{', '.join(names)}, = V" if names else "", vars=", ".join(names), lohi=case["vars"],
                         uop=symtree.uop_src(case["expr"]), ref=symtree.py_src(case["expr"]), point=env)

_REPRO = '''"""mockgpu fuzz symbolic: minimised failure [{cls}]. Needs only tinygrad 0.14.0. Exits 1 while it reproduces.{note}
Variables: {ranges} ({dtype}). The reference uses floor // and % (tinygrad's FLOORDIV/FLOORMOD)."""
import itertools, sys
from tinygrad.uop.ops import UOp, Ops, exec_alu
from tinygrad.dtype import dtypes, truncate
DT = dtypes.{dtype}
RANGES = {lohi}
V = [UOp.variable(f"v{{i}}", lo, hi, dtype=DT) for i, (lo, hi) in enumerate(RANGES)]
{unpack}
C = lambda x: UOp.const(x, dtypes.bool if isinstance(x, bool) else DT)
MAX, MIN, WHERE, NOT = max, min, (lambda c, a, b: a if c else b), (lambda a: not a)
expr = {uop}
def ref({vars}): return {ref}
def evaluate(root, env):  # tinygrad's own op semantics for every node
  vals = {{}}
  def ev(u):
    if u in vals: return vals[u]
    if u.op in (Ops.BUFFER, Ops.PARAM): v = env[u.arg.name]
    elif u.op is Ops.CONST: v = u.arg
    elif u.op is Ops.CAST: v = truncate[u.dtype](ev(u.src[0]))
    else: v = exec_alu(u.op, u.dtype, [ev(s) for s in u.src])
    vals[u] = v
    return v
  ev(root)
  return vals
simplified = expr.simplify()
print("expr:      ", expr.render(simplify=False))
print("simplified:", simplified.render(simplify=False))
POINT = {point}  # where the fuzzer saw it; empty: scan the whole box
points = [POINT] if POINT else [dict(zip([f"v{{i}}" for i in range({nvars})], p)) for p in itertools.product(*[range(a, b + 1) for a, b in RANGES])]
bad = 0
for env in points:
  want = ref(**env)
  for name, root in (("simplified", simplified), ("unsimplified", expr)):
    vals = evaluate(root, env)
    if vals[root] != want: print(f"MISMATCH at {{env}}: expected {{want}}, {{name}} graph gives {{vals[root]}}"); bad += 1
    for u, v in vals.items():
      if u.op is not Ops.CONST and not (u.vmin <= v <= u.vmax):
        print(f"BOUNDS at {{env}}: {{u.render(simplify=False)}} in [{{u.vmin}}, {{u.vmax}}] takes {{v}}"); bad += 1
  if bad: break
sys.exit(1 if bad else 0)
'''
