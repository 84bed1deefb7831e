"""The device thread that runs the KFD queues: it must never run tinygrad's finalizers. A cyclic-GC collection runs the
finalizers of what it frees on the thread whose allocation started it; tinygrad's (HCQGraph.__del__, buffer frees) wait for
the GPU, so one started on the device thread deadlocked it (tinygrad's test_multitensor_jit_input: a 30 s wait timeout, then
every later test of the process failed)."""
import ctypes, gc, threading, time
from mockgpu.mock.device import DeviceThread
from test_pm4 import release, wait_geq

class Cycle:
  ran_on: list[str] = []
  def __init__(self): self.me = self
  def __del__(self): Cycle.ran_on.append(threading.current_thread().name)

def test_collections_never_start_on_the_device_thread(drv):
  q, (sig, _) = drv.queue(0), drv.userptr(0x1000)
  DeviceThread(drv.kfd, warm_up=drv.kfd.profile.arch)
  old = gc.get_threshold()
  time.sleep(0.3)   # past the threads' start-up (the warm-up thread may run a finalizer: it waits for nothing of its own)
  gc.collect()
  gc.set_threshold(1)   # every GC-tracked allocation may start a collection: on whichever thread allocates next
  try:
    for i in range(1, 41):
      for _ in range(5): q.pm4(*release(sig, i), ring=False)
      Cycle()                    # garbage from now on: collected by the next collection, wherever it starts
      q.doorbell.value = q.put   # the device thread allocates while it runs the packets
      time.sleep(0.01)           # the main thread allocates nothing meanwhile
      for _ in range(500):
        if drv.u32(sig) == i: break
        time.sleep(0.001)
      assert drv.u32(sig) == i
  finally: gc.set_threshold(*old)
  gc.collect()
  assert len(Cycle.ran_on) == 40 and "mockgpu-device" not in Cycle.ran_on, Cycle.ran_on

class Broken:
  """A model whose scheduling round itself fails (a bug outside any queue), as either GPU model's could."""
  def __init__(self): self.rounds = 0
  def run_once(self) -> bool:
    self.rounds += 1
    raise KeyError("no such queue")

def test_a_failing_round_is_reported_once_and_polling_goes_on(capsys):
  m = Broken()
  t = DeviceThread(m, name="mockgpu-test-device")
  for _ in range(2000):
    if m.rounds >= 5: break
    time.sleep(0.001)
  assert m.rounds >= 5 and t.thread.is_alive()
  err = capsys.readouterr().err
  assert err.startswith("mockgpu: mockgpu-test-device error (its queues keep running):\nTraceback (most recent call last):")
  assert err.count("KeyError: 'no such queue'") == 1

class Counting:
  """Wraps a KFD model's run_once to count the device thread's rounds."""
  def __init__(self, kfd): self.kfd, self.rounds = kfd, 0
  def run_once(self) -> bool:
    self.rounds += 1
    return self.kfd.run_once()
  def idle_words(self): return self.kfd.idle_words()

def wait_for(cond, what):
  for _ in range(5000):
    if cond(): return
    time.sleep(0.001)
  raise AssertionError(f"timed out waiting for {what}")

def test_an_idle_gpu_is_waited_for_in_c_and_a_doorbell_or_an_ioctl_wakes_it(drv):
  """Idle, the device thread waits in C without the GIL (a Python poll takes it from tinygrad every 0.1-0.5 ms): a round
  only when a watched word changes or every IDLE_TIMEOUT_US. A doorbell wakes it, and so does any ioctl (CREATE_QUEUE adds
  a doorbell to watch)."""
  q, (sig, _) = drv.queue(0), drv.userptr(0x1000)
  m = Counting(drv.kfd)
  t = DeviceThread(m)
  wait_for(lambda: t.waiter is not None and t.idle, "the idle wait")
  r0 = m.rounds
  time.sleep(0.3)
  assert m.rounds - r0 <= 0.3 / (DeviceThread.IDLE_TIMEOUT_US / 1e6) + 2   # Python polling: >= 600 rounds
  q.pm4(*release(sig, 1))
  wait_for(lambda: drv.u32(sig) == 1, "the first queue's packet")
  q2 = drv.queue(0)   # an ioctl while idle: the next wait watches the new queue's doorbell too
  words = {ctypes.addressof(w): v for w, v, _ in drv.kfd.idle_words()}
  assert words[ctypes.addressof(q2.q.doorbell)] == 0 and words[ctypes.addressof(drv.kfd.ioctls)] == drv.kfd.ioctls.value
  q2.pm4(*release(sig + 8, 2))
  wait_for(lambda: drv.u32(sig + 8) == 2, "the new queue's packet")

