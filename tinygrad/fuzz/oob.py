"""The oob fuzzer: tinygrad's static bounds check (CHECK_OOB=1, z3) against dynamic execution and an exhaustive ground truth.

A case is one kernel that reads (or writes) a data buffer at a random index expression, optionally gated, over one to three
loops; the index may use a value loaded from an index buffer. The ground truth is every index the kernel touches, computed
here over all iterations. Three verdicts are compared:
  truth    some gated-in iteration indexes outside [0, size)        (this module, exhaustively)
  static   tinygrad's spec check with CHECK_OOB=1 rejects the kernel  (`static_check`, z3 inside tinygrad)
  dynamic  an executor faults (`DYNAMIC`: the PYTHON emulator's bounds errors, the mock AMD GPU's fault reports, faithful
           (page-granular) and in strict mode (byte-exact: a write outside the buffer faults, a read there is reported))
A lowering that stops with tinygrad's own shape error (`invalid shrink`, an upcast access past the end) counts as flagged
statically and as faulting dynamically (the kernel cannot be built, so it cannot touch memory).
Failure classes: `static-miss` (out of bounds, static check passes: unsound; `static-miss:vectorized` when the access is an
upcast vector load/store, which tinygrad's check skips), `false-alarm` (in bounds on every input the
check must consider, static check flags: only judged when the index is data-independent or the index buffer holds every value
of its dtype), `dynamic-miss:<EXEC>` / `dynamic-fault:<EXEC>` (an executor disagrees with the truth: a miscompile),
`static-crash` (the check raised instead of answering). A page-granular executor (AMD: `Executor.slack`) must fault when an
index lands in the unmapped guard around the data buffer, must not fault inside the buffer or the mapped slack around it
(alignment padding after, the rest of the page before), and may do either beyond the guard (`expected_fault`).
"""
from __future__ import annotations
import copy, inspect, json, random
from collections import Counter
from typing import Any, Callable, Iterator, Sequence
import numpy as np
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure, safe_check
from mockgpu.tinygrad.fuzz.errors import ExecFault
from mockgpu.tinygrad.fuzz.kexec import Executor, amd_executor, amd_worker, executor, quiet

__all__ = ["OobFuzzer", "static_check", "itemsize", "vectorized_access", "truth", "exhaustive", "expected_fault", "build_oob_ast", "arrays",
           "DYNAMIC", "STRICT", "DTYPES", "IDX_DTYPES", "LOCAL_MAX"]

STRICT = "AMD-STRICT"  # the mock AMD GPU in strict mode (MOCKGPU_STRICT=1): byte-exact buffers, a dynamic executor of this fuzzer only
DYNAMIC: tuple[str, ...] = ("PYTHON", "AMD", STRICT)  # executors that report out-of-bounds accesses
# the data buffer's dtypes (every buffer dtype tinygrad's renderers here take) and their numpy storage (bfloat16 as its bits)
DTYPES: dict[str, str] = {"bool": "bool", "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16", "int32": "int32",
                          "uint32": "uint32", "int64": "int64", "uint64": "uint64", "float16": "float16", "bfloat16": "uint16",
                          "float32": "float32", "float64": "float64"}
LOCAL_MAX = 256  # elements of a local (LDS) data buffer: every thread fills it once per run
IDX_DTYPES = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2**31, 2**31-1)}
BIN, CMP = ("+", "*", "//", "%", "max"), ("<", "!=")

# *** the case language: nested lists ***
#   ["r", k] loop k | ["c", v] constant | ["ld"] index buffer at the load loop | [op, a, b] op in BIN (// % * take a constant b)
#   gates: ["<", a, b] | ["!=", a, b] | ["&", g, h]

def _ev(e:list, env:dict) -> int|bool:
  op = e[0]
  if op == "r": return env[e[1]]
  if op == "c": return e[1]
  if op == "ld": return env["ld"]
  a, b = _ev(e[1], env), _ev(e[2], env)
  if op == "+": return a + b
  if op == "*": return a * b
  if op in ("//", "%"):
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # CDIV/CMOD truncate toward zero
    return q if op == "//" else a - q*b
  if op == "max": return max(a, b)
  if op == "<": return a < b
  if op == "!=": return a != b
  return bool(a) and bool(b)

