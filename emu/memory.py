"""The registry of host address ranges a GPU may touch (GPU VA == host address on the KFD path).

The KFD model adds a range on MAP_MEMORY_TO_GPU and removes it on UNMAP; the emulator snapshots the sorted ranges at the
start of each dispatch and checks every global access against them before touching host memory."""
from __future__ import annotations
import bisect, threading
from typing import NamedTuple
from mockgpu.emu.errors import EmuError

__all__ = ["Range", "MemoryMap"]

class Range(NamedTuple):
  start: int
  size: int
  name: str
  @property
  def end(self) -> int: return self.start + self.size

class MemoryMap:
  """Thread-safe set of non-overlapping host ranges `(start, size, name)`.

  Every mutation bumps `version`, so consumers can cache derived snapshots."""
  def __init__(self):
    self._lock = threading.Lock()
    self._starts: list[int] = []
    self._ranges: list[Range] = []
    self.version = 0

  def add(self, start: int, size: int, name: str = "") -> Range:
    """Register `[start, start+size)`.

    Args: start: host address (GPU VA). size: bytes, > 0. name: shown in fault reports (e.g. "buf0", "kernarg").
    Returns: the stored Range.
    Raises: EmuError if size <= 0 or the range overlaps a registered one (remove it first)."""
    if size <= 0 or start < 0: raise EmuError(f"MemoryMap.add: bad range start={start:#x} size={size}; size must be > 0")
    r = Range(start, size, name or f"range@{start:#x}")
    with self._lock:
      i = bisect.bisect_right(self._starts, start)
      if (i > 0 and self._ranges[i-1].end > start) or (i < len(self._ranges) and self._ranges[i].start < r.end):
        other = self._ranges[i-1] if i > 0 and self._ranges[i-1].end > start else self._ranges[i]
        raise EmuError(f"MemoryMap.add: {r.name!r} [{start:#x}, {r.end:#x}) overlaps {other.name!r} [{other.start:#x}, {other.end:#x}); "
                       "remove the old range first")
      self._starts.insert(i, start)
      self._ranges.insert(i, r)
      self.version += 1
    return r

  def remove(self, start: int) -> Range:
    """Unregister the range that starts at `start`.

    Returns: the removed Range. Raises: EmuError if no range starts there."""
    with self._lock:
      i = bisect.bisect_left(self._starts, start)
      if i == len(self._starts) or self._starts[i] != start:
        raise EmuError(f"MemoryMap.remove: no range starts at {start:#x}; registered: {len(self._ranges)} ranges")
      del self._starts[i]
      self.version += 1
      return self._ranges.pop(i)

  def ranges(self) -> tuple[Range, ...]:
    """A consistent sorted snapshot of all ranges."""
    with self._lock: return tuple(self._ranges)

  def find(self, addr: int, size: int = 1) -> Range | None:
    """The range that fully contains `[addr, addr+size)`, or None."""
    with self._lock:
      i = bisect.bisect_right(self._starts, addr) - 1
      if i >= 0 and self._ranges[i].start <= addr and addr + size <= self._ranges[i].end: return self._ranges[i]
    return None

  def nearest(self, addr: int) -> Range | None:
    """The range closest to `addr` (containing it, or the nearest by distance to either end), None if empty."""
    rs = self.ranges()
    if not rs: return None
    def dist(r: Range) -> int: return 0 if r.start <= addr < r.end else min(abs(addr - r.start), abs(addr - (r.end - 1)))
    return min(rs, key=dist)

  def __len__(self) -> int: return len(self._ranges)
  def __repr__(self) -> str: return f"MemoryMap({len(self)} ranges, version={self.version})"
