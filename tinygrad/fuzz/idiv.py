"""`idiv` fuzzer: tinygrad's fast integer division (`tinygrad.codegen.decomp.op.fast_idiv`, magic-number multiply and
shift, off by default in 0.14.0 through DISABLE_FAST_IDIV=1), checked bit-exactly at the real width with wrap-around.

Two case modes:
* `uop`: one division `x <op> d` of a variable x in [lo, hi] of an 8/16/32/64-bit signed or unsigned dtype, lowered with
  the decomposition passes codegen runs (`symbolic_simple + get_simplifying_rewrite_patterns`, then the same plus
  `get_late_rewrite_patterns(ops, disable_fast_idiv=False)` with a CPU ClangRenderer as context), then evaluated at every
  node's width (numpy, two's complement) on all of [lo, hi] for 8/16 bits, and on edge values plus random values for
  32/64 bits, against `tinygrad.helpers.cdiv/cmod/floordiv/floormod`. Mismatches are confirmed with `exec_alu`.
* `kernel`: end to end, `Tensor(values).cast(dst) // d` (or `% d`, or `Tensor.arange`) realised under
  `Context(DISABLE_FAST_IDIV=0)` on DEV=CPU and on every device of `kernel_devices` (`AMD`: the mock gfx1100 GPU, run in
  the `amdexec` worker process) and compared with Python integer semantics element by element.

Failure classes: `mismatch`, `kernel-mismatch` (CPU), `kernel-mismatch:AMD`, `kernel-fault:AMD` (the GPU faulted),
`exception:<where>:<Type>` (`kernel` on CPU, `kernel-AMD` on the mock GPU).
"""
from __future__ import annotations
import collections, os, random, shutil, zlib
from typing import Iterator
import numpy as np
from tinygrad.uop.ops import UOp, Ops, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes, DType
from tinygrad.helpers import cdiv, cmod, floordiv, floormod, Target
from tinygrad.uop.symbolic import symbolic_simple
from tinygrad.codegen.decomp.op import get_simplifying_rewrite_patterns, get_late_rewrite_patterns
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure
from mockgpu.tinygrad.fuzz.uopeval import eval_points, eval_exact, nodes

__all__ = ["IdivFuzzer", "lower", "renderer", "kernel_values", "DTYPES", "OPS", "KERNEL_DEVICES"]

DTYPES: dict[str, DType] = dict([("int8", dtypes.int8), ("int16", dtypes.int16), ("int32", dtypes.int32),
  ("int64", dtypes.int64), ("uint8", dtypes.uint8), ("uint16", dtypes.uint16), ("uint32", dtypes.uint32), ("uint64", dtypes.uint64)])
OPS = {"cdiv": cdiv, "cmod": cmod, "floordiv": floordiv, "floormod": floormod}
KERNEL_DEVICES = ("AMD",)  # devices besides CPU that run `kernel` cases (the mock AMD GPU, in a worker process)
KERNEL_SRC_DST = [("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"), ("uint64", "uint64"), ("uint8", "int16"),
                  ("uint8", "int32"), ("uint16", "int32"), ("uint32", "int64"), ("uint16", "int64"), ("int8", "uint32")]

_REN = None
def renderer():
  """Returns: the CPU ClangRenderer whose ops and dtypes drive the lowering (built once; compiling is never needed)."""
  global _REN
  if _REN is None:
    from tinygrad.renderer.cstyle import ClangRenderer
    _REN = ClangRenderer(Target("CPU", "CLANG", "x86_64,native"))
  return _REN

def build(case:dict) -> tuple[UOp, UOp]:
  """Returns: (x variable, the division node) of a `uop` case."""
  x = UOp.variable("x", case["lo"], case["hi"], dtype=DTYPES[case["dtype"]])
  d = x.const_like(case["d"])
  op = {"cdiv": Ops.CDIV, "cmod": Ops.CMOD, "floordiv": Ops.FLOORDIV, "floormod": Ops.FLOORMOD}[case["op"]]
  return x, x.alu(op, d)

def lower(node:UOp, extra_rules:PatternMatcher|None=None) -> UOp:
  """Lower divisions the way codegen's early and late decomposition passes do, with fast_idiv enabled.

  Args: node: the graph. extra_rules: tried before tinygrad's late rules (test-only bug injection).
  Returns: the lowered graph."""
  ops = tuple(renderer().code_for_op.keys())
  early = symbolic_simple + get_simplifying_rewrite_patterns(ops)
  node = graph_rewrite(node, early, name="fuzz early decompositions")
  late = early + get_late_rewrite_patterns(ops, False)
  return graph_rewrite(node, (extra_rules + late) if extra_rules is not None else late, ctx=renderer(), name="fuzz late decompositions")