def _iterations(case:dict) -> Iterator[dict]:
  dims, ld = case["dims"], case.get("ibuf")
  for flat in range(int(np.prod(dims))):
    env, rem = {}, flat
    for k in reversed(range(len(dims))): env[k], rem = rem % dims[k], rem // dims[k]
    if ld is not None: env["ld"] = ld["data"][env[ld["loop"]]]
    yield env

def truth(case:dict) -> tuple[bool, int|None, int|None]:
  """Exhaustive ground truth of a case.

  Returns:
    (out_of_bounds, min index touched, max index touched); min/max are None when the gate masks every iteration.
  """
  lo = hi = None
  for env in _iterations(case):
    if case["gate"] is not None and not _ev(case["gate"], env): continue
    i = _ev(case["idx"], env)
    lo, hi = (i, i) if lo is None else (min(lo, i), max(hi, i))
  return (lo is not None and (lo < 0 or hi >= case["size"])), lo, hi

def itemsize(case:dict) -> int:
  """Returns: the byte size of one element of the case's data buffer."""
  return np.dtype(DTYPES[case.get("dtype", "int32")]).itemsize

def expected_fault(case:dict, ex:Executor) -> bool|None:
  """Whether executor `ex` must fault on `case`: True/False, or None when it is left open (for a granular executor, an
  index beyond the guard around the data buffer may hit another mapping). Indices in the slack around the buffer do not fault:
  `ex.slack` for a global buffer (pages), `ex.lds_slack` for a local one (the LDS allocation granule; beyond it the access
  may fault or, LLVM assuming it in bounds, be folded away: open)."""
  oob, lo, hi = truth(case)
  sl = ex.lds_slack if case.get("space") == "local" else ex.slack
  if sl is None or lo is None or hi is None: return oob
  n = itemsize(case)
  nbytes = n * case["size"]
  before, after, guard = sl(nbytes)
  def where(b:int) -> str: return "in" if -before <= b < nbytes + after else "guard" if -before - guard <= b < nbytes + after + guard else "far"
  ends = {where(n * lo), where(n * hi + n - 1)}
  # a local buffer is a typed LDS array reached by `getelementptr inbounds`: LLVM may assume every index is in bounds and
  # fold or drop an access outside it (seen: a store at -1 of a 1-element array disappears), so outside it is left open
  if case.get("space") == "local" and ends != {"in"}: return None
  return True if "guard" in ends else False if ends == {"in"} else None

def _uses(e:list, what:tuple) -> bool: return list(e[:len(what)]) == list(what) or any(isinstance(x, list) and _uses(x, what) for x in e[1:])

def exhaustive(case:dict) -> bool:
  """Whether the iterations cover every input the static check must assume: the index is data-independent, or it loads from an
  index buffer that holds every value of its dtype at a loop used only for that load."""
  ld = case.get("ibuf")
  if ld is None or not (_uses(case["idx"], ("ld",)) or (case["gate"] is not None and _uses(case["gate"], ("ld",)))): return True
  lo, hi = IDX_DTYPES[ld["dtype"]]
  loop_used = _uses(case["idx"], ("r", ld["loop"])) or (case["gate"] is not None and _uses(case["gate"], ("r", ld["loop"])))
  return not loop_used and hi - lo + 1 <= len(ld["data"]) and set(ld["data"]) == set(range(lo, hi+1))

# *** generation ***

def _gen_expr(rng:random.Random, loops:list[int], has_ld:bool, depth:int) -> list:
  if depth <= 0 or rng.random() < 0.3:
    r = rng.random()
    if has_ld and r < 0.25: return ["ld"]
    if r < 0.8 and loops: return ["r", rng.choice(loops)]
    return ["c", rng.randint(-4, 16)]
  op = rng.choice(BIN)
  a = _gen_expr(rng, loops, has_ld, depth-1)
  if op == "*": return [op, a, ["c", rng.choice([1, 2, 3, 4, 5, 8, 16, -1, -2, 100])]]
  if op in ("//", "%"): return [op, a, ["c", rng.choice([1, 2, 3, 4, 5, 7, 8, 16])]]
  return [op, a, _gen_expr(rng, loops, has_ld, depth-1)]

