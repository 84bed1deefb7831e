"""What a pseudocode entry reads and writes, found by scanning its text. The handler generator uses it to set up only the
PcState fields an entry uses and to write back only what it assigns."""
from __future__ import annotations
import re
from dataclasses import dataclass

__all__ = ["Usage", "usage"]

_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)([^=]*?)(?<![<>!=])=(?!=)")
_IDENT = re.compile(r"[A-Za-z_]\w*")

@dataclass(frozen=True)
class Usage:
  reads: frozenset[str]
  writes: frozenset[str]
  lane_vgpr: bool      # VGPR[laneId][...] only: per-lane register-file access (MOVREL)
  wave_vgpr: bool      # VGPR[other lane][...]: a wave-wide entry, evaluated once
  lane_bits: frozenset[str] = frozenset()   # members touched only as the lane's own bit (cemit.lane_bits): lanes independent
  lane_index_only: bool = False             # laneId is read only as the index of those bits

def usage(text: str, meta: dict | None = None) -> Usage:
  """Scan pseudocode text (comments removed) for the state it reads and assigns; `meta` (mockgpu.pcode.cemit.metadata of
  the entry) adds what the compiler saw, e.g. targets of concatenation assignments `{ D1.u1, D0.u64 } = ...`."""
  reads: set[str] = set(); writes: set[str] = set()
  for line in text.split("\n"):
    line = line.split("//")[0]
    if (m := _ASSIGN.match(line)) and not line.lstrip().startswith(("if ", "elsif ", "for ", "while ")):
      writes.add(m.group(1))
      reads.update(_IDENT.findall(m.group(2)))
      reads.update(_IDENT.findall(line[m.end():]))
      if "[" in m.group(2) or re.search(r"([-+*|&^]|<<|>>)$", m.group(2).strip()): reads.add(m.group(1))   # partial or compound
    else: reads.update(_IDENT.findall(line))
  if meta:
    reads.update(meta.get("reads") or ()); writes.update(meta.get("writes") or ())
  idx = re.findall(r"VGPR\[([^\]]*)\]", text)
  wave = any(i.strip() != "laneId" for i in idx)
  meta = meta or {}
  return Usage(frozenset(reads), frozenset(writes), bool(idx) and not wave, wave, frozenset(meta.get("lane_bits") or ()),
               bool(meta.get("lane_index_only")))
