"""The program format of the render fuzzer: a small SSA list of scalar ops over one loop, turned into a tinygrad kernel AST,
plus a reference evaluator that knows how exact each value must be.

A case (JSON) is `{"n": lanes, "axis": "LOOP"|"GLOBAL", "inputs": [{"dtype", "bits"}], "nodes": [[op, dtype, *args]], "outs": [node]}`.
Element values are stored as raw bit patterns (so NaN, -0.0 and denormals survive JSON). Node forms:
  ["in", dt, k]          input buffer k at the loop index
  ["idx", dt, off]       the loop index plus `off`, cast to the integer dtype dt
  ["const", dt, bits]    a constant
  [ALU, dt, a, b, ...]   a tinygrad ALU op (names of `Ops`) on earlier nodes
  ["CAST"|"BITCAST", dt, a]
Output j is stored to buffer slot j, inputs follow in slots len(outs)+k.
Optional keys: `"red": {"k": K, "op": "ADD"|"MAX"}` makes the kernel a reduction: every lane i runs an inner REDUCE loop j < K,
inputs hold n*K elements (element i*K + j), `idx` stays i, and output i is the ADD/MAX fold over j of its node (bool outputs
are not generated in reductions). `"opts": [[op, axis, amount]]` are tinygrad `Opt`s applied instead of the heuristics
(`UPCAST`/`LOCAL` on a GLOBAL lane loop, `UNROLL`/`GROUP`/`GROUPTOP` on the reduce loop: vectors, local (shared) memory); an
executor whose renderer cannot apply them does not run the case.

The reference (`evaluate`) gives every output lane either `None` (not determined: the backends may legitimately differ, e.g. a
comparison of two floats closer than their error bounds) or `(value, err)`: integers and bools exact (err 0), floats with an
absolute error bound that every conforming backend must meet. The per-op ULP classes are in `ULP` and docs/fuzz_oob_render.md.
"""
from __future__ import annotations
import math, random, struct
from typing import Any
import numpy as np

__all__ = ["INTS", "FLOATS", "SMALL_FLOATS", "RAW", "FMT", "ULP", "tg_dtype", "red_k", "from_array", "generate", "evaluate", "bits_value", "build_ast",
           "to_arrays", "from_bits", "to_bits", "gc", "value_str"]

INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
SMALL_FLOATS = ("float16", "bfloat16", "fp8e4m3", "fp8e5m2")
FLOATS = ("float32", "float64") + SMALL_FLOATS
RAW = ("bfloat16", "fp8e4m3", "fp8e5m2")  # numpy has no such dtype: their arrays hold the raw bits (uint16/uint8)
BITS = {"bool": 1, "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64,
        "float32": 32, "float64": 64, "float16": 16, "bfloat16": 16, "fp8e4m3": 8, "fp8e5m2": 8}
NP = {"bool": np.bool_, **{d: np.dtype(d) for d in INTS + FLOATS[:3]}, "bfloat16": np.dtype(np.uint16), "fp8e4m3": np.dtype(np.uint8),
      "fp8e5m2": np.dtype(np.uint8)}
# (explicit mantissa bits, exponent of the smallest normal) of each float format: its ulp at any magnitude
FMT = {"float64": (52, -1022), "float32": (23, -126), "float16": (10, -14), "bfloat16": (7, -126), "fp8e4m3": (3, -6), "fp8e5m2": (2, -14)}
# ULP class of the approximated float ops: allowed error in ulps of the result (rel) plus ulps of 1.0 (abs), see the doc
ULP: dict[str, tuple[float, float]] = {"EXP2": (4, 0), "LOG2": (4, 2), "SIN": (4, 4), "RECIPROCAL": (1, 0), "SQRT": (1, 0)}
FMAX = {"float32": float(np.finfo(np.float32).max), "float64": float(np.finfo(np.float64).max), "float16": 65504.0,
        "bfloat16": 3.3895313892515355e38, "fp8e4m3": 448.0, "fp8e5m2": 57344.0}
INT_BIN, FLOAT_UN, CMP = ("ADD", "MUL", "MAX", "AND", "OR", "XOR"), ("SQRT", "EXP2", "LOG2", "SIN", "RECIPROCAL", "TRUNC"), \
  ("CMPLT", "CMPNE", "CMPEQ")

# *** bits <-> values ***

