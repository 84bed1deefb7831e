"""The registry of host address ranges a GPU may touch (GPU VA == host address on the KFD path).

Each range is an allocation `[start, start+size)` mapped with a granule: the KFD driver maps whole pages (granule 4096),
CUDA hands out 256-byte granules of larger mappings. Like the hardware, the emulator faults only outside the mapped
granules (`mapped()`), so code that over-reads an allocation inside its last page (e.g. an `s_load_b128` of a 12-byte
buffer, which LLVM emits) runs as on a GPU. Strict mode (`MemoryMap(strict=True)` or `MOCKGPU_STRICT=1`) checks byte-exact
against the allocations (`exact()`): a read past an allocation but inside its mapping is reported (`Stats.oob_reads`, and
the mock GPUs print it) and the kernel goes on, a write or atomic there faults. The KFD model adds a range on
MAP_MEMORY_TO_GPU and removes it on UNMAP; the emulator snapshots the ranges at the start of each dispatch and checks
every global access against them before touching host memory."""
from __future__ import annotations
import bisect, collections, ctypes, itertools, os, threading
from typing import NamedTuple
from mockgpu.emu.errors import EmuError

__all__ = ["Range", "Spans", "MemoryMap", "PAGE", "strict_default"]

PAGE = 0x1000   # the granule of the KFD driver's GPU mappings (and of host pages)
M64 = (1 << 64) - 1

def strict_default() -> bool:
  """Whether MemoryMaps are strict unless told otherwise: `MOCKGPU_STRICT=1` in the environment."""
  return os.environ.get("MOCKGPU_STRICT", "0") not in ("", "0")