def _gen_gate(rng:random.Random, loops:list[int], has_ld:bool) -> list:
  g = [rng.choice(CMP), _gen_expr(rng, loops, has_ld, 1), ["c", rng.randint(-2, 12)]]
  return g if rng.random() < 0.7 else ["&", g, _gen_gate(rng, loops, has_ld)]

def generate(rng:random.Random) -> dict:
  """Draw a random case (see the module docstring); the buffer size is chosen from the truth so about half the cases are just
  in bounds and half just out of bounds."""
  nloops = rng.choice([1, 1, 2, 2, 3])
  dims = [rng.choice([1, 2, 3, 4, 5, 7, 8, 13, 16]) for _ in range(nloops)]
  while np.prod(dims) > 512: dims[dims.index(max(dims))] //= 2  # the PYTHON emulator runs every iteration in Python
  axes = [rng.choice(["LOOP", "LOOP", "GLOBAL"]) for _ in range(nloops)]
  ibuf = None
  if rng.random() < 0.35:
    dt = rng.choice(["uint8", "uint8", "int8", "int16", "int32"])
    lo, hi = IDX_DTYPES[dt]
    if dt in ("uint8", "int8"): data = rng.sample(range(lo, hi+1), hi-lo+1)
    else: data = [rng.choice([lo, hi, 0, -1, 1, rng.randint(-300, 300), rng.randint(lo, hi)]) for _ in range(rng.choice([4, 16, 64]))]
    while np.prod(dims) > 16: dims[dims.index(max(dims))] //= 2
    dims.append(len(data))
    axes.append("LOOP")
    ibuf = {"dtype": dt, "data": data, "loop": len(dims) - 1}
  loops = list(range(nloops))
  case: dict = {"dims": dims, "axes": axes, "ibuf": ibuf, "mode": rng.choice(["load", "load", "store"]), "size": 1,
                "idx": _gen_expr(rng, loops, ibuf is not None, rng.randint(1, 4)),
                "gate": _gen_gate(rng, loops, ibuf is not None) if rng.random() < 0.4 else None}
  _, lo, hi = truth(case)
  if lo is None: case["size"] = rng.randint(1, 16)
  else:
    shift = -lo + rng.choice([0, 0, 0, 0, -1]) if lo < 0 or rng.random() < 0.5 else 0
    if shift: case["idx"], lo, hi = ["+", case["idx"], ["c", shift]], lo + shift, hi + shift
    case["size"] = max(1, hi + 1 + rng.choice([-1, 0, 0, 0, 1, 5])) if hi < 1 << 16 else rng.randint(1, 1 << 16)
  # the data buffer: its dtype, a local (LDS) buffer for small ones, LOCAL (workgroup) axes, explicit upcast/local opts
  case["dtype"] = rng.choice(list(DTYPES)) if rng.random() < 0.6 else "int32"
  if case["size"] <= LOCAL_MAX and np.prod(dims) <= 64 and rng.random() < 0.35: case["space"] = "local"
  for k in range(nloops):
    if rng.random() < 0.2: case["axes"][k] = "LOCAL"
  # an opt on a GLOBAL or LOCAL axis (tinygrad upcasts GLOBAL/LOCAL/WEAK axes and splits GLOBAL ones into LOCAL; LOOP stays a loop)
  if rng.random() < 0.3 and (cand:=[k for k in range(nloops) if case["axes"][k] != "LOOP" and any(dims[k] % n == 0 for n in (2, 3, 4, 8))]):
    k = rng.choice(cand)
    op = rng.choice(["UPCAST", "UPCAST", "LOCAL"] if case["axes"][k] == "GLOBAL" else ["UPCAST"])
    case["opts"] = [[op, k, rng.choice([n for n in (2, 3, 4, 8) if dims[k] % n == 0])]]
  if case["gate"] is not None and case["mode"] == "load" and rng.random() < 0.5: case["gate_form"] = "where"
  return case

# *** tinygrad ***