def signed(dt:str) -> bool: return dt.startswith("int")
def wrap(x:int, dt:str) -> int:
  """Wrap an integer to dtype `dt` (two's complement), as tinygrad's PYTHON backend does."""
  m = x & ((1 << BITS[dt]) - 1)
  return m - (1 << BITS[dt]) if signed(dt) and m >> (BITS[dt] - 1) else m
def tg_dtype(dt:str):
  """Returns: the tinygrad DType called `dt` here."""
  from tinygrad.dtype import dtypes
  return getattr(dtypes, dt)
def from_bits(bits:int, dt:str) -> Any:
  """Returns: the Python value (bool/int/float) of raw `bits` in dtype `dt`."""
  if dt == "bool": return bool(bits & 1)
  if dt == "float16": return struct.unpack("<e", struct.pack("<H", bits & 0xffff))[0]
  if dt == "bfloat16": return struct.unpack("<f", struct.pack("<I", (bits & 0xffff) << 16))[0]
  if dt in SMALL_FLOATS:
    from tinygrad.dtype import fp8_to_float
    return fp8_to_float(bits & 0xff, tg_dtype(dt))
  if dt in FLOATS: return struct.unpack("<f" if dt == "float32" else "<d", struct.pack("<I" if dt == "float32" else "<Q", bits))[0]
  return wrap(bits, dt)
def to_bits(v:Any, dt:str) -> int:
  """Returns: the raw bits of Python value `v` in dtype `dt`."""
  if dt == "bool": return int(bool(v))
  if dt == "float16": return struct.unpack("<H", struct.pack("<e", _rnd(v, dt)))[0]
  if dt == "bfloat16": return struct.unpack("<I", struct.pack("<f", _rnd(v, dt)))[0] >> 16
  if dt in SMALL_FLOATS:
    from tinygrad.dtype import float_to_fp8
    return float_to_fp8(v, tg_dtype(dt))
  if dt in FLOATS: return struct.unpack("<I" if dt == "float32" else "<Q", struct.pack("<f" if dt == "float32" else "<d", v))[0]
  return int(v) & ((1 << BITS[dt]) - 1)
def red_k(case:dict) -> int: return case["red"]["k"] if case.get("red") else 1
def to_arrays(case:dict, out_dtypes:list[str]) -> list[np.ndarray]:
  """Returns: the buffers of a case in slot order (zeroed outputs, then inputs)."""
  n = case["n"]
  outs = [np.zeros(n, NP[d]) for d in out_dtypes]
  ins = [np.array(i["bits"] if i["dtype"] in RAW else [from_bits(b, i["dtype"]) for b in i["bits"]], NP[i["dtype"]]) for i in case["inputs"]]
  return outs + ins
def from_array(x:Any, dt:str) -> Any:
  """Returns: the value of an element `x` (`.item()`) of an array made by `to_arrays` (raw bits for the `RAW` dtypes)."""
  return from_bits(int(x), dt) if dt in RAW else x
def value_str(v:Any) -> str: return repr(v) if not isinstance(v, float) else f"{v!r}({v.hex()})"

# *** generation ***

def _rand_val(rng:random.Random, dt:str, denormals:bool=True) -> Any:
  if dt == "bool": return rng.random() < 0.5
  if dt in FLOATS:
    r = rng.random()
    if r < 0.04: return rng.choice([0.0, -0.0, math.inf, -math.inf, math.nan])
    m, emin = FMT[dt]
    if r < 0.07 and denormals: return rng.choice([1, -1]) * rng.randint(1, min(2**20, 2**m - 1)) * 2.0**(emin - m)  # denormals
    if r < 0.35: return _rnd(float(rng.randint(-16, 16)) / rng.choice([1, 2, 4]), dt)
    if r < 0.75: v = _rnd(rng.uniform(-8, 8), dt)
    elif dt not in SMALL_FLOATS: return _rnd(math.ldexp(rng.uniform(-1, 1), rng.randint(-40, 40)), dt)
    else: v = _rnd(math.ldexp(rng.uniform(-1, 1), rng.randint(-40 if denormals else emin + 2, min(40, math.frexp(FMAX[dt])[1]))), dt)
    # a narrow float stays in its normal range unless denormals are wanted (float16's 2**-40 is a denormal: F15's trigger)
    return v if denormals or v == 0 or abs(v) >= 2.0 ** emin or dt not in SMALL_FLOATS else math.copysign(2.0 ** emin, v)
  lo, hi = (-(1 << (BITS[dt]-1)), (1 << (BITS[dt]-1)) - 1) if signed(dt) else (0, (1 << BITS[dt]) - 1)
  r = rng.random()
  if r < 0.3: return wrap(rng.randint(-10, 10), dt)
  if r < 0.45: return rng.choice([lo, hi, lo+1, hi-1, 0, wrap(-1, dt)])
  if r < 0.6: return wrap(rng.choice([1, -1]) * (1 << rng.randint(0, BITS[dt]-1)) + rng.randint(-1, 1), dt)
  return rng.randint(lo, hi)

