"""mockgpu.emu.memory.MemoryMap and the emu error hierarchy (no execution)."""
import threading
import pytest
from mockgpu.errors import MockGPUError
from mockgpu.emu.errors import EmuError, GPUFault, InvalidInstruction, WatchdogExpired
from mockgpu.emu.memory import MemoryMap, Range

def test_add_find_remove():
  m = MemoryMap()
  m.add(0x1000, 0x100, "a"); m.add(0x3000, 0x10, "b")
  assert m.find(0x1000, 0x100) == Range(0x1000, 0x100, "a")
  assert m.find(0x10fc, 4).name == "a" and m.find(0x10fd, 4) is None and m.find(0x2000) is None
  assert [r.name for r in m.ranges()] == ["a", "b"]
  assert m.remove(0x1000).name == "a" and len(m) == 1

def test_overlap_and_bad_ranges_are_errors():
  m = MemoryMap(); m.add(0x1000, 0x100, "a")
  with pytest.raises(EmuError, match="overlaps 'a'"): m.add(0x10ff, 2, "x")
  with pytest.raises(EmuError, match="overlaps 'a'"): m.add(0xf00, 0x101, "y")
  with pytest.raises(EmuError, match="size must be > 0"): m.add(0x5000, 0)
  with pytest.raises(EmuError, match="no range starts at 0x1004"): m.remove(0x1004)
  m.add(0x1100, 4, "adjacent")

def test_nearest_and_version():
  m = MemoryMap(); v0 = m.version
  assert m.nearest(0x1234) is None
  m.add(0x1000, 0x100, "a"); m.add(0x9000, 0x100, "b")
  assert m.nearest(0x1180).name == "a" and m.nearest(0x8f00).name == "b" and m.nearest(0x9050).name == "b"
  assert m.version == v0 + 2

def test_thread_safety():
  m = MemoryMap()
  def worker(k):
    for i in range(200): m.add((k << 24) + i * 0x100, 0x80, f"t{k}.{i}")
  ts = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
  for t in ts: t.start()
  for t in ts: t.join()
  rs = m.ranges()
  assert len(rs) == 800 and all(a.end <= b.start for a, b in zip(rs, rs[1:]))

def test_errors_share_the_root():
  for cls in (EmuError, GPUFault, InvalidInstruction, WatchdogExpired): assert issubclass(cls, MockGPUError)

def test_granule_maps_whole_pages():
  m = MemoryMap()
  m.add(0x10000, 12, "kfd", granule=0x1000)     # the driver maps the allocation's whole page
  m.add(0x20010, 0x20, "userptr", granule=0x1000)
  r = m.find(0x10000, 12)
  assert (r.map_start, r.map_end) == (0x10000, 0x11000) and m.find(0x10000, 16) is None   # allocations stay byte-exact
  assert m.mapped(0x10000, 16) and m.mapped(0x10ffc, 4) and not m.mapped(0x10ffd, 4) and not m.mapped(0x11000)
  assert m.mapped(0x20000, 0x1000) and not m.mapped(0x1fffc, 8)   # an unaligned start maps from its page's start
  exact, mapped = m.spans()
  assert list(exact) == [(0x10000, 0x1000c), (0x20010, 0x20030)] and list(mapped) == [(0x10000, 0x11000), (0x20000, 0x21000)]

def test_neighbours_sharing_a_page_merge_into_one_span():
  m = MemoryMap()
  m.add(0x1000, 0x10, "a", granule=0x1000); m.add(0x1800, 0x10, "b", granule=0x1000); m.add(0x2000, 0x10, "c", granule=0x1000)
  assert list(m.spans()[1]) == [(0x1000, 0x3000)] and m.mapped(0x1ffe, 4)

def test_strict_map_is_byte_exact():
  m = MemoryMap(strict=True); m.add(0x10000, 12, "kfd", granule=0x1000)
  assert m.mapped(0x10000, 12) and not m.mapped(0x10000, 16) and "strict" in repr(m)

def test_strict_default_comes_from_the_environment(monkeypatch):
  monkeypatch.setenv("MOCKGPU_STRICT", "1"); assert MemoryMap().strict
  monkeypatch.setenv("MOCKGPU_STRICT", "0"); assert not MemoryMap().strict

def test_bad_granule_and_wrapping_range_are_errors():
  m = MemoryMap()
  with pytest.raises(EmuError, match="granule=3 must be a power of two"): m.add(0x1000, 4, granule=3)
  with pytest.raises(EmuError, match="end at or below 2\\^64"): m.add((1 << 64) - 8, 16)
  m.add((1 << 64) - 16, 16, "top")
  assert not m.mapped((1 << 64) - 8, 16)   # an access that wraps is never inside a span

def test_spans_carve_a_watched_range():
  from mockgpu.emu.memory import Spans
  sp = Spans([(0x1000, 0x2000), (0x3000, 0x3100)])
  rest, held = sp.carve(0x1800, 0x1804)
  assert held == (0x1000, 0x2000) and list(rest) == [(0x1000, 0x1800), (0x1804, 0x2000), (0x3000, 0x3100)]
  assert list(sp.carve(0x3000, 0x3100)[0]) == [(0x1000, 0x2000)]   # the whole span: nothing of it is left
  assert sp.carve(0x1ffc, 0x2004) is None and sp.carve(0x2800, 0x2804) is None and sp.carve(0x1800, 0x1800) is None