def _inputs(case:dict) -> list[int]:
  lo, hi, d, bits = case["lo"], case["hi"], abs(case["d"]), DTYPES[case["dtype"]].bitsize
  if bits <= 16: return list(range(lo, hi + 1))
  vals = {lo, hi, min(lo + 1, hi), max(hi - 1, lo)}
  for k in {hi // d, hi // d - 1, lo // d + 1, 1, 2, 3}:
    vals.update(k * d + e for e in (-1, 0, 1))
  vals.update(s * 2**p + e for p in range(bits) for e in (-1, 0, 1) for s in (1, -1))
  rng = np.random.default_rng(zlib.crc32(repr(sorted(case.items())).encode()))
  vals.update(int(v) for v in rng.integers(lo, hi, 4000, endpoint=True, dtype=np.int64 if hi < 2**63 else np.uint64))
  return sorted(v for v in vals if lo <= v <= hi)

def _pick_d(rng:random.Random, bits:int, signed:bool) -> int:
  top = 2**(bits - 1) - 1 if signed else 2**bits - 1
  d = rng.choice([rng.randint(1, 20), rng.randint(1, 1000), rng.randint(1, top), 2**rng.randint(1, bits - 1 - signed) + rng.choice([-1, 1]),
                  top - rng.randint(0, 10)])
  return max(1, min(d, top))

class IdivFuzzer(Fuzzer):
  """Fuzz fast integer division (fast_idiv) at the real width.

  Args:
    extra_rules: a PatternMatcher tried before tinygrad's late decomposition rules (test-only bug injection).
    kernel_rate: probability of an end-to-end kernel case (needs a C compiler: `clang`, else `CC`/clang-19).
    widths: allowed bit widths (default 8, 16, 32, 64).
    negative_divisors: also divide signed values by negative constants (0.14.0 crashes there: docs/findings.md).
    kernel_devices: devices besides CPU that run every kernel case (default `KERNEL_DEVICES`: the mock AMD GPU; [] for CPU only).
  Raises:
    ExecutorUnavailable: a kernel device that is not in `KERNEL_DEVICES`.
  """
  name = "idiv"
  def __init__(self, extra_rules:PatternMatcher|None=None, kernel_rate:float=0.02, widths:list[int]|None=None, negative_divisors:bool=True,
               kernel_devices:list[str]|tuple[str, ...]=KERNEL_DEVICES):
    self.extra_rules, self.kernel_rate, self.widths, self.neg = extra_rules, kernel_rate, widths or [8, 16, 32, 64], negative_divisors
    self.kernel_devices, self.counts = list(kernel_devices), collections.Counter()
    if bad:=[d for d in self.kernel_devices if d not in KERNEL_DEVICES]:
      from mockgpu.tinygrad.fuzz.errors import ExecutorUnavailable
      raise ExecutorUnavailable(f"idiv kernel_devices={bad} cannot run kernel cases: pick from {list(KERNEL_DEVICES)} (CPU always runs)")
  def options(self) -> dict:
    return {"kernel_rate": self.kernel_rate, "widths": self.widths, "negative_divisors": self.neg, "kernel_devices": self.kernel_devices}
  def stats(self) -> dict: return dict(self.counts)

  def generate(self, rng:random.Random) -> dict:
    if rng.random() < self.kernel_rate:
      src, dst = rng.choice(KERNEL_SRC_DST)
      if rng.random() < 0.2: return {"mode": "kernel", "src": "arange", "dst": dst, "op": rng.choice(["floordiv", "floormod"]),
                                     "d": _pick_d(rng, 16, True), "n": rng.randint(1, min(5000, DTYPES[dst].max + 1))}
      sd = DTYPES[src]
      edge = [sd.min, sd.max, 0, 1, sd.max - 1] + [2**p + e for p in range(sd.bitsize - 1) for e in (-1, 0)]
      vals = sorted({*edge, *(rng.randint(sd.min, sd.max) for _ in range(64))})
      sign = -1 if self.neg and not dtypes.is_unsigned(DTYPES[dst]) and rng.random() < 0.25 else 1
      return {"mode": "kernel", "src": src, "dst": dst, "op": rng.choice(["floordiv", "floormod"]),
              "d": _pick_d(rng, min(sd.bitsize, DTYPES[dst].bitsize), True) * sign,
              "values": vals}
    bits = rng.choice(self.widths)
    signed = rng.random() < 0.5
    dt = DTYPES[f"{'' if signed else 'u'}int{bits}"]
    hi = rng.choice([dt.max, rng.randint(0, dt.max), 2**rng.randint(1, bits - signed) - 1])
    lo = 0 if rng.random() < 0.6 else rng.randint(0, hi) if not signed or rng.random() < 0.6 else rng.randint(dt.min + 1, 0)
    return {"mode": "uop", "dtype": f"{'' if signed else 'u'}int{bits}", "op": rng.choice(list(OPS)),
            "lo": lo, "hi": hi, "d": _pick_d(rng, bits, signed) * (-1 if signed and self.neg and rng.random() < 0.2 else 1)}

  def check(self, case:dict) -> Failure|None:
    f = self.find(case)
    return None if f is None else f[0]

  def find(self, case:dict) -> tuple[Failure, list]|None:
    """Returns: None, or (failure, failing inputs: x values for `uop`, indices into the values for `kernel`)."""
    return self._kernel(case) if case["mode"] == "kernel" else self._uop(case)

  def _uop(self, case:dict):
    dt = DTYPES[case["dtype"]]
    if not (dt.min <= case["lo"] <= case["hi"] <= dt.max) or not (case["d"] != 0 and dt.min < case["d"] <= dt.max): return None
    _, node = build(case)
    try: low = lower(node, self.extra_rules)
    except Exception as e: return Failure(f"exception:lower:{type(e).__name__}", f"lowering {case}: {e}"), []
    self.counts["lowered" if not any(u.op in (Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD) and u.src[1].op is Ops.CONST and
                                  u.src[1].arg & (u.src[1].arg - 1) for u in nodes(low)) else "not-lowered"] += 1
    xs = _inputs(case)
    vals, _ = eval_points(low, {"x": np.array(xs, dtype=np.uint64 if case["hi"] >= 2**63 else np.int64)})
    got, fn, d = vals[low].tolist(), OPS[case["op"]], case["d"]
    bad = [v for v, g in zip(xs, got) if g != fn(v, d)]
    bad = [v for v in bad[:16] if eval_exact(low, {"x": v})[low] != fn(v, d)]
    if not bad: return None
    v = bad[0]
    return Failure("mismatch", f"{case['dtype']} x in [{case['lo']}, {case['hi']}] {case['op']} {d}: at x={v} expected {fn(v, d)}, "
                               f"lowered graph gives {eval_exact(low, {'x': v})[low]} ({len(bad)}+ bad inputs)\n"
                               f"  lowered {low.render(simplify=False)}"), bad

  def _kernel(self, case:dict):
    from mockgpu.tinygrad.fuzz.errors import ExecFault
    from mockgpu.tinygrad.fuzz.kexec import amd_worker
    _ensure_cc()
    dst, d, fn = DTYPES[case["dst"]], case["d"], OPS[case["op"]]
    for dev in ["CPU", *self.kernel_devices]:
      sfx, where = ("", "kernel") if dev == "CPU" else (f":{dev}", f"kernel-{dev}")
      try:
        if dev == "CPU": xs, got = kernel_values("CPU", case)
        else:
          status, res = amd_worker().call(__name__, "kernel_values", case)
          if status != "ok": return Failure(f"exception:{where}:{res.split(':')[0]}", f"kernel on {dev} {case}: {res}"), []
          xs, got = res
      except ExecFault as e: return Failure(f"kernel-fault{sfx}", f"kernel on {dev} {case}: {e.detail}"), []
      except Exception as e: return Failure(f"exception:{where}:{type(e).__name__}", f"kernel {case}: {e}"), []
      self.counts["kernel" if dev == "CPU" else f"kernel-{dev}"] += 1
      bad = [i for i, (x, g) in enumerate(zip(xs, got)) if g != _wrap(fn(x, d), dst)]
      if bad:
        i = bad[0]
        return Failure(f"kernel-mismatch{sfx}", f"{dev} kernel {case['src']}->{case['dst']} {case['op']} {d}: at x={xs[i]} expected "
                                                f"{_wrap(fn(xs[i], d), dst)}, got {got[i]} ({len(bad)} bad of {len(xs)})"), bad
    return None

  def shrink(self, case:dict) -> Iterator[dict]:
    f = self.find(case)
    bad = f[1] if f else []
    if case["mode"] == "kernel":
      if case["src"] == "arange":
        if bad: yield {**case, "n": bad[0] + 1}
        yield {**case, "n": case["n"] // 2}
      else:
        for i in bad[:2]: yield {**case, "values": [case["values"][i]]}
        yield {**case, "values": case["values"][:len(case["values"]) // 2]}
        yield {**case, "values": case["values"][len(case["values"]) // 2:]}
      for d in _smaller(abs(case["d"])): yield {**case, "d": d if case["d"] > 0 else -d}
      if case["d"] < 0: yield {**case, "d": -case["d"]}
      return
    dt = DTYPES[case["dtype"]]
    for n in ("int8", "int16", "int32", "uint8", "uint16", "uint32"):
      t = DTYPES[n]
      if t.bitsize < dt.bitsize and dtypes.is_unsigned(t) == dtypes.is_unsigned(dt):
        yield {**case, "dtype": n, "lo": max(min(case["lo"], t.max), t.min), "hi": min(case["hi"], t.max), "d": max(min(case["d"], t.max), t.min + 1)}
    if case["op"] != "cdiv": yield {**case, "op": "cdiv" if case["op"] in ("floordiv", "cmod") else "cmod"}
    for d in _smaller(abs(case["d"])): yield {**case, "d": d if case["d"] > 0 else -d}
    if case["d"] < 0: yield {**case, "d": -case["d"]}
    lo, hi = case["lo"], case["hi"]
    for h in _smaller(hi) + ([max(bad), min(bad)] if bad else []):
      if lo <= h < hi: yield {**case, "hi": h}
    for l in ([min(bad), 0] if bad else [0]) + [lo + (hi - lo) // 2, lo + 1]:
      if lo < l <= hi: yield {**case, "lo": l}

  def describe(self, case:dict) -> str:
    if case["mode"] == "kernel": return f"kernel {case['src']}->{case['dst']} {case['op']} {case['d']}"
    return f"{case['dtype']} x in [{case['lo']}, {case['hi']}] {case['op']} {case['d']}"

  def repro(self, case:dict) -> str:
    f = self.find(case)
    bad = f[1][:8] if f else []
    if case["mode"] == "kernel":
      dev = "AMD" if f and ("AMD" in f[0].cls) else "CPU"
      return _KREPRO.format(cls=f[0].cls if f else "none (passes now)", case=case, dev=dev, full_dev="MOCKKFD+AMD" if dev == "AMD" else "CPU")
    note = "\nNOTE: found with test-only injected rewrite rules, which this script does not apply." if self.extra_rules is not None else ""
    return _UREPRO.format(note=note, cls=f[0].cls if f else "none (passes now)", case=case, xs=bad or [case["lo"], case["hi"]])

def kernel_values(device:str, case:dict) -> tuple[list[int], list[int]]:
  """Realise a `kernel` case on `device` with DISABLE_FAST_IDIV=0 (the AMD worker calls this with its device name).

  Returns: (inputs after the cast to the destination dtype, the kernel's results)."""
  from tinygrad import Tensor
  from tinygrad.helpers import Context
  dst = DTYPES[case["dst"]]
  with Context(DISABLE_FAST_IDIV=0):
    # Tensor.arange's own expression, on `device` (arange takes no device)
    if case["src"] == "arange": t, xs = (Tensor.full((case["n"],), 1, dtype=dst, device=device)._cumalu(0, Ops.ADD) - 1).cast(dst), \
      list(range(case["n"]))
    else:
      src = DTYPES[case["src"]]
      t = Tensor(np.array(case["values"], dtype=_np(src)), device=device).cast(dst)
      xs = np.array(case["values"], dtype=_np(src)).astype(_np(dst)).tolist()
    return xs, (t // case["d"] if case["op"] == "floordiv" else t % case["d"]).numpy().tolist()

def _smaller(v:int) -> list[int]: return [x for x in dict.fromkeys([1, 2, 3, v // 2, v - 1]) if 0 < x < v]
def _np(dt:DType): return {1: {True: np.int8, False: np.uint8}, 2: {True: np.int16, False: np.uint16}, 4: {True: np.int32, False: np.uint32},
                           8: {True: np.int64, False: np.uint64}}[dt.itemsize][not dtypes.is_unsigned(dt)]
def _wrap(v:int, dt:DType) -> int:
  v &= 2**dt.bitsize - 1
  return v - 2**dt.bitsize if not dtypes.is_unsigned(dt) and v >= 2**(dt.bitsize - 1) else v

def _ensure_cc() -> None:
  # tinygrad's CPU backend runs $CC or `clang`; Debian ships clang-19 without the plain name
  if "CC" not in os.environ and shutil.which("clang") is None and shutil.which("clang-19") is not None: os.environ["CC"] = "clang-19"

_UREPRO = '''"""mockgpu fuzz idiv: minimised failure [{cls}]. Needs only tinygrad 0.14.0. Exits 1 while it reproduces.{note}
Case: {case}"""
import sys
from tinygrad.uop.ops import UOp, Ops, exec_alu, graph_rewrite
from tinygrad.dtype import dtypes, truncate
from tinygrad.helpers import cdiv, cmod, floordiv, floormod, Target
from tinygrad.uop.symbolic import symbolic_simple
from tinygrad.codegen.decomp.op import get_simplifying_rewrite_patterns, get_late_rewrite_patterns
from tinygrad.renderer.cstyle import ClangRenderer
CASE = {case}
ren = ClangRenderer(Target("CPU", "CLANG", "x86_64,native"))
ops = tuple(ren.code_for_op.keys())
x = UOp.variable("x", CASE["lo"], CASE["hi"], dtype=getattr(dtypes, CASE["dtype"]))
op = {{"cdiv": Ops.CDIV, "cmod": Ops.CMOD, "floordiv": Ops.FLOORDIV, "floormod": Ops.FLOORMOD}}[CASE["op"]]
early = symbolic_simple + get_simplifying_rewrite_patterns(ops)
low = graph_rewrite(graph_rewrite(x.alu(op, x.const_like(CASE["d"])), early), early + get_late_rewrite_patterns(ops, False), ctx=ren)
print("lowered:", low.render(simplify=False))
def evaluate(u, env):  # tinygrad's own op semantics, truncated to each node's dtype
  if u.op in (Ops.BUFFER, Ops.PARAM): return env[u.arg.name]
  if u.op is Ops.CONST: return u.arg
  if u.op is Ops.CAST: return truncate[u.dtype](evaluate(u.src[0], env))
  return exec_alu(u.op, u.dtype, [evaluate(s, env) for s in u.src])
fn = {{"cdiv": cdiv, "cmod": cmod, "floordiv": floordiv, "floormod": floormod}}[CASE["op"]]
bad = 0
for v in {xs}:
  want, got = fn(v, CASE["d"]), evaluate(low, {{"x": v}})
  print(f"x={{v}}: expected {{want}}, got {{got}}", "" if want == got else "MISMATCH")
  bad += want != got
sys.exit(1 if bad else 0)
'''

_KREPRO = '''"""mockgpu fuzz idiv: minimised end-to-end failure [{cls}] on DEV={full_dev} with DISABLE_FAST_IDIV=0. Needs tinygrad
0.14.0 and clang (or CC=clang-19); mockgpu for DEV=MOCKKFD+AMD (the mock gfx1100 GPU). Exits 1 while it reproduces.
Case: {case}"""
import os, shutil, sys
import numpy as np
if "CC" not in os.environ and shutil.which("clang") is None: os.environ["CC"] = "clang-19"
if "{dev}" == "AMD":  # activate the mock before tinygrad's runtime is imported
  os.environ["DEV"] = "MOCKKFD+AMD"
  from mockgpu.tinygrad.activate import install
  install()
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
CASE = {case}
dst = getattr(dtypes, CASE["dst"])
with Context(DISABLE_FAST_IDIV=0, DEV="{full_dev}"):
  if CASE["src"] == "arange": t, xs = Tensor.arange(CASE["n"], dtype=dst), list(range(CASE["n"]))
  else:
    a = np.array(CASE["values"], dtype=getattr(np, CASE["src"]))
    t, xs = Tensor(a, device="{dev}").cast(dst), a.astype(getattr(np, CASE["dst"])).tolist()
  got = (t // CASE["d"] if CASE["op"] == "floordiv" else t % CASE["d"]).numpy().tolist()
def wrap(v, bits, signed):
  v &= 2**bits - 1
  return v - 2**bits if signed and v >= 2**(bits - 1) else v
bad = 0
for x, g in zip(xs, got):
  want = wrap(x // CASE["d"] if CASE["op"] == "floordiv" else x % CASE["d"], dst.bitsize, not dtypes.is_unsigned(dst))
  if want != g: print(f"x={{x}}: expected {{want}}, got {{g}}"); bad += 1
print(f"{{bad}} mismatches of {{len(xs)}}")
sys.exit(1 if bad else 0)
'''