NARROW = ("int8", "uint8", "int16", "uint16")
def generate(rng:random.Random, max_nodes:int=10, avoid_known:bool=False) -> dict:
  """Draw a random program.

  Args:
    rng: the only randomness.
    max_nodes: the most ALU/CAST nodes the program gets (leaves are extra).
    avoid_known: do not generate the triggers of the findings documented in docs/fuzz_oob_render.md (ADD/MUL/SHL on 8/16-bit
      integers: F2; loop indices cast to 64-bit integers: F3; SQRT: F5; SIN on float64: F6; shifts of constants: F9; integer
      ops whose first operand is a constant: F14; denormal inputs: F15; casts of constants: F16), so a
      campaign looks for new bugs (pair it with `evaluate(signed_overflow=False)` for F8).
  Returns:
    a case dict (see the module docstring).
  """
  n = rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33])
  pool = rng.sample(["int32", "float32", "uint32", "int64", "float64", "int8", "uint8", "int16", "uint64", "uint16", *SMALL_FLOATS],
                    rng.randint(1, 3))
  if rng.random() < 0.5: pool.insert(0, rng.choice(["int32", "float32"]))
  case: dict = {"n": n, "axis": rng.choice(["LOOP", "LOOP", "GLOBAL"]), "inputs": [], "nodes": [], "outs": []}
  # a reduction over K of at most 40 lanes in all: PYTHON (tinygrad's uop emulator) costs ~0.05 s per lane
  k = rng.choice([k for k in (2, 3, 4, 8, 16) if n * k <= 40] or [1]) if rng.random() < 0.25 else 1
  nodes, dts = case["nodes"], lambda: [nd[1] for nd in nodes]
  def add(nd:list) -> int:
    nodes.append(nd)
    return len(nodes) - 1
  def leaf(dt:str, const_ok:bool=True) -> int:
    r = rng.random()
    if r < 0.55 or not const_ok:
      case["inputs"].append({"dtype": dt, "bits": [to_bits(_rand_val(rng, dt, not avoid_known), dt) for _ in range(n*k)]})
      return add(["in", dt, len(case["inputs"]) - 1])
    if r < 0.7 and dt in INTS and not (avoid_known and BITS[dt] == 64): return add(["idx", dt, rng.choice([0, 0, 1, 3, 100])])
    return add(["const", dt, to_bits(_rand_val(rng, dt, not avoid_known), dt)])
  def get(dt:str) -> int:
    have = [i for i, d in enumerate(dts()) if d == dt]
    if have and rng.random() < 0.6: return rng.choice(have)
    return leaf(dt)
  def nonconst(dt:str) -> int:
    i = get(dt)
    return i if nodes[i][0] != "const" else leaf(dt, const_ok=False)
  def divisor(dt:str) -> int:  # mostly never 0 or -1 ((x & mask) | 1, or a positive constant), else 0, -1 or anything
    if (r:=rng.random()) < 0.08: return add(["const", dt, to_bits(rng.choice([0, -1]), dt)])
    if r < 0.16: return get(dt)
    if r < 0.58: return add(["const", dt, rng.choice([1, 2, 3, 5, 7, 8, 10, 16, 100, 127])])
    return add(["OR", dt, add(["AND", dt, get(dt), add(["const", dt, rng.choice([3, 7, 15, 127])])]), add(["const", dt, 1])])
  for _ in range(rng.randint(1, max_nodes)):
    dt = rng.choice(pool + ["bool"] * (rng.random() < 0.15))
    r = rng.random()
    if dt == "bool":
      if r < 0.6: src = rng.choice(pool); add([rng.choice(CMP), "bool", get(src), get(src)])
      else: add([rng.choice(["AND", "OR", "XOR", "CMPNE"]), "bool", get("bool"), get("bool")])
    elif r < 0.12: add(["WHERE", dt, get("bool") if any(d == "bool" for d in dts()) else
                        add([rng.choice(CMP), "bool", get(dt), get(dt)]), get(dt), get(dt)])
    elif r < 0.24:
      src = rng.choice([d for d in pool + ["bool"] if d != dt] or [dt])
      bc = [d for d in INTS + FLOATS if BITS[d] == BITS[dt] and d != dt and d in pool]
      pick = nonconst if avoid_known else get
      add(["BITCAST", dt, pick(bc[0])] if bc and rng.random() < 0.3 else ["CAST", dt, pick(src)])
    elif dt in FLOATS:
      if r < 0.5: add([rng.choice([o for o in FLOAT_UN if not avoid_known or (o != "SQRT" and (o, dt) != ("SIN", "float64"))]), dt, get(dt)])
      else: add([rng.choice(("ADD", "MUL", "MAX")), dt, get(dt), get(dt)])
    elif dt in NARROW and avoid_known:
      if r < 0.5: add([rng.choice(("CDIV", "CMOD")), dt, get(dt), divisor(dt)])
      else: add([rng.choice(("MAX", "AND", "OR", "XOR")), dt, get(dt), get(dt)])
    else:
      if r < 0.35: add([rng.choice(("CDIV", "CMOD")), dt, get(dt), divisor(dt)])
      elif r < 0.5: add([rng.choice(("SHL", "SHR")), dt, leaf(dt, const_ok=False) if avoid_known else get(dt),
                         add(["const", dt, rng.randint(0, BITS[dt]-1)])
                         if rng.random() < 0.6 else add(["AND", dt, get(dt), add(["const", dt, BITS[dt]-1])])])
      else: add([rng.choice(INT_BIN), dt, nonconst(dt) if avoid_known else get(dt), get(dt)])
  last = len(nodes) - 1
  extra = [i for i, nd in enumerate(nodes) if nd[0] not in ("in", "const", "idx") and i != last]
  case["outs"] = [last] + rng.sample(extra, min(len(extra), rng.randint(0, 2)))
  if k > 1:
    case["red"] = {"k": k, "op": rng.choice(["ADD", "ADD", "MAX"])}
    case["outs"] = [o if nodes[o][1] != "bool" else add(["CAST", "int32", o]) for o in case["outs"]]
  if rng.random() < 0.3:
    # tinygrad upcasts only GLOBAL axes (a LOOP axis becomes GLOBAL only on renderers with local memory)
    glob = case["axis"] == "GLOBAL"
    cands = [["UPCAST", 0, a] for a in (2, 4, 8) if n % a == 0 and glob] + [["LOCAL", 0, a] for a in (2, 4) if n % a == 0 and glob] + \
            [[op, 0, a] for op in ("UNROLL", "GROUP", "GROUPTOP") for a in (2, 4) if k % a == 0 and k > a]
    if cands: case["opts"] = [rng.choice(cands)]
  return gc(case)