def build_oob_ast(case):
  """Build the kernel AST of an oob case (self-contained: repro scripts embed this function's source). Buffer slots: 0 the data
  buffer (global space) or the output, then the output (global load mode), then the index buffer. A local (LDS) data buffer
  is a DEFINE_LOCAL (`BUFFER` in the LOCAL address space): in load mode every thread first fills it (a loop over its
  elements), in store mode the kernel then reads element 0 back into a one-element output."""
  import math
  from tinygrad.dtype import dtypes, AddrSpace
  from tinygrad.uop.ops import UOp, Ops, KernelInfo, AxisType, ParamArg
  from tinygrad.codegen.opt import Opt, OptOps
  def param(slot, size, dt): return UOp(Ops.PARAM, dt, (UOp.const(size, dtypes.weakint),), ParamArg(slot, dt, device="CPU"))
  dims, dt, local = case["dims"], getattr(dtypes, case.get("dtype", "int32")), case.get("space") == "local"
  rngs = [UOp.range(d, k, getattr(AxisType, a)) for k, (d, a) in enumerate(zip(dims, case["axes"]))]
  data, ib = param(0, case["size"], dt) if not local else UOp.placeholder((case["size"],), dt, 10, AddrSpace.LOCAL), case.get("ibuf")
  out_slot = 0 if local else 1
  ld = None
  if ib is not None:
    ibuf = param(out_slot + (case["mode"] == "load" or local), len(ib["data"]), getattr(dtypes, ib["dtype"]))
    ld = ibuf.index(rngs[ib["loop"]]).cast(dtypes.weakint)
  def ev(e):
    if e[0] == "r": return rngs[e[1]]
    if e[0] == "c": return UOp.const(e[1], dtypes.weakint)
    if e[0] == "ld": return ld
    a, b = ev(e[1]), ev(e[2])
    if e[0] == "<": return a < b
    if e[0] == "!=": return a.ne(b)
    if e[0] == "&": return a & b
    return UOp({"+": Ops.ADD, "*": Ops.MUL, "//": Ops.CDIV, "%": Ops.CMOD, "max": Ops.MAX}[e[0]], dtypes.weakint, (a, b))
  idx = ev(case["idx"])
  gate = ev(case["gate"]) if case["gate"] is not None else None
  # gate_form "where": a load gated only by the WHERE that selects its value (tinygrad folds that into the load's gate)
  if gate is not None and not (case.get("gate_form") == "where" and case["mode"] == "load"): idx = gate.where(idx, UOp.invalid())
  flat = UOp.const(0, dtypes.weakint)
  for r, d in zip(rngs, dims): flat = flat * d + r
  seven = UOp.const(True if dt == dtypes.bool else 7, dt)
  if case["mode"] == "store":
    st = data.index(idx).store(seven).end(*rngs)
    if local: st = param(out_slot, 1, dt).index(UOp.const(0, dtypes.weakint)).store(data.after(st).index(UOp.const(0, dtypes.weakint)))
  else:
    if local:
      fill = UOp.range(case["size"], len(dims), AxisType.LOOP)
      data = data.after(data.index(fill).store(fill.cast(dt)).end(fill))
    val = data.index(idx)
    st = param(out_slot, math.prod(dims), dt).index(flat).store(gate.where(val, UOp.const(0, dt)) if gate is not None else val).end(*rngs)
  # an opt names loop k of the case; tinygrad's Scheduler numbers the ranges of size > 1 in (LOOP, GLOBAL, LOCAL, loop) order,
  # the fill loop of a local buffer (loop len(dims)) included
  types = case["axes"] + (["LOOP"] if local and case["mode"] == "load" else [])
  order = sorted((k for k, d in enumerate(dims + [case["size"]]) if k < len(types) and d > 1),
                 key=lambda k: ({"LOOP": -1, "GLOBAL": 0, "LOCAL": 2}[types[k]], k))
  opts = tuple(Opt(getattr(OptOps, o), order.index(k) if k in order else len(order), n) for o, k, n in case["opts"]) \
    if case.get("opts") is not None else None
  return st.sink(arg=KernelInfo(name="fuzz_oob", opts_to_apply=opts))

