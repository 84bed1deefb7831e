"""The package layout promises of docs/architecture.md: the code folders are namespace portions mapped into `mockgpu`,
and running Python from the repository root still imports the installed PyPI `tinygrad` (and `mock`, if installed)."""
import os, subprocess, sys, pathlib
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
  assert main([]) == 2 and main(["--help"]) == 0   # no command is a usage error (tests/unit/test_cli.py)
  assert main(["no-such-command"]) == 2
  assert {"demo", "pcode", "emu", "fuzz", "bench"} <= set(COMMANDS)
