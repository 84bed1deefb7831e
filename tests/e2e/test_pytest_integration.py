"""`DEV=MOCKKFD+AMD pytest -n 2`: tinygrad runs in-process in pytest-xdist workers (they inherit DEV and run the .pth)."""
import os, subprocess, sys, textwrap

def test_xdist_workers_run_tinygrad_on_the_mock(tmp_path):
  (tmp_path / "test_user.py").write_text(textwrap.dedent("""
    import pytest
    from tinygrad import Tensor, Device
    @pytest.mark.parametrize("i", range(4))
    def test_add(i):
      assert type(Device["AMD"].iface).__name__ == "MOCKKFDIface"
      assert (Tensor([1, 2, 3]) + i).tolist() == [1 + i, 2 + i, 3 + i]
  """))
  env = {k: v for k, v in os.environ.items() if k not in ("MOCKGPU",)} | {"DEV": "MOCKKFD+AMD"}
  p = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", "test_user.py"], cwd=tmp_path, env=env,
                     capture_output=True, text=True, timeout=600)
  assert p.returncode == 0 and "4 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
