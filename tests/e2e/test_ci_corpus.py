"""`mockgpu ci` on tinygrad's own CI tests: `testamd[MOCKKFD+AMD::gfx1100]`'s test_tiny step (TestTiny.test_plus checks
[1,2,3]+[4,5,6] == [5,7,9] itself). The test tree is external (not part of mockgpu): MOCKGPU_TINYGRAD_TESTS names it, a path
relative to the repository root or absolute. Without it this test is skipped with that reason, never passed."""
import json, os, subprocess, sys
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[2]

def test_ci_testamd_test_tiny(tmp_path):
  if not (where := os.environ.get("MOCKGPU_TINYGRAD_TESTS")):
    pytest.skip("MOCKGPU_TINYGRAD_TESTS is not set: point it at tinygrad's CI test tree (or a tinygrad checkout) to run `mockgpu ci` on it")
  tests = REPO / where   # an absolute `where` stays as it is
  assert (tests / "test" / "test_tiny.py").is_file(), f"MOCKGPU_TINYGRAD_TESTS={where}: no test/test_tiny.py under {tests}"
  env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
  p = subprocess.run([sys.executable, "-m", "mockgpu", "ci", "--tests", str(tests), "--job", "testamd", "--dev", "MOCKKFD+AMD", "--step", "test_tiny",
                      "--json", str(tmp_path / "r.json")], env=env, capture_output=True, text=True, timeout=1800)
  assert p.returncode == 0, p.stdout + p.stderr
  res = json.loads((tmp_path / "r.json").read_text())
  [row] = res["rows"]
  assert (row["name"], row["dev"]) == ("testamd[MOCKKFD+AMD::gfx1100]", "MOCKKFD+AMD::gfx1100")
  [step] = row["steps"]
  label = "DEBUG=5 FORWARD_ONLY=1 python test/test_tiny.py TestTiny.test_plus"
  assert step["exit_code"] == 0 and step["tests"] == {label: {"outcome": "passed", "reason": "", "time": step["wall_s"]}}
  # the mock's own share: its device thread ran the queues, tinygrad's ioctls went through the mock driver. Each is a share of
  # the step's wall time; their sum need not be (the device thread and tinygrad's thread run at the same time)
  assert step["mock"]["device_s"] > 0 and step["mock"]["driver_s"] > 0 and max(step["mock"].values()) < step["wall_s"]
  assert p.stdout.splitlines()[1].split()[:5] == ["testamd", "MOCKKFD+AMD::gfx1100", "1", "0", "0"]
