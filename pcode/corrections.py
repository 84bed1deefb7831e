"""FIXES: the one table of corrections to AMD's pseudocode. Each entry replaces one exact substring of one (arch, op)'s text
and says why; `tables.entries` applies them and fails loudly if a substring is no longer there (a new tinygrad changed it)."""
from dataclasses import dataclass
__all__ = ["Fix", "FIXES"]

@dataclass(frozen=True)
class Fix:
  old: str
  new: str
  reason: str

_TRIG_OLD = "result = 64'F((1201'B(2.0 / PI)[1200 : 0] << shift.u32) & 1201'0x1fffffffffffff)"
_TRIG = Fix(_TRIG_OLD, "result = 64'F(two_over_pi_segment(shift.u32))",
            "taken literally, `(X << shift) & (2^53-1)` keeps the low 53 bits of the 1201-bit expansion X of 2/PI; the comment "
            "above it (and the instruction's purpose, Payne-Hanek range reduction) says the 53 bits after `shift` fraction bits "
            "are brought into the whole part: floor(2/PI * 2^(53+shift)) mod 2^53. two_over_pi_segment computes exactly that.")

FIXES: dict[tuple[str, str], Fix] = {(a, "VOP3Op_V_TRIG_PREOP_F64"): _TRIG for a in ("rdna3", "rdna4", "cdna")}