def arrays(case:dict) -> list[np.ndarray]:
  """Returns: the zeroed numpy arrays a case's kernel runs on, one per PARAM slot (bfloat16 stored as uint16)."""
  dt, local = np.dtype(DTYPES[case.get("dtype", "int32")]), case.get("space") == "local"
  out = ([] if local else [np.zeros(case["size"], dt)]) + \
        ([np.zeros(1 if case["mode"] == "store" else int(np.prod(case["dims"])), dt)] if local or case["mode"] == "load" else [])
  if case.get("ibuf") is not None: out.append(np.array(case["ibuf"]["data"], np.dtype(case["ibuf"]["dtype"])))
  return out

def static_check(ast, renderer=None) -> bool:
  """tinygrad's static bounds check: lower `ast` with CHECK_OOB=1 (SPEC on) and report whether the spec rejected an index.

  Args:
    ast: the kernel AST.
    renderer: the renderer whose lowering is checked (default: PYTHON's, the one the dynamic executor runs).
  Returns:
    True if tinygrad flags an out-of-bounds access (the spec rejects a LOAD or STORE).
  Raises:
    whatever tinygrad raises besides that spec failure (z3 conversion errors, a spec failure of another op...): the caller
    reports `static-crash`.
  """
  from tinygrad.codegen import full_rewrite_to_sink
  from tinygrad.helpers import Context, Target
  from tinygrad.runtime.ops_python import PythonRenderer
  try:
    with Context(CHECK_OOB=1, SPEC=1), quiet(): full_rewrite_to_sink(ast, renderer or PythonRenderer(Target("PYTHON")))
  except RuntimeError as e:
    # CHECK_OOB's verdict is the spec of a LOAD or STORE (validate_index); a spec failure elsewhere is not about bounds
    if str(e).startswith("UOp verification failed") and (" on Ops.LOAD " in str(e) or " on Ops.STORE " in str(e)): return True
    raise
  return False

def _rejected(e:Exception) -> bool:
  # lowering an upcast access past the end of a buffer fails tinygrad's own shape check: a (correct) static rejection
  return isinstance(e, ValueError) and str(e).startswith("invalid shrink")

def vectorized_access(ast) -> bool:
  """Returns: whether PYTHON's lowering of `ast` accesses memory through a vector SHRINK (which CHECK_OOB does not check)."""
  from tinygrad.codegen import full_rewrite_to_sink
  from tinygrad.helpers import Target
  from tinygrad.uop.ops import Ops
  from tinygrad.runtime.ops_python import PythonRenderer
  with quiet(): sink = full_rewrite_to_sink(ast, PythonRenderer(Target("PYTHON")))
  return any(u.op is Ops.SHRINK and len(u.src) > 2 for u in sink.toposort())