def gc(case:dict) -> dict:
  """Drop nodes no output reaches and inputs no node reads, renumbering what is left. Returns: a new case."""
  nodes, keep = case["nodes"], set()
  def mark(i:int):
    if i in keep: return
    keep.add(i)
    if nodes[i][0] not in ("in", "idx", "const"):
      for a in nodes[i][2:]: mark(a)
  for o in case["outs"]: mark(o)
  order = sorted(keep)
  remap = {old: new for new, old in enumerate(order)}
  used_in = sorted({nodes[i][2] for i in order if nodes[i][0] == "in"})
  inmap = {old: new for new, old in enumerate(used_in)}
  new_nodes = []
  for i in order:
    nd = nodes[i]
    if nd[0] == "in": new_nodes.append(["in", nd[1], inmap[nd[2]]])
    elif nd[0] in ("idx", "const"): new_nodes.append(list(nd))
    else: new_nodes.append([nd[0], nd[1], *[remap[a] for a in nd[2:]]])
  return {"n": case["n"], "axis": case["axis"], "inputs": [case["inputs"][k] for k in used_in], "nodes": new_nodes,
          "outs": [remap[o] for o in case["outs"]], **{key: case[key] for key in ("red", "opts") if case.get(key)}}

# *** reference evaluation ***

