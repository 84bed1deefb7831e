"""Process-wide totals of the time mockgpu itself spends, so a test run can say how much of its wall time is the mock's.

Two buckets, in seconds of wall time: `device` (the device models working their queues: PM4/SDMA/AQL and NV GPFIFO
rounds, CUDA launches and copies, kernels included) and `driver` (the ioctl/mmap calls and CUDA API calls tinygrad makes
into the mocks, on its own thread). Device time is measured on the device thread and may overlap the caller's; both
include waiting for the GIL, so they are upper bounds of mockgpu's share. The rest of a test's time is tinygrad's
(scheduling, codegen, compilers) and the test's own (numpy, torch).

When `MOCKGPU_USAGE_FILE` names a file (`mockgpu ci` sets it for every step), each process that used a mock appends its
totals there as one JSON line when it exits: `{"pid": 123, "device_s": 1.5, "driver_s": 0.2}`. `read(path)` sums them.
"""
from __future__ import annotations
import atexit, contextlib, json, os, threading, time

__all__ = ["ENV", "totals", "timed", "read"]

ENV = "MOCKGPU_USAGE_FILE"
totals = {"device_s": 0.0, "driver_s": 0.0}
_lock = threading.Lock()

@contextlib.contextmanager
def timed(bucket:str):
  """Add the wall time of the block to `totals[bucket]` ("device_s" or "driver_s"), also when it raises."""
  t0 = time.perf_counter()
  try: yield
  finally:
    dt = time.perf_counter() - t0
    with _lock: totals[bucket] += dt

def read(path:str|os.PathLike) -> dict[str, float]|None:
  """The totals of every process that appended to `path` (None if none did). Lines cut short by a killed process are skipped."""
  out, n = {k: 0.0 for k in totals}, 0
  try: lines = open(path, errors="replace").read().splitlines()
  except OSError: return None
  for line in lines:
    try: rec = json.loads(line)
    except json.JSONDecodeError: continue
    if not isinstance(rec, dict): continue
    n += 1
    for k in out: out[k] += float(rec.get(k, 0.0)) if isinstance(rec.get(k), (int, float)) else 0.0
  return {k: round(v, 3) for k, v in out.items()} if n else None

def _write(path:str):
  if not any(totals.values()): return   # this process never touched a mock
  with contextlib.suppress(OSError), open(path, "a") as f: f.write(json.dumps({"pid": os.getpid(), **{k: round(v, 4) for k, v in totals.items()}}) + "\n")

if (_path := os.environ.get(ENV)): atexit.register(_write, _path)