class OobFuzzer(Fuzzer):
  """Static-vs-dynamic bounds fuzzer.

  Args:
    dynamic: executor names that report faults (default `DYNAMIC`).
    extra: additional dynamic `Executor` objects (tests; not saved in `options`).
    static: the static oracle, `static(ast) -> flagged` (default `static_check`; tests inject a broken one).
  """
  name = "oob"
  def __init__(self, dynamic:Sequence[str]=DYNAMIC, extra:Sequence[Executor]=(), static:Callable[[Any], bool]|None=None):
    self.dynamic_names, self.extra, self.static = tuple(dynamic), tuple(extra), static or static_check
    self._executors: list[Executor]|None = None
    self._stats: Counter = Counter()
  def options(self) -> dict: return {"dynamic": list(self.dynamic_names)}
  def stats(self) -> dict[str, int]:
    """Returns: cases by truth (`oob`, `in_bounds`) and the data-dependent ones whose static flag could not be judged (`inconclusive`)."""
    return dict(self._stats)
  def executors(self) -> list[Executor]:
    """Returns: the dynamic executors, built on first use."""
    if self._executors is None:
      self._executors = [amd_executor(n, strict=True) if n == STRICT else executor(n) for n in self.dynamic_names] + list(self.extra)
      # the mock GPU worker (one for both memory modes) sets up while the first case's other verdicts are computed
      if any(n in ("AMD", STRICT) for n in self.dynamic_names): amd_worker().start()
    return self._executors

  def generate(self, rng:random.Random) -> dict: return generate(rng)
  def prepare(self) -> None:
    """Build the executors, start the mock GPU worker and run one in-bounds kernel on each (its counters are not kept)."""
    saved = self._stats.copy()
    safe_check(self, {"dims": [2], "axes": ["LOOP"], "ibuf": None, "mode": "load", "size": 2, "idx": ["r", 0], "gate": None, "dtype": "int32"})
    self._stats = saved

  def verdicts(self, case:dict) -> dict:
    """Returns: {"truth": bool, "exhaustive": bool, "static": bool|str (str: the exception), <executor>: "fault"|"clean"|"rejected"
    (tinygrad's lowering refused the kernel: an upcast access past the end)|str (the exception), <executor>:detail: the fault report};
    when the case's opts do not apply to its kernel (tinygrad's KernelOptError) only truth, exhaustive, "static": "opts" and
    "opts": the error."""
    from tinygrad.codegen.opt import KernelOptError
    oob, _, _ = truth(case)
    out: dict = {"truth": oob, "exhaustive": exhaustive(case)}
    ast = build_oob_ast(case)
    try: out["static"] = self.static(ast)
    except KernelOptError as e: return {**out, "static": "opts", "opts": str(e)}  # the case's opts do not apply to this kernel
    except Exception as e: out["static"] = True if _rejected(e) else f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    programs: dict = {}  # executors sharing a renderer compile once
    for ex in self.executors():
      try: ex.run(ast, arrays(case), programs); out[ex.name] = "clean"
      except ExecFault as e: out[ex.name], out[f"{ex.name}:detail"] = "fault", e.detail
      except KernelOptError as e: return {**out, "static": "opts", "opts": str(e)}
      except Exception as e: out[ex.name] = "rejected" if _rejected(e) else f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return out

  def check(self, case:dict) -> Failure|None:
    v = self.verdicts(case)
    if v["static"] == "opts":
      self._stats["opts_rejected"] += 1
      return None
    self._stats["oob" if v["truth"] else "in_bounds"] += 1
    self._stats[case.get("space", "global")] += 1
    if not v["truth"] and v["static"] is True and not v["exhaustive"]: self._stats["inconclusive"] += 1
    desc = f"truth={'OOB' if v['truth'] else 'in-bounds'} static={v['static']} " + " ".join(f"{ex.name}={v[ex.name]}" for ex in self.executors())
    for ex in self.executors():
      if v[ex.name] not in ("fault", "clean", "rejected"): return Failure(f"dynamic-crash:{ex.name}", desc)
      # a lowering that rejects the kernel (tinygrad's shape check) is right exactly when some element is out of bounds
      if v[ex.name] == "rejected": want = v["truth"]
      elif (want:=expected_fault(case, ex)) is None: continue
      if (v[ex.name] != "clean") != want:
        detail = f" ({ex.name}: {v[ex.name + ':detail']})" if v[ex.name] == "fault" else ""
        return Failure(f"dynamic-{'miss' if want else 'fault'}:{ex.name}", desc + detail)
    if isinstance(v["static"], str): return Failure("static-crash", desc)
    if v["truth"] and not v["static"]:
      # tinygrad's validate_index returns True for any INDEX/SHRINK with more than two sources: upcast (vector) accesses
      return Failure("static-miss:vectorized" if vectorized_access(build_oob_ast(case)) else "static-miss", desc)
    if not v["truth"] and v["static"] and v["exhaustive"]: return Failure("false-alarm", desc)
    return None

  def shrink(self, case:dict) -> Iterator[dict]:
    def var(**kw) -> dict:  # defaults are left out: no opts (tinygrad's heuristic), a global data buffer
      return {k: v for k, v in {**copy.deepcopy(case), **kw}.items()
              if not (k in ("opts", "gate_form") and v is None or k == "space" and v == "global")}
    if case["gate"] is not None:
      yield var(gate=None, gate_form=None)
      if case["gate"][0] == "&": yield var(gate=case["gate"][1]); yield var(gate=case["gate"][2])
    for k, d in enumerate(case["dims"]):
      if case.get("ibuf") is not None and case["ibuf"]["loop"] == k: continue
      for nd in dict.fromkeys((1, d // 2, d - 1)):
        if 1 <= nd < d: yield var(dims=case["dims"][:k] + [nd] + case["dims"][k+1:])
      if case["axes"][k] == "GLOBAL": yield var(axes=case["axes"][:k] + ["LOOP"] + case["axes"][k+1:])
    for k, d in enumerate(case["dims"]):
      if d == 1 and (case.get("ibuf") is None or case["ibuf"]["loop"] != k): yield _drop_loop(case, k)
    if case.get("ibuf") is not None and not _uses(case["idx"], ("ld",)) and (case["gate"] is None or not _uses(case["gate"], ("ld",))):
      k = case["ibuf"]["loop"]
      yield var(ibuf=None, dims=case["dims"][:k] + case["dims"][k+1:], axes=case["axes"][:k] + case["axes"][k+1:])
    if case["mode"] == "store": yield var(mode="load")
    if case.get("opts"): yield var(opts=None)
    if case.get("gate_form"): yield var(gate_form=None)
    if case.get("space") == "local": yield var(space="global")
    if case.get("dtype", "int32") != "int32": yield var(dtype="int32")
    for k, a in enumerate(case["axes"]):
      if a == "LOCAL": yield var(axes=case["axes"][:k] + ["LOOP"] + case["axes"][k+1:])
    for path, sub in _subtrees(case["idx"]):
      for rep in _smaller(sub): yield var(idx=_replace_at(case["idx"], path, rep))
    if case["gate"] is not None:
      for path, sub in _subtrees(case["gate"]):
        for rep in _smaller(sub): yield var(gate=_replace_at(case["gate"], path, rep))
    for ns in dict.fromkeys((1, case["size"] // 2, case["size"] - 1)):  # toward 1 by halving
      if 1 <= ns < case["size"]: yield var(size=ns)

  def describe(self, case:dict) -> str:
    axes = "".join("GLR"["GLOBAL LOOP LOCAL".split().index(a)] for a in case["axes"])
    return f"dims={case['dims']} axes={axes} {case.get('space', 'global')} {case.get('dtype', 'int32')}[{case['size']}] mode={case['mode']} " \
           f"idx={_show(case['idx'])}" + (f" opts={case['opts']}" if case.get("opts") else "") + \
           (f" gate{'(where)' if case.get('gate_form') else ''}={_show(case['gate'])}" if case["gate"] is not None else "") + \
           (f" ibuf={case['ibuf']['dtype']}" if case.get("ibuf") else "")

  def repro(self, case:dict) -> str:
    f = self.check(case)
    build = f"DTYPES = {DTYPES!r}\n" + inspect.getsource(build_oob_ast) + "\n" + inspect.getsource(arrays)
    return _REPRO.format(msg=(f.cls + ": " + f.message) if f else "passes now", build=build,
                         case=json.dumps(case), want=json.dumps(f.cls if f else ""), describe=self.describe(case))

def _drop_loop(case:dict, k:int) -> dict:
  # a loop of size 1 is the constant 0: substitute it and renumber the loops after it
  def sub(e:list) -> list:
    if e[0] == "r": return ["c", 0] if e[1] == k else ["r", e[1] - (e[1] > k)]
    return e if e[0] in ("c", "ld") else [e[0], sub(e[1]), sub(e[2])]
  c = copy.deepcopy(case)
  c["dims"], c["axes"] = c["dims"][:k] + c["dims"][k+1:], c["axes"][:k] + c["axes"][k+1:]
  c["idx"], c["gate"] = sub(c["idx"]), sub(c["gate"]) if c["gate"] is not None else None
  if c.get("ibuf") is not None and c["ibuf"]["loop"] > k: c["ibuf"]["loop"] -= 1
  if c.get("opts") and not (opts:=[[o, a - (a > k), n] for o, a, n in c.pop("opts") if a != k]): c["opts"] = opts
  return c

def _show(e:list) -> str:
  if e[0] == "r": return f"r{e[1]}"
  if e[0] == "c": return str(e[1])
  if e[0] == "ld": return "ld"
  return f"{e[0]}({_show(e[1])}, {_show(e[2])})" if e[0] == "max" else f"({_show(e[1])}{e[0]}{_show(e[2])})"

def _subtrees(e:list, path:tuple=()) -> Iterator[tuple[tuple, list]]:
  yield path, e
  if e[0] not in ("r", "c", "ld"):
    for i in (1, 2): yield from _subtrees(e[i], path + (i,))

def _smaller(e:list) -> Iterator[list]:
  if e[0] == "c":
    if e[1] != 0: yield ["c", 0]
    if abs(e[1]) > 1: yield ["c", e[1] // 2]
    return
  if e[0] in ("r", "ld"):
    yield ["c", 0]
    return
  if e[0] in CMP: return  # a comparison's operands are integers: it can only shrink inside them
  for i in (1, 2):
    if e[i][0] not in ("c",) or e[0] not in ("*", "//", "%"): yield e[i]

def _replace_at(e:list, path:tuple, rep:list) -> list:
  if not path: return rep
  out = list(e)
  out[path[0]] = _replace_at(e[path[0]], path[1:], rep)
  return out

_REPRO = '''"""Standalone repro of a mockgpu oob-fuzzer failure (needs tinygrad and z3-solver).
{msg}
case: {describe}
"""
import json, sys, contextlib, io
import numpy as np
{build}
case = json.loads({case!r})
want = {want}
from tinygrad.codegen import full_rewrite_to_sink, do_to_program
from tinygrad.device import Device
from tinygrad.helpers import Context, Target
from tinygrad.runtime.ops_python import PythonRenderer
ast = build_oob_ast(case)
# the truth: every index the kernel touches
def ev(e, env):
  if e[0] == "r": return env[e[1]]
  if e[0] == "c": return e[1]
  if e[0] == "ld": return env["ld"]
  a, b = ev(e[1], env), ev(e[2], env)
  if e[0] in ("//", "%"):
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q if e[0] == "//" else a - q*b
  return {{"+": lambda: a+b, "*": lambda: a*b, "max": lambda: max(a, b), "<": lambda: a < b, "!=": lambda: a != b, "&": lambda: a and b}}[e[0]]()
touched = []
for flat in range(int(np.prod(case["dims"]))):
  env, rem = {{}}, flat
  for k in reversed(range(len(case["dims"]))): env[k], rem = rem % case["dims"][k], rem // case["dims"][k]
  if case["ibuf"]: env["ld"] = case["ibuf"]["data"][env[case["ibuf"]["loop"]]]
  if case["gate"] is None or ev(case["gate"], env): touched.append(ev(case["idx"], env))
oob = any(not 0 <= i < case["size"] for i in touched)
lo, hi = min(touched, default=None), max(touched, default=None)
print(f"truth: {{'OUT OF BOUNDS' if oob else 'in bounds'}} (indices {{lo}}..{{hi}}, size {{case['size']}})")
try:
  with Context(CHECK_OOB=1, SPEC=1): full_rewrite_to_sink(ast, PythonRenderer(Target("PYTHON")))
  static = False
except RuntimeError as e: static = str(e).startswith("UOp verification failed") and (" on Ops.LOAD " in str(e) or " on Ops.STORE " in str(e))
print(f"static CHECK_OOB=1: {{'flags OOB' if static else 'passes'}}")
bufs = arrays(case)
try:
  prg = do_to_program(ast, PythonRenderer(Target("PYTHON")))
  Device["PYTHON"].runtime(prg.to_elf())(*[memoryview(bufs[i].view(np.uint8) if bufs[i].dtype == np.bool_ else bufs[i]).cast("B")
                                           for i in prg.arg.globals], global_size=prg.arg.global_size,
                                          local_size=prg.arg.local_size or (1, 1, 1), vals=prg.arg.vals({{}}))
  dynamic = False
except IndexError as e: dynamic = True; print("PYTHON:", e)
except ValueError as e:
  if not str(e).startswith("invalid shrink"): raise
  dynamic = True; print("lowering rejected the kernel:", e)
except Exception as e:  # a dynamic-crash: tinygrad raised something else lowering or running the kernel
  print(f"PYTHON raised {{type(e).__name__}}: {{e}}")
  sys.exit(1 if want.startswith("dynamic-crash") else 2)
print(f"dynamic PYTHON: {{'faults' if dynamic else 'clean'}}")
bad = (want.startswith("static-miss") and oob and not static) or (want == "false-alarm" and not oob and static) or \\
      (want.startswith("dynamic-") and dynamic != oob)
sys.exit(1 if bad else 0)
'''
