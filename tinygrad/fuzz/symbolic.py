"""`symbolic` fuzzer: random integer expressions built as tinygrad UOps, simplified with tinygrad's own rewrite
(`UOp.simplify`, i.e. `graph_rewrite(u, tinygrad.uop.symbolic.symbolic)`), judged by three oracles:

* equivalence: the simplified graph must equal the reference semantics of the tree (`symtree`: weakint is mathematical,
  fixed-width ints wrap, a signed overflow is undefined and not judged, casts truncate) at every point of the variables'
  box. Small boxes (<= `brute_max` points) are evaluated exhaustively with numpy; larger weakint ones are proved with z3
  (integer theory), larger fixed-width ones are sampled (and optionally proved with z3 bit-vectors, `bv_timeout_ms`).
* bounds soundness: every node's `vmin/vmax` (simplified and original graph) must contain every value it takes, where the
  reference does not wrap and the node's range lies in its dtype (all nodes on brute-forced boxes, the root under z3).
* no exception while building or simplifying.

Weakint cases may carry a valid (`gate`): then tinygrad's `simplify_valid`, `uop_given_valid` and codegen's `sym` on
`expr.valid(gate)` are judged under the gate instead. Every counterexample is confirmed at its point with exact evaluation
(tinygrad's `exec_alu` for the graph, Python ints for the reference) before it is reported. Failure classes: `mismatch`,
`wrap-mismatch`, `wrap-bounds` (a wrap-around mismatch that tinygrad's rules get right once its bounds account for
wrap-around: the exact-integer bounds are the cause), `cast-mismatch`, `unwrapped-const`, `dtype-changed`, `bounds`,
`cast-bounds`, `build-mismatch` (the unsimplified UOp graph already differs from the tree), `valid-mismatch`, `valid-gate-changed`, `exception:<where>:<Type>`
(docs/fuzz.md).
"""
from __future__ import annotations
import collections, contextlib, json, random, zlib
from typing import Iterator
import numpy as np
from tinygrad.uop.ops import UOp, Ops, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes, truncate, Invalid
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure
from mockgpu.tinygrad.fuzz import symtree
from mockgpu.tinygrad.fuzz.uopeval import nodes, eval_points, eval_exact, UnsupportedUOp
from mockgpu.tinygrad.fuzz.z3oracle import Z3Oracle, Z3Unsupported, check_gated, check_bv

__all__ = ["SymbolicFuzzer", "build", "wrap_aware_bounds"]

DTYPES = {n: getattr(dtypes, n) for n in symtree.DTYPES}

def build(case:dict, key:str="expr") -> tuple[UOp, list[UOp]]:
  """Build the case's expression (or its `gate`) with tinygrad's UOp operators. Returns: (expression, variables v0..vn)."""
  dt = DTYPES[case["dtype"]]
  vs = [UOp.variable(f"v{i}", lo, hi, dtype=dt) for i, (lo, hi) in enumerate(case["vars"])]
  ns = {f"v{i}": v for i, v in enumerate(vs)} | {"Ops": Ops, "dtypes": dtypes,
        "C": lambda x, d=None: UOp.const(x, dtypes.bool if isinstance(x, bool) else DTYPES[d] if d else dt)}
  return eval(symtree.uop_src(case[key]), ns), vs  # pylint: disable=eval-used  # our own generated source

@contextlib.contextmanager
def wrap_aware_bounds():
  """Within the block, tinygrad's `UOp.vmin/vmax` are sound under wrap-around: a fixed-width int node whose exact-integer
  range leaves its dtype, or an int CAST whose source range leaves the target dtype, gets the dtype's full range (a CONST
  its truncated value). This is the fix of the known bounds findings, applied in-process so a campaign judges the rewrite
  rules themselves under wrap-around. The patched bounds are cached under their own attribute: stock bounds are untouched."""
  orig = UOp.__dict__["_min_max"]
  def min_max(u:UOp):
    if (r:=u.__dict__.get("_fuzz_wrap_min_max")) is not None: return r
    if u.op is Ops.CONST and u.dtype in dtypes.ints and isinstance(u.arg, int): r = (v:=truncate[u.dtype](u.arg), v)
    else:
      lo, hi = r = orig.func(u)
      dt = u.dtype
      if dt in dtypes.ints and isinstance(lo, int) and (not dt.min <= lo <= hi <= dt.max or (u.op is Ops.CAST and (s:=u.src[0]).dtype in
          dtypes.ints + (dtypes.weakint, dtypes.bool) and not dt.min <= s.vmin <= s.vmax <= dt.max)): r = (dt.min, dt.max)
    u.__dict__["_fuzz_wrap_min_max"] = r
    return r
  UOp._min_max = property(min_max)  # a data descriptor: wins over stock values cached in the instance dict
  try: yield
  finally: UOp._min_max = orig

