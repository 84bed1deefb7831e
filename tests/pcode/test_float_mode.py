"""MODE register known answers on both backends: the four rounding modes and the four denormal settings of each precision
group on add/sub/mul/fma/sqrt and conversions in f32, f16 and f64, IEEE mode in min/max, and the pseudocode's ROUND_MODE
override. Expected values: exact rational arithmetic (fractions.Fraction) rounded to the format here, by bracketing the exact
value between neighbouring floats with numpy's nextafter (independent of mockgpu.pcode.softfloat)."""
import itertools
from fractions import Fraction
import numpy as np
from test_known_answers import both

FMT = {"f16": (np.float16, np.uint16, 16), "f32": (np.float32, np.uint32, 32), "f64": (np.float64, np.uint64, 64)}
GROUP = {"f32": 0, "f16": 2, "f64": 2}          # bit offset of the format's MODE.FP_ROUND field (its FP_DENORM field is 4 above)
RNE, RUP, RDN, RTZ = range(4)

def bits(x, fmt: str) -> int: return int(np.array(x, FMT[fmt][0]).view(FMT[fmt][1]))
def val(b: int, fmt: str) -> Fraction: return Fraction(np.array(b, FMT[fmt][1]).view(FMT[fmt][0]).item())
def exact(x, fmt: str) -> Fraction: return val(bits(x, fmt), fmt)

def round_to(x: Fraction, fmt: str, rm: int) -> int:
  """Bits of the nonzero exact value `x` rounded to `fmt` in mode `rm` (IEEE 754: directed modes overflow to inf only in
  their direction, nearest-even overflows at max + ulp/2)."""
  t, inf = FMT[fmt][0], FMT[fmt][0](np.inf)
  mx = np.finfo(t).max
  M, ulp = Fraction(mx.item()), Fraction(mx.item()) - Fraction(np.nextafter(mx, -inf).item())
  if abs(x) > M:
    up = (rm == RNE and abs(x) >= M + ulp / 2) or (rm == RUP and x > 0) or (rm == RDN and x < 0)
    return bits(np.copysign(inf if up else mx, 1.0 if x > 0 else -1.0), fmt)
  lo = t(float(x))
  while Fraction(lo.item()) > x: lo = np.nextafter(lo, -inf)
  while lo < mx and Fraction(np.nextafter(lo, inf).item()) <= x: lo = np.nextafter(lo, inf)
  hi = lo if Fraction(lo.item()) == x else np.nextafter(lo, inf)
  if rm == RNE:
    dl, dh = x - Fraction(lo.item()), Fraction(hi.item()) - x
    r = lo if dl < dh else hi if dl > dh else (lo if bits(lo, fmt) % 2 == 0 else hi)
  else: r = hi if rm == RUP or (rm == RTZ and x < 0) else lo
  return bits(r, fmt)

def mode(fmt: str, rm: int = RNE, denorm: int = 3) -> int:
  """MODE with `rm` and `denorm` in fmt's group and the defaults (nearest even, denormals kept) in the other group."""
  g = GROUP[fmt]
  return (0xf0 & ~(0x33 << g)) | rm << g | denorm << (4 + g)

def is_denorm(b: int, fmt: str) -> bool: return 0 < abs(val(b, fmt)) < Fraction(np.finfo(FMT[fmt][0]).tiny.item())
def ftz(b: int, fmt: str) -> int: return b & (1 << (FMT[fmt][2] - 1)) if is_denorm(b, fmt) else b
def expect(x: Fraction, fmt: str, rm: int = RNE, denorm: int = 3) -> int:
  r = round_to(x, fmt, rm)
  return r if denorm & 2 else ftz(r, fmt)

def run(clib, op: str, fmt: str, m: int, *xs, dfmt: str | None = None, raw=False) -> int:
  """D0 of `op` (a result of format dfmt, default fmt) on both backends with MODE m and sources xs (floats, or raw bits)."""
  r = both(clib, "rdna3", op, MODE=m, **{f"S{i}": x if raw else bits(x, fmt) for i, x in enumerate(xs)})
  assert r.MODE == m                               # float ops never change MODE
  return r.D0 & ((1 << FMT[dfmt or fmt][2]) - 1)

OPS = {"f32": ("VOP2Op_V_ADD_F32_E32", "VOP2Op_V_SUB_F32_E32", "VOP2Op_V_MUL_F32_E32", "VOP3Op_V_FMA_F32"),
       "f16": ("VOP2Op_V_ADD_F16_E32", "VOP2Op_V_SUB_F16_E32", "VOP2Op_V_MUL_F16_E32", "VOP3Op_V_FMA_F16"),
       "f64": ("VOP3Op_V_ADD_F64", None, "VOP3Op_V_MUL_F64", "VOP3Op_V_FMA_F64")}
