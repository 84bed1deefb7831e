"""mockgpu.usage: the per-process totals of the mock's own time, and summing the lines processes append at exit."""
import json, os, subprocess, sys, time
from mockgpu import usage

def test_timed_adds_wall_time_also_when_the_block_raises():
  before = usage.totals["driver_s"]
  try:
    with usage.timed("driver_s"):
      time.sleep(0.05)
      raise KeyError("x")
  except KeyError: pass
  assert usage.totals["driver_s"] - before >= 0.05

def test_processes_append_and_read_sums_them(tmp_path):
  f = tmp_path / "u"
  code = "import time; from mockgpu.usage import timed\nwith timed('device_s'): time.sleep(0.1)\nwith timed('driver_s'): pass\n"
  for _ in range(2): subprocess.run([sys.executable, "-c", code], env=os.environ | {usage.ENV: str(f)}, check=True, timeout=120)
  subprocess.run([sys.executable, "-c", "import mockgpu.usage"], env=os.environ | {usage.ENV: str(f)}, check=True, timeout=120)
  lines = [json.loads(l) for l in f.read_text().splitlines()]
  assert len(lines) == 2 and {"pid", "device_s", "driver_s"} == set(lines[0])   # the process that used no mock wrote nothing
  got = usage.read(f)
  assert 0.2 <= got["device_s"] < 60 and 0 <= got["driver_s"] < 1

def test_read_skips_cut_and_foreign_lines(tmp_path):
  (f := tmp_path / "u").write_text('{"pid": 1, "device_s": 1.5, "driver_s": 0.25}\n{"pid": 2, "devi\n[1, 2]\n{"pid": 3, "device_s": "x"}\n')
  assert usage.read(f) == {"device_s": 1.5, "driver_s": 0.25} and usage.read(tmp_path / "none") is None
  (g := tmp_path / "empty").write_text("")
  assert usage.read(g) is None
