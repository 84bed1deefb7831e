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