def _rnd(x:float, dt:str) -> float:
  """`x` rounded to the nearest value of float dtype `dt`, as tinygrad's PYTHON backend rounds (`tinygrad.dtype.truncate`: bfloat16
  through float32, fp8 saturating)."""
  if dt == "float64": return float(x)
  if dt == "float32": return float(np.float32(x))
  from tinygrad.dtype import truncate
  return float(truncate[tg_dtype(dt)](x))
def _ulp(x:float, dt:str) -> float:
  if not math.isfinite(x): return 0.0
  m, emin = FMT[dt]
  return 2.0 ** (max(math.frexp(abs(x))[1] - 1 if x else emin, emin) - m)
def _np(fn, *a):
  with np.errstate(all="ignore"): return float(fn(*[np.float64(x) for x in a]))

_F2 = {"ADD": lambda a, b: a + b, "MUL": lambda a, b: a * b}
_F1 = {"SQRT": np.sqrt, "EXP2": np.exp2, "LOG2": np.log2, "SIN": np.sin, "RECIPROCAL": lambda x: np.float64(1.0) / x}
_D1 = {"SQRT": lambda x: 0.5 / math.sqrt(x) if x > 0 else math.inf, "EXP2": lambda x: math.log(2) * 2.0**min(x, 1024),
       "LOG2": lambda x: 1 / (x * math.log(2)) if x > 0 else math.inf, "SIN": lambda x: 1.0, "RECIPROCAL": lambda x: 1 / (x*x) if x else math.inf}

def _fadd_like(op:str, a, b, dt:str, fused:bool, mag:float):
  (va, ea), (vb, eb) = a, b
  if ea == 0 and eb == 0 or not (math.isfinite(va) and math.isfinite(vb)):
    if (ea or eb) and not all(math.isfinite(x) for x in (va, vb)):
      corners = {_np(_F2[op], x, y) for x in (va-ea, va+ea) for y in (vb-eb, vb+eb)}
      if len({("nan" if math.isnan(c) else c) for c in corners}) != 1: return None
    v = _rnd(_np(_F2[op], va, vb), dt)
    return (v, 0.0 if not fused or not math.isfinite(v) else _ulp(v, dt) + (2 * _ulp(mag, dt) if op == "ADD" else 0.0))
  v = _rnd(_np(_F2[op], va, vb), dt)
  err = (ea + eb) if op != "MUL" else abs(vb)*ea + abs(va)*eb + ea*eb
  # a reassociated chain of adds rounds partial sums bounded by the sum of the magnitudes of its terms
  return (v, err + _ulp(v, dt) + (2 * _ulp(mag, dt) if fused and op == "ADD" else 0.0))

def _feval(op:str, xs:list, dt:str, fusable:bool, mag:float):
  if op in _F2: return _fadd_like(op, xs[0], xs[1], dt, fusable, mag)
  (va, ea) = xs[0]
  if op == "MAX":
    (vb, eb) = xs[1]
    if math.isnan(va) or math.isnan(vb): return None
    return (max(va, vb), max(ea, eb))
  if op == "TRUNC":
    if not math.isfinite(va): return (va, 0.0)
    if math.trunc(va - ea) != math.trunc(va + ea): return None
    return (math.copysign(float(math.trunc(va)), va), 0.0)
  if op == "RECIPROCAL" and ea and abs(va) <= ea: return None
  if op in ("SQRT", "LOG2") and ea and va - ea <= 0 < va + ea: return None
  v = _rnd(_np(_F1[op], va), dt)
  if not math.isfinite(v): return (v, 0.0) if ea == 0 and (op != "EXP2" or va > 200 or math.isinf(va)) else None
  rel, ab = ULP[op]
  prop = 0.0 if ea == 0 else ea * max(_D1[op](va - ea) if op in ("SQRT", "LOG2", "RECIPROCAL") and va - ea > 0 else 0, _D1[op](va), _D1[op](va + ea))
  if op == "SIN" and abs(va) > 1e4: ab *= abs(va) / 1e4  # argument reduction loses absolute accuracy with the argument's ulp
  return (v, prop + rel * _ulp(v, dt) + ab * _ulp(1.0, dt))

