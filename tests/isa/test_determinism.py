"""The same dispatch twice gives the same memory, registers and instruction counts (multi-workgroup, barriers, atomics,
GWS and ordered counts across resident workgroups)."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs

def _once():
  out, ctr = np.zeros(256, np.uint32), np.zeros(1, np.uint32)
  b = Bufs(out, ctr)
  st = run([s_lshl_b32(s[8], s[4], 6), v_add_nc_u32_e32(v[1], s[8], v[0]), v_lshlrev_b32_e32(v[2], 2, v[1]), v_lshlrev_b32_e32(v[9], 2, v[0]),
            v_mov_b32_e32(v[3], 0), v_mov_b32_e32(v[4], 1), global_atomic_add_u32(vdst=v[5], addr=v[3], data=v[4], saddr=s[2:3], glc=1),
            ds_store_b32(addr=v[9], data0=v[5]), s_waitcnt(simm16=0), s_barrier(), v_xor_b32_e32(v[6], 128, v[9]),
            ds_load_b32(vdst=v[7], addr=v[6]), s_waitcnt(simm16=0),
            global_store_b32(addr=v[2], data=v[7], saddr=s[0:1])], b, block=(64, 1, 1), grid=(4, 1, 1), lds_bytes=1024,
           rsrc2=(4 << 1) | (1 << 7), op_counts=True)
  return out.copy(), st

def test_two_runs_agree():
  (o1, s1), (o2, s2) = _once(), _once()
  np.testing.assert_array_equal(o1, o2)
  assert (s1.instructions, s1.waves, s1.workgroups, s1.op_counts) == (s2.instructions, s2.waves, s2.workgroups, s2.op_counts)
  assert s1.state.vgprs == s2.state.vgprs and s1.state.sgprs[4:] == s2.state.sgprs[4:]   # s0..s3 hold the (fresh) buffer addresses
  assert s1.workgroups == 4 and s1.waves == 8
  assert sorted(o1.tolist()) == list(range(256))     # each value of the counter was handed out once

def test_resident_workgroups_agree():
  # GWS semaphores, S_SLEEP yields and ordered counts across resident workgroups (tests/isa/test_gws.py): the same
  # buffers and per-opcode counts on every run of each backend
  from test_gws import Bufs, mutex_prog, ordered_prog, run_code
  def once(code, arrays, block, backend):
    b = Bufs(*[a.copy() for a in arrays])
    st = run_code(code, b.mem, user_sgprs=b.sgprs(), rsrc2=(2 * len(arrays)) << 1 | 1 << 7, grid=(2, 1, 1), block=block, backend=backend, op_counts=True)
    return [b[i].tolist() for i in range(len(arrays))], (st.instructions, st.waves, st.workgroups, st.op_counts)
  for code, arrays, block in ((mutex_prog(True), [np.zeros(1, np.uint32), np.zeros(8, np.uint32)], (128, 1, 1)),
                              (ordered_prog(), [np.zeros(16, np.uint32)], (64, 1, 1))):
    runs = [once(code, arrays, block, be) for be in ("c", "c", "python", "python")]
    assert all(r == runs[0] for r in runs)

def test_registers_and_scratch_start_zero_in_every_workgroup():
  """Each wave starts with VGPRs (but v0) and scratch at 0, also when its workgroup reuses an earlier one's registers: a
  kernel that reads v7, a VGPR reached only through M0 (V_MOVRELS at v200) and a scratch dword before writing them sees 0
  in all 4 workgroups on both backends (read, then write a marker the next workgroup would otherwise see)."""
  for backend in ("c", "python"):
    out = np.full((4, 3, 64), 0xffffffff, np.uint32)
    b = Bufs(out)
    run([s_mul_i32(s[8], s[2], 3 * 64 * 4), v_lshlrev_b32_e32(v[1], 2, v[0]), v_add_nc_u32_e32(v[1], s[8], v[1]), v_mov_b32_e32(v[10], 0),
         s_mov_b32(M0, 200), v_movrels_b32_e32(v[11], v[0]), scratch_load_b32(vdst=v[12], addr=v[10], saddr=NULL, sve=1), s_waitcnt(simm16=0),
         global_store_b32(addr=v[1], data=v[7], saddr=s[0:1]), global_store_b32(addr=v[1], data=v[11], saddr=s[0:1], offset=256),
         global_store_b32(addr=v[1], data=v[12], saddr=s[0:1], offset=512),
         v_mov_b32_e32(v[7], 0x5a5a), v_movreld_b32_e32(v[0], v[7]), scratch_store_b32(addr=v[10], data=v[7], saddr=NULL, sve=1)],
        b, block=(64, 1, 1), grid=(4, 1, 1), rsrc2=(2 << 1) | (1 << 7), scratch_bytes_per_lane=16, backend=backend)
    assert not out.any(), (backend, np.argwhere(out))
