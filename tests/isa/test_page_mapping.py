"""Page-granular global memory (the KFD driver maps whole pages; the hardware faults only outside them) and strict mode
(byte-exact: reads past an allocation inside its page are reported and performed, writes there fault). Both backends."""
import ctypes, mmap
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from mockgpu.emu.errors import GPUFault
from mockgpu.emu.memory import MemoryMap, PAGE
from isa_harness import run, Bufs

BACKENDS = ["c", "python"]

@pytest.fixture
def pages():
  """Three host pages, filled with a known pattern; returns (address, numpy view of all three)."""
  m = mmap.mmap(-1, 3 * PAGE)
  arr = np.frombuffer(m, np.uint32)
  arr[:] = np.arange(arr.size, dtype=np.uint32) * 3 + 1
  yield ctypes.addressof(ctypes.c_char.from_buffer(m)), arr
  del arr

def _setup(pages, strict=False, size=12):
  base, arr = pages
  out = np.zeros(8, np.uint32)
  bufs = Bufs(out)
  bufs.mem = MemoryMap(strict=strict)
  bufs.mem.add(out.ctypes.data, out.nbytes, "out")
  bufs.mem.add(base, size, "small", granule=PAGE)   # a 12-byte allocation, mapped as its whole page
  return base, arr, out, bufs

def _sgprs(base, out): return (base & 0xffffffff, base >> 32, out.ctypes.data & 0xffffffff, out.ctypes.data >> 32)

# s_load_b128 of a 12-byte buffer (LLVM emits this for a 3-float kernel argument buffer), stored to `out`
SLOAD = [s_load_b128(sdata=s[4:7], sbase=s[0:1], offset=0, soffset=NULL), s_waitcnt(simm16=0), v_mov_b32_e32(v[1], 0),
         *[v_mov_b32_e32(v[2 + i], s[4 + i]) for i in range(4)], global_store_b128(addr=v[1], data=v[2:5], saddr=s[2:3])]

@pytest.mark.parametrize("backend", BACKENDS)
def test_overread_inside_the_page_runs_as_on_hardware(pages, backend):
  base, arr, out, bufs = _setup(pages)
  st = run(SLOAD, bufs, sgprs=_sgprs(base, out), block=(1, 1, 1), backend=backend)
  np.testing.assert_array_equal(out[:4], arr[:4])   # the 4th dword is the page's byte 12..15, as the hardware reads it
  assert st.oob_reads == 0 and st.oob_report is None

@pytest.mark.parametrize("backend", BACKENDS)
def test_access_past_the_page_faults(pages, backend):
  base, arr, out, bufs = _setup(pages)
  with pytest.raises(GPUFault) as ei:   # dword 1024 is the next host page: mapped in the process, not to the GPU
    run([v_mov_b32_e32(v[1], PAGE - 4), global_load_b32(vdst=v[2], addr=v[1], saddr=s[0:1]), v_mov_b32_e32(v[1], PAGE),
         global_load_b32(vdst=v[3], addr=v[1], saddr=s[0:1])], bufs, sgprs=_sgprs(base, out), block=(1, 1, 1), backend=backend)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.nearest, r.offset) == ("read", "global", base + PAGE, 4, ("small", base, 12), PAGE)

@pytest.mark.parametrize("backend", BACKENDS)
def test_write_past_the_page_faults_and_touches_nothing(pages, backend):
  base, arr, out, bufs = _setup(pages)
  before = arr.copy()
  with pytest.raises(GPUFault) as ei:
    run([v_mov_b32_e32(v[1], PAGE), v_mov_b32_e32(v[2], 0xdead), global_store_b32(addr=v[1], data=v[2], saddr=s[0:1])], bufs,
        sgprs=_sgprs(base, out), block=(1, 1, 1), backend=backend)
  assert (ei.value.report.kind, ei.value.report.address) == ("write", base + PAGE)
  np.testing.assert_array_equal(arr, before)

