"""FIXES: the one table of corrections to AMD's pseudocode. Each entry replaces the text of one (arch, op) and says why."""
from dataclasses import dataclass
__all__ = ["Fix", "FIXES"]

@dataclass(frozen=True)
class Fix:
  text: str
  reason: str

FIXES: dict[tuple[str, str], Fix] = {}
