"""The package layout promises of docs/architecture.md: the code folders are namespace portions mapped into `mockgpu`,
and running Python from the repository root still imports the installed PyPI `tinygrad` (and `mock`, if installed)."""
import os, re, subprocess, sys, pathlib
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CODE_DIRS = ["pcode", "emu", "mock", "tinygrad"]

@pytest.mark.parametrize("d", CODE_DIRS)
def test_code_folders_are_namespace_portions(d):
  assert (ROOT / d).is_dir()
  assert not (ROOT / d / "__init__.py").exists(), f"{d}/__init__.py would shadow installed packages when run from the root"

def test_root_does_not_shadow_installed_tinygrad():
  out = subprocess.run([sys.executable, "-c", "import tinygrad, os; print(os.path.realpath(tinygrad.__file__))"],
                       cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
  assert out.endswith(os.path.join("tinygrad", "__init__.py")) and out != str(ROOT / "tinygrad" / "__init__.py")
  assert "site-packages" in out

def test_mockgpu_subpackages_import_from_anywhere(tmp_path):
  code = "import mockgpu, mockgpu.errors, os; print(os.path.realpath(mockgpu.__file__))"
  out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
  assert out.endswith("__init__.py")

def test_errors_share_one_root():
  from mockgpu.errors import MockGPUError
  assert issubclass(MockGPUError, Exception)

def test_cli_lists_commands_and_rejects_unknown():
  from mockgpu.__main__ import main, COMMANDS
  assert main([]) == 2 and main(["--help"]) == 0   # no command is a usage error (tests/unit/test_cli_usage.py)
  assert main(["no-such-command"]) == 2
  assert {"demo", "pcode", "emu", "fuzz", "bench"} <= set(COMMANDS)

FUZZ_ONLY = {"z3": "z3-solver", "unicorn": "unicorn"}   # import name -> distribution of the `fuzz` extra

def test_fuzz_only_dependencies_are_an_extra():
  import tomllib
  proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
  assert proj["dependencies"] == ["tinygrad==0.14.0", "numpy"]
  extras = proj["optional-dependencies"]
  assert sorted(extras["fuzz"]) == sorted(FUZZ_ONLY.values())
  names = {re.split(r"[<>=!~ ]", r, maxsplit=1)[0] for r in extras["test"]}   # requirement names, without their version bounds
  assert set(extras["fuzz"]) | {"hypothesis", "pytest", "pytest-xdist", "build"} <= names   # the test extra runs everything

def test_license_and_classifiers():
  import tomllib
  proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
  assert proj["license"] == "MIT" and proj["license-files"] == ["LICENSE"] and "include README.md LICENSE" in (ROOT / "MANIFEST.in").read_text()
  assert (ROOT / "LICENSE").read_text().splitlines()[:3] == ["MIT License", "", "Copyright (c) 2026 the mockgpu authors"]
  # PEP 639: with a license expression, License :: classifiers are an error; the OS one is true (process_vm_readv, /proc/self)
  assert not [c for c in proj["classifiers"] if c.startswith("License ::")] and "Operating System :: POSIX :: Linux" in proj["classifiers"]

def test_nothing_but_fuzz_kinds_imports_the_extra():
  entry = ["tinygrad.runtime.support.hcq", "mockgpu.__main__", "mockgpu.tinygrad.pytest_plugin", "mockgpu.tinygrad.activate",
           "mockgpu.tinygrad.checks", "mockgpu.tinygrad.demo", "mockgpu.tinygrad.bench", "mockgpu.tinygrad.ci", "mockgpu.tinygrad.fuzz.cli",
           "mockgpu.tinygrad.fuzz.registry", "mockgpu.pcode.cli", "mockgpu.emu.cli", "mockgpu.emu.api", "mockgpu.tinygrad.compat.fileio", "mockgpu.mock.kfd",
           "mockgpu.tinygrad.compat.cuda", "mockgpu.tinygrad.compat.amd_emu", "mockgpu.mock.ptx.engine"]
  code = f"import importlib, sys\nfor m in {entry!r}: importlib.import_module(m)\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & {{'z3', 'unicorn', 'hypothesis'}}))"
  p = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "tests", capture_output=True, text=True, timeout=300)
  assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr[-3000:]
  # each fuzz kind imports without the extra, or fails on exactly the module registry.NEEDS declares for it
  from mockgpu.tinygrad.fuzz.registry import KINDS, NEEDS
  for kind, (mod, _) in KINDS.items():
    code = f"import sys\nfor m in {list(FUZZ_ONLY)!r}: sys.modules[m] = None\ntry: __import__({mod!r})\nexcept ModuleNotFoundError as e: print(e.name)"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "tests", capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and set(p.stdout.split()) <= {m for m, _ in NEEDS.get(kind, ())}, (kind, p.stdout, p.stderr[-2000:])

def test_test_file_basenames_are_unique():
  # tests/ has no __init__.py files: pytest imports test modules by basename, so two test_x.py in different folders break
  # collection of the whole suite ("import file mismatch"), which a run of one folder does not show
  names = sorted(p.name for p in (ROOT / "tests").rglob("test_*.py"))
  assert [n for n in set(names) if names.count(n) > 1] == []