def _cast(x, src:str, dt:str):
  if src in FLOATS:
    v, e = x
    if dt in SMALL_FLOATS:
      # fp8 overflow saturates on PYTHON, clamps on AMD, may be NaN elsewhere; float64 -> float16/bfloat16 goes through float32
      # on the CPU renderers (a double rounding) but is one `fptrunc` on LLVM's GPU targets: undetermined where they differ
      if dt.startswith("fp8") and not (math.isnan(v) or abs(v) + e <= FMAX[dt]): return None
      r = _rnd(v, dt)
      if e: return (r, e + _ulp(r, dt)) if abs(v) + e < FMAX[dt] else None
      return (r, 0.0) if math.isnan(v) or r == _rnd(_rnd(v, "float32"), dt) and r == _exact_rnd(v, dt) else None
    if dt in FLOATS:
      r = _rnd(v, dt)
      return (r, 0.0 if e == 0 and r == v or math.isnan(v) else e + (_ulp(r, dt) if dt == "float32" and src == "float64" else 0))
    if dt == "bool":
      if math.isnan(v): return True
      return None if e and abs(v) <= e else v != 0
    if not math.isfinite(v) or math.trunc(v - e) != math.trunc(v + e): return None
    t = math.trunc(v)
    lo, hi = (-(1 << (BITS[dt]-1)), (1 << (BITS[dt]-1)) - 1) if signed(dt) else (0, (1 << BITS[dt]) - 1)
    return t if lo <= t <= hi else None
  iv = int(x)
  if dt == "bool": return iv != 0
  if dt in SMALL_FLOATS:  # through float32 on the renderers without the type (two roundings), directly elsewhere
    if dt.startswith("fp8") and abs(iv) > FMAX[dt]: return None
    r = _exact_rnd(iv, dt)
    return (r, 0.0) if r == _rnd(float(np.float32(iv)), dt) else None
  if dt in FLOATS: return (float(NP[dt].type(iv)) if abs(iv) < 2**63 or src == "uint64" else float(iv), 0.0)
  return wrap(iv, dt)

def _exact_rnd(x, dt:str) -> float:
  """A number (int or float) rounded once, to nearest even, to float dtype `dt` (no float32 step)."""
  if isinstance(x, float) and not math.isfinite(x): return _rnd(x, dt)
  m, emin = FMT[dt]
  from fractions import Fraction
  f = Fraction(x)
  if f == 0: return 0.0 * (math.copysign(1, x) if isinstance(x, float) else 1)
  e = max(math.floor(math.log2(abs(f))), emin) - m
  while abs(f) >= Fraction(2) ** (e + m + 1): e += 1  # log2 of a huge Fraction may round down
  q = f / Fraction(2) ** e
  r = round(q)  # Python rounds halves to even
  v = float(r * Fraction(2) ** e) if abs(r * Fraction(2) ** e) < 2 ** 1024 else math.copysign(math.inf, x)
  return _rnd(v, dt)  # overflow to inf (or fp8 saturation) as the dtype does

def _bitcast(x, src:str, dt:str):
  # the sign of a float zero is not determined (`nsz`; PYTHON's TRUNC returns +0.0 for trunc(-0.5)), nor the bits of an inexact value;
  # NaN payloads of float16/bfloat16/fp8 are not kept by the reference's Python floats
  if src in FLOATS and (x[1] != 0 or x[0] == 0 or (src in SMALL_FLOATS and math.isnan(x[0]))): return None
  b = to_bits(x[0] if src in FLOATS else x, src)
  v = from_bits(b, dt)
  return (v, 0.0) if dt in FLOATS else v

def _ieval(op:str, a:int, b:int, dt:str):
  if op in ("CDIV", "CMOD"):
    if b == 0 or (signed(dt) and b == -1 and a == -(1 << (BITS[dt]-1))): return None
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return wrap(q if op == "CDIV" else a - q*b, dt)
  if op in ("SHL", "SHR"):
    if not 0 <= b < BITS[dt]: return None
    return wrap(a << b if op == "SHL" else a >> b, dt)
  return wrap({"ADD": a+b, "MUL": a*b, "MAX": max(a, b), "AND": a & b, "OR": a | b, "XOR": a ^ b}[op], dt)

def _cmp(op:str, a, b, is_float:bool):
  if is_float:
    (va, ea), (vb, eb) = a, b
    if (ea or eb) and not (math.isnan(va) or math.isnan(vb)) and abs(va - vb) <= ea + eb: return None
    a, b = va, vb
  return {"CMPLT": a < b, "CMPNE": a != b, "CMPEQ": a == b}[op]