def _mismatch_class(case:dict, root:UOp, flags:set) -> str:
  """The failure class of a simplified graph that differs from the reference at a point with reference `flags`."""
  if root.dtype is not DTYPES[symtree.dtype_of(case["expr"], case["dtype"])]: return "dtype-changed"
  if any(u.op is Ops.CONST and u.dtype in dtypes.ints and isinstance(u.arg, int) and not u.dtype.min <= u.arg <= u.dtype.max for u in nodes(root)):
    return "unwrapped-const"
  return "cast-mismatch" if "cast-wrap" in flags else "wrap-mismatch" if "wrap" in flags else "mismatch"

def _in_dtype(u:UOp) -> bool: return u.dtype is dtypes.weakint or u.dtype.min <= u.vmin and u.vmax <= u.dtype.max
def _point_str(env:dict) -> str: return ", ".join(f"{k}={v}" for k, v in sorted(env.items()))

class SymbolicFuzzer(Fuzzer):
  """Fuzz tinygrad's symbolic simplifier.

  Args:
    extra_rules: a PatternMatcher tried before tinygrad's own rules (test-only bug injection; not saved for replay).
    oracle: `auto` (brute force when the box has <= brute_max points, else z3), `z3` (always z3) or `brute` (sampling
      on large boxes).
    brute_max: the largest box evaluated exhaustively. max_depth: tree depth. case_dtypes: allowed case dtypes (None: all).
    z3_timeout_ms: per-query z3 timeout (an `unknown` answer counts as a pass and is tallied in `stats`).
    signed_wrap: judge points where a signed value overflows with two's complement (default: undefined, skipped).
    casts: generate casts. samples: points of a sampled (large, fixed-width) box. ops: allowed int ops (None: all).
    wrap_bounds: simplify with wrap-aware vmin/vmax (`wrap_aware_bounds`). gate_rate: share of weakint cases with a valid.
    bv_timeout_ms: > 0 proves large fixed-width boxes with z3 bit-vectors too (per query; costs ~1/3 of the rate), 0: off.
  """
  name = "symbolic"
  def __init__(self, extra_rules:PatternMatcher|None=None, oracle:str="auto", brute_max:int=1 << 16, max_depth:int=4,
               case_dtypes:list[str]|None=None, z3_timeout_ms:int=2000, signed_wrap:bool=False, casts:bool=True, samples:int=4096,
               wrap_bounds:bool=False, ops:list[str]|None=None, gate_rate:float=0.15, bv_timeout_ms:int=0):
    if oracle not in ("auto", "z3", "brute"): raise ValueError(f"oracle={oracle!r}: use auto, z3 or brute")
    if (bad:=[d for d in case_dtypes or [] if d not in DTYPES or d == "bool"]):
      raise ValueError(f"case_dtypes {bad}: use {[d for d in DTYPES if d != 'bool']}")
    self.extra_rules, self.oracle, self.brute_max, self.max_depth = extra_rules, oracle, brute_max, max_depth
    self.case_dtypes, self.z3_timeout_ms, self.signed_wrap, self.casts, self.samples = case_dtypes, z3_timeout_ms, signed_wrap, casts, samples
    if (bad:=[o for o in ops or [] if o not in symtree.INT_OPS]): raise ValueError(f"ops {bad}: use {list(symtree.INT_OPS)}")
    self.wrap_bounds, self.ops, self.gate_rate, self.bv_timeout_ms = wrap_bounds, ops, gate_rate, bv_timeout_ms
    self._bv: Z3Oracle|None = None
    self.counts: collections.Counter = collections.Counter()
    self._z3: Z3Oracle|None = None
  def options(self) -> dict:
    return {"oracle": self.oracle, "brute_max": self.brute_max, "max_depth": self.max_depth, "case_dtypes": self.case_dtypes,
            "z3_timeout_ms": self.z3_timeout_ms, "signed_wrap": self.signed_wrap, "casts": self.casts,
            "samples": self.samples, "wrap_bounds": self.wrap_bounds,
            "ops": self.ops, "gate_rate": self.gate_rate, "bv_timeout_ms": self.bv_timeout_ms}
  def stats(self) -> dict: return dict(self.counts)

  def generate(self, rng:random.Random) -> dict:
    case = symtree.generate(rng, rng.choice(self.case_dtypes) if self.case_dtypes else None, self.max_depth, self.casts, self.ops)
    # valids are index math: gate weakint cases without casts (those have their own failure classes)
    gate = case["dtype"] == "weakint" and case["vars"] and not symtree.is_bool(case["expr"]) and not symtree.has_op(case["expr"], "cast") \
      and rng.random() < self.gate_rate
    return symtree.add_gate(rng, case) if gate else case
  def shrink(self, case:dict) -> Iterator[dict]: return symtree.shrink(case)
  def describe(self, case:dict) -> str:
    return f"{case['dtype']} {case['vars']} {symtree.py_src(case['expr'])}" + (f" valid {symtree.py_src(case['gate'])}" if "gate" in case else "")

  def simplify(self, u:UOp) -> UOp:
    """Returns: `u` simplified by tinygrad (with the injected `extra_rules` first, if any)."""
    if self.extra_rules is None and not self.wrap_bounds: return u.simplify()
    return graph_rewrite(u, self._rules(), name="fuzz simplify")
  def _rules(self):
    from tinygrad.uop.symbolic import symbolic
    return symbolic if self.extra_rules is None else self.extra_rules + symbolic

  def check(self, case:dict) -> Failure|None:
    f = self.find(case)
    return None if f is None else f[0]

  def find(self, case:dict) -> tuple[Failure, dict]|None:
    """Judge a case. Returns: None, or (failure, the point {var name: value} where it shows; empty for exceptions)."""
    with wrap_aware_bounds() if self.wrap_bounds else contextlib.nullcontext(): return self._find(case)
  def _find(self, case:dict) -> tuple[Failure, dict]|None:
    try: symtree.validate(case)
    except symtree.Invalid:
      self.counts["invalid"] += 1
      return None
    if "gate" in case: return self._gate_check(case)
    try: orig, _ = build(case)
    except Exception as e: return Failure(f"exception:build:{type(e).__name__}", f"building {symtree.uop_src(case['expr'])}: {e}"), {}
    try: simp = self.simplify(orig)
    except Exception as e: return Failure(f"exception:simplify:{type(e).__name__}", f"simplifying {orig.render(simplify=False)}: {e}"), {}
    exhaustive = symtree.domain_size(case) <= self.brute_max
    if case["dtype"] != "weakint" and not exhaustive and self.oracle != "brute" and self.bv_timeout_ms > 0:
      # fixed-width: z3 bit-vectors (wrap-around exact) prove the value; sampling still judges the bounds
      if self._bv is None: self._bv = Z3Oracle(self.bv_timeout_ms)
      try: status, pts = check_bv(self._bv.solver, case, simp, self.signed_wrap)
      except Z3Unsupported: status, pts = "unsupported", []
      self.counts[f"bv-{status}"] += 1
      for env in pts:
        if (f:=self._confirm_value(case, simp, env, "mismatch")) is not None: return f
        self.counts["bv-unconfirmed"] += 1
    # z3's integer theory has no wrap-around: fixed-width cases are brute-forced or sampled
    use_brute = self.oracle == "brute" or (self.oracle == "auto" and exhaustive) or case["dtype"] != "weakint"
    if not use_brute:
      try: return self._z3_check(case, orig, simp)
      except Z3Unsupported: self.counts["z3-unsupported"] += 1
    return self._brute_check(case, orig, simp, exhaustive=exhaustive)

  # *** oracles ***

  def _points(self, case:dict, exhaustive:bool) -> dict[str, np.ndarray]:
    vs, npdt = case["vars"], np.uint64 if case["dtype"] == "uint64" else np.int64
    if not vs: return {}
    if exhaustive:
      grids = np.meshgrid(*[np.arange(a, b + 1, dtype=npdt) for a, b in vs], indexing="ij")
      return {f"v{i}": g.reshape(-1) for i, g in enumerate(grids)}
    rng = np.random.default_rng(zlib.crc32(json.dumps(case, sort_keys=True).encode()))
    n = self.brute_max if case["dtype"] == "weakint" else self.samples
    cols = []
    for a, b in vs:
      edge = np.array(sorted({a, b, 0 if a <= 0 <= b else a, min(a + 1, b), max(b - 1, a),
                              *(c for c in (-1, 1, (b - a) // 2 + a) if a <= c <= b)}), dtype=npdt)
      cols.append(np.concatenate([np.resize(edge, n // 4), rng.integers(a, b, n - n // 4, dtype=npdt, endpoint=True)]))
      rng.shuffle(cols[-1])
    return {f"v{i}": c for i, c in enumerate(cols)}

  def _brute_check(self, case, orig, simp, exhaustive:bool) -> tuple[Failure, dict]|None:
    self.counts["brute" if exhaustive else "sampled"] += 1
    env = self._points(case, exhaustive)
    n = len(next(iter(env.values()))) if env else 1
    ref, wrap, sover = symtree.ref_points(case, env)
    skip = np.zeros(n, bool) if self.signed_wrap else sover  # undefined points (signed overflow) are not judged
    if skip.any(): self.counts["signed-overflow-cases"] += 1
    try:
      sv, _ = eval_points(simp, env)
      ov, _ = eval_points(orig, env)
    except UnsupportedUOp as e: return Failure("exception:eval:UnsupportedUOp", str(e)), {}
    for root, vals, cls in ((simp, sv, "mismatch"), (orig, ov, "build-mismatch")):
      for j in np.nonzero((vals[root] != ref) & ~skip)[0][:8]:
        if (f:=self._confirm_value(case, root, {k: int(v[j]) for k, v in env.items()}, cls)) is not None: return f
    for root, vals in ((simp, sv), (orig, ov)):
      for u in nodes(root):
        # bounds are judged where the reference does not wrap, on nodes whose range stays in their dtype (tinygrad's vmin/vmax
        # are exact-integer bounds: a range beyond the dtype means "may wrap", and what rules do with it is judged by value)
        if u.op is Ops.CONST or isinstance(u.vmin, float) or not _in_dtype(u): continue
        bad = np.nonzero(((vals[u] < u.vmin) | (vals[u] > u.vmax)) & ~wrap & ~skip)[0]
        for j in bad[:4]:
          if (f:=self._confirm_bounds(case, root, u, {k: int(v[j]) for k, v in env.items()})) is not None: return f
    return None

  def _gate_check(self, case:dict) -> tuple[Failure, dict]|None:
    """An index `expr` under the valid `gate` (weakint): tinygrad's `simplify_valid(gate)` must keep the gate's value at every
    point, `uop_given_valid(gate, expr)` must keep expr's value where the gate holds, and the codegen rewrite `sym` of
    `gate.where(expr, Invalid)` must keep both (a gate that turns true where it was false would let a load go out of bounds)."""
    from tinygrad.uop.symbolic import simplify_valid, uop_given_valid, sym
    try: (e, _), (g, _) = build(case), build(case, "gate")
    except Exception as ex: return Failure(f"exception:build:{type(ex).__name__}", f"building {symtree.uop_src(case['gate'])}: {ex}"), {}
    outs: list[tuple[str, UOp, UOp|None, UOp|None]] = []  # (check, graph, its gate, its value)
    try:
      if (sv:=simplify_valid(g)) is not None: outs.append(("simplify_valid", sv, sv, None))
      outs.append(("uop_given_valid", ug:=uop_given_valid(g, e), None, ug))
      r = graph_rewrite(e.valid(g), sym, name="fuzz sym")
    except Exception as ex:
      return Failure(f"exception:valid:{type(ex).__name__}",
                     f"simplifying {e.render(simplify=False)} under valid {g.render(simplify=False)}: {ex}"), {}
    if r.op is Ops.WHERE and r.src[2].op is Ops.CONST and r.src[2].arg is Invalid: outs.append(("sym", r, r.src[0], r.src[1]))
    elif r.op is Ops.CONST and r.arg is Invalid: outs.append(("sym", r, UOp.const(False, dtypes.bool), None))
    else: outs.append(("sym", r, UOp.const(True, dtypes.bool), r))
    exhaustive = symtree.domain_size(case) <= self.brute_max
    if not exhaustive and self.oracle != "brute":
      if self._z3 is None: self._z3 = Z3Oracle(self.z3_timeout_ms)
      try: status, found = check_gated(self._z3.solver, case, [(gu, xu) for _, _, gu, xu in outs])
      except Z3Unsupported: status, found = "unsupported", []
      self.counts[f"gated-z3-{status}"] += 1
      for k, j in found:
        if (f:=self._gate_failure(case, *outs[k], j)) is not None: return f
      if status == "unsat": return None
    self.counts["gated-brute" if exhaustive else "gated-sampled"] += 1
    env = self._points(case, exhaustive)
    ref, _, sover = symtree.ref_points(case, env)
    gate, _, gover = symtree.ref_points(case, env, case["gate"])
    defined = np.ones_like(sover) if self.signed_wrap else ~(sover | gover)
    for out in outs:
      name, root, gu, xu = out
      try:
        bad = np.zeros_like(defined)
        if gu is not None: bad |= eval_points(gu, env)[0][gu] != gate
        if xu is not None: bad |= (eval_points(xu, env)[0][xu] != ref) & gate
      except (UnsupportedUOp, KeyError) as ex:
        return Failure(f"exception:eval:{type(ex).__name__}", f"{name} gave {root.render(simplify=False)}: {ex}"), {}
      for i in np.nonzero(bad & defined)[0][:8]:
        if (f:=self._gate_failure(case, *out, {k: int(v[i]) for k, v in env.items()})) is not None: return f
    return None

  def _gate_failure(self, case, name, root, gu, xu, env) -> tuple[Failure, dict]|None:
    """Confirm a gated counterexample at one point with exact evaluation. Returns: (failure, point) or None."""
    (want, wf), (holds, gf) = symtree.ref_exact(case, env), symtree.ref_exact(case, env, tree=case["gate"])
    if "signed-overflow" in wf | gf and not self.signed_wrap: return None
    if gu is not None and (g:=eval_exact(gu, env)[gu]) != holds:
      return Failure("valid-gate-changed", f"{name}: at {_point_str(env)} the valid is {g!r}, expected {holds!r}\n"
                     f"  valid {symtree.py_src(case['gate'])}  (ranges {case['vars']})\n  got   {gu.render(simplify=False)}"), env
    if xu is not None and holds and (x:=eval_exact(xu, env)[xu]) != want:
      return Failure("valid-mismatch", f"{name}: at {_point_str(env)} (valid holds) expected {want!r}, got {x!r}\n"
                     f"  expr  {symtree.py_src(case['expr'])}  valid {symtree.py_src(case['gate'])}  (ranges {case['vars']})\n"
                     f"  got   {root.render(simplify=False)}"), env
    return None

  def _confirm_value(self, case, root, env, cls) -> tuple[Failure, dict]|None:
    (want, flags), got = symtree.ref_exact(case, env), eval_exact(root, env)[root]
    if want == got or ("signed-overflow" in flags and not self.signed_wrap): return None
    if cls == "mismatch": cls = _mismatch_class(case, root, flags)
    if cls == "wrap-mismatch" and not self.wrap_bounds and self._bounds_cause(case, env, want): cls = "wrap-bounds"
    return Failure(cls, f"at {_point_str(env)}: expected {want!r}, {'built' if cls == 'build-mismatch' else 'simplified'} graph gives {got!r}\n"
                        f"  expr       {symtree.py_src(case['expr'])}  ({case['dtype']}, ranges {case['vars']})\n"
                        f"  simplified {root.render(simplify=False)}"), env

  def _bounds_cause(self, case, env, want) -> bool:
    """Whether a wrap-around mismatch at `env` goes away once tinygrad's bounds account for wrap-around: then its exact-integer
    bounds are the cause (class `wrap-bounds`, docs/findings.md #7), not a rewrite rule (`wrap-mismatch`)."""
    with wrap_aware_bounds():
      try: simp = graph_rewrite(build(case)[0], self._rules(), name="fuzz simplify")
      except Exception: return False  # the system under test may raise anything: then the bounds are not the cause
      return eval_exact(simp, env)[simp] == want

  def _confirm_bounds(self, case, root, u, env) -> tuple[Failure, dict]|None:
    v = eval_exact(root, env)[u]
    if u.vmin <= v <= u.vmax or "wrap" in (flags:=symtree.ref_exact(case, env)[1]): return None
    return Failure("cast-bounds" if "cast-wrap" in flags else "bounds",
                   f"at {_point_str(env)}: node {u.op.name} {u.render(simplify=False)} has vmin={u.vmin} vmax={u.vmax} but takes {v!r}\n"
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
    if self.wrap_bounds: note += "\nNOTE: found with wrap-aware bounds (SymbolicFuzzer(wrap_bounds=True)); this script uses stock bounds."
    names = [f"v{i}" for i in range(len(case["vars"]))]
    return (_REPRO_GATED if "gate" in case else _REPRO).format(
      note=note, cls=f[0].cls if f else "none (the case passes now)", dtype=case["dtype"], ranges=ranges, nvars=len(names),
      unpack=f"{', '.join(names)}, = V" if names else "", lohi=case["vars"], uop=symtree.uop_src(case["expr"]),
      readable=symtree.py_src(case["expr"]), point=env, gate=symtree.uop_src(case.get("gate", ["c", True])),
      readable_gate=symtree.py_src(case.get("gate", ["c", True])))

_REPRO = '''"""mockgpu fuzz symbolic: minimised failure [{cls}]. Needs only tinygrad 0.14.0. Exits 1 while it reproduces.{note}
Variables: {ranges} ({dtype}). Expression: {readable}
The reference is the unsimplified graph evaluated node by node with tinygrad's own op semantics (exec_alu: floor // and %
for FLOORDIV/FLOORMOD, truncating CDIV/CMOD, every result truncated to its dtype = two's complement wrap-around)."""
import itertools, sys
from tinygrad.uop.ops import UOp, Ops, exec_alu
from tinygrad.dtype import dtypes, truncate
DT = dtypes.{dtype}
RANGES = {lohi}
V = [UOp.variable(f"v{{i}}", lo, hi, dtype=DT) for i, (lo, hi) in enumerate(RANGES)]
{unpack}
C = lambda x, d=None: UOp.const(x, dtypes.bool if isinstance(x, bool) else getattr(dtypes, d) if d else DT)
expr = {uop}
def evaluate(root, env):  # tinygrad's own op semantics for every node
  vals = {{}}
  def ev(u):
    if u in vals: return vals[u]
    if u.op in (Ops.BUFFER, Ops.PARAM): v = env[u.arg.name]
    elif u.op is Ops.CONST: v = truncate[u.dtype](u.arg) if u.dtype in truncate else u.arg
    elif u.op is Ops.CAST: v = truncate[u.dtype](ev(u.src[0]))
    else: v = exec_alu(u.op, u.dtype, [ev(s) for s in u.src])
    vals[u] = v
    return v
  ev(root)
  return vals
simplified = expr.simplify()
print("expr:      ", expr.render(simplify=False))
print("simplified:", simplified.render(simplify=False), simplified.dtype)
POINT = {point}  # where the fuzzer saw it; empty: scan the whole box
points = [POINT] if POINT else [dict(zip([f"v{{i}}" for i in range({nvars})], p)) for p in itertools.product(*[range(a, b + 1) for a, b in RANGES])]
bad = 0
for env in points:
  want = evaluate(expr, env)[expr]
  vals = evaluate(simplified, env)
  if vals[simplified] != want: print(f"MISMATCH at {{env}}: expected {{want}}, simplified graph gives {{vals[simplified]}}"); bad += 1
  for root in (simplified, expr):
    for u, v in evaluate(root, env).items():
      if u.op is not Ops.CONST and not (u.vmin <= v <= u.vmax) and (u.dtype is dtypes.weakint or u.dtype.min <= u.vmin <= u.vmax <= u.dtype.max):
        print(f"BOUNDS at {{env}}: {{u.render(simplify=False)}} in [{{u.vmin}}, {{u.vmax}}] takes {{v}}"); bad += 1
  if bad: break
sys.exit(1 if bad else 0)
'''

_REPRO_GATED = '''"""mockgpu fuzz symbolic: minimised failure [{cls}] of an index under a valid. Needs only tinygrad 0.14.0. Exits 1
while it reproduces.{note}
Variables: {ranges} ({dtype}). Index: {readable}  valid: {readable_gate}
Checks simplify_valid(valid), uop_given_valid(valid, index) and codegen's sym on index.valid(valid) at the point, against the
unsimplified graphs evaluated with tinygrad's own op semantics (exec_alu)."""
import sys
from tinygrad.uop.ops import UOp, Ops, exec_alu, graph_rewrite
from tinygrad.uop.symbolic import simplify_valid, uop_given_valid, sym
from tinygrad.dtype import dtypes, truncate, Invalid
DT = dtypes.{dtype}
RANGES = {lohi}
V = [UOp.variable(f"v{{i}}", lo, hi, dtype=DT) for i, (lo, hi) in enumerate(RANGES)]
{unpack}
C = lambda x, d=None: UOp.const(x, dtypes.bool if isinstance(x, bool) else getattr(dtypes, d) if d else DT)
expr, valid = {uop}, {gate}
POINT = {point} or {{f"v{{i}}": lo for i, (lo, _) in enumerate(RANGES)}}  # where the fuzzer saw it (else the lowest corner)
def evaluate(u, vals=None):
  vals = {{}} if vals is None else vals
  if u in vals: return vals[u]
  if u.op in (Ops.BUFFER, Ops.PARAM): v = POINT[u.arg.name]
  elif u.op is Ops.CONST: v = truncate[u.dtype](u.arg) if u.dtype in truncate else u.arg
  elif u.op is Ops.CAST: v = int(evaluate(u.src[0], vals)) if u.dtype is dtypes.weakint else truncate[u.dtype](evaluate(u.src[0], vals))
  else: v = exec_alu(u.op, u.dtype, [evaluate(s, vals) for s in u.src])
  vals[u] = v
  return v
want, holds = evaluate(expr), evaluate(valid)
print(f"at {{POINT}}: valid {{valid.render(simplify=False)}} = {{holds}}, index {{expr.render(simplify=False)}} = {{want}}")
bad = 0
if (sv:=simplify_valid(valid)) is not None and evaluate(sv) != holds: print(f"simplify_valid gives {{sv.render()}} = {{evaluate(sv)}}"); bad += 1
if (ug:=uop_given_valid(valid, expr)) is not None and holds and evaluate(ug) != want:
  print(f"uop_given_valid gives {{ug.render()}} = {{evaluate(ug)}}"); bad += 1
r = graph_rewrite(expr.valid(valid), sym)
if r.op is Ops.WHERE and r.src[2].arg is Invalid: cond, x = r.src[0], r.src[1]
else: cond, x = (UOp.const(False), None) if r.arg is Invalid else (UOp.const(True), r)
if evaluate(cond) != holds: print(f"sym: the valid became {{cond.render()}} = {{evaluate(cond)}}"); bad += 1
elif holds and evaluate(x) != want: print(f"sym: the index became {{x.render()}} = {{evaluate(x)}}"); bad += 1
sys.exit(1 if bad else 0)
'''
