"""Float operations for the reference evaluator: exact rational arithmetic with one rounding (softfloat.encode), IEEE rules
for NaN, infinities and signed zeros, and the NaN policy of softfloat. Values are bit patterns (ints). `m` is the MODE
register: operands pass its input-denormal rule, results are rounded in its rounding mode and pass its output-denormal rule
(per format group, softfloat.round_mode / flush_in / flush_out)."""
import math
from fractions import Fraction
from mockgpu.pcode.softfloat import Fmt, decode, encode, encode_sr, is_nan, canon_nan, widen_nan, sign_bit, round_mode, flush_in, flush_out, RDN
from mockgpu.pcode.state import MODE_DEFAULT
__all__ = ["fbin", "ffma", "fcmp", "fsqrt", "fun1", "fldexp", "fmant", "fexp2", "f2i", "f2norm", "i2f", "scale_from", "scale_to", "sr_to", "fquiet"]

INF = float("inf")

def _res(x, f:Fmt, neg_zero:bool=False, m:int=MODE_DEFAULT) -> int:
  if isinstance(x, float) and x != x: return canon_nan(f)
  return flush_out(encode(x, f, round_mode(m, f), neg_zero), f, m)

def fbin(op:str, a:int, b:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  """a op b for op in + - * /, exactly rounded."""
  if is_nan(a, f) or is_nan(b, f): return canon_nan(f)
  a, b = flush_in(a, f, m), flush_in(b, f, m)
  x, y = decode(a, f), decode(b, f)
  sa, sb = sign_bit(a, f), sign_bit(b, f)
  if isinstance(x, float) or isinstance(y, float):                       # an infinity is involved
    xf, yf = float(x), float(y)
    if op == "/" and yf == 0: return _res(math.copysign(INF, 1 if sa == sb else -1) if xf != 0 else float("nan"), f)
    r = xf + yf if op == "+" else xf - yf if op == "-" else xf * yf if op == "*" else xf / yf
    if r == 0: return _res(Fraction(0), f, bool(sa ^ sb), m)
    return _res(r, f, False, m)
  if op in ("+", "-"):
    r, sy = (x + y, sb) if op == "+" else (x - y, sb ^ 1)
    z = bool(sa) if x == 0 and y == 0 and sa == sy else round_mode(m, f) == RDN   # an exact zero sum is -0 only rounding down
  elif op == "*": r, z = x * y, bool(sa ^ sb)
  else:
    if y == 0: return canon_nan(f) if x == 0 else _res(-INF if sa ^ sb else INF, f)
    r, z = x / y, bool(sa ^ sb)
  return _res(r, f, z if r == 0 else False, m)

def ffma(a:int, b:int, c:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  """a * b + c with a single rounding."""
  if is_nan(a, f) or is_nan(b, f) or is_nan(c, f): return canon_nan(f)
  a, b, c = flush_in(a, f, m), flush_in(b, f, m), flush_in(c, f, m)
  x, y, z = decode(a, f), decode(b, f), decode(c, f)
  sp, sc = sign_bit(a, f) ^ sign_bit(b, f), sign_bit(c, f)
  if any(isinstance(v, float) for v in (x, y, z)):
    if (x == 0 and isinstance(y, float)) or (y == 0 and isinstance(x, float)): return canon_nan(f)     # 0 * inf
    p = (-INF if sp else INF) if isinstance(x, float) or isinstance(y, float) else 0.0   # only the signs of a finite product matter
    return _res(p + float(z), f, False, m)
  p = x * y
  r = p + z
  if r == 0: return _res(r, f, bool(sp) if p == 0 and z == 0 and sp == sc else round_mode(m, f) == RDN, m)
  return _res(r, f, False, m)

def fcmp(op:str, a:int, b:int, f:Fmt, m:int=MODE_DEFAULT) -> bool:
  if is_nan(a, f) or is_nan(b, f): return op == "!="
  x, y = decode(flush_in(a, f, m), f), decode(flush_in(b, f, m), f)
  return {"==": x == y, "!=": x != y, "<>": x != y, "<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]

def fsqrt(a:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  if is_nan(a, f): return canon_nan(f)
  a = flush_in(a, f, m)
  x = decode(a, f)
  if x == 0: return a
  if x < 0: return canon_nan(f)
  if isinstance(x, float): return a
  k = f.mb + 8 + max(0, (x.denominator.bit_length() - x.numerator.bit_length()) // 2 + 1)
  num = x.numerator << (2 * k)
  q = math.isqrt(num // x.denominator)
  exact = q * q * x.denominator == num
  return _res((Fraction(q) if exact else Fraction(4 * q + 1, 4)) / (1 << k), f, False, m)

def fun1(name:str, a:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  """trunc floor fract sin cos log2 of a float (transcendentals through the platform's double libm, like the C backend)."""
  if is_nan(a, f): return canon_nan(f)
  a = flush_in(a, f, m)
  x = decode(a, f)
  neg = bool(sign_bit(a, f))
  if name in ("trunc", "floor"):
    if isinstance(x, float) or x == 0: return a
    r = math.trunc(x) if name == "trunc" else math.floor(x)
    return _res(Fraction(r), f, neg, m)
  if name == "fract":
    if isinstance(x, float): return canon_nan(f)
    return _res(x - math.floor(x), f, False, m)
  d = math.copysign(float(x), -1.0 if neg else 1.0)
  try:
    if name == "sin": r = math.sin(d)
    elif name == "cos": r = math.cos(d)
    else: r = -INF if d == 0 else (float("nan") if d < 0 else math.log2(d))
  except ValueError: r = float("nan")
  return _res(Fraction(r) if math.isfinite(r) else r, f, math.copysign(1, r) < 0 if r == 0 else False, m)

def fexp2(a:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  if is_nan(a, f): return canon_nan(f)
  a = flush_in(a, f, m)
  try: r = math.pow(2.0, math.copysign(float(decode(a, f)), -1.0 if sign_bit(a, f) else 1.0))
  except OverflowError: r = INF
  return _res(Fraction(r) if math.isfinite(r) else r, f, False, m)

def fldexp(a:int, n:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  if is_nan(a, f): return canon_nan(f)
  a = flush_in(a, f, m)
  x = decode(a, f)
  if isinstance(x, float) or x == 0: return a
  lim = 4000 if f.name == "f64" else 400
  n = max(-lim, min(lim, n))
  return _res(x * Fraction(2) ** n, f, bool(sign_bit(a, f)), m)

def fmant(a:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  if is_nan(a, f): return canon_nan(f)
  a = flush_in(a, f, m)
  x = decode(a, f)
  if isinstance(x, float) or x == 0: return a
  return encode(Fraction(math.frexp(float(x))[0]), f)

def fquiet(a:int, f:Fmt) -> int: return a | (1 << (f.mb - 1)) if is_nan(a, f) and f.ieee else a

def f2i(a:int, f:Fmt, n:int, signed:bool) -> int:
  """Float to n-bit integer: NaN -> 0, toward zero, saturating."""
  if is_nan(a, f): return 0
  x = decode(a, f)
  lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
  v = lo if x == -INF else hi if x == INF else math.trunc(x)
  return max(lo, min(hi, v)) & ((1 << n) - 1)

def f2norm(a:int, f:Fmt, signed:bool) -> int:
  if is_nan(a, f): return 0
  x = float(decode(a, f))
  x = max(-1.0 if signed else 0.0, min(1.0, x))
  return round(x * (32767.0 if signed else 65535.0)) & 0xffff

def i2f(v:int, f:Fmt, m:int=MODE_DEFAULT) -> int:
  """Integer to float through a double (exact up to 2^53, like the C backend), rounded per MODE `m`."""
  return _res(Fraction(float(v)), f, False, m)

def scale_from(a:int, src:Fmt, scale:int, dst:Fmt) -> int:
  x = decode(a, src)
  if isinstance(x, float): return _res(x, dst)
  return _res(Fraction(math.ldexp(float(x), scale - 127)), dst, bool(sign_bit(a, src)))

def sr_to(a:int, src:Fmt, rnd:int, scale:int, dst:Fmt) -> int:
  """Stochastically rounded conversion of `a` / 2^(scale-127) (scale 127: none) to `dst`."""
  if is_nan(a, src): return widen_nan(a, src, dst)
  x = decode(a, src)
  if isinstance(x, float): return _res(x, dst)
  return encode_sr(Fraction(math.ldexp(float(x), 127 - scale)), dst, rnd, bool(sign_bit(a, src)))

def scale_to(a:int, src:Fmt, scale:int, dst:Fmt) -> int:
  if is_nan(a, src): return widen_nan(a, src, dst)
  x = decode(a, src)
  if isinstance(x, float): return _res(x, dst)
  return _res(Fraction(math.ldexp(float(x), 127 - scale)), dst, bool(sign_bit(a, src)))
