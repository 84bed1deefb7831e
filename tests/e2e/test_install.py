"""README's pip route, taken the way a user takes it: an sdist of the tracked files, a wheel built from the unpacked sdist
(`python -m build`, with build isolation), a fresh virtualenv (no system site-packages) and `pip install` of the wheel, its
dependencies from the package index. Then, from an empty directory with a clean environment: `import mockgpu` comes from
the new venv, the README one-liner prints [2, 3, 4] on the mock GPUs, MOCKGPU=0 switches activation off and the `mockgpu`
console script runs. The venv is built once per session; xdist workers share it through a file lock."""
import fcntl, os, pathlib, shutil, subprocess, sys, tarfile, zipfile
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ONE_LINER = "from tinygrad import Tensor; print((Tensor([1,2,3])+1).tolist())"
CODE_DIRS = ("pcode", "emu", "mock", "tinygrad", "fixtures")   # installed as mockgpu.<dir> (setup.py)
SDIST_DIRS = CODE_DIRS + ("docs",)                                # MANIFEST.in grafts these
SDIST_ROOT_FILES = ("README.md", "LICENSE", "pyproject.toml", "MANIFEST.in")   # plus every root *.py
PTH = "mockgpu-activate.pth"

def tracked() -> list[str]:
  p = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
  assert p.returncode == 0, f"this test builds the sdist from `git ls-files` and needs a git checkout of mockgpu:\n{p.stderr}"
  return [f for f in p.stdout.splitlines() if (ROOT / f).is_file()]   # a tracked file deleted in the work tree is not shipped

def outside_env(**extra) -> dict[str, str]:
  """What a user's shell has: no PYTHONPATH or venv of ours on PATH (./dev.sh puts .venv/bin first)."""
  venv_bin = str(pathlib.Path(sys.prefix) / "bin")
  path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "DEV", "MOCKGPU")}
  return env | {"PATH": path} | extra

def clean_env(**extra) -> dict[str, str]:
  """A minimal environment: PATH without our venv, HOME (tinygrad's and mockgpu's caches), mockgpu's own knobs."""
  keep = ("HOME", "TMPDIR", "LANG", "MOCKGPU_CACHE", "MOCKGPU_CC")
  return {k: os.environ[k] for k in keep if k in os.environ} | {"PATH": outside_env()["PATH"]} | extra

def run(args, what:str, timeout:float=600, **kw) -> subprocess.CompletedProcess:
  p = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kw)
  assert p.returncode == 0, f"{what} failed (exit {p.returncode}): {' '.join(map(str, args))}\n--- stdout\n{p.stdout[-3000:]}\n--- stderr\n{p.stderr[-6000:]}"
  return p

