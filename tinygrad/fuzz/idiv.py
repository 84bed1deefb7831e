"""`idiv` fuzzer: tinygrad's fast integer division (`tinygrad.codegen.decomp.op.fast_idiv`, magic-number multiply and
shift, off by default in 0.14.0 through DISABLE_FAST_IDIV=1) on whole expressions, checked bit-exactly at the real width.

A case divides an integer expression by a constant (`idivexpr` trees: `x0//7`, `(x0*3+x1) cdiv 10`, nested divisions) of
one 8/16/32/64-bit signed or unsigned dtype, whose every node stays in the dtype's range, so the exact value (Python
integers) is the answer. Two modes:
* `uop`: the expression's UOp graph over bounded variables, lowered as codegen lowers it for one renderer (`RENDERERS`:
  the renderer's op set and dtypes decide which rewrites fire): tinygrad's `symbolic`, then the early decompositions, then
  the late ones with `disable_fast_idiv=False`. The lowered graph is judged at every node's width with wrap-around:
  all points of boxes up to `SMALL` points; for larger ones a z3 proof over the whole box (`idivz3`, dtypes up to
  `z3_bits`), else all points up to `EXHAUSTIVE`, else edge values plus random points. A z3 `unknown`
  (timeout) falls back to sampling and is counted as `z3-unknown`, never as proved.
* `kernel`: the same expression end to end as a Tensor program (`//`, `%`, `div(rounding_mode='trunc')`, `fmod`) on
  loaded values cast to the dtype, or on `Tensor.arange` (a RANGE), realised with DISABLE_FAST_IDIV=0 on one device of
  `KERNEL_DEVICES`: DEV=CPU with the CLANG, LLVM or X86 renderer, the mock AMD GPU (DEV=MOCKKFD+AMD, gfx1100, in the
  `amdexec` worker process) or the mock NVIDIA GPU (DEV=MOCK+NV:PTX, tinygrad's PTX renderer, in a `devworker` process).

Failure classes: `mismatch` (uop), `kernel-mismatch`, `kernel-fault`, `exception:lower:<Type>`, `exception:kernel:<Type>`.
Exception messages start with tinygrad's own text (stable across cases, for the known-findings registry), then the case.
Minimisation is canonical: structure first (a division alone, a numerator replaced by one variable), then dtype, renderer,
device and division op in fixed orders, then numbers by the simple values below them (`idivexpr.simple_below`) and bisection
(`idivexpr.toward`), so one bug minimises to one case from any start.
"""
from __future__ import annotations
import collections, itertools, random, zlib
from typing import Iterator
import numpy as np
from tinygrad.uop.ops import UOp, Ops, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes, DType
from tinygrad.helpers import Target
from tinygrad.renderer import Renderer
from tinygrad.uop.symbolic import symbolic, symbolic_simple
from tinygrad.codegen.decomp.op import get_simplifying_rewrite_patterns, get_late_rewrite_patterns
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure
from mockgpu.tinygrad.fuzz.uopeval import eval_points, eval_exact, nodes
from mockgpu.tinygrad.fuzz import idivexpr as ix

__all__ = ["IdivFuzzer", "lower", "renderer", "kernel_values", "DTYPES", "RENDERERS", "KERNEL_DEVICES", "EXHAUSTIVE"]