class Range(NamedTuple):
  """An allocation `[start, end)`, mapped as the whole granules it touches `[map_start, map_end)`."""
  start: int
  size: int
  name: str
  granule: int = 1
  @property
  def end(self) -> int: return self.start + self.size
  @property
  def map_start(self) -> int: return self.start - self.start % self.granule
  @property
  def map_end(self) -> int: return -(-self.end // self.granule) * self.granule

class Spans:
  """A sorted tuple of disjoint half-open `(start, end)` intervals (adjacent or overlapping inputs are merged) with a
  bisect lookup: the form both emulator backends check addresses against."""
  def __init__(self, intervals):
    merged: list[list[int]] = []
    for s, e in sorted(intervals):
      if merged and s <= merged[-1][1]: merged[-1][1] = max(merged[-1][1], e)
      else: merged.append([s, e])
    self.spans = tuple((s, e) for s, e in merged)
    self._starts = [s for s, _ in self.spans]
    self._words: ctypes.Array | None = None
  def words(self) -> ctypes.Array:
    """The spans as one C array of uint64 `start, end` pairs (at least one pair), what the C backends search; built once
    per Spans, and MemoryMap caches its Spans per version, so a dispatch on an unchanged map builds nothing."""
    if self._words is None: self._words = (ctypes.c_uint64 * max(2, 2 * len(self.spans)))(*[v for sp in self.spans for v in sp])
    return self._words
  def find(self, addr: int, n: int = 1) -> tuple[int, int] | None:
    """The interval holding all of `[addr, addr+n)`, or None (also when the access wraps past 2^64)."""
    i = bisect.bisect_right(self._starts, addr) - 1
    if i < 0 or addr + n > M64 + 1: return None
    s, e = self.spans[i]
    return (s, e) if addr + n <= e else None
  def carve(self, lo: int, hi: int) -> tuple[Spans, tuple[int, int]] | None:
    """(these spans without `[lo, hi)`, the span that held it), or None if no single span holds all of `[lo, hi)`: how a
    store watch (emu.api.run `watch`) makes every access to its range leave the backends' fast paths."""
    if hi <= lo or (s := self.find(lo, hi - lo)) is None: return None
    return Spans([x for x in self.spans if x != s] + [(a, b) for a, b in ((s[0], lo), (hi, s[1])) if b > a]), s
  def __iter__(self): return iter(self.spans)
  def __len__(self) -> int: return len(self.spans)
  def __repr__(self) -> str: return f"Spans({', '.join(f'[{s:#x}, {e:#x})' for s, e in self.spans)})"

class MemoryMap:
  """Thread-safe set of non-overlapping allocations `(start, size, name, granule)`.

  Args: strict: byte-exact checks (see the module doc); default `MOCKGPU_STRICT`.
  Every mutation bumps `version`, so consumers can cache derived snapshots; it lives in the C word `cversion`, which C code
  reads without the GIL (mock/sdma.c: its snapshot of the spans is stale once they differ)."""
  def __init__(self, strict: bool | None = None):
    self._lock = threading.Lock()
    self._starts: list[int] = []
    self._ranges: list[Range] = []
    self.strict, self.cversion = strict_default() if strict is None else strict, ctypes.c_uint64(0)
    self._spans: tuple[int, Spans, Spans] | None = None
    self._granules: collections.Counter[int] = collections.Counter()   # granule -> ranges with it (`mapped` walks when one)

  def add(self, start: int, size: int, name: str = "", granule: int = 1) -> Range:
    """Register the allocation `[start, start+size)`, mapped as whole `granule`s.

    Args: start: host address (GPU VA). size: bytes, > 0. name: shown in fault reports (e.g. "buf0", "kernarg").
      granule: mapping granularity in bytes, a power of two (PAGE for KFD allocations, 1 for an exact mapping).
    Returns: the stored Range.
    Raises: EmuError if the range is empty, wraps past 2^64, the granule is not a power of two, or the range overlaps a
      registered allocation (remove it first). Mappings of neighbours may share a granule; allocations may not overlap."""
    if size <= 0 or start < 0 or start + size > M64 + 1:
      raise EmuError(f"MemoryMap.add: bad range start={start:#x} size={size}; size must be > 0 and the range must end at or below 2^64")
    if granule < 1 or granule & (granule - 1): raise EmuError(f"MemoryMap.add: granule={granule} must be a power of two")
    r = Range(start, size, name or f"range@{start:#x}", granule)
    with self._lock:
      i = bisect.bisect_right(self._starts, start)
      if (i > 0 and self._ranges[i-1].end > start) or (i < len(self._ranges) and self._ranges[i].start < r.end):
        other = self._ranges[i-1] if i > 0 and self._ranges[i-1].end > start else self._ranges[i]
        raise EmuError(f"MemoryMap.add: {r.name!r} [{start:#x}, {r.end:#x}) overlaps {other.name!r} [{other.start:#x}, {other.end:#x}); "
                       "remove the old range first")
      self._starts.insert(i, start)
      self._ranges.insert(i, r)
      self._granules[granule] += 1
      self.cversion.value += 1
    return r

  def remove(self, start: int) -> Range:
    """Unregister the allocation that starts at `start`.

    Returns: the removed Range. Raises: EmuError if no range starts there."""
    with self._lock:
      i = bisect.bisect_left(self._starts, start)
      if i == len(self._starts) or self._starts[i] != start:
        raise EmuError(f"MemoryMap.remove: no range starts at {start:#x}; registered: {len(self._ranges)} ranges")
      del self._starts[i]
      self.cversion.value += 1
      r = self._ranges.pop(i)
      if not (n := self._granules[r.granule] - 1): del self._granules[r.granule]
      else: self._granules[r.granule] = n
      return r

  @property
  def version(self) -> int: return self.cversion.value

  def ranges(self) -> tuple[Range, ...]:
    """A consistent sorted snapshot of all allocations."""
    with self._lock: return tuple(self._ranges)

  def spans(self) -> tuple[Spans, Spans]:
    """(exact, mapped): the allocations' bytes and the granules mapped for them, merged; cached per `version`."""
    with self._lock: return self._spans_locked()

  def _spans_locked(self) -> tuple[Spans, Spans]:
    if self._spans is None or self._spans[0] != self.version:
      self._spans = (self.version, Spans((r.start, r.end) for r in self._ranges), Spans((r.map_start, r.map_end) for r in self._ranges))
    return self._spans[1], self._spans[2]

  def find(self, addr: int, size: int = 1) -> Range | None:
    """The allocation that fully contains `[addr, addr+size)`, or None."""
    with self._lock:
      i = bisect.bisect_right(self._starts, addr) - 1
      if i >= 0 and self._ranges[i].start <= addr and addr + size <= self._ranges[i].end: return self._ranges[i]
    return None

  def mapped(self, addr: int, size: int = 1) -> bool:
    """Whether the hardware may access `[addr, addr+size)` without a fault: inside the mapped granules (byte-exact
    inside one allocation in strict mode). Between changes it asks the cached `spans`; right after one it walks the
    allocations from `addr` instead (a driver model checks packet addresses between allocations: rebuilding the spans for
    each check cost O(n log n) with thousands of live buffers)."""
    size = max(size, 1)
    with self._lock:
      fresh = self._spans is not None and self._spans[0] == self.version
      if not fresh and not self.strict and len(self._granules) > 1: self._spans_locked(); fresh = True   # the walk needs one granule
      if fresh: return self._spans[1 if self.strict else 2].find(addr, size) is not None
      if addr < 0 or addr + size > M64 + 1: return False
      lo, hi = (lambda r: r.start, lambda r: r.end) if self.strict else (lambda r: r.map_start, lambda r: r.map_end)
      j, cur = max(0, bisect.bisect_right(self._starts, addr) - 1), None   # the range before addr, or one whose granule starts before it
      for r in itertools.islice(self._ranges, j, None):
        if cur is None:
          if hi(r) <= addr: continue
          if lo(r) > addr: return False
          cur = hi(r)
        elif lo(r) > cur: break
        else: cur = max(cur, hi(r))
        if cur >= addr + size: return True
      return cur is not None and cur >= addr + size

  def nearest(self, addr: int) -> Range | None:
    """The allocation closest to `addr` (containing it, or the nearest by distance to either end), None if empty."""
    rs = self.ranges()
    if not rs: return None
    def dist(r: Range) -> int: return 0 if r.start <= addr < r.end else min(abs(addr - r.start), abs(addr - (r.end - 1)))
    return min(rs, key=dist)

  def __len__(self) -> int: return len(self._ranges)
  def __repr__(self) -> str: return f"MemoryMap({len(self)} ranges, version={self.version}{', strict' if self.strict else ''})"
