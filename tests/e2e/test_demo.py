"""The README's main job: `mockgpu demo` runs every workload on the mock GPU and checks it against numpy."""
import os, subprocess, sys

def test_demo_reports_all_workloads_correct(tmp_path):
  env = {k: v for k, v in os.environ.items() if k != "DEV"}
  p = subprocess.run([sys.executable, "-m", "mockgpu", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
  assert p.returncode == 0, p.stdout + p.stderr
  rows = [l for l in p.stdout.splitlines() if l[:26].strip() and l[27:34].strip() in ("ok", "WRONG")]
  assert len(rows) == 8 and all(r[27:34].strip() == "ok" for r in rows), p.stdout
  assert "ALL CORRECT" in p.stdout and "arch gfx1100" in p.stdout
