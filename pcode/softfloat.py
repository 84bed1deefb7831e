"""Reference float formats for the Python evaluator and the C emitter's constants: exact decode to Fraction, exact rounding
from Fraction, NaN rules. Independent of the C runtime (it uses integer arithmetic only), so the two backends can be diffed.

NaN policy (documented in docs/pcode.md): arithmetic that produces a NaN returns the format's canonical quiet NaN (sign 0,
quiet bit, zero payload). Conversions keep the NaN: widening keeps sign, payload and the quiet/signalling bit exactly;
narrowing keeps sign and the top payload bits and sets the quiet bit."""
from fractions import Fraction
from dataclasses import dataclass
__all__ = ["Fmt", "FMTS", "fmt_of", "decode", "encode", "encode_sr", "is_nan", "is_snan", "canon_nan", "widen_nan", "cvt", "RNE", "RUP", "RDN", "RTZ",
           "round_mode", "flush_in", "flush_out"]

RNE, RUP, RDN, RTZ = 0, 1, 2, 3   # AMD MODE.FP_ROUND encodings: nearest even, +inf, -inf, toward zero

@dataclass(frozen=True)
class Fmt:
  name: str
  eb: int         # exponent bits
  mb: int         # fraction bits
  ieee: bool      # all-ones exponent encodes inf/NaN
  nan_only: bool = False  # OCP E4M3: no inf, S.1111.111 is NaN
  @property
  def bits(self) -> int: return 1 + self.eb + self.mb
  @property
  def bias(self) -> int: return (1 << (self.eb - 1)) - 1
  @property
  def max_bits(self) -> int:
    if self.ieee: return ((1 << self.eb) - 2) << self.mb | ((1 << self.mb) - 1)
    if self.nan_only: return ((1 << (self.eb + self.mb)) - 2)
    return (1 << (self.eb + self.mb)) - 1

FMTS = {"f16": Fmt("f16", 5, 10, True), "bf16": Fmt("bf16", 8, 7, True), "f32": Fmt("f32", 8, 23, True), "f64": Fmt("f64", 11, 52, True),
        "fp8": Fmt("fp8", 4, 3, False, True), "bf8": Fmt("bf8", 5, 2, True), "fp6": Fmt("fp6", 2, 3, False), "bf6": Fmt("bf6", 3, 2, False),
        "fp4": Fmt("fp4", 2, 1, False)}

def fmt_of(kind:str, bits:int) -> Fmt:
  """The Fmt of a float Ty (kind 'f' 16/32/64, 'bf' 16, or a small-format kind)."""
  return FMTS["bf16" if kind == "bf" else (f"f{bits}" if kind == "f" else kind)]

# MODE register groups (see mockgpu.pcode.state): bit offset of a format's FP_ROUND field (FP_DENORM is 4 above); bf16 and
# the small formats are tied to no MODE field (nearest even, denormals kept)
_GROUP = {"f32": 0, "f16": 2, "f64": 2}

def round_mode(m:int, f:Fmt) -> int:
  """The FP_ROUND mode MODE value `m` sets for results in format `f`."""
  g = _GROUP.get(f.name)
  return RNE if g is None else (m >> g) & 3

def _ftz(b:int, f:Fmt, keep:bool) -> int:
  if keep or (b >> f.mb) & ((1 << f.eb) - 1) or not b & ((1 << f.mb) - 1): return b
  return b & (1 << (f.bits - 1))

def flush_in(b:int, f:Fmt, m:int) -> int:
  """Operand `b` after MODE `m`'s input-denormal rule for format `f` (a denormal becomes a zero of the same sign)."""
  g = _GROUP.get(f.name)
  return _ftz(b, f, g is None or bool((m >> (4 + g)) & 1))

def flush_out(b:int, f:Fmt, m:int) -> int:
  """Result `b` after MODE `m`'s output-denormal rule for format `f`."""
  g = _GROUP.get(f.name)
  return _ftz(b, f, g is None or bool((m >> (5 + g)) & 1))

def is_nan(b:int, f:Fmt) -> bool:
  e, m = (b >> f.mb) & ((1 << f.eb) - 1), b & ((1 << f.mb) - 1)
  if f.ieee: return e == (1 << f.eb) - 1 and m != 0
  if f.nan_only: return e == (1 << f.eb) - 1 and m == (1 << f.mb) - 1
  return False

def is_inf(b:int, f:Fmt) -> bool:
  return f.ieee and (b >> f.mb) & ((1 << f.eb) - 1) == (1 << f.eb) - 1 and b & ((1 << f.mb) - 1) == 0

def is_snan(b:int, f:Fmt) -> bool: return f.ieee and is_nan(b, f) and not (b >> (f.mb - 1)) & 1

def canon_nan(f:Fmt) -> int:
  return ((1 << (f.eb + f.mb)) - 1) if f.nan_only else (((1 << f.eb) - 1) << f.mb | (1 << (f.mb - 1)))

def sign_bit(b:int, f:Fmt) -> int: return (b >> (f.bits - 1)) & 1

