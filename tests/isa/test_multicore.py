"""Multi-core dispatch (run(threads=N), docs/emu.md "Multi-core dispatch"): workgroups run on several threads and every result
is the one-thread run's, bit for bit: memory, registers, counts, and the fault, watchdog and strict-mode reports, which name the
lowest workgroup that stopped even when a higher one stopped first in time. The one-thread run is checked against the Python
backend where the two can run the same program. Code reaching dispatch-wide state (GWS, the emulated clock) or an indirect
jump runs on one thread."""
import dataclasses
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import Bufs, code
from mockgpu.emu.api import run_code
from mockgpu.emu.errors import GPUFault, WatchdogExpired
from mockgpu.emu.memory import MemoryMap, PAGE

pytestmark = pytest.mark.engine   # how kernels run (translator / threads): left out of fidelity recording

G = 8          # workgroups of the planned kernel
BAD = 1 << 30  # a byte offset far outside every buffer

def planned(load: bool = False) -> bytes:
  """Workgroup g (s4) reads plan[g] = (iterations, byte offset) from s[2:3], loops that many times (4 instructions each), then
  stores v1 (the iteration count) at out + offset + 4 * lane (s[0:1]), or with `load` reads from there and stores at out + 128 g."""
  tail = ([global_load_b32(vdst=v[3], addr=v[2], saddr=s[0:1]), s_waitcnt(simm16=0), s_lshl_b32(s[7], s[4], 7), v_lshlrev_b32_e32(v[2], 2, v[0]),
           v_add_nc_u32_e32(v[2], s[7], v[2]), global_store_b32(addr=v[2], data=v[3], saddr=s[0:1])] if load else
          [global_store_b32(addr=v[2], data=v[1], saddr=s[0:1])])
  return code(s_lshl_b32(s[5], s[4], 3), s_add_u32(s[8], s[2], s[5]), s_addc_u32(s[9], s[3], 0), s_load_b64(sdata=s[6:7], sbase=s[8:9], offset=0, soffset=NULL),
              s_waitcnt(simm16=0), v_add_nc_u32_e32(v[1], 1, v[1]), s_add_u32(s[6], s[6], -1), s_cmp_lg_u32(s[6], 0), s_cbranch_scc1(simm16=(-4) & 0xffff),
              v_lshlrev_b32_e32(v[2], 2, v[0]), v_add_nc_u32_e32(v[2], s[7], v[2]), *tail)