# operands (a, b, c) whose sum, difference, product and a*b+c are inexact and nonzero (the last rows overflow)
CASES = {"f32": [(1.0, 2.0 ** -24 + 2.0 ** -30, 0.75), (-1.0, -3 * 2.0 ** -25, 1.0), (1 + 2.0 ** -12, 1 - 2.0 ** -12, -1.0), (0.1, 0.2, 0.3),
                 (3e38, 2e38, -1e38)],
         "f16": [(1.0, 2.0 ** -11 + 2.0 ** -14, 0.5), (-1.0, -3 * 2.0 ** -12, 1.0), (1 + 2.0 ** -6, 1 - 2.0 ** -6, -1.0), (0.1, 0.2, 0.3),
                 (60000.0, 40000.0, -1.0)],
         "f64": [(1.0, 2.0 ** -53 + 2.0 ** -60, 0.25), (-1.0, -3 * 2.0 ** -54, 1.0), (1 + 2.0 ** -27, 1 - 2.0 ** -27, -1.0), (0.1, 0.2, 0.3),
                 (1.7e308, 1e308, -1.0)]}

def test_rounding_modes_on_add_sub_mul_fma(clib):
  for fmt, rm in itertools.product(FMT, range(4)):
    add, sub, mul, fma = OPS[fmt]
    m = mode(fmt, rm)
    for a, b, c in CASES[fmt]:
      A, B, C = (exact(x, fmt) for x in (a, b, c))
      assert run(clib, add, fmt, m, a, b) == expect(A + B, fmt, rm), (fmt, rm, a, b)
      if sub: assert run(clib, sub, fmt, m, a, b) == expect(A - B, fmt, rm), (fmt, rm, a, b)
      assert run(clib, mul, fmt, m, a, b) == expect(A * B, fmt, rm), (fmt, rm, a, b)
      assert run(clib, fma, fmt, m, a, b, c) == expect(A * B + C, fmt, rm), (fmt, rm, a, b, c)   # fused: one rounding

def test_rounding_mode_is_per_group(clib):
  # f32 rounds up while f16/f64 keep nearest even, and the other way round
  a, b = 1.0, 2.0 ** -25 + 2.0 ** -30
  up32 = RUP | RNE << 2 | 0xf0
  assert run(clib, "VOP2Op_V_ADD_F32_E32", "f32", up32, a, b) == expect(exact(a, "f32") + exact(b, "f32"), "f32", RUP) == bits(1 + 2.0 ** -23, "f32")
  assert run(clib, "VOP2Op_V_ADD_F16_E32", "f16", up32, 1.0, 2.0 ** -12) == bits(1.0, "f16")
  assert run(clib, "VOP3Op_V_ADD_F64", "f64", up32, 1.0, 2.0 ** -60) == bits(1.0, "f64")
  up16 = RNE | RUP << 2 | 0xf0
  assert run(clib, "VOP2Op_V_ADD_F32_E32", "f32", up16, a, b) == bits(1.0, "f32")
  assert run(clib, "VOP2Op_V_ADD_F16_E32", "f16", up16, 1.0, 2.0 ** -12) == bits(1 + 2.0 ** -10, "f16")
  assert run(clib, "VOP3Op_V_ADD_F64", "f64", up16, 1.0, 2.0 ** -60) == bits(1 + 2.0 ** -52, "f64")

def test_exact_zero_sums_are_negative_only_rounding_down(clib):
  for fmt, rm in itertools.product(FMT, range(4)):
    add, _, _, fma = OPS[fmt]
    z = bits(-0.0 if rm == RDN else 0.0, fmt)
    assert run(clib, add, fmt, mode(fmt, rm), 1.5, -1.5) == z, (fmt, rm)
    assert run(clib, fma, fmt, mode(fmt, rm), 1.5, 2.0, -3.0) == z, (fmt, rm)
    assert run(clib, add, fmt, mode(fmt, rm), 0.0, -0.0) == z, (fmt, rm)
    assert run(clib, add, fmt, mode(fmt, rm), -0.0, -0.0) == bits(-0.0, fmt), (fmt, rm)

def test_sqrt_rounding(clib):
  for rm in range(4):
    assert run(clib, "VOP1Op_V_SQRT_F32_E32", "f32", mode("f32", rm), 2.0) == round_to(sqrt_bracket(2), "f32", rm)

def sqrt_bracket(n: int) -> Fraction:
  """A rational strictly between sqrt(n) and the f32 neighbours of it (sqrt(2) is irrational: 80 bits decide every mode)."""
  import math
  q = math.isqrt(n << 160)
  return Fraction(4 * q + 1, 4 << 80)

DEN = {"f32": 2.0 ** -130, "f16": 2.0 ** -20, "f64": 2.0 ** -1060}    # a denormal of each format
BIG = {"f32": 2.0 ** 40, "f16": 2.0 ** 10, "f64": 2.0 ** 40}         # times the denormal: a normal result

