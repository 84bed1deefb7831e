"""The GIL policy of a dispatch (run(hold_gil=...), docs/emu.md "The GIL"): while the policy says so the dispatch keeps the GIL
and may use threads_held threads, yet hands the GIL over each time it asks again, so a Python thread still runs: a kernel that
polls memory a Python thread writes finishes as on hardware. Results do not depend on the policy."""
import ctypes, threading, time
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
  # the writer needs the GIL after its sleep: a held dispatch hands it over when it asks the policy again (10 ms at most), so
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
