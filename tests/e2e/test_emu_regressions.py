"""Elementwise ops over every dtype tinygrad runs on AMD, executed by the emulator and compared bit-exactly with numpy.

One subprocess runs every case of a length (kernels differ per dtype: packed 16-bit math, 64-bit pairs, byte stores, bf16
through f32). Two lengths: 296 (tinygrad upcasts 4-8 elements per thread, so the vectorised and packed forms run, with a
partial last wave; with the reductions and 64-bit division loops: the default suite) and 37 (scalar code, a partial wave:
the slow suite). Float cases are limited to correctly rounded operations."""
import pytest

CODE = """
import numpy as np, warnings
from tinygrad import Tensor, dtypes
warnings.simplefilter("ignore")
INTS = {"int8": dtypes.int8, "uint8": dtypes.uint8, "int16": dtypes.int16, "uint16": dtypes.uint16, "int32": dtypes.int32,
        "uint32": dtypes.uint32, "int64": dtypes.int64, "uint64": dtypes.uint64}
FLOATS = {"float16": dtypes.float16, "float32": dtypes.float32, "float64": dtypes.float64}
rng, fails, ran = np.random.default_rng(7), [], 0   # LENGTHS and EXTRAS: set by the test

def bf16(x):   # f32 -> bf16 bits, round to nearest even (finite inputs)
  u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
  return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
def bits(a): a = np.ascontiguousarray(a); return a.view(np.uint8) if a.dtype != np.bool_ else a.astype(np.uint8)
def check(name, t, want):
  global ran
  ran += 1
  got = t.numpy()
  if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(bits(got), bits(want)):
    fails.append(f"{name}: got {got[:12].tolist()} want {want[:12].tolist()}")

for n in LENGTHS:
  for nm, dt in INTS.items():
    info = np.iinfo(nm)
    a = rng.integers(info.min, info.max, n, dtype=nm, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=nm, endpoint=True)
    d = np.where(b == 0, 3, b).astype(nm)
    if info.min < 0: d = np.where((d == -1) & (a == info.min), 5, d).astype(nm)
    A, B, D = Tensor(a), Tensor(b), Tensor(d)
    for op, t, w in (("add", A + B, a + b), ("sub", A - B, a - b), ("mul", A * B, a * b), ("max", A.maximum(B), np.maximum(a, b)),
                     ("lt", A < B, a < b), ("eq", A == B, a == b), ("where", (A < B).where(A, B), np.where(a < b, a, b)),
                     ("shl", A << 3, a << np.array(3, nm)), ("shr", A >> 2, a >> np.array(2, nm)),
                     ("idiv", A // D, a // d), ("mod", A % D, a % d), ("neg", -A, -a) if info.min < 0 else ("xor", A ^ B, a ^ b)):
      check(f"{nm}[{n}] {op}", t, w)
    small = rng.integers(0 if info.min == 0 else -100, 101, n).astype(nm)
    for tn, tdt in (INTS | FLOATS).items():
      if tn != nm: check(f"{nm}[{n}] cast {tn}", Tensor(small).cast(tdt), small.astype(tn))
    check(f"{nm}[{n}] cast bool", Tensor(small).cast(dtypes.bool), small.astype(np.bool_))
  for nm, dt in FLOATS.items():
    a, b = (rng.standard_normal(n) * 50).astype(nm), (rng.standard_normal(n) * 50).astype(nm)
    A, B = Tensor(a), Tensor(b)
    for op, t, w in (("add", A + B, a + b), ("sub", A - B, a - b), ("mul", A * B, a * b), ("max", A.maximum(B), np.maximum(a, b)),
                     ("lt", A < B, a < b), ("ne", A != B, a != b), ("where", (A < B).where(A, B), np.where(a < b, a, b)), ("neg", -A, -a)):
      check(f"{nm}[{n}] {op}", t, w)
    for tn, tdt in (INTS | FLOATS).items():
      src = np.clip(np.abs(a) if tn.startswith("u") else a, -100, 100).astype(nm)   # in range of every target (no UB)
      if tn != nm: check(f"{nm}[{n}] cast {tn}", Tensor(src).cast(tdt), src.astype(tn))
  a, b = (rng.standard_normal(n) * 50).astype(np.float32), (rng.standard_normal(n) * 50).astype(np.float32)
  ab, bb = bf16(a), bf16(b)
  A, B = Tensor(ab.view(np.int16)).bitcast(dtypes.bfloat16), Tensor(bb.view(np.int16)).bitcast(dtypes.bfloat16)
  af, bf = (ab.astype(np.uint32) << 16).view(np.float32), (bb.astype(np.uint32) << 16).view(np.float32)
  for op, t, w in (("add", A + B, bf16(af + bf)), ("mul", A * B, bf16(af * bf)), ("max", A.maximum(B), bf16(np.maximum(af, bf)))):
    check(f"bfloat16[{n}] {op}", t.bitcast(dtypes.uint16), w)
  check(f"bfloat16[{n}] lt", A < B, af < bf)
  check(f"bfloat16[{n}] cast float32", A.cast(dtypes.float32), af)
  check(f"float32[{n}] cast bfloat16", Tensor(a).cast(dtypes.bfloat16).bitcast(dtypes.uint16), bf16(a))
for nm in ("int8", "uint8", "int16", "uint16", "int32", "int64", "float16", "float32") if EXTRAS else ():   # reductions over a (37, 9) tensor
  x = rng.integers(-100 if nm[0] != "u" else 0, 101, (37, 9)).astype(nm)
  for op, t, f in (("sum", Tensor(x).sum(1), np.sum), ("max", Tensor(x).max(0), np.max)):
    got = t.numpy()   # integer sums accumulate in tinygrad's result dtype; the float values here sum exactly in any order
    check(f"{nm}[37x9] {op}", t, f(x.astype(got.dtype), axis=1 if op == "sum" else 0).astype(got.dtype))
for nm, f in (("uint64", lambda t: t // 3), ("int64", lambda t: (t // 127) % 127)) if EXTRAS else ():   # 64-bit division in a one-lane loop
  x = np.array([1, 1, 2**40 + 7], nm)
  check(f"{nm}[3] division sum", f(Tensor(x)).sum(), np.array(f(x).sum(), nm))
if EXTRAS:   # not correctly rounded: a tolerance, but the sign (V_CNDMASK neg) must be right
  x = np.linspace(-20, 20, 37, dtype=np.float32)
  got, ran = Tensor(x).sin().numpy(), ran + 1
  if not np.allclose(got, np.sin(x), rtol=0, atol=1e-5): fails.append(f"float32[37] sin: got {got.tolist()}")
out({"ran": ran, "fails": fails})
"""

@pytest.mark.parametrize("lengths,extras,least", [((296,), True, 250), pytest.param((37,), False, 230, marks=pytest.mark.slow)])
def test_elementwise_all_dtypes_bit_exact(run, lengths, extras, least):
  r = run(f"LENGTHS, EXTRAS = {lengths!r}, {extras!r}\n" + CODE).result
  assert r["ran"] > least and r["fails"] == [], "\n".join(r["fails"])