def decode(b:int, f:Fmt) -> Fraction|float:
  """Exact value of bits `b`: a Fraction, or float('inf')/-inf; NaN -> float('nan')."""
  s = -1 if sign_bit(b, f) else 1
  if is_nan(b, f): return float("nan")
  if is_inf(b, f): return s * float("inf")
  e, m = (b >> f.mb) & ((1 << f.eb) - 1), b & ((1 << f.mb) - 1)
  if e == 0: return s * Fraction(m, 1 << f.mb) * Fraction(2) ** (1 - f.bias)
  return s * (1 + Fraction(m, 1 << f.mb)) * Fraction(2) ** (e - f.bias)

def encode(x, f:Fmt, rm:int=RNE, neg_zero:bool=False) -> int:
  """Round the exact value `x` (Fraction/int, or float inf/nan) to format `f` in rounding mode `rm`. Overflow: IEEE formats
  give inf when rounding away from zero (RNE, RUP of a positive, RDN of a negative), else the largest finite value; E4M3
  gives NaN or max the same way; formats without inf/NaN saturate. NaN -> canonical NaN."""
  if isinstance(x, float):
    if x != x: return canon_nan(f)
    if x in (float("inf"), float("-inf")):
      s = (1 << (f.bits - 1)) if x < 0 else 0
      return s | (((1 << f.eb) - 1) << f.mb if f.ieee else (canon_nan(f) if f.nan_only else f.max_bits))
    x = Fraction(x)
  s = (1 << (f.bits - 1)) if (x < 0 or (x == 0 and neg_zero)) else 0
  a = abs(Fraction(x))
  if a == 0: return s
  e = a.numerator.bit_length() - a.denominator.bit_length()
  if Fraction(2) ** e > a: e -= 1                      # 2^e <= a < 2^(e+1)
  E = max(e + f.bias, 1)                              # biased exponent of the result (1 for subnormals)
  scale = f.mb - (E - f.bias)                         # a * 2^scale is the integer significand (fraction bits kept)
  q = a * Fraction(2) ** scale
  r = q.numerator // q.denominator
  rem = q - r
  away = rm == RNE or (rm == RUP and not s) or (rm == RDN and bool(s))     # the direction that overflows to infinity
  if (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and r & 1)) if rm == RNE else (rem > 0 and away): r += 1
  bits = r if e + f.bias < 1 else ((E << f.mb) + (r - (1 << f.mb)))   # subnormal: r == 1<<mb rolls into the smallest normal
  if bits > f.max_bits:
    if not away or not (f.ieee or f.nan_only): return s | f.max_bits
    return s | ((((1 << f.eb) - 1) << f.mb) if f.ieee else canon_nan(f))
  return s | bits

def encode_sr(x, f:Fmt, rnd:int, neg_zero:bool=False) -> int:
  """Stochastic rounding: truncate |x| + rnd/2^32 units in the last place (overflow as in round-to-nearest)."""
  if isinstance(x, float) or x == 0: return encode(x, f, RNE, neg_zero)
  s = (1 << (f.bits - 1)) if x < 0 else 0
  a = abs(Fraction(x))
  e = a.numerator.bit_length() - a.denominator.bit_length()
  if Fraction(2) ** e > a: e -= 1
  E = max(e + f.bias, 1)
  q = a * Fraction(2) ** (f.mb - (E - f.bias))
  r = q.numerator // q.denominator
  rem = q - r
  if rem != 0 and rem >= 1 - Fraction(rnd & 0xffffffff, 1 << 32): r += 1
  bits = r if e + f.bias < 1 else ((E << f.mb) + (r - (1 << f.mb)))
  if bits > f.max_bits: return s | ((((1 << f.eb) - 1) << f.mb) if f.ieee else (canon_nan(f) if f.nan_only else f.max_bits))
  return s | bits

def widen_nan(b:int, src:Fmt, dst:Fmt) -> int:
  """NaN bits of `src` moved to `dst`: sign and quiet bit kept, payload shifted (left when widening, truncated when
  narrowing, with the quiet bit forced on when narrowing)."""
  s = sign_bit(b, src) << (dst.bits - 1)
  pay = b & ((1 << src.mb) - 1)
  if not dst.ieee: return canon_nan(dst) | s if dst.nan_only else 0
  if not src.ieee: return s | canon_nan(dst)
  if dst.mb >= src.mb: pay <<= dst.mb - src.mb
  else: pay = (pay >> (src.mb - dst.mb)) | (1 << (dst.mb - 1))
  return s | (((1 << dst.eb) - 1) << dst.mb) | pay

def cvt(b:int, src:Fmt, dst:Fmt, m:int=0xf0) -> int:
  """Float-to-float value conversion under MODE `m` (the source's input-denormal rule, the destination's rounding and
  output-denormal rule) with the NaN rules above."""
  if is_nan(b, src): return widen_nan(b, src, dst)
  b = flush_in(b, src, m)
  return flush_out(encode(decode(b, src), dst, round_mode(m, dst), neg_zero=bool(sign_bit(b, src))), dst, m)