def test_denormal_modes(clib):
  for fmt, d in itertools.product(FMT, range(4)):
    add, _, mul, fma = OPS[fmt]
    m, x = mode(fmt, RNE, d), DEN[fmt]
    X = exact(x, fmt)
    keep_in, keep_out = d & 1, d & 2
    # denormal in, denormal out: kept only when both are
    assert run(clib, add, fmt, m, x, 0.0) == (bits(x, fmt) if keep_in and keep_out else 0), (fmt, d)
    assert run(clib, add, fmt, m, -x, -0.0) == (bits(-x, fmt) if keep_in and keep_out else bits(-0.0, fmt)), (fmt, d)
    # denormal in, normal out: the input rule alone
    assert run(clib, mul, fmt, m, x, BIG[fmt]) == (expect(X * exact(BIG[fmt], fmt), fmt) if keep_in else 0), (fmt, d)
    # normal in, denormal out: the output rule alone
    tiny = float(np.finfo(FMT[fmt][0]).tiny)
    assert run(clib, mul, fmt, m, tiny, 0.25) == expect(exact(tiny, fmt) / 4, fmt, RNE, d), (fmt, d)
    assert run(clib, fma, fmt, m, tiny, 0.5, -tiny) == expect(-exact(tiny, fmt) / 2, fmt, RNE, d), (fmt, d)
  # the f32 group does not touch f16/f64 denormals and the other way round
  assert run(clib, "VOP2Op_V_ADD_F16_E32", "f16", mode("f32", RNE, 0), DEN["f16"], 0.0) == bits(DEN["f16"], "f16")
  assert run(clib, "VOP2Op_V_ADD_F32_E32", "f32", mode("f16", RNE, 0), DEN["f32"], 0.0) == bits(DEN["f32"], "f32")

def test_conversions(clib):
  # f32 -> f16 rounds per the f16 group, f64 -> f32 per the f32 group, i32 -> f32 per the f32 group
  x = 1 + 2.0 ** -11 + 2.0 ** -20
  for rm in range(4):
    assert run(clib, "VOP1Op_V_CVT_F16_F32_E32", "f32", mode("f16", rm), x, dfmt="f16") == round_to(exact(x, "f32"), "f16", rm), rm
    assert run(clib, "VOP1Op_V_CVT_F16_F32_E32", "f32", mode("f32", rm), -x, dfmt="f16") == round_to(-exact(x, "f32"), "f16", RNE), rm
    y = 1 + 2.0 ** -24 + 2.0 ** -40
    assert run(clib, "VOP1Op_V_CVT_F32_F64_E32", "f64", mode("f32", rm), -y, dfmt="f32") == round_to(-exact(y, "f64"), "f32", rm), rm
    n = (1 << 24) + 3
    assert run(clib, "VOP1Op_V_CVT_F32_I32_E32", "f32", mode("f32", rm), n, raw=True) == round_to(Fraction(n), "f32", rm), rm
  # denormals: f16 -> f32 follows the f16 input rule; f32 -> f16 the f32 input and the f16 output rules
  for d in range(4):
    assert run(clib, "VOP1Op_V_CVT_F32_F16_E32", "f16", mode("f16", RNE, d), DEN["f16"], dfmt="f32") == (bits(DEN["f16"], "f32") if d & 1 else 0), d
    assert run(clib, "VOP1Op_V_CVT_F16_F32_E32", "f32", mode("f16", RNE, d), DEN["f16"], dfmt="f16") == (bits(DEN["f16"], "f16") if d & 2 else 0), d
    assert run(clib, "VOP1Op_V_CVT_F64_F32_E32", "f32", mode("f32", RNE, d), DEN["f32"], dfmt="f64") == (bits(DEN["f32"], "f64") if d & 1 else 0), d

def test_round_mode_override_restores_mode(clib):
  # V_CVT_PK_RTZ_F16_F32 truncates whatever MODE says and leaves MODE as it was (the pseudocode saves and restores ROUND_MODE)
  x = 1 + 2.0 ** -11 + 2.0 ** -20
  for rm in range(4):
    m = 0xf0 | rm | rm << 2
    r = both(clib, "rdna3", "VOP2Op_V_CVT_PK_RTZ_F16_F32_E32", MODE=m, S0=bits(x, "f32"), S1=bits(-x, "f32"))
    assert r.MODE == m
    assert r.D0 & 0xffffffff == round_to(exact(x, "f32"), "f16", RTZ) | round_to(-exact(x, "f32"), "f16", RTZ) << 16

def test_ieee_mode_min_max(clib):
  # ISA pseudocode of V_MAX_F32: IEEE mode quiets a signalling NaN operand; otherwise a NaN operand yields the other operand
  snan, one = 0x7fa00000, bits(1.0, "f32")
  for ieee in (0, 1):
    m = 0xf0 | ieee << 9
    r = both(clib, "rdna3", "VOP2Op_V_MAX_F32_E32", MODE=m, S0=snan, S1=one)
    assert r.D0 & 0xffffffff == (0x7fe00000 if ieee else one)
    r = both(clib, "rdna3", "VOP2Op_V_MIN_F32_E32", MODE=m, S0=one, S1=snan)
    assert r.D0 & 0xffffffff == (0x7fe00000 if ieee else one)
