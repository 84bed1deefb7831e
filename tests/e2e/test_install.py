"""Issue 4's first promise, checked on a real (non-editable) install: after `pip install .` into a fresh virtualenv, from
any directory, `DEV=MOCKKFD+AMD` (and `MOCK+AMD`, `MOCKKFD+AMD:LLVM`) runs tinygrad's `Tensor([1,2,3])+1` on the mock.
The venv sees the already-installed dependencies (system site-packages); only the build backend comes from the index."""
import os, pathlib, subprocess, sys
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ONE_LINER = "from tinygrad import Tensor; print((Tensor([1,2,3])+1).tolist())"

@pytest.fixture(scope="module")
def venv_python(tmp_path_factory) -> str:
  venv = tmp_path_factory.mktemp("venv")
  subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, capture_output=True)
  py = str(venv / "bin" / "python")
  # a copy of the tree, so the install cannot pick up build/ or egg-info left in the checkout
  src = tmp_path_factory.mktemp("src")
  files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True, capture_output=True, text=True).stdout.split()
  for f in files:
    if (ROOT / f).is_file():
      (src / f).parent.mkdir(parents=True, exist_ok=True)
      (src / f).write_bytes((ROOT / f).read_bytes())
  p = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(src)], capture_output=True, text=True)
  assert p.returncode == 0, p.stdout + p.stderr
  return py

def test_installed_copy_is_not_the_checkout(venv_python, tmp_path):
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}   # a developer's PYTHONPATH points at a checkout
  out = subprocess.run([venv_python, "-c", "import mockgpu, os; print(os.path.realpath(mockgpu.__file__))"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, check=True).stdout.strip()
  assert "site-packages" in out and not out.startswith(str(ROOT) + os.sep)

@pytest.mark.parametrize("dev", ["MOCKKFD+AMD", "MOCK+AMD", "MOCKKFD+AMD:LLVM"])
def test_one_liner_from_any_directory(venv_python, tmp_path, dev):
  env = {k: v for k, v in os.environ.items() if k not in ("MOCKGPU", "PYTHONPATH")} | {"DEV": dev}
  p = subprocess.run([venv_python, "-c", ONE_LINER], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
  assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "[2, 3, 4]", p.stdout + p.stderr

def test_mockgpu_0_switches_activation_off(venv_python, tmp_path):
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"DEV": "MOCKKFD+AMD", "MOCKGPU": "0"}
  p = subprocess.run([venv_python, "-c", "import sys; import tinygrad; print(any(type(f).__name__ == 'MockGPUFinder' for f in sys.meta_path))"],
                     cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
  assert p.returncode == 0 and p.stdout.strip() == "False", p.stdout + p.stderr