def run_planned(plan, threads, backend="c", load=False, strict=False, **kw):
  """(Stats or the exception, out) of the planned kernel over G workgroups of one wave32. `out` starts a page, so the reads just
  past its end stay inside its last mapped page wherever numpy puts the array (they faulted when its end fell near a page end)."""
  back = np.zeros((2 * PAGE) // 4 + G * 32 + 64, np.uint32)
  at = (-back.ctypes.data % PAGE) // 4
  out, p = back[at:at + G * 32 + 64], np.array([x for it_off in plan for x in it_off], np.uint32)
  mem = MemoryMap(strict=strict)
  for i, a in enumerate((out, p)): mem.add(a.ctypes.data, a.nbytes, f"buf{i}", PAGE)
  us = tuple(x for a in (out, p) for x in (a.ctypes.data & 0xffffffff, a.ctypes.data >> 32))
  try: r = run_code(planned(load), mem, block=(32, 1, 1), grid=(G, 1, 1), user_sgprs=us, rsrc2=4 << 1 | 1 << 7, threads=threads, backend=backend,
                    capture=True, **kw)
  except (GPUFault, WatchdogExpired) as e:   # reports' addresses relative to `out`: the buffers and the code are new in every run
    r = e
    if r.report.nearest: r.report = dataclasses.replace(r.report, address=r.report.address - out.ctypes.data, nearest=None, offset=None)
  if not isinstance(r, Exception) and r.oob_report:
    r = dataclasses.replace(r, oob_report=dataclasses.replace(r.oob_report, address=r.oob_report.address - out.ctypes.data, nearest=None, offset=None))
  return r, out

def summary(r):
  """What must not depend on the thread count: the counts and wave 0's registers (but the buffer addresses), or an error's report
  (but its pc_addr: the address the code was copied to, which differs per run)."""
  if isinstance(r, Exception): return type(r).__name__, dataclasses.replace(r.report, pc_addr=0)
  st = dataclasses.replace(r.state, sgprs=tuple(0 if i in (0, 1, 2, 3, 8, 9) else x for i, x in enumerate(r.state.sgprs)))   # buffer addresses
  return r.instructions, r.waves, r.workgroups, r.lds_read, r.lds_written, r.oob_reads, st, \
         r.oob_report and dataclasses.replace(r.oob_report, pc_addr=0)

def good(g): return (10 + g, 128 * g)

def test_results_and_counts_do_not_depend_on_threads():
  plan = [good(g) for g in range(G)]
  ref, out1 = run_planned(plan, 1)
  assert ref.extra["threads"] == 1 and (out1[:G * 32].reshape(G, 32) == (10 + np.arange(G))[:, None]).all()   # numpy: iterations per group
  assert ref.instructions == sum(4 * (10 + g) + 9 for g in range(G)) and (ref.workgroups, ref.waves) == (G, G)
  py, outp = run_planned(plan, 1, backend="python")
  assert summary(py) == summary(ref) and (outp == out1).all()
  for th in (2, 3, 4, 16):
    r, o = run_planned(plan, th)
    assert r.extra["threads"] == min(th, G) and summary(r) == summary(ref) and (o == out1).all(), th

@pytest.mark.parametrize("late,early", [(1, 5), (0, 3), (2, 7)])
def test_fault_report_names_the_lowest_stopping_workgroup(late, early):
  # workgroup `late` faults after 20000 iterations, `early` (higher) at once: on several threads `early` faults first in
  # time, and the report must still be `late`'s, with the instructions of the workgroups below it plus its own
  plan = [good(g) for g in range(G)]
  plan[late], plan[early] = (30, BAD), (1, BAD)
  assert summary(run_planned(plan, 1, backend="python")[0]) == summary(run_planned(plan, 1)[0])   # a loop the Python backend runs quickly
  plan[late] = (20000, BAD)
  ref, _ = run_planned(plan, 1)
  assert isinstance(ref, GPUFault) and ref.report.workgroup == (late, 0, 0) and ref.report.kind == "write"
  for th in (2, 4):
    assert summary(run_planned(plan, th)[0]) == summary(ref), th

def test_watchdog_is_per_workgroup_and_names_the_lowest():
  # the budget counts each workgroup's wave-instructions: 8 workgroups of 49-77 (504 in all) run under a budget of 100
  plan = [good(g) for g in range(G)]
  for th, be in ((1, "c"), (4, "c"), (1, "python")):
    r, _ = run_planned(plan, th, backend=be, budget=100)
    assert r.instructions == sum(4 * (10 + g) + 9 for g in range(G)), (th, be)
  # workgroups 3 and 6 loop (almost) forever: the report is workgroup 3's, at its 1001st instruction, on any thread count
  plan[3], plan[6] = (1 << 30, 0), (1 << 30, 0)
  ref, _ = run_planned(plan, 1, budget=1000)
  assert isinstance(ref, WatchdogExpired) and ref.report.workgroup == (3, 0, 0) and ref.budget == 1000
  assert summary(run_planned(plan, 1, backend="python", budget=1000)[0]) == summary(ref)
  for th in (2, 4):
    assert summary(run_planned(plan, th, budget=1000)[0]) == summary(ref), th

def test_strict_mode_read_report_is_the_lowest_workgroups():
  # workgroups 2 and 5 read 4 bytes past the allocation (inside its page: the hardware reads there; strict mode notes it)
  n = G * 32 + 64
  plan = [(3, 128 * g) for g in range(G)]
  plan[2], plan[5] = (3, 4 * n - 4), (40, 4 * n - 4)
  ref, o1 = run_planned(plan, 1, load=True, strict=True)
  assert ref.oob_reads == 2 * 31 and ref.oob_report.workgroup == (2, 0, 0) and ref.oob_report.lane == 1   # lanes 1..31 read past the end
  known = np.ones(len(o1), bool); known[2 * 32 + 1:3 * 32] = known[5 * 32 + 1:6 * 32] = False   # what they read lies past the buffer
  for th in (2, 4):
    r, o = run_planned(plan, th, load=True, strict=True)
    assert summary(r) == summary(ref) and (o[known] == o1[known]).all(), th

def test_tinygrad_matmul_kernel_on_threads():
  from mockgpu.emu.codeobj import load_elf
  from mockgpu.emu.fixtures import load_fixture
  from mockgpu.emu.launch import prepare
  elf, meta = load_fixture("matmul256_f32_gfx1100_k0")
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((256, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
  def once(th):
    out = np.zeros((256, 256), np.float32)
    mem = MemoryMap()
    for i, x in enumerate((out, a, b)): mem.add(x.ctypes.data, x.nbytes, f"buf{i}")
    st = prepare(load_elf(elf), "gfx1100", meta["grid"], meta["block"], [x.ctypes.data for x in (out, a, b)], memory=mem).run(threads=th)
    return st, out
  (r1, o1), (r2, o2), (r4, o4) = once(1), once(2), once(4)
  assert (r2.extra["threads"], r4.extra["threads"]) == (2, 4)
  assert np.allclose(o1, a @ b, rtol=1e-4, atol=1e-3)
  for r, o in ((r2, o2), (r4, o4)):
    assert (r.instructions, r.workgroups, r.waves) == (r1.instructions, r1.workgroups, r1.waves) and (o.view(np.uint32) == o1.view(np.uint32)).all()

def _threads_used(prog, **kw):
  out = np.zeros(64, np.uint32)
  b = Bufs(out)
  return run_code(prog, b.mem, block=(32, 1, 1), grid=(4, 1, 1), user_sgprs=b.sgprs(), rsrc2=2 << 1, threads=4, **kw).extra["threads"]

def test_dispatch_wide_state_and_indirect_jumps_keep_one_thread():
  store = [v_lshlrev_b32_e32(v[1], 2, v[0]), global_store_b32(addr=v[1], data=v[0], saddr=s[0:1])]
  assert _threads_used(code(*store)) == 4
  # the emulated clock (wave-instructions the dispatch executed so far) depends on the order workgroups run in
  assert _threads_used(code(s_getreg_b32(s[4], simm16=29 | 19 << 11), *store)) == 1   # SHADER_CYCLES, 20 bits
  assert _threads_used(code(s_getreg_b32(s[4], simm16=1 | 31 << 11), *store)) == 4                                # MODE: wave state
  assert _threads_used(code(s_sendmsg_rtn_b32(s[4], 131 - 128), *store)) == 1   # GET_REALTIME (SSRC0 = message; the DSL encodes n as 128 + n)
  # reachable only through a branch, past an S_ENDPGM: the scan follows SIMM16 branches
  assert _threads_used(code(s_branch(simm16=1), s_endpgm(), s_getreg_b32(s[4], simm16=29 | 19 << 11), *store)) == 1
  # S_GETPC + S_SETPC: a jump the scan cannot follow (here to the next instruction)
  assert _threads_used(code(s_getpc_b64(s[4:5]), s_add_u32(s[4], s[4], 12), s_addc_u32(s[5], s[5], 0), s_setpc_b64(ssrc0=s[4:5]), *store)) == 1
  # opcode counting and store watching record in execution order
  assert _threads_used(code(*store), op_counts=True) == 1

def test_gws_kernel_runs_on_one_thread():
  from test_gws import mutex_prog
  arrays = [np.zeros(1, np.uint32), np.zeros(8, np.uint32)]
  res = []
  for th in (1, 4):
    b = Bufs(*[a.copy() for a in arrays])
    st = run_code(mutex_prog(True), b.mem, user_sgprs=b.sgprs(), rsrc2=4 << 1 | 1 << 7, grid=(2, 1, 1), block=(128, 1, 1), threads=th)
    res.append(([b[i].tolist() for i in range(2)], st.instructions, st.extra["threads"]))
  assert res[1][2] == 1 and res[0] == res[1]

def test_wave64_and_translated_kernels_on_threads(monkeypatch):
  # gfx950 (wave64 only) and translated kernels (MOCKGPU_EMU_XLAT=sync: the second dispatch runs translated) on 1 and 4
  # threads: the loop kernel of `mockgpu emu bench` on 8 workgroups of 256 threads, and the planned kernel
  from mockgpu.emu.bench import loop_kernel, LOOP_RSRC1
  def loop(arch, th):
    st = run_code(loop_kernel(200, "cdna" if arch == "gfx950" else "rdna3"), arch=arch, wave64=arch == "gfx950", block=(256, 1, 1),
                  grid=(8, 1, 1), rsrc1=LOOP_RSRC1, capture=True, threads=th)
    return st.instructions, st.waves, st.workgroups, st.state, st.extra["translated"], st.extra["threads"]
  ones = {}
  for arch in ("gfx950", "gfx1100"):
    one, four = loop(arch, 1), loop(arch, 4)
    ones[arch] = one
    assert one[:5] == four[:5] and (one[5], four[5]) == (1, 4) and one[2] == 8 and not one[4], arch
  plan = [good(g) for g in range(G)]
  ref = summary(run_planned(plan, 1)[0])
  monkeypatch.setenv("MOCKGPU_EMU_XLAT", "sync")
  for arch in ("gfx950", "gfx1100"): loop(arch, 4)
  run_planned(plan, 4)
  r, o = run_planned(plan, 4)
  assert r.extra["translated"] and r.extra["threads"] == 4 and summary(r) == ref
  for arch in ("gfx950", "gfx1100"):
    t = loop(arch, 4)
    assert t[4] and t[5] == 4 and t[:4] == ones[arch][:4], arch   # translated on 4 threads = interpreted on one

def test_default_thread_count(monkeypatch):
  # the documented policy (docs/emu.md "Multi-core dispatch"): every usable CPU, shared among xdist workers, one left to a
  # spinning tinygrad for a mock device; $MOCKGPU_EMU_THREADS decides when set
  import os
  from mockgpu.emu.api import default_threads
  from mockgpu.emu.errors import UnsupportedDispatch
  monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
  monkeypatch.delenv("MOCKGPU_EMU_THREADS", raising=False)
  monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
  assert (default_threads(), default_threads(host_waits=True)) == (8, 7)
  monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
  assert (default_threads(), default_threads(host_waits=True)) == (2, 1)
  monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "16")
  assert (default_threads(), default_threads(host_waits=True)) == (1, 1)
  monkeypatch.setenv("MOCKGPU_EMU_THREADS", "3")
  assert default_threads(host_waits=True) == 3
  monkeypatch.setenv("MOCKGPU_EMU_THREADS", "two")
  with pytest.raises(UnsupportedDispatch, match="MOCKGPU_EMU_THREADS='two'"): default_threads()

@pytest.mark.parametrize("family", ["rdna3", "rdna4", "cdna"])
def test_flow_classes_of_the_pre_scan(family):
  # what the pre-scan follows (gen_c.flow_of from the wheel's pseudocode): SIMM16 branches (taken: PC + 4 + SIMM16 * 4) are
  # REL, S_SETPC / S_SWAPPC / S_RFE jump where no scan follows, S_ENDPGM ends a path, GWS and the clock are dispatch-wide
  from mockgpu.emu.gen_c import flow_of, _pcode_entries
  ents = _pcode_entries(family)
  def fl(op, enc): return flow_of(op, ents[f"{enc}Op_{op}"].text if f"{enc}Op_{op}" in ents else None)
  assert {op: fl(op, "SOPP") for op in ("S_BRANCH", "S_CBRANCH_SCC0", "S_CBRANCH_VCCNZ", "S_CBRANCH_EXECZ")} == dict.fromkeys(
    ("S_BRANCH", "S_CBRANCH_SCC0", "S_CBRANCH_VCCNZ", "S_CBRANCH_EXECZ"), "REL")
  assert (fl("S_CALL_B64", "SOPK"), fl("S_SETPC_B64", "SOP1"), fl("S_SWAPPC_B64", "SOP1"), fl("S_RFE_B64", "SOP1")) == ("REL", "IND", "IND", "IND")
  assert (fl("S_ADD_U32", "SOP2"), fl("S_GETPC_B64", "SOP1"), fl("S_TRAP", "SOPP")) == ("PLAIN", "PLAIN", "PLAIN")   # S_TRAP: hand-written, stops
  assert (flow_of("S_ENDPGM", None), flow_of("DS_GWS_SEMA_P", None), flow_of("S_SENDMSG_RTN_B64", None), flow_of("S_GETREG_B32", None)) == \
         ("END", "WIDE", "WIDE", "GETREG")