# the shrink order of dtypes (narrow first, unsigned before signed): a case shrinks to any dtype before its own
DTYPES: dict[str, DType] = {n: getattr(dtypes, n) for n in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64")}
_RENDERERS = {"CLANG": ("tinygrad.renderer.cstyle", "ClangRenderer", Target("CPU", "CLANG", "x86_64,native")),
              "LLVM": ("tinygrad.renderer.llvmir", "CPULLVMRenderer", Target("CPU", "LLVM", "x86_64,native")),
              "X86": ("tinygrad.renderer.isa.x86", "X86Renderer", Target("CPU", "X86", "x86_64,native")),
              "AMD": ("tinygrad.renderer.llvmir", "AMDLLVMRenderer", Target("AMD", "LLVM", "gfx1100")),
              "NV": ("tinygrad.renderer.ptx", "PTXRenderer", Target("NV", "PTX", "sm_70", interface="MOCK"))}
RENDERERS: tuple[str, ...] = tuple(_RENDERERS)        # renderers whose lowering `uop` cases use (also their shrink order)
KERNEL_DEVICES: tuple[str, ...] = ("CLANG", "LLVM", "X86", "AMD", "NV")  # where `kernel` cases run (shrink order)
EXHAUSTIVE, SMALL = 1 << 16, 1 << 12  # boxes up to SMALL points are checked at every point; up to EXHAUSTIVE when z3 cannot decide
_DIV_OPS = (Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD)

_REN: dict[str, Renderer] = {}
def renderer(name:str="CLANG") -> Renderer:
  """Returns: the tinygrad renderer `name` (one of RENDERERS) whose ops and dtypes drive the lowering (built once, never compiles)."""
  if name not in _REN:
    import importlib
    mod, cls, target = _RENDERERS[name]
    _REN[name] = getattr(importlib.import_module(mod), cls)(target)
  return _REN[name]

def lower(node:UOp, ren:str="CLANG", extra_rules:PatternMatcher|None=None) -> UOp:
  """Lower divisions the way codegen does for renderer `ren`, with fast_idiv enabled: final symbolic, early decompositions,
  late decompositions.

  Args: node: the graph. ren: a name in RENDERERS. extra_rules: tried before tinygrad's late rules (test-only bug injection).
  Returns: the lowered graph."""
  r = renderer(ren)
  ops = tuple(r.code_for_op.keys())
  early = symbolic_simple + get_simplifying_rewrite_patterns(ops)
  node = graph_rewrite(graph_rewrite(node, symbolic, name="fuzz final symbolic"), early, name="fuzz early decompositions")
  late = early + get_late_rewrite_patterns(ops, False)
  return graph_rewrite(node, (extra_rules + late) if extra_rules is not None else late, ctx=r, name="fuzz late decompositions")

def _edges(lo:int, hi:int, ds:list[int], bits:int) -> set[int]:
  vals = {lo, hi, min(lo + 1, hi), max(hi - 1, lo), 0}
  for d in ds:
    for k in {hi // d, hi // d - 1, lo // d + 1, 1, 2, 3, -1, -2}: vals.update(k * d + e for e in (-1, 0, 1))
  vals.update(s * 2**p + e for p in range(bits + 1) for e in (-1, 0, 1) for s in (1, -1))
  return {v for v in vals if lo <= v <= hi}

def points(case:dict) -> list[tuple[int, ...]]:
  """Returns: the points a sampled `uop` case is checked at: the whole box if it has at most EXHAUSTIVE points, else every
  variable's edge values (bounds, powers of two, multiples of the divisors next to the bounds) combined, plus 4000 random."""
  box, bits = case["box"], DTYPES[case["dtype"]].bitsize
  if np.prod([float(hi - lo + 1) for lo, hi in box]) <= EXHAUSTIVE: return list(itertools.product(*(range(lo, hi + 1) for lo, hi in box)))
  ds = sorted({abs(t[2]) for t in ix.divisions(case["expr"])})
  rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
  edges = [sorted(_edges(lo, hi, ds, bits)) for lo, hi in box]
  if len(box) == 1: pts = {(v,) for v in edges[0]}
  else: pts = {tuple(int(e[i]) for e, i in zip(edges, ix_)) for ix_ in zip(*(rng.integers(0, len(e), 2000) for e in edges))}
  def rnd(lo, hi): return rng.integers(lo, hi, 4000, endpoint=True, dtype=np.int64 if hi < 2**63 else np.uint64).tolist()
  pts.update(zip(*(rnd(lo, hi) for lo, hi in box)))
  return sorted(pts)

class IdivFuzzer(Fuzzer):
  """Fuzz fast integer division (fast_idiv) of whole expressions at the real width, lowered for every renderer.

  Args:
    extra_rules: a PatternMatcher tried before tinygrad's late decomposition rules (test-only bug injection).
    kernel_rate: probability of an end-to-end kernel case.
    widths: allowed bit widths (default 8, 16, 32, 64).
    negative_divisors: also divide signed values by negative constants (0.14.0 crashes there: docs/findings.md #2).
    renderers: renderers whose lowering `uop` cases use (default all of RENDERERS).
    kernel_devices: devices `kernel` cases run on (default all of KERNEL_DEVICES; each case runs on one of them).
    max_depth: depth of the numerator expression (0: one bare variable).
    z3_bits: prove `uop` cases of dtypes up to this many bits with z3 (0: sample only; 32: sample 64-bit cases).
    z3_timeout_ms: z3's budget per proof; on `unknown` the case is sampled instead and counted as `z3-unknown`.
  Raises:
    ExecutorUnavailable: a kernel device or renderer that is not known.
  """
  name = "idiv"
  def __init__(self, extra_rules:PatternMatcher|None=None, kernel_rate:float=0.02, widths:list[int]|None=None, negative_divisors:bool=True,
               renderers:list[str]|tuple[str, ...]=RENDERERS, kernel_devices:list[str]|tuple[str, ...]=KERNEL_DEVICES,
               max_depth:int=2, z3_bits:int=64, z3_timeout_ms:int=1000):
    self.extra_rules, self.kernel_rate, self.widths, self.neg = extra_rules, kernel_rate, widths or [8, 16, 32, 64], negative_divisors
    self.renderers, self.kernel_devices, self.max_depth = list(renderers), list(kernel_devices), max_depth
    self.z3_bits, self.z3_timeout_ms, self.counts = z3_bits, z3_timeout_ms, collections.Counter()
    for what, got, known in (("kernel_devices", self.kernel_devices, KERNEL_DEVICES), ("renderers", self.renderers, RENDERERS)):
      if bad:=[d for d in got if d not in known]:
        from mockgpu.tinygrad.fuzz.errors import ExecutorUnavailable
        raise ExecutorUnavailable(f"idiv {what}={bad} unknown: pick from {list(known)}")
  def options(self) -> dict:
    return {"kernel_rate": self.kernel_rate, "widths": self.widths, "negative_divisors": self.neg, "renderers": self.renderers,
            "kernel_devices": self.kernel_devices, "max_depth": self.max_depth, "z3_bits": self.z3_bits, "z3_timeout_ms": self.z3_timeout_ms}
  def stats(self) -> dict: return dict(self.counts)

  # *** generation ***

  def generate(self, rng:random.Random) -> dict:
    kernel = self.kernel_devices and rng.random() < self.kernel_rate
    bits = rng.choice([w for w in self.widths if w <= 32] or self.widths) if kernel else rng.choice(self.widths)
    signed = rng.random() < 0.5
    dt = DTYPES[f"{'' if signed else 'u'}int{bits}"]
    def pick_d() -> int:
      top = dt.max
      d = rng.choice([rng.randint(1, 20), rng.randint(1, 1000), rng.randint(1, top), 2**rng.randint(1, bits - 1 - signed) + rng.choice([-1, 1]),
                      top - rng.randint(0, 10)])
      return max(1, min(d, top)) * (-1 if signed and self.neg and rng.random() < 0.2 else 1)
    def pick_c() -> int: return rng.choice([rng.randint(1, 16), rng.randint(1, 1000), rng.randint(-20, 20) if signed else rng.randint(0, 20)])
    nvars = 1 if self.max_depth == 0 or rng.random() < 0.4 else rng.randint(1, 3)
    depth = 0 if nvars == 1 and rng.random() < 0.5 else rng.randint(0, self.max_depth)
    for _ in range(20):  # draw until nothing wraps (deep products of wide ranges rarely fit)
      box = []
      for _ in range(nvars):
        hi = rng.choice([dt.max, rng.randint(0, dt.max), 2**rng.randint(1, bits - signed) - 1])
        lo = 0 if rng.random() < 0.6 else rng.randint(0, hi) if not signed or rng.random() < 0.6 else rng.randint(dt.min + 1, 0)
        box.append([lo, hi])
      expr = ix.generate(rng, nvars, depth, pick_d, pick_c)
      if depth and rng.random() < 0.5: box = [[lo, min(hi, lo + rng.choice([255, 65535, 2**20]))] for lo, hi in box]
      if ix.valid(expr, box, dt): break
    else: expr, box = [rng.choice(ix.DIVS), ["x", 0], pick_d()], box[:1]
    expr, box = ix.compact(expr, box)
    if kernel: return self._kernel_case(rng, dt, expr, box)
    return {"mode": "uop", "ren": rng.choice(self.renderers), "dtype": _name(dt), "box": box, "expr": expr}

  def _kernel_case(self, rng:random.Random, dt:DType, expr:list, box:list[list[int]]) -> dict:
    case = {"mode": "kernel", "dev": rng.choice(self.kernel_devices), "dtype": _name(dt), "expr": expr}
    if len(box) == 1 and rng.random() < 0.3 and box[0][1] >= 0: return {**case, "n": rng.randint(1, min(4096, box[0][1] + 1))}  # Tensor.arange: a RANGE
    # loaded values cast from a narrower unsigned dtype (tinygrad knows they are non-negative, so fast_idiv fires) or the same dtype
    srcs = [rng.choice([n for n, s in DTYPES.items() if s.bitsize <= dt.bitsize and (s == dt or s in dtypes.uints) and s.min <= hi and lo <= s.max])
            for lo, hi in box]
    vals = []
    for (lo, hi), s in zip(box, srcs):
      lo, hi = max(lo, DTYPES[s].min), min(hi, DTYPES[s].max)
      edge = [v for v in (lo, hi, 0, 1, hi - 1, *(2**p + e for p in range(dt.bitsize) for e in (-1, 0))) if lo <= v <= hi]
      vals.append(rng.sample(edge, min(len(edge), 24)) + [rng.randint(lo, hi) for _ in range(40)])
    n = min(len(v) for v in vals)
    return {**case, "src": srcs, "values": [v[:n] for v in vals]}

  # *** checking ***

  def check(self, case:dict) -> Failure|None:
    f = self.find(case)
    return None if f is None else f[0]

  def find(self, case:dict) -> tuple[Failure, list]|None:
    """Returns: None, or (failure, failing points: tuples of variable values for `uop`, element indices for `kernel`)."""
    return self._kernel(case) if case["mode"] == "kernel" else self._uop(case)

  def _uop(self, case:dict):
    dt = DTYPES[case["dtype"]]
    if case.get("ren", "CLANG") not in RENDERERS or not ix.valid(case["expr"], case["box"], dt): return None
    node = ix.to_uop(case["expr"], case["box"], dt)
    try: low = lower(node, case["ren"], self.extra_rules)
    except Exception as e: return Failure(f"exception:lower:{type(e).__name__}", f"{e} (lowering {self.describe(case)})"), []
    self.counts["lowered" if not any(u.op in _DIV_OPS and u.src[1].op is Ops.CONST and u.src[1].arg & (u.src[1].arg - 1)
                                  for u in nodes(low)) else "not-lowered"] += 1
    nbox = np.prod([float(hi - lo + 1) for lo, hi in case["box"]])
    if nbox > SMALL and dt.bitsize <= self.z3_bits:
      from mockgpu.tinygrad.fuzz.idivz3 import prove, Z3Unsupported
      try: verdict, pt = prove(low, case["expr"], case["box"], dt, self.z3_timeout_ms)
      except Z3Unsupported: verdict, pt = "unsupported", None
      self.counts[f"z3-{verdict}"] += 1
      if verdict == "proved": return None
      if verdict == "refuted" and (bad:=self._confirm(case, low, [tuple(pt)])): return self._mismatch(case, low, bad)
    else: self.counts["exhaustive" if nbox <= EXHAUSTIVE else "sampled"] += 1
    pts = points(case)
    xs = [np.array([p[i] for p in pts], dtype=_np(dt)) for i in range(len(case["box"]))]
    with np.errstate(all="ignore"): want = ix.evaluate_np(case["expr"], xs)
    got = eval_points(low, {f"x{i}": x for i, x in enumerate(xs)})[0][low]
    bad = [pts[i] for i in np.flatnonzero(got != want)[:16]]
    return self._mismatch(case, low, b) if (b:=self._confirm(case, low, bad[:16])) else None

  def _confirm(self, case:dict, low:UOp, pts:list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    # tinygrad's own op semantics (exec_alu) on Python ints must agree with the fast numpy/z3 verdict
    return [p for p in pts if eval_exact(low, {f"x{i}": v for i, v in enumerate(p)})[low] != ix.evaluate(case["expr"], list(p))]

  def _mismatch(self, case:dict, low:UOp, bad:list[tuple[int, ...]]):
    p = bad[0]
    at = ", ".join(f"x{i}={v}" for i, v in enumerate(p))
    return Failure("mismatch", f"{self.describe(case)}: at {at} expected {ix.evaluate(case['expr'], list(p))}, lowered graph gives "
                               f"{eval_exact(low, {f'x{i}': v for i, v in enumerate(p)})[low]} ({len(bad)}+ bad points)\n"
                               f"  lowered {low.render(simplify=False)}"), bad

  def _kernel(self, case:dict):
    from mockgpu.tinygrad.fuzz.errors import ExecFault
    from mockgpu.tinygrad.fuzz.kexec import ensure_cc
    dt, dev = DTYPES[case["dtype"]], case["dev"]
    box = [[0, case["n"] - 1]] if "n" in case else [[min(v), max(v)] for v in _cast_values(case)]
    if dev not in KERNEL_DEVICES or not ix.valid(case["expr"], box, dt): return None
    try:
      if dev in _DEV:
        status, res = _worker(dev).call(__name__, "kernel_values", case)
        if status != "ok":
          typ, _, msg = res.partition(": ")
          return Failure(f"exception:kernel:{typ}", f"{msg} (kernel on {dev}: {self.describe(case)})"), []
        xs, got = res
      else:
        ensure_cc()
        _warm(dev)
        xs, got = _forked(kernel_values, "CPU", case)
    except ExecFault as e: return Failure("kernel-fault", f"kernel on {dev}: {self.describe(case)}: {e.detail}"), []
    except Exception as e: return Failure(f"exception:kernel:{type(e).__name__}", f"{e} (kernel on {dev}: {self.describe(case)})"), []
    self.counts[f"kernel-{dev}"] += 1
    want = [ix.evaluate(case["expr"], list(p)) for p in zip(*xs)]
    bad = [i for i, (w, g) in enumerate(zip(want, got)) if w != g]
    if not bad: return None
    i = bad[0]
    at = ", ".join(f"x{k}={x[i]}" for k, x in enumerate(xs))
    return Failure("kernel-mismatch", f"{self.describe(case)}: at {at} expected {want[i]}, got {got[i]} "
                                      f"({len(bad)} bad of {len(want)})"), bad

  # *** minimisation ***

  def shrink(self, case:dict) -> Iterator[dict]:
    f = self.find(case)
    bad = f[1] if f else []
    dt, expr = DTYPES[case["dtype"]], case["expr"]
    if case["mode"] == "kernel":
      yield from self._shrink_kernel(case, bad)
      return
    box = case["box"]
    for t, b in ix.tree_shrinks(expr, box):
      t, b = ix.compact(t, b)
      yield {**case, "expr": t, "box": b}
    yield from self._shrink_common(case, dt, lambda c, n: {**c, "dtype": n, "box": [[_clip(lo, DTYPES[n]), _clip(hi, DTYPES[n])]
                                                                                    for lo, hi in c["box"]]})
    for r in RENDERERS[:RENDERERS.index(case["ren"])]: yield {**case, "ren": r}
    # a range collapses to one of its failing points, then each bound moves toward 0 (simple values, then bisection)
    for p in sorted(bad, key=lambda p: [abs(v) for v in p])[:2]: yield {**case, "box": [[v, v] for v in p]}
    for k in (0, 1): yield {**case, "box": [[b[k], b[k]] for b in box]}
    ds = [t[2] for t in ix.divisions(expr)]
    for i, (lo, hi) in enumerate(box):
      def put(lo_, hi_): return {**case, "box": box[:i] + [[lo_, hi_]] + box[i+1:]}
      if lo == hi:
        for v in ix.simple_below(lo, dt.min, dt.max, ds[0] if ds else 0) + ix.toward(lo): yield put(v, v)
        continue
      for v in ix.simple_below(hi, lo, hi) + ix.toward(hi, max(lo, min(0, hi))): yield put(lo, v)
      for v in ix.simple_below(lo, lo, hi) + ix.toward(lo, min(hi, max(0, lo))): yield put(v, hi)

  def _shrink_common(self, case:dict, dt:DType, retype) -> Iterator[dict]:
    # dtypes earlier in DTYPES, division ops earlier in DIVS, divisors toward 1 and positive, constants toward 0
    for n in list(DTYPES)[:list(DTYPES).index(case["dtype"])]:
      t = DTYPES[n]
      yield {**retype(case, n), "expr": _map_consts(case["expr"], lambda c, div: max(min(c, t.max), t.min + (1 if div else 0)) or 1 if div
                                                    else max(min(c, t.max), t.min))}
    for path, node in _walk(case["expr"]):
      if node[0] in ix.DIVS:
        for op in ix.DIVS[:ix.DIVS.index(node[0])]: yield {**case, "expr": _put(case["expr"], path, [op, node[1], node[2]])}
        d = node[2]
        if d < 0: yield {**case, "expr": _put(case["expr"], path, [node[0], node[1], -d])}
        for m in ix.simple_below(abs(d), 1, abs(d)) + ix.toward(abs(d), 1):
          yield {**case, "expr": _put(case["expr"], path, [node[0], node[1], m if d > 0 else -m])}
      elif node[0] == "c":
        for m in ix.simple_below(node[1], dt.min, dt.max) + ix.toward(node[1]): yield {**case, "expr": _put(case["expr"], path, ["c", m])}

  def _shrink_kernel(self, case:dict, bad:list[int]) -> Iterator[dict]:
    for t, b in ix.tree_shrinks(case["expr"], [[0, 0]] * 8):
      if len(b) == 8 and len(ix.var_ids(t)) == len(ix.var_ids(case["expr"])): yield {**case, "expr": t}  # no fresh variable in kernels
    for dv in KERNEL_DEVICES[:KERNEL_DEVICES.index(case["dev"])]: yield {**case, "dev": dv}
    if "n" not in case:  # fewer values first: every candidate is a compile
      for i in bad[:2]: yield {**case, "values": [[v[i]] for v in case["values"]]}
    def retype(c:dict, n:str) -> dict:  # a narrower dtype: sources no wider than it, values clipped into their source
      if "n" in c: return {**c, "dtype": n}
      srcs = [s if DTYPES[s].bitsize <= DTYPES[n].bitsize else n for s in c["src"]]
      return {**c, "dtype": n, "src": srcs, "values": [[_clip(x, DTYPES[s]) for x in v] for v, s in zip(c["values"], srcs)]}
    yield from self._shrink_common(case, DTYPES[case["dtype"]], retype)
    if "n" in case:
      if bad: yield {**case, "n": bad[0] + 1}
      for n in ix.simple_below(case["n"], 1, case["n"]) + ix.toward(case["n"], 1): yield {**case, "n": n}
    else:
      vals = case["values"]
      if len(vals[0]) > 1:
        h = len(vals[0]) // 2
        yield {**case, "values": [v[:h] for v in vals]}
        yield {**case, "values": [v[h:] for v in vals]}
      elif len(vals[0]) == 1:
        for k, v in enumerate(vals):
          s = DTYPES[case["src"][k]]
          for m in ix.simple_below(v[0], s.min, s.max) + ix.toward(v[0]): yield {**case, "values": vals[:k] + [[m]] + vals[k+1:]}

  def describe(self, case:dict) -> str:
    if case["mode"] == "kernel":
      ins = f"x0=arange({case['n']})" if "n" in case else ", ".join(f"x{i}: {s}" for i, s in enumerate(case["src"]))
      return f"{case['dev']} kernel {case['dtype']} {ix.render(case['expr'])} ({ins})"
    box = ", ".join(f"x{i} in [{lo}, {hi}]" for i, (lo, hi) in enumerate(case["box"]))
    return f"{case['ren']} {case['dtype']} {ix.render(case['expr'])} with {box}"

  def repro(self, case:dict) -> str:
    f = self.find(case)
    bad = f[1][:8] if f else []
    cls = f[0].cls if f else "none (passes now)"
    if case["mode"] == "kernel":
      return _KREPRO.format(cls=cls, case=case, dev=case["dev"], setup=_KSETUP.get(case["dev"], ""),
                            ctx=f'DEV="CPU:{case["dev"]}"' if case["dev"] in ("CLANG", "LLVM", "X86") else f'DEV="{_DEV[case["dev"]]}"',
                            tdev="CPU" if case["dev"] in ("CLANG", "LLVM", "X86") else case["dev"], expr=_EXPR_SRC)
    note = "\nNOTE: found with test-only injected rewrite rules, which this script does not apply." if self.extra_rules is not None else ""
    mod, cls_name, target = _RENDERERS[case["ren"]]
    return _UREPRO.format(note=note, cls=cls, case=case, pts=[list(p) for p in bad] or [[lo for lo, _ in case["box"]], [hi for _, hi in case["box"]]],
                          mod=mod, ren=cls_name, expr=_EXPR_SRC,
                          target=f"Target({target.device!r}, {target.renderer!r}, {target.arch!r}, interface={target.interface!r})")

# *** kernels ***

_DEV = {"AMD": "MOCKKFD+AMD", "NV": "MOCK+NV:PTX"}
def _cast_values(case:dict) -> list[list[int]]:
  return [np.array(v, dtype=_np(DTYPES[s])).astype(_np(DTYPES[case["dtype"]])).tolist() for v, s in zip(case["values"], case["src"])]

def kernel_values(device:str, case:dict) -> tuple[list[list[int]], list[int]]:
  """Realise a `kernel` case with DISABLE_FAST_IDIV=0 on `device` (`CPU`, with the case's renderer; the AMD and NV workers pass
  their device name).

  Returns: (each variable's values after the cast to the case's dtype, the kernel's results)."""
  from tinygrad import Tensor
  from tinygrad.helpers import Context
  dt = DTYPES[case["dtype"]]
  with Context(DISABLE_FAST_IDIV=0, **({"DEV": f"CPU:{case['dev']}"} if device == "CPU" else {})):
    # arange takes no device: it runs on the default device, which is `device` here (CPU through DEV, a worker's own GPU)
    if "n" in case: xs, ts = [list(range(case["n"]))], [Tensor.arange(case["n"], dtype=dt)]
    else:
      xs = _cast_values(case)
      ts = [Tensor(np.array(v, dtype=_np(DTYPES[s])), device=device).cast(dt) for v, s in zip(case["values"], case["src"])]
    return xs, ix.to_tensor(case["expr"], ts).numpy().tolist()

_WARM: set[tuple[int, str]] = set()
def _warm(ren:str) -> None:
  # a known-good division kernel in this process first, so forked children inherit the initialised device, renderer,
  # compiler and tinygrad's compiled rewrite rules instead of paying for them on every case (~2x faster per kernel)
  import os
  if (key:=(os.getpid(), ren)) in _WARM: return
  _WARM.add(key)
  from tinygrad import Tensor
  from tinygrad.helpers import Context
  with Context(DISABLE_FAST_IDIV=0, DEV=f"CPU:{ren}"): (Tensor(np.array([1, 2], dtype=np.uint16), device="CPU").cast(dtypes.int32) // 3).tolist()

def _forked(fn, *args):
  # native CPU code may crash the process (docs/findings.md F23): run it in a forked child, results back through a pipe
  import faulthandler, os, pickle, signal
  from mockgpu.tinygrad.fuzz.errors import ExecFault
  r, w = os.pipe()
  if (pid:=os.fork()) == 0:
    os.close(r)
    faulthandler.disable()  # the crash is the expected outcome, reported by the parent: no traceback dump (pytest enables it)
    try: out = ("ok", fn(*args))
    except BaseException as e: out = ("raised", e)
    try: data = pickle.dumps(out)
    except Exception: data = pickle.dumps(("raised", RuntimeError(f"{type(out[1]).__name__}: {out[1]}")))
    with os.fdopen(w, "wb") as f: f.write(data)
    os._exit(0)
  os.close(w)
  with os.fdopen(r, "rb") as f: data = f.read()
  _, status = os.waitpid(pid, 0)
  if os.WIFSIGNALED(status): raise ExecFault("CPU", f"the kernel was killed by {signal.Signals(os.WTERMSIG(status)).name}")
  kind, res = pickle.loads(data)
  if kind == "raised": raise res
  return res

_WORKERS: dict[tuple[int, str], object] = {}
def _worker(dev:str):
  # one worker per process and device (forked campaign jobs start their own)
  import os
  if dev == "AMD":
    from mockgpu.tinygrad.fuzz.kexec import amd_worker
    return amd_worker()
  if (key:=(os.getpid(), dev)) not in _WORKERS:
    from mockgpu.tinygrad.fuzz.devworker import DevWorker
    _WORKERS[key] = DevWorker(_DEV[dev])
  return _WORKERS[key]

# *** helpers ***

def _name(dt:DType) -> str: return next(n for n, d in DTYPES.items() if d == dt)
def _clip(v:int, dt:DType) -> int: return max(min(v, dt.max), dt.min)
def _np(dt:DType): return {1: {True: np.int8, False: np.uint8}, 2: {True: np.int16, False: np.uint16}, 4: {True: np.int32, False: np.uint32},
                           8: {True: np.int64, False: np.uint64}}[dt.itemsize][dt not in dtypes.uints]
def _walk(t:list, path:tuple=()) -> Iterator[tuple[tuple, list]]:
  yield path, t
  if t[0] not in ("x", "c"):
    yield from _walk(t[1], path + (1,))
    if t[0] not in ix.DIVS: yield from _walk(t[2], path + (2,))
def _put(t:list, path:tuple, new:list) -> list:
  if not path: return new
  out = list(t)
  out[path[0]] = _put(t[path[0]], path[1:], new)
  return out
def _map_consts(t:list, f) -> list:
  if t[0] == "x": return t
  if t[0] == "c": return ["c", f(t[1], False)]
  return [t[0], _map_consts(t[1], f), f(t[2], True) if t[0] in ix.DIVS else _map_consts(t[2], f)]

# the expression helpers the repro scripts inline (tinygrad only, no mockgpu)
_EXPR_SRC = '''OPS = {"cdiv": lambda a, b: cdiv(a, b), "cmod": lambda a, b: cmod(a, b), "floordiv": lambda a, b: floordiv(a, b),
       "floormod": lambda a, b: floormod(a, b), "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}
DIVS = ("cdiv", "cmod", "floordiv", "floormod")
def exact(t, xs):
  if t[0] == "x": return xs[t[1]]
  if t[0] == "c": return t[1]
  return OPS[t[0]](exact(t[1], xs), t[2] if t[0] in DIVS else exact(t[2], xs))'''

_UREPRO = '''"""mockgpu fuzz idiv: minimised failure [{cls}]. Needs only tinygrad 0.14.0. Exits 1 while it reproduces.{note}
Case: {case}"""
import sys
from tinygrad.uop.ops import UOp, Ops, exec_alu, graph_rewrite
from tinygrad.dtype import dtypes, truncate
from tinygrad.helpers import cdiv, cmod, floordiv, floormod, Target
from tinygrad.uop.symbolic import symbolic, symbolic_simple
from tinygrad.codegen.decomp.op import get_simplifying_rewrite_patterns, get_late_rewrite_patterns
from {mod} import {ren}
CASE = {case}
{expr}
dt = getattr(dtypes, CASE["dtype"])
U = {{"cdiv": Ops.CDIV, "cmod": Ops.CMOD, "floordiv": Ops.FLOORDIV, "floormod": Ops.FLOORMOD, "add": Ops.ADD, "sub": Ops.SUB, "mul": Ops.MUL}}
def build(t):
  if t[0] == "x": return UOp.variable(f"x{{t[1]}}", *CASE["box"][t[1]], dtype=dt)
  if t[0] == "c": return UOp.const(t[1], dt)
  a = build(t[1])
  return a.alu(U[t[0]], a.const_like(t[2]) if t[0] in DIVS else build(t[2]))
ren = {ren}({target})
ops = tuple(ren.code_for_op.keys())
early = symbolic_simple + get_simplifying_rewrite_patterns(ops)
low = graph_rewrite(graph_rewrite(graph_rewrite(build(CASE["expr"]), symbolic), early), early + get_late_rewrite_patterns(ops, False), ctx=ren)
print("lowered:", low.render(simplify=False))
def evaluate(u, env):  # tinygrad's own op semantics, truncated to each node's dtype
  if u.op in (Ops.PARAM, Ops.BUFFER) and getattr(u.arg, "name", None) is not None: return env[u.arg.name]
  if u.op is Ops.CONST: return u.arg
  if u.op is Ops.CAST: return truncate[u.dtype](evaluate(u.src[0], env))
  return exec_alu(u.op, u.dtype, [evaluate(s, env) for s in u.src])
bad = 0
for p in {pts}:
  want, got = exact(CASE["expr"], p), evaluate(low, {{f"x{{i}}": v for i, v in enumerate(p)}})
  print(f"x={{p}}: expected {{want}}, got {{got}}", "" if want == got else "MISMATCH")
  bad += want != got
sys.exit(1 if bad else 0)
'''

_KSETUP = {"AMD": '''os.environ["DEV"] = "MOCKKFD+AMD"  # activate the mock before tinygrad's runtime is imported
from mockgpu.tinygrad.activate import install
install()''', "NV": '''os.environ["DEV"] = "MOCK+NV:PTX"  # activate the mock before tinygrad's runtime is imported
from mockgpu.tinygrad.activate import install
install()'''}
_KREPRO = '''"""mockgpu fuzz idiv: minimised end-to-end failure [{cls}] on {dev} with DISABLE_FAST_IDIV=0. Needs tinygrad 0.14.0 and
clang (or CC=clang-19); mockgpu for the mock AMD and NV GPUs. Exits 1 while it reproduces.
Case: {case}"""
import os, shutil, sys
import numpy as np
if "CC" not in os.environ and shutil.which("clang") is None: os.environ["CC"] = "clang-19"
{setup}
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context, cdiv, cmod, floordiv, floormod
CASE = {case}
{expr}
def tensor(t, xs):
  if t[0] == "x": return xs[t[1]]
  if t[0] == "c": return t[1]
  a = tensor(t[1], xs)
  if isinstance(a, int): return exact([t[0], ["c", a], t[2]], [])
  if t[0] in DIVS: return {{"cdiv": lambda: a.div(t[2], rounding_mode="trunc"), "cmod": lambda: a.fmod(t[2]), "floordiv": lambda: a // t[2],
                           "floormod": lambda: a % t[2]}}[t[0]]()
  b = tensor(t[2], xs)
  return a + b if t[0] == "add" else a - b if t[0] == "sub" else a * b
dt = getattr(dtypes, CASE["dtype"])
with Context(DISABLE_FAST_IDIV=0, {ctx}):
  if "n" in CASE: xs, ts = [list(range(CASE["n"]))], [Tensor.arange(CASE["n"], dtype=dt)]
  else:
    arrs = [np.array(v, dtype=getattr(np, s)) for v, s in zip(CASE["values"], CASE["src"])]
    xs, ts = [a.astype(getattr(np, CASE["dtype"])).tolist() for a in arrs], [Tensor(a, device="{tdev}").cast(dt) for a in arrs]
  got = tensor(CASE["expr"], ts).numpy().tolist()
bad = 0
for p, g in zip(zip(*xs), got):
  if (want:=exact(CASE["expr"], list(p))) != g: print(f"x={{list(p)}}: expected {{want}}, got {{g}}"); bad += 1
print(f"{{bad}} mismatches of {{len(got)}}")
sys.exit(1 if bad else 0)
'''
