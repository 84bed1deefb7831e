"""The GIL policy of a dispatch (run(hold_gil=...), docs/emu.md "The GIL"): while the policy says so the dispatch keeps the GIL
and may use threads_held threads, yet gives the other Python threads a turn every 100 ms, so a Python thread still runs: a kernel that
polls memory a Python thread writes finishes as on hardware. Results do not depend on the policy."""
import ctypes, os, threading, time
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import code
from mockgpu.emu.api import run_code
from mockgpu.emu.memory import MemoryMap, PAGE
from test_multicore import G, good, run_planned, summary

pytestmark = pytest.mark.engine   # how kernels run: left out of fidelity recording

# polls the dword at s[0:1] until it is non-zero (s_load, wait, compare, branch back over the 5 dwords), then every lane
# stores it at s[2:3] + 4 * lane
POLL = code(s_load_b32(sdata=s[4], sbase=s[0:1], offset=0, soffset=NULL), s_waitcnt(simm16=0), s_cmp_eq_u32(s[4], 0),
            s_cbranch_scc1(simm16=(-5) & 0xffff), v_mov_b32_e32(v[1], s[4]), v_lshlrev_b32_e32(v[2], 2, v[0]),
            global_store_b32(addr=v[2], data=v[1], saddr=s[2:3]))

@pytest.mark.parametrize("held", [True, False])
def test_a_kernel_sees_what_a_python_thread_writes_meanwhile(held):
  # the writer needs the GIL after its sleep: a held dispatch gives it a turn every 100 ms (asking the policy again after it), so
  # the kernel ends with the written value; a dispatch that never let go would poll until the timeout (WatchdogExpired)
  flag, out = np.zeros(PAGE // 4, np.uint32), np.zeros(PAGE // 4, np.uint32)
  mem = MemoryMap()
  for i, a in enumerate((flag, out)): mem.add(a.ctypes.data, a.nbytes, f"buf{i}", PAGE)
  asked, started = [], threading.Event()
  def policy(): asked.append(1); started.set(); return held
  def writer():   # once the dispatch runs: it asks the policy first
    started.wait(); time.sleep(0.02); ctypes.c_uint32.from_address(flag.ctypes.data).value = 7
  t = threading.Thread(target=writer)
  t.start()
  try: st = run_code(POLL, mem, block=(32, 1, 1), user_sgprs=(flag.ctypes.data & 0xffffffff, flag.ctypes.data >> 32, out.ctypes.data & 0xffffffff,
                                                               out.ctypes.data >> 32), rsrc2=4 << 1, hold_gil=policy, timeout=10)
  finally: t.join()
  assert (out[:32] == 7).all() and not out[32:].any()
  assert len(asked) >= 2 and st.instructions > 1000   # asked at the start and again while it polled

def _poll(flag, out, **kw):
  """run POLL on `grid` workgroups until the flag page's first dword is set; returns its Stats"""
  mem = MemoryMap()
  for i, a in enumerate((flag, out)): mem.add(a.ctypes.data, a.nbytes, f"buf{i}", PAGE)
  return run_code(POLL, mem, block=(32, 1, 1), user_sgprs=(flag.ctypes.data & 0xffffffff, flag.ctypes.data >> 32, out.ctypes.data & 0xffffffff,
                                                           out.ctypes.data >> 32), rsrc2=4 << 1, timeout=10, **kw)

def test_a_held_dispatch_asks_after_each_turn_only():
  # held for ~0.4 s: the policy is asked at the start and after each 100 ms turn (about 4), not every few ms (asking while
  # the spinning thread waits hands it the GIL for a switch interval: a stalled worker each time)
  flag, out = np.zeros(PAGE // 4, np.uint32), np.zeros(PAGE // 4, np.uint32)
  asked, t0 = [], time.perf_counter()
  def policy(): asked.append(time.perf_counter() - t0); return True
  def writer(): time.sleep(0.35); ctypes.c_uint32.from_address(flag.ctypes.data).value = 7   # writes at its first turn after 0.35 s
  t = threading.Thread(target=writer)
  t.start()
  try: _poll(flag, out, hold_gil=policy)
  finally: t.join()
  assert (out[:32] == 7).all()
  assert len(asked) >= 3 and min(b - a for a, b in zip(asked, asked[1:])) >= 0.09, asked   # the turns: 100 ms apart, not a few ms

def _allowed(tid) -> set[int]:
  line = next(l for l in open(f"/proc/self/task/{tid}/status") if l.startswith("Cpus_allowed_list:"))
  return {c for part in line.split()[1].split(",") for lo, _, hi in [part.partition("-")] for c in range(int(lo), int(hi or lo) + 1)}

@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="the worker's CPU affinity is read from Linux's /proc")
def test_workers_leave_the_calling_threads_cpu():
  # two workgroups on two threads: the worker started next to the calling thread moves off its CPU (csrc/emu_sched.c
  # leave_home) when the process may use another; read from /proc while both poll, then the flag ends the dispatch
  flag, out = np.zeros(PAGE // 4, np.uint32), np.zeros(PAGE // 4, np.uint32)
  mine, before = _allowed(threading.get_native_id()), set(os.listdir("/proc/self/task"))
  seen = []
  def watcher():   # the worker's set as it starts and once it moved (it sets its own after it appears in /proc)
    end = time.monotonic() + 5
    while time.monotonic() < end and not (seen and (seen[-1] != mine or len(mine) == 1)):
      for tid in set(os.listdir("/proc/self/task")) - before - {str(threading.get_native_id())}:
        try: seen.append(_allowed(tid))
        except (OSError, StopIteration): pass
      time.sleep(0.001)
    ctypes.c_uint32.from_address(flag.ctypes.data).value = 7
  t = threading.Thread(target=watcher)
  t.start()
  try: st = _poll(flag, out, grid=(2, 1, 1), threads=2)
  finally: t.join()
  assert st.extra["threads"] == 2 and (out[:32] == 7).all() and seen
  assert seen[-1] < mine and len(mine - seen[-1]) == 1 if len(mine) > 1 else seen[-1] == mine, (mine, seen[-1])

def test_threads_grow_once_the_policy_holds_and_results_stay():
  # the policy says no at the start (one thread), yes when asked again 1 ms later: the dispatch takes the GIL and starts the
  # other threads_held - 1 threads; memory, counts and registers are the one-thread run's
  plan = [(200_000 + 1000 * g, 128 * g) for g in range(G)]   # about 6M wave-instructions: longer than the first 1 ms
  ref, out1 = run_planned(plan, 1)
  asked = []
  def policy(): asked.append(1); return len(asked) > 1
  got, out2 = run_planned(plan, 1, hold_gil=policy, threads_held=3)
  assert got.extra["threads"] == 3 and len(asked) >= 2
  assert summary(got) == summary(ref) and (out1 == out2).all() and out1[:32].tolist() == [200_000] * 32

def test_a_policy_that_holds_from_the_start_uses_threads_held():
  plan = [good(g) for g in range(G)]
  ref, out1 = run_planned(plan, 1)
  got, out2 = run_planned(plan, 1, hold_gil=lambda: True, threads_held=2)
  assert got.extra["threads"] == 2 and summary(got) == summary(ref) and (out1 == out2).all()

def test_a_policy_that_raises_releases_the_gil():
  def policy(): raise RuntimeError("broken policy")
  plan = [good(g) for g in range(G)]
  ref, out1 = run_planned(plan, 1)
  got, out2 = run_planned(plan, 1, hold_gil=policy, threads_held=2)
  assert got.extra["threads"] == 1 and summary(got) == summary(ref) and (out1 == out2).all()
