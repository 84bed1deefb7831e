"""Mathematical constants the pseudocode needs beyond double precision, computed exactly with integers."""
import functools
__all__ = ["two_over_pi_fraction_bits", "two_over_pi_segment", "TWO_OVER_PI_BITS"]

TWO_OVER_PI_BITS = 1201

def _atan_inv(x:int, one:int) -> int:
  """atan(1/x) * one, by the alternating series (integer arithmetic, truncating)."""
  total, term, x2, n, sign = 0, one // x, x * x, 1, 1
  while term:
    total += sign * (term // n)
    term //= x2
    n, sign = n + 2, -sign
  return total

@functools.cache
def two_over_pi_fraction_bits() -> int:
  """floor(2/PI * 2^1201): the first 1201 fraction bits of 2/PI (2/PI < 1, so there is no integer part)."""
  guard = 96
  one = 1 << (TWO_OVER_PI_BITS + guard)
  pi = 4 * (4 * _atan_inv(5, one) - _atan_inv(239, one))           # Machin: PI/4 = 4 atan(1/5) - atan(1/239)
  return (2 * one << TWO_OVER_PI_BITS) // pi

def two_over_pi_segment(shift:int) -> int:
  """53 bits of 2/PI after skipping `shift` fraction bits: floor(2/PI * 2^(53 + shift)) mod 2^53 (bits past 1201 are 0)."""
  x, k = two_over_pi_fraction_bits(), TWO_OVER_PI_BITS - 53 - shift
  return ((x >> k) if k >= 0 else (x << -k)) & ((1 << 53) - 1)
