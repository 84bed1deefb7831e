"""run(watch=...): the stores into a watched range (count, first and last writer) and the LDS byte counters, on both
backends. Expected writers and byte counts follow from the programs (which lane stores where), not from the emulator."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import (v, s, v_lshlrev_b32_e32, v_xor_b32_e32, v_add_nc_u32_e32, v_mov_b32_e32, global_store_b32,
  global_store_b128, global_load_b32, ds_store_b32, ds_load_b64, ds_load_b32, s_waitcnt)
from isa_harness import Bufs, run
from mockgpu.emu.errors import UnsupportedDispatch, GPUFault
from mockgpu.emu.memory import MemoryMap

BACKENDS = ("c", "python")
# lane l stores l at out[l], then l + 100 at out[l ^ 1]: out[5] is written by lane 5 (pc 4), then by lane 4 (pc 28)
TWICE = [v_lshlrev_b32_e32(v[1], 2, v[0]), global_store_b32(addr=v[1], data=v[0], saddr=s[0:1]), v_xor_b32_e32(v[2], 1, v[0]),
         v_lshlrev_b32_e32(v[3], 2, v[2]), v_add_nc_u32_e32(v[4], 100, v[0]), global_store_b32(addr=v[3], data=v[4], saddr=s[0:1])]
PC = [sum(len(i.to_bytes()) for i in TWICE[:k]) for k in (1, 5)]

@pytest.mark.parametrize("backend", BACKENDS)
def test_watch_records_first_and_last_writer(backend):
  bf = Bufs(np.zeros(64, np.uint32))
  st = run(TWICE, bf, backend=backend, watch=(bf.addr(0) + 4 * 5, 4))
  np.testing.assert_array_equal(bf[0][:32], (np.arange(32) ^ 1) + 100)   # the second store wins
  w = st.watch
  assert (w.addr, w.size, w.count) == (bf.addr(0) + 20, 4, 2)
  assert (w.first.lane, w.first.wave, w.first.workgroup, w.first.pc, w.first.addr, w.first.size) == (5, 0, (0, 0, 0), PC[0], bf.addr(0) + 20, 4)
  assert (w.last.lane, w.last.pc) == (4, PC[1]) and "GLOBAL_STORE_B32" in w.last.disasm

@pytest.mark.parametrize("backend", BACKENDS)
def test_watch_wide_store_overlapping_the_range_and_workgroups(backend):
  # each lane of 2 workgroups x 32 lanes stores 16 bytes at (wg * 32 + lane) * 16: byte 16*37 + 4 is lane 5 of workgroup 1's
  prog = [v_lshlrev_b32_e32(v[1], 4, v[0]), v_mov_b32_e32(v[6], s[2]), v_lshlrev_b32_e32(v[5], 9, v[6]),
          v_add_nc_u32_e32(v[1], v[1], v[5]), *[v_mov_b32_e32(v[8 + i], v[0]) for i in range(4)],
          global_store_b128(addr=v[1], data=v[8:11], saddr=s[0:1])]
  bf = Bufs(np.zeros(64 * 4, np.uint32))
  st = run(prog, bf, grid=(2, 1, 1), backend=backend, rsrc2=2 << 1 | 1 << 7, watch=(bf.addr(0) + 16 * 37 + 4, 2))
  # a b128 store is four dword writes: the watched 2 bytes lie in the second of lane 5's
  assert st.watch.count == 1 and (st.watch.last.lane, st.watch.last.workgroup, st.watch.last.size) == (5, (1, 0, 0), 4)
  assert st.watch.last.addr == bf.addr(0) + 16 * 37 + 4 and (bf[0].reshape(64, 4)[:, 0] == np.tile(np.arange(32), 2)).all()

@pytest.mark.parametrize("backend", BACKENDS)
def test_watch_of_unwritten_bytes_and_reads_through_it(backend):
  bf = Bufs(np.arange(64, dtype=np.uint32), np.zeros(32, np.uint32))
  prog = [v_lshlrev_b32_e32(v[1], 2, v[0]), global_load_b32(vdst=v[2], addr=v[1], saddr=s[0:1]), s_waitcnt(simm16=0),
          global_store_b32(addr=v[1], data=v[2], saddr=s[2:3])]
  st = run(prog, bf, backend=backend, watch=(bf.addr(0) + 8, 4))   # loads see the watched bytes; nothing stores there
  assert (st.watch.count, st.watch.first, st.watch.last) == (0, None, None)
  np.testing.assert_array_equal(bf[1], np.arange(32))

@pytest.mark.parametrize("backend", BACKENDS)
def test_watch_keeps_faults_outside_the_allocation(backend):
  a = np.zeros(8, np.uint32)
  bf = Bufs(a)
  bf.mem = MemoryMap(strict=True)
  bf.mem.add(a.ctypes.data, a.nbytes, "buf0", 4096)
  with pytest.raises(GPUFault) as e: run(TWICE, bf, backend=backend, watch=(bf.addr(0) + 28, 4))   # lanes 8.. store past the 32 bytes
  assert e.value.report.kind == "write" and e.value.report.address == bf.addr(0) + 32

def test_watch_outside_every_allocation_is_rejected():
  bf = Bufs(np.zeros(8, np.uint32))
  with pytest.raises(UnsupportedDispatch, match="inside one registered allocation"): run(TWICE, bf, watch=(bf.addr(0) + (1 << 20), 4))
  with pytest.raises(UnsupportedDispatch, match="watch="): run(TWICE, bf, watch=(bf.addr(0), 0))

@pytest.mark.parametrize("backend", BACKENDS)
def test_lds_byte_counters(backend):
  # 32 lanes: one dword store each (128 bytes), a b64 load each (256) and a b32 load by 8 lanes (exec 0xff: 32)
  from tinygrad.runtime.autogen.amd.rdna3.ins import s_mov_b32, EXEC_LO
  prog = [v_lshlrev_b32_e32(v[1], 2, v[0]), ds_store_b32(addr=v[1], data0=v[0]), s_waitcnt(simm16=0), ds_load_b64(vdst=v[2:3], addr=v[1]),
          s_mov_b32(EXEC_LO, 0xff), ds_load_b32(vdst=v[4], addr=v[1]), s_waitcnt(simm16=0)]
  st = run(prog, Bufs(), backend=backend, lds_bytes=512)
  assert (st.lds_written, st.lds_read) == (128, 256 + 32)