_ARITH = ("ADD", "MUL")
def evaluate(case:dict, signed_overflow:bool=True, ub:set|None=None) -> list[list[Any]]:
  """The reference value of every output lane.

  Args:
    case: the program.
    signed_overflow: True: signed integer ADD/MUL/SHL wrap (tinygrad's PYTHON backend, numpy); False: a lane whose signed
      ADD/MUL/SHL overflows is undetermined (C and LLVM `nsw` semantics, see finding F8).
    ub: if given, gets "division" when some lane may divide by 0 or divide the minimum by -1 (undefined in C and LLVM for
      every integer width: x86 traps with SIGFPE, the GPUs return some value), so the whole kernel may trap.
  Returns:
    outs[j][lane]: None (undetermined) or a bool/int, or (float value, absolute error bound) for float outputs.
  """
  nodes, k = case["nodes"], red_k(case)
  n = case["n"] * k  # virtual lanes i*K + j of a reduction
  vals: list[list[Any]] = []
  mags: list[list[float]] = []  # per float lane: the sum of |terms| of the add chain it ends (bounds reassociated partial sums)
  for nd in nodes:
    op, dt, args = nd[0], nd[1], nd[2:]
    if op == "in": col = [from_bits(b, dt) for b in case["inputs"][args[0]]["bits"]]
    elif op == "idx": col = [wrap(i // k + args[0], dt) for i in range(n)]
    elif op == "const": col = [from_bits(args[0], dt)] * n
    else: col = [None] * n
    if dt in FLOATS and op in ("in", "const"): col = [(v, 0.0) for v in col]
    if op not in ("in", "idx", "const"):
      srcs = [vals[a] for a in args]
      # a float op whose operand is itself arithmetic may be fused (fma contraction) or reassociated: not exact any more
      fusable = op in _ARITH and any(nodes[a][0] in _ARITH + ("RECIPROCAL",) for a in args)
      for i in range(n):
        xs = [s[i] for s in srcs]
        if op == "WHERE": col[i] = (xs[1] if xs[0] else xs[2]) if xs[0] is not None else xs[1] if xs[1] == xs[2] else None
        elif any(x is None for x in xs): col[i] = None
        elif op == "CAST": col[i] = _cast(xs[0], nodes[args[0]][1], dt)
        elif op == "BITCAST": col[i] = _bitcast(xs[0], nodes[args[0]][1], dt)
        elif op in CMP: col[i] = _cmp(op, xs[0], xs[1], nodes[args[0]][1] in FLOATS)
        elif dt in FLOATS:
          col[i] = _feval(op, xs, dt, fusable, mags[args[0]][i] + mags[args[1]][i] if op == "ADD" else 0.0)
          if col[i] is not None and math.isfinite(col[i][0]) and abs(col[i][0]) + col[i][1] >= FMAX[dt]: col[i] = None
        elif dt == "bool": col[i] = {"AND": xs[0] and xs[1], "OR": xs[0] or xs[1], "XOR": xs[0] != xs[1], "CMPNE": xs[0] != xs[1]}[op]
        else:
          col[i] = _ieval(op, xs[0], xs[1], dt)
          if not signed_overflow and signed(dt) and op in ("ADD", "MUL", "SHL") and col[i] is not None and \
             col[i] != (xs[0]+xs[1] if op == "ADD" else xs[0]*xs[1] if op == "MUL" else xs[0] << xs[1]): col[i] = None
    if ub is not None and op in ("CDIV", "CMOD") and any(c is None for c in col): ub.add("division")
    vals.append(col)
    mags.append([abs(x[0]) if isinstance(x, tuple) and math.isfinite(x[0]) else 0.0 for x in col] if op != "ADD" or dt not in FLOATS else
                [mags[args[0]][i] + mags[args[1]][i] for i in range(n)])
  if k == 1: return [vals[o] for o in case["outs"]]
  return [[_fold(case["red"]["op"], vals[o][i*k:(i+1)*k], mags[o][i*k:(i+1)*k], nodes[o][1], signed_overflow) for i in range(case["n"])]
          for o in case["outs"]]

def _fold(op:str, xs:list, mags:list[float], dt:str, signed_overflow:bool):
  """A REDUCE lane: the ADD or MAX fold of `xs` (in order from the identity, as tinygrad's accumulator; its float ADD may be
  reassociated by UNROLL/UPCAST/GROUP partial sums, so each of the K additions may round at the magnitude of all terms)."""
  if any(x is None for x in xs): return None
  if dt not in FLOATS:
    if op == "MAX": return max(xs)
    # without wrapping (nsw), every partial sum of every order must fit: the sums of the positive and of the negative terms do
    pos, neg = sum(x for x in xs if x > 0), sum(x for x in xs if x < 0)
    return wrap(sum(xs), dt) if signed_overflow or not signed(dt) or (wrap(pos, dt) == pos and wrap(neg, dt) == neg) else None
  if op == "MAX":
    if any(math.isnan(v) for v, _ in xs): return None
    return max(v for v, _ in xs), max(e for _, e in xs)
  if not all(math.isfinite(v) for v, _ in xs):
    if any(e for _, e in xs): return None
    return _rnd(_np(lambda a: np.sum(a), [v for v, _ in xs]), dt), 0.0
  v = _rnd(math.fsum(v for v, _ in xs), dt)
  bound = sum(e for _, e in xs) + len(xs) * _ulp(sum(mags) + sum(abs(x) for x, _ in xs), dt)
  if not math.isfinite(v) or abs(v) + bound >= FMAX[dt]: return None
  return v, bound

def bits_value(bits, name):
  """The Python value of the bits of a `name` (tinygrad dtype name) scalar (self-contained: repro scripts embed its source)."""
  import struct
  from tinygrad.dtype import dtypes, fp8_to_float
  if name == "bool": return bool(bits & 1)
  if name in ("float32", "float64"):
    return struct.unpack("<f" if name == "float32" else "<d", struct.pack("<I" if name == "float32" else "<Q", bits))[0]
  if name == "float16": return struct.unpack("<e", struct.pack("<H", bits & 0xffff))[0]
  if name == "bfloat16": return struct.unpack("<f", struct.pack("<I", (bits & 0xffff) << 16))[0]
  if name.startswith("fp8"): return fp8_to_float(bits & 0xff, getattr(dtypes, name))
  nb = getattr(dtypes, name).itemsize * 8
  m = bits & ((1 << nb) - 1)
  return m - (1 << nb) if name.startswith("int") and m >> (nb - 1) else m

def build_ast(case):
  """Build the tinygrad kernel AST of a render case (self-contained but for bits_value: repro scripts embed both sources)."""
  from tinygrad.dtype import dtypes
  from tinygrad.uop.ops import UOp, Ops, KernelInfo, AxisType, ParamArg
  def dtype(name): return getattr(dtypes, name)
  def param(slot, size, dt): return UOp(Ops.PARAM, dt, (UOp.const(size, dtypes.weakint),), ParamArg(slot, dt, device="CPU"))
  from tinygrad.codegen.opt import Opt, OptOps
  n, nodes, outs, red = case["n"], case["nodes"], case["outs"], case.get("red")
  k = red["k"] if red else 1
  rng = UOp.range(n, 0, AxisType.LOOP if case["axis"] == "LOOP" else AxisType.GLOBAL)
  r2 = UOp.range(k, 1, AxisType.REDUCE) if red else None
  at = rng * k + r2 if red else rng
  ins = [param(len(outs) + j, n * k, dtype(i["dtype"])) for j, i in enumerate(case["inputs"])]
  u: list = []
  for nd in nodes:
    op, dt, args = nd[0], dtype(nd[1]), nd[2:]
    if op == "in": u.append(ins[args[0]].index(at))
    elif op == "idx": u.append((rng + args[0]).cast(dt))
    elif op == "const": u.append(UOp.const(bits_value(args[0], nd[1]), dt))
    elif op == "CAST": u.append(u[args[0]].cast(dt))
    elif op == "BITCAST": u.append(u[args[0]].bitcast(dt))
    else: u.append(UOp(getattr(Ops, op), dt, tuple(u[a] for a in args)))
  res = [u[o].reduce(r2, arg=getattr(Ops, red["op"])) if red else u[o] for o in outs]
  stores = [param(j, n, dtype(nodes[o][1])).index(rng).store(r) for j, (o, r) in enumerate(zip(outs, res))]
  opts = tuple(Opt(getattr(OptOps, op), axis, amt) for op, axis, amt in case["opts"]) if case.get("opts") else None
  return UOp.group(*stores).end(rng).sink(arg=KernelInfo(name="fuzz_render", opts_to_apply=opts))