def build_route(d:pathlib.Path):
  src, files = d / "src", tracked()
  (d / "tracked.txt").parent.mkdir(parents=True, exist_ok=True)
  (d / "tracked.txt").write_text("\n".join(files))   # what the tests compare against (the work tree may move meanwhile)
  for f in files:   # a copy of the tracked files: nothing untracked, no build/ or egg-info from the checkout
    (src / f).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / f, src / f)
  # sdist first; the wheel from the unpacked sdist (what `python -m build` does without --sdist/--wheel)
  run([sys.executable, "-m", "build", "--outdir", d / "dist", src], "python -m build (the `build` package comes with the test extra: "
      "pip install -e '.[test]')", cwd=d, env=outside_env())
  run([sys.executable, "-m", "venv", d / "venv"], "python -m venv", env=outside_env())
  wheel = next((d / "dist").glob("mockgpu-*.whl"))
  run([d / "venv" / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", wheel], "pip install of the wheel and its dependencies",
      cwd=d, env=outside_env(), timeout=900)

@pytest.fixture(scope="session")
def route(tmp_path_factory) -> pathlib.Path:
  """The directory holding dist/ (sdist and wheel) and venv/; built by the first worker that gets the lock."""
  base = tmp_path_factory.getbasetemp()
  if os.environ.get("PYTEST_XDIST_WORKER"): base = base.parent   # shared by the workers of this session
  d, failed = base / "pip-route", base / "pip-route.failed"
  with open(base / "pip-route.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if failed.exists(): pytest.fail(f"building the pip route failed in another worker:\n{failed.read_text()}")
    if not (d / "done").exists():
      try: build_route(d)
      except BaseException as e:
        failed.write_text(str(e))
        raise
      (d / "done").write_text("ok")
  return d

def py(route): return route / "venv" / "bin" / "python"
def shipped(route) -> list[str]: return (route / "tracked.txt").read_text().splitlines()

def test_sdist_carries_the_sources(route):
  members = {m.split("/", 1)[1] for m in tarfile.open(next((route / "dist").glob("mockgpu-*.tar.gz"))).getnames() if "/" in m}
  files = {m for m in members if not any(m2.startswith(m + "/") for m2 in members)}   # drop directory entries
  want = {f for f in shipped(route) if f.split("/")[0] in SDIST_DIRS or f in SDIST_ROOT_FILES or ("/" not in f and f.endswith(".py"))}
  assert {"tinygrad/" + PTH, "emu/csrc/emu_sched.c", "emu/csrc/emu_core.h", "mock/ptx/ptx_rt.h", "pcode/pcode_rt.h", "emu/fidelity_coverage.json"} <= want
  generated = {f for f in files if f in ("PKG-INFO", "setup.cfg") or f.startswith("mockgpu.egg-info/")}
  assert files - generated == want, f"missing from the sdist: {sorted(want - files)}; unexpected: {sorted(files - generated - want)}"

def test_wheel_carries_the_pth_and_package_data(route):
  names = set(zipfile.ZipFile(next((route / "dist").glob("mockgpu-*.whl"))).namelist())
  assert PTH in names   # at the wheel root = the top of site-packages, where `site` reads .pth files
  want = {"mockgpu/" + f for f in shipped(route) if f.split("/")[0] in CODE_DIRS and not f.endswith(".pth")}
  want |= {"mockgpu/" + f for f in shipped(route) if "/" not in f and f.endswith(".py") and f != "setup.py"}
  assert want <= names, f"missing from the wheel: {sorted(want - names)}"

def test_license_is_in_the_sdist_and_the_wheel(route):
  """pyproject's license-files (PEP 639): the MIT text at the sdist root and in the wheel's dist-info/licenses/, and the
  metadata of both names it next to the SPDX expression."""
  text = (route / "src" / "LICENSE").read_bytes()
  assert text.startswith(b"MIT License\n\nCopyright (c) ") and b"the mockgpu authors\n" in text
  sdist = tarfile.open(next((route / "dist").glob("mockgpu-*.tar.gz")))
  top = sdist.getnames()[0].split("/")[0]
  assert sdist.extractfile(f"{top}/LICENSE").read() == text
  whl = zipfile.ZipFile(next((route / "dist").glob("mockgpu-*.whl")))
  info = next(n.split("/")[0] for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
  assert whl.read(f"{info}/licenses/LICENSE") == text
  for meta in (whl.read(f"{info}/METADATA").decode(), sdist.extractfile(f"{top}/PKG-INFO").read().decode()):
    assert {"License-Expression: MIT", "License-File: LICENSE"} <= set(meta.splitlines()), meta[:2000]

def test_installed_copy_is_the_venvs(route, tmp_path):
  code = ("import mockgpu, tinygrad, os, sys, sysconfig, importlib.metadata as md; print(os.path.realpath(sysconfig.get_paths()['purelib']));"
          "print(os.path.realpath(mockgpu.__file__)); print(os.path.realpath(tinygrad.__file__)); print(md.version('tinygrad'));"
          "print([p for p in sys.path if 'site-packages' in p and not os.path.realpath(p).startswith(os.path.realpath(sys.prefix))])")
  purelib, mg, tg, version, foreign = run([py(route), "-c", code], "import mockgpu", cwd=tmp_path, env=clean_env()).stdout.splitlines()
  assert purelib.startswith(str((route / "venv").resolve()) + os.sep)
  assert mg == os.path.join(purelib, "mockgpu", "__init__.py") and tg == os.path.join(purelib, "tinygrad", "__init__.py")
  assert version == "0.14.0" and foreign == "[]"   # nothing from the base interpreter's site-packages

@pytest.mark.parametrize("dev", ["MOCKKFD+AMD", pytest.param("MOCK+AMD", marks=pytest.mark.slow), pytest.param("MOCKKFD+AMD:LLVM", marks=pytest.mark.slow)])
def test_one_liner_from_any_directory(route, tmp_path, dev):
  # generous timeout: with an empty $MOCKGPU_CACHE the first kernel waits for the emulator's one-time C build
  p = run([py(route), "-c", ONE_LINER], f"DEV={dev} one-liner", cwd=tmp_path, env=clean_env(DEV=dev), timeout=900)
  assert p.stdout.strip().splitlines()[-1] == "[2, 3, 4]", p.stdout + p.stderr

def test_mockgpu_0_switches_activation_off(route, tmp_path):
  code = "import sys; print(any(type(f).__name__ == 'MockGPUFinder' for f in sys.meta_path))"
  assert run([py(route), "-c", code], "finder check", cwd=tmp_path, env=clean_env(DEV="MOCKKFD+AMD")).stdout.strip() == "True"
  assert run([py(route), "-c", code], "finder check", cwd=tmp_path, env=clean_env(DEV="MOCKKFD+AMD", MOCKGPU="0")).stdout.strip() == "False"
  # without the hook tinygrad's import of its in-repo mock fails, as it does for a plain `pip install tinygrad`
  p = subprocess.run([py(route), "-c", ONE_LINER], cwd=tmp_path, env=clean_env(DEV="MOCKKFD+AMD", MOCKGPU="0"), capture_output=True, text=True, timeout=300)
  assert p.returncode != 0 and "No module named 'test.mockgpu'" in p.stderr, p.stdout + p.stderr

def test_console_script_runs(route, tmp_path):
  script = route / "venv" / "bin" / "mockgpu"
  assert script.read_text().splitlines()[0].startswith(f"#!{route / 'venv' / 'bin' / 'python'}")
  out = run([script, "--help"], "mockgpu --help", cwd=tmp_path, env=clean_env()).stdout
  assert out.startswith("usage: mockgpu COMMAND")
  assert {"demo", "pcode", "emu", "fuzz", "bench"} <= {l.split()[0] for l in out.splitlines()[3:] if l.strip()}
