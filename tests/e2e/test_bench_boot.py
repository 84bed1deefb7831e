"""`mockgpu bench --boot`'s probe (a fresh interpreter opens the mock device and reports the arch; a failure is one line) and
`mockgpu emu bench` end to end (slow suite)."""
import pytest
from mockgpu.tinygrad.bench import boot

def test_boot_probe_opens_the_device():
  t, arch = boot("MOCKKFD+AMD::gfx1201", {}, 1)
  assert arch == "gfx1201" and 0 < t < 600

def test_boot_probe_failure_names_the_cause():
  with pytest.raises(RuntimeError, match="gfx9999"): boot("MOCKKFD+AMD::gfx9999", {}, 1)

def test_boot_arch_goes_with_boot(capsys):
  from mockgpu.tinygrad.bench import main
  with pytest.raises(SystemExit) as e: main(["--arch", "gfx942"])
  assert e.value.code == 2 and "--arch goes with --boot" in capsys.readouterr().err

@pytest.mark.slow
def test_emu_bench_prints_every_row():
  """`mockgpu emu bench` end to end (its rows: five kernels, interpreted and translated, each on one thread and on every CPU);
  ~1 min, so in the slow suite."""
  import subprocess, sys
  from mockgpu.emu.api import default_threads
  p = subprocess.run([sys.executable, "-m", "mockgpu", "emu", "bench", "--reps", "1"], capture_output=True, text=True, timeout=1800)
  assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
  rows = [l.split()[0] for l in p.stdout.splitlines() if " wave-inst " in l]
  t = len({1, default_threads()})   # thread counts each kernel runs on
  assert rows == ["loop"] * 4 * t + ["matmul"] * 2 * t + ["elementwise"] * 4 * t, p.stdout
  assert sum(" translated " in l for l in p.stdout.splitlines()) == 5 * t, p.stdout
