"""The device thread that runs the KFD queues: it must never run tinygrad's finalizers. A cyclic-GC collection runs the
finalizers of what it frees on the thread whose allocation started it; tinygrad's (HCQGraph.__del__, buffer frees) wait for
the GPU, so one started on the device thread deadlocked it (tinygrad's test_multitensor_jit_input: a 30 s wait timeout, then
every later test of the process failed)."""
import gc, threading, time
from mockgpu.mock.device import DeviceThread
from test_pm4 import release

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