def test_a_queue_waiting_on_guest_memory_is_polled_in_python(drv):
  """The C wait reads only the model's own words; a WAIT_REG_MEM on guest memory needs the round's checked read, so
  idle_words is None while a queue waits."""
  q, (sig, _) = drv.queue(0), drv.userptr(0x1000)
  assert drv.kfd.idle_words() is not None
  q.pm4(*wait_geq(sig, 1)).pm4(*release(sig + 8, 5))
  drv.run()
  assert drv.kfd.idle_words() is None and drv.u32(sig + 8) == 0
  ctypes.c_uint32.from_address(sig).value = 1
  drv.run()
  assert drv.u32(sig + 8) == 5 and drv.kfd.idle_words() is not None

def test_an_sdma_submission_runs_in_the_idle_wait_without_a_python_round(drv):
  """An SDMA queue's packets run in C inside the idle wait as soon as its doorbell moves (mock/sdma.c through mock/idle.c), so
  a copy does not wait for the GIL that tinygrad's Python holds: a copy and a fence complete with no Python round, and the
  copied bytes are counted as copied outside the rounds."""
  from mockgpu.mock.sdma import copy_totals
  from test_sdma import SDMA, copy, fence
  q, (buf, _) = drv.queue(0, SDMA), drv.userptr(0x3000)
  ctypes.memmove(buf, bytes(range(256)) * 16, 0x1000)
  m = Counting(drv.kfd)
  t = DeviceThread(m)
  wait_for(lambda: t.waiter is not None and t.idle, "the idle wait")
  r0, c0 = m.rounds, copy_totals()
  q.write(*copy(0x1000, buf, buf + 0x1000), *fence(buf + 0x2000, 7))
  wait_for(lambda: drv.u32(buf + 0x2000) == 7, "the fence")
  c1 = copy_totals()
  assert ctypes.string_at(buf + 0x1000, 0x1000) == bytes(range(256)) * 16 and drv.u64(q.q.rptr_addr) == q.put
  assert m.rounds == r0 and (c1.copies - c0.copies, c1.bytes - c0.bytes) == (1, 0x1000) and c1.idle_seconds > c0.idle_seconds

def test_a_trap_run_in_the_idle_wait_wakes_a_wait_events_sleeper(drv):
  """tinygrad sleeps in WAIT_EVENTS once a wait passes 200 ms; a TRAP the SDMA fast path ran from the idle wait notifies no
  condition, and WAIT_EVENTS looks for such TRAPs every TRAP_POLL_S: the sleeper returns COMPLETE within a few ms, not at its
  timeout."""
  from test_sdma import SDMA, fence
  from tinygrad.runtime.autogen import kfd
  from tinygrad.runtime.autogen.am import sdma_6_0_0 as sd
  sig_ev, _, _ = drv.events()
  q, (buf, _) = drv.queue(0, SDMA), drv.userptr(0x1000)
  m = Counting(drv.kfd)   # the thread holds its model weakly
  t = DeviceThread(m)
  wait_for(lambda: t.waiter is not None and t.idle, "the idle wait")
  got = []
  def sleeper():
    t0 = time.monotonic(); r = drv.wait([sig_ev], timeout=5000)[0].wait_result; got.append((r, time.monotonic() - t0))
  th = threading.Thread(target=sleeper); th.start()
  time.sleep(0.05)
  q.write(*fence(buf, 1), sd.SDMA_OP_TRAP, sig_ev.event_id)
  th.join(10)
  assert drv.u32(buf) == 1 and q.q.fast.traps == 1 and got[0][0] == kfd.KFD_IOC_WAIT_RESULT_COMPLETE and got[0][1] < 1.0, got
