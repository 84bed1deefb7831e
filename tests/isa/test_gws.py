"""GWS (DS_GWS_*) and DS_ORDERED_COUNT across resident workgroups, S_SLEEP as a yield, and the deadlock report; RDNA3.

Every program's result depends on the cross-workgroup order: run with workgroups one after another (the scheduler without
GWS), the early workgroups would read zeros. Expected values follow from the ISA model in docs/emu.md ("Scheduling"), worked
out by hand here; both backends must agree on results, instruction counts and reports."""
import dataclasses
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from tinygrad.runtime.autogen.amd.rdna3.ins import v_readfirstlane_b32_e32
from mockgpu.emu.api import run_code
from mockgpu.emu.errors import Deadlock, GPUFault
from isa_harness import Bufs

def asm(*items) -> tuple[bytes, dict[str, int]]:
  """Assemble instructions, "name:" labels and (branch_op, "name") pairs; returns the bytes and each label's byte offset."""
  pos, labels = 0, {}
  for it in items:
    if isinstance(it, str): labels[it.rstrip(":")] = pos
    else: pos += 4 if isinstance(it, tuple) else len(it.to_bytes())
  out, pos = b"", 0
  for it in items:
    if isinstance(it, str): continue
    b = it[0](simm16=(labels[it[1]] - pos - 4) // 4).to_bytes() if isinstance(it, tuple) else it.to_bytes()
    out, pos = out + b, pos + len(b)
  return out + s_endpgm().to_bytes(), labels

def prologue(nbuf: int, waves_per_wg: int) -> list:
  """s8 = workgroup x (TGID_X after the buffer SGPRs), s9 = wave in the workgroup, s10 = wave in the dispatch (creation order)."""
  return [s_mov_b32(s[8], s[2 * nbuf]), v_readfirstlane_b32_e32(s[9], v[0]), s_lshr_b32(s[9], s[9], 5),
          s_mul_i32(s[10], s[8], waves_per_wg), s_add_u32(s[10], s[10], s[9]), s_mov_b32(M0, 0), s_mov_b32(s[13], 0)]

def both(code: bytes, arrays: list[np.ndarray], **kw):
  """Run on both backends with fresh copies of `arrays`; require identical buffers and counts. Returns (buffers, Stats) of C."""
  res = []
  for backend in ("c", "python"):
    bufs = [a.copy() for a in arrays]
    b = Bufs(*bufs)
    st = run_code(code, b.mem, user_sgprs=b.sgprs(), rsrc2=(2 * len(bufs)) << 1 | 1 << 7, backend=backend, op_counts=True, **kw)
    res.append(([b[i] for i in range(len(bufs))], st))
  (bc, sc), (bp, sp) = res
  for x, y in zip(bc, bp): np.testing.assert_array_equal(x, y)
  assert (sc.instructions, sc.waves, sc.workgroups, sc.op_counts) == (sp.instructions, sp.waves, sp.workgroups, sp.op_counts)
  return bc, sc

def deadlock(code: bytes, arrays: list[np.ndarray], **kw):
  """Both backends must stop with the same Deadlock report; returns it."""
  reps = []
  for backend in ("c", "python"):
    b = Bufs(*[a.copy() for a in arrays])
    with pytest.raises(Deadlock) as ei:
      run_code(code, b.mem, user_sgprs=b.sgprs(), rsrc2=(2 * len(arrays)) << 1 | 1 << 7, backend=backend, **kw)
    reps.append(ei.value)
  r0, r1 = (dataclasses.replace(e.report, address=0, pc_addr=0) for e in reps)   # the code buffer differs per run
  assert r0 == r1 and all(e.report.address == e.report.pc_addr for e in reps)
  return reps[0]

def store(buf: int, idx_sgpr, data_vgpr) -> list:
  """buffer `buf` (u32 array at s[2*buf:2*buf+1])[idx_sgpr] = data_vgpr (every lane writes the same dword)."""
  return [s_lshl_b32(s[20], idx_sgpr, 2), v_mov_b32_e32(v[30], s[20]), global_store_b32(addr=v[30], data=data_vgpr, saddr=s[2 * buf:2 * buf + 1])]

def load(dst, buf: int, idx_sgpr) -> list:
  return [s_lshl_b32(s[20], idx_sgpr, 2), v_mov_b32_e32(v[30], s[20]), global_load_b32(vdst=dst, addr=v[30], saddr=s[2 * buf:2 * buf + 1]),
          s_waitcnt(simm16=0)]

# ---------------- GWS barrier across workgroups ----------------
RID = 5
def barrier_prog(init: int, nwaves: int) -> tuple[list, list, list]:
  """Round 1 A[g] = g + 1; barrier; B[g] = A[next]; barrier; C[g] = B[next] (next = (g + 1) mod nwaves). Wave 0 initialises."""
  pre = [*prologue(3, 2), s_mov_b32(M0, 0), s_add_u32(s[11], s[10], 1), s_cmp_eq_u32(s[11], nwaves), s_cselect_b32(s[11], 0, s[11]),
         v_mov_b32_e32(v[1], nwaves - 1), s_cmp_lg_u32(s[10], 0), (s_cbranch_scc1, "go")]
  init_block = [v_mov_b32_e32(v[2], init), ds_gws_init(data0=v[2], offset0=RID)]
  rest = ["go:", s_add_u32(s[12], s[10], 1), v_mov_b32_e32(v[4], s[12]), *store(0, s[10], v[4]), s_waitcnt(simm16=0),
          ds_gws_barrier(data0=v[1], offset0=RID), *load(v[5], 0, s[11]), *store(1, s[10], v[5]), s_waitcnt(simm16=0),
          ds_gws_barrier(data0=v[1], offset0=RID), *load(v[6], 1, s[11]), *store(2, s[10], v[6])]
  return pre, init_block, rest

def test_barrier_orders_workgroups():
  # 3 workgroups x 2 waves; INIT = waves - 1 = 5. B[g] = A[g+1] = g+2 and C[g] = B[g+1] = g+3 (mod 6, +1) only if every
  # wave's round-1 store precedes every round-2 load: workgroup 0 reads what workgroups 1 and 2 write after it arrived
  pre, init_block, rest = barrier_prog(5, 6)
  code, _ = asm(*pre, *init_block, *rest)
  (a, b, c), st = both(code, [np.zeros(6, np.uint32)] * 3, grid=(3, 1, 1), block=(64, 1, 1))
  g = np.arange(6)
  np.testing.assert_array_equal(a, g + 1)
  np.testing.assert_array_equal(b, (g + 1) % 6 + 1)
  np.testing.assert_array_equal(c, (g + 2) % 6 + 1)
  n = lambda xs: sum(not isinstance(x, str) for x in xs)
  assert (st.workgroups, st.waves, st.instructions) == (3, 6, 6 * (n(pre) + n(rest) + 1) + n(init_block))
  assert st.op_counts["DS DS_GWS_BARRIER"] == 12 and st.op_counts["DS DS_GWS_INIT"] == 1

def test_barrier_deadlock_report():
  # INIT 6 expects 7 waves: the 6 arrivals take the counter 6 -> 0 and all wait at the first barrier
  pre, init_block, rest = barrier_prog(6, 6)
  code, labels = asm(*pre, *init_block, *rest)
  e = deadlock(code, [np.zeros(6, np.uint32)] * 3, grid=(3, 1, 1), block=(64, 1, 1))
  r, first = e.report, labels["go"] + sum(len(x.to_bytes()) for x in rest[1:7])
  assert (r.kind, r.space, r.wave, r.workgroup, r.pc) == ("deadlock", "none", 0, (0, 0, 0), first)
  assert r.raw == ds_gws_barrier(data0=v[1], offset0=RID).to_bytes() and "DS_GWS_BARRIER" in r.disasm
  x = r.extra
  assert (x["op"], x["wait"], x["gws_id"], x["counter"], x["blocked_waves"], x["resident_workgroups"]) == ("DS_GWS_BARRIER", "barrier", RID, 0, 6, 3)
  assert "limit 3" in x["message"] and "0 not launched yet" in x["message"]

def test_barrier_needs_resident_workgroups():
  # a correct barrier over 3 workgroups can not complete with 2 resident: 4 arrivals take INIT 5 to 1
  pre, init_block, rest = barrier_prog(5, 6)
  code, _ = asm(*pre, *init_block, *rest)
  x = deadlock(code, [np.zeros(6, np.uint32)] * 3, grid=(3, 1, 1), block=(64, 1, 1), resident=2).report.extra
  assert (x["gws_id"], x["counter"], x["blocked_waves"], x["resident_workgroups"]) == (RID, 1, 4, 2)
  assert "limit 2" in x["message"] and "1 not launched yet" in x["message"]

# ---------------- semaphores ----------------
def test_semaphore_br_hands_data_across_workgroups():
  # workgroup 0's waves wait in SEMA_P (counter 0 at dispatch start); workgroup 1 writes D and adds 2 with SEMA_BR after its
  # workgroup barrier, so both consumers read 100 + wave
  code, _ = asm(*prologue(2, 2), s_cmp_eq_u32(s[8], 0), (s_cbranch_scc0, "producer"),
                ds_gws_sema_p(offset0=7), *load(v[4], 0, s[9]), *store(1, s[9], v[4]), s_endpgm(),
                "producer:", s_add_u32(s[12], s[9], 100), v_mov_b32_e32(v[4], s[12]), *store(0, s[9], v[4]), s_waitcnt(simm16=0), s_barrier(),
                s_cmp_lg_u32(s[9], 0), (s_cbranch_scc1, "end"), v_mov_b32_e32(v[1], 2), ds_gws_sema_br(data0=v[1], offset0=7), "end:")
  (d, out), st = both(code, [np.zeros(2, np.uint32)] * 2, grid=(2, 1, 1), block=(64, 1, 1))
  np.testing.assert_array_equal(d, [100, 101])
  np.testing.assert_array_equal(out, [100, 101])
  assert st.workgroups == 2 and st.op_counts["DS DS_GWS_SEMA_P"] == 2 and st.op_counts["DS DS_GWS_SEMA_BR"] == 1

def mutex_prog(lock: bool) -> bytes:
  """Each of 8 waves: P; ctr = CTR; sleep (yield to the other waves); CTR = ctr + 1; LOG[ctr] = wave; V. Wave 0 makes the token."""
  p, vv = (ds_gws_sema_p(offset0=1), ds_gws_sema_v(offset0=1)) if lock else (s_nop(simm16=0), s_nop(simm16=0))
  return asm(*prologue(2, 4), s_cmp_lg_u32(s[10], 0), (s_cbranch_scc1, "go"), vv, "go:", p, *load(v[4], 0, s[13]),
             s_sleep(simm16=1), v_add_nc_u32_e32(v[5], 1, v[4]), *store(0, s[13], v[5]), v_readfirstlane_b32_e32(s[14], v[4]),
             v_mov_b32_e32(v[6], s[10]), *store(1, s[14], v[6]), s_waitcnt(simm16=0), vv, s_wakeup())[0]

def test_semaphore_mutex():
  (ctr, log), st = both(mutex_prog(True), [np.zeros(1, np.uint32), np.full(8, 99, np.uint32)], grid=(2, 1, 1), block=(128, 1, 1))
  assert ctr[0] == 8 and sorted(log.tolist()) == list(range(8))
  assert st.op_counts["DS DS_GWS_SEMA_P"] == 8 and st.op_counts["DS DS_GWS_SEMA_V"] == 9 and st.op_counts["SOPP S_WAKEUP"] == 8
  # without the lock the 4 waves of a workgroup all read the counter before any writes it back (S_SLEEP yields), and the
  # workgroups run one after another: 0 -> 1 -> 2, with three updates lost in each
  (ctr, log), _ = both(mutex_prog(False), [np.zeros(1, np.uint32), np.full(8, 99, np.uint32)], grid=(2, 1, 1), block=(128, 1, 1))
  assert ctr[0] == 2 and log.tolist() == [3, 7] + [99] * 6

def release_all_prog(p_after: bool) -> bytes:
  # wg 0 waits on resource 3 (M0[21:16] 0 + offset 3); wg 1 names it as (M0[21:16] 5 + offset 62) mod 64 = 3
  return asm(*prologue(2, 2), s_cmp_eq_u32(s[8], 0), (s_cbranch_scc0, "wg1"),
             s_mov_b32(M0, 0), ds_gws_sema_p(offset0=3), *load(v[4], 0, s[13]), *store(1, s[9], v[4]), s_endpgm(),
             "wg1:", s_cmp_lg_u32(s[9], 0), (s_cbranch_scc1, "end"), s_mov_b32(s[13], 0), v_mov_b32_e32(v[4], 77), *store(0, s[13], v[4]),
             s_waitcnt(simm16=0), s_mov_b32(M0, 5 << 16), ds_gws_sema_release_all(offset0=62),
             *([ds_gws_sema_p(offset0=62)] if p_after else []), "end:")[0]

def test_release_all():
  (d, out), st = both(release_all_prog(False), [np.zeros(1, np.uint32), np.zeros(2, np.uint32)], grid=(2, 1, 1), block=(64, 1, 1))
  np.testing.assert_array_equal(out, [77, 77])
  # the waiting waves pass without taking from the counter: a later SEMA_P still finds 0 and waits forever
  code = release_all_prog(True)
  e = deadlock(code, [np.zeros(1, np.uint32), np.zeros(2, np.uint32)], grid=(2, 1, 1), block=(64, 1, 1))
  x, r = e.report.extra, e.report
  assert (r.workgroup, r.wave, r.raw, r.pc) == ((1, 0, 0), 0, ds_gws_sema_p(offset0=62).to_bytes(), len(code) - 12)
  assert (x["op"], x["wait"], x["gws_id"], x["counter"], x["blocked_waves"], x["resident_workgroups"]) == ("DS_GWS_SEMA_P", "semaphore", 3, 0, 1, 1)
  assert "gws_id=3 counter=0" in str(e)

# ---------------- ordered count ----------------
def ordered_prog() -> bytes:
  """4 waves (2 workgroups x 2) arrive in the order 3, 2, 1, 0 (wg 0 waits for a semaphore wg 1 posts; wave 0 of each sleeps
  first); each does op 1: add (count 2, keep the turn): lane L adds (g + 1) << 4L to dword L at M0 0, sleeps, then op 2:
  swap (count 1, release + done) of g + 100 into dword 2 (M0 8). OUT[4g + L] = op 1's old values, OUT[4g + 2] = op 2's."""
  return asm(*prologue(1, 2), s_cmp_eq_u32(s[8], 0), (s_cbranch_scc0, "wg1"), ds_gws_sema_p(offset0=9), (s_branch, "go"),
             "wg1:", v_mov_b32_e32(v[1], 2), ds_gws_sema_br(data0=v[1], offset0=9),
             "go:", s_cmp_lg_u32(s[9], 0), (s_cbranch_scc1, "ord"), s_sleep(simm16=1), s_sleep(simm16=1),
             "ord:", v_and_b32_e32(v[3], 31, v[0]), v_lshlrev_b32_e32(v[3], 2, v[3]), s_add_u32(s[12], s[10], 1), v_lshlrev_b32_e64(v[2], v[3], s[12]),
             s_mov_b32(M0, 0), ds_ordered_count(vdst=v[4], data0=v[2], offset0=1 << 2, offset1=1 << 6), s_sleep(simm16=1),
             s_add_u32(s[13], s[10], 100), v_mov_b32_e32(v[5], s[13]), s_mov_b32(M0, 8),
             ds_ordered_count(vdst=v[6], data0=v[5], offset0=1 << 2, offset1=1 | 2 | 1 << 4), s_waitcnt(simm16=0),
             s_lshl_b32(s[14], s[10], 4), v_add_nc_u32_e32(v[7], s[14], v[3]), s_mov_b32(EXEC_LO, 3), global_store_b32(addr=v[7], data=v[4], saddr=s[0:1]),
             s_mov_b32(EXEC_LO, 1), global_store_b32(addr=v[7], data=v[6], saddr=s[0:1], offset=8))[0]

def test_ordered_count_creation_order():
  (out,), st = both(ordered_prog(), [np.full(16, 0xdead, np.uint32)], grid=(2, 1, 1), block=(64, 1, 1))
  out = out.reshape(4, 4)
  # in creation order g = 0..3: dword 0 gains g+1, dword 1 gains (g+1) << 4, dword 2 is swapped to g + 100
  d0 = d1 = 0; d2 = 0
  for g in range(4):
    assert out[g].tolist()[:3] == [d0, d1, d2] and out[g, 3] == 0xdead
    d0, d1, d2 = d0 + g + 1, d1 + ((g + 1) << 4), g + 100
  assert st.op_counts["DS DS_ORDERED_COUNT"] == 8

def test_ordered_count_deadlock_and_gds_fault():
  # wave 1 asks for its turn before the workgroup barrier, wave 0 (which holds the turn) only after it
  code = asm(*prologue(0, 2), s_cmp_eq_u32(s[9], 0), (s_cbranch_scc1, "w0"), ds_ordered_count(vdst=v[4], data0=v[2], offset0=3 << 2, offset1=3),
             s_barrier(), s_endpgm(), "w0:", s_barrier(), ds_ordered_count(vdst=v[4], data0=v[2], offset0=3 << 2, offset1=3))[0]
  e = deadlock(code, [], block=(64, 1, 1))
  x, r = e.report.extra, e.report
  assert (r.wave, r.workgroup, x["op"], x["wait"], x["ordered_index"], x["waiting_for_wave"], x["blocked_waves"]) == \
         (1, (0, 0, 0), "DS_ORDERED_COUNT", "ordered", 3, 0, 1)
  # M0 past the 4 KiB ordered-count memory: a structured fault naming the space and limit
  for backend in ("c", "python"):
    with pytest.raises(GPUFault) as ei:
      run_code(asm(s_mov_b32(M0, 4092), ds_ordered_count(vdst=v[4], data0=v[2], offset1=1 << 6))[0], backend=backend)
    r = ei.value.report
    assert (r.kind, r.space, r.address, r.size, r.lane, r.limit, r.pc) == ("atomic", "gds", 4096, 4, 1, 4096, len(s_mov_b32(M0, 4092).to_bytes()))

def test_cdna_semaphore():
  # gfx950 (wave64, M0 = scalar 124): workgroup 0 waits on resource 3 until workgroup 1 stored 55 and signalled it as
  # (M0[21:16] 2 + offset 1); its enum has SEMA_V/P/RELEASE_ALL only
  from tinygrad.runtime.autogen.amd.cdna import ins as C
  m0 = C.src[124]
  wg0 = [C.ds_gws_sema_p(offset0=3), C.global_load_dword(vdst=C.v[3], addr=C.v[1], saddr=C.s[0:1]), C.s_waitcnt(simm16=0),
         C.global_store_dword(addr=C.v[1], data=C.v[3], saddr=C.s[2:3]), C.s_endpgm()]
  wg1 = [C.v_mov_b32_e32(C.v[2], 55), C.global_store_dword(addr=C.v[1], data=C.v[2], saddr=C.s[0:1]), C.s_waitcnt(simm16=0),
         C.s_mov_b32(m0, 2 << 16), C.ds_gws_sema_v(offset0=1)]
  pre = [C.v_mov_b32_e32(C.v[1], 0), C.s_mov_b32(m0, 0), C.s_cmp_eq_u32(C.s[4], 0)]
  code = b"".join(i.to_bytes() for i in [*pre, C.s_cbranch_scc0(simm16=sum(len(i.to_bytes()) for i in wg0) // 4), *wg0, *wg1, C.s_endpgm()])
  for backend in ("c", "python"):
    b = Bufs(np.zeros(1, np.uint32), np.zeros(1, np.uint32))
    st = run_code(code, b.mem, arch="gfx950", wave64=True, grid=(2, 1, 1), block=(64, 1, 1), user_sgprs=b.sgprs(), rsrc2=4 << 1 | 1 << 7,
                  backend=backend)
    assert b[1][0] == 55 and (st.workgroups, st.instructions) == (2, 2 * len(pre) + 2 + len(wg0) + len(wg1) + 1)