@pytest.mark.parametrize("backend", BACKENDS)
def test_strict_mode_reports_the_overread_and_goes_on(pages, backend):
  base, arr, out, bufs = _setup(pages, strict=True)
  st = run(SLOAD, bufs, sgprs=_sgprs(base, out), block=(1, 1, 1), backend=backend)
  np.testing.assert_array_equal(out[:4], arr[:4])
  r = st.oob_report
  assert st.oob_reads == 1 and (r.kind, r.space, r.address, r.size, r.lane, r.pc) == ("read", "global", base + 12, 4, 0, 0)
  assert r.nearest == ("small", base, 12) and r.offset == 12 and "S_LOAD_B128" in r.disasm

@pytest.mark.parametrize("backend", BACKENDS)
def test_strict_mode_faults_a_write_past_the_allocation(pages, backend):
  base, arr, out, bufs = _setup(pages, strict=True)
  before = arr.copy()
  with pytest.raises(GPUFault, match="strict mode") as ei:
    run([v_mov_b32_e32(v[1], 12), v_mov_b32_e32(v[2], 0xdead), global_store_b32(addr=v[1], data=v[2], saddr=s[0:1])], bufs,
        sgprs=_sgprs(base, out), block=(1, 1, 1), backend=backend)
  assert (ei.value.report.kind, ei.value.report.address, ei.value.report.offset) == ("write", base + 12, 12)
  np.testing.assert_array_equal(arr, before)

@pytest.mark.parametrize("backend", BACKENDS)
def test_strict_mode_counts_every_lane(pages, backend):
  base, arr, out, bufs = _setup(pages, strict=True, size=64)   # lanes 0..15 in the allocation, 16..31 read past it
  st = run([v_lshlrev_b32_e32(v[1], 2, v[0]), global_load_b32(vdst=v[2], addr=v[1], saddr=s[0:1]), s_waitcnt(simm16=0),
            v_mov_b32_e32(v[1], 0), global_store_b32(addr=v[1], data=v[2], saddr=s[2:3])], bufs, sgprs=_sgprs(base, out), backend=backend)
  assert st.oob_reads == 16 and (st.oob_report.address, st.oob_report.lane) == (base + 64, 16)

@pytest.mark.parametrize("strict", [False, True])
def test_mapped_right_after_a_change(strict):
  # MemoryMap.mapped walks the allocations while its cached spans are stale (one granule, or strict) and asks the spans
  # otherwise: both answer what a byte map of the registered ranges says (mapped granules merged; exact bytes in strict mode)
  import random
  def oracle(m):
    covered = bytearray(0x60000)
    for r in m.ranges():
      lo, hi = (r.start, r.end) if strict else (r.map_start, r.map_end)
      covered[lo:hi] = b"\1" * (hi - lo)
    return covered
  for seed in range(120):
    rng, m, addr = random.Random(seed), MemoryMap(strict=strict), 0x10000
    grans = [1, PAGE] if seed % 3 == 0 else [rng.choice([1, PAGE])]
    for _ in range(rng.randint(0, 12)):
      addr += rng.choice([0, 1, 5, 0x800, PAGE, 3 * PAGE])
      m.add(addr, size := rng.choice([1, 7, 0x100, PAGE, 0x1800, 2 * PAGE]), granule=rng.choice(grans))
      addr += size
      if rng.random() < 0.3: m.mapped(addr)   # the spans are current again now and then
    for _ in range(3):
      covered = oracle(m)
      for _ in range(40):
        a, n = rng.randint(0xF000, addr + 0x2000), rng.choice([0, 1, 4, 0x100, PAGE, 0x3000])
        assert m.mapped(a, n) == all(covered[a:a + max(n, 1)]), (seed, hex(a), n, m.ranges())
      if len(m): m.remove(rng.choice(m.ranges()).start)   # stale again
