"""`./dev.sh lint`: ruff with the settings of pyproject.toml finds nothing, and the line budget (.ci/line_budget.py) holds
and fails, naming the package, when a package outgrows it."""
import importlib.util, pathlib, shutil, subprocess, sys
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

def _budget():
  spec = importlib.util.spec_from_file_location("line_budget", ROOT / ".ci" / "line_budget.py")
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod

@pytest.mark.skipif(shutil.which("ruff") is None and importlib.util.find_spec("ruff") is None, reason="ruff is in the test extra")
def test_ruff_finds_nothing():
  r = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "."], cwd=ROOT, capture_output=True, text=True,
                     timeout=300)
  assert r.returncode == 0, r.stdout + r.stderr

def test_line_budget_holds_and_names_the_package_over_it(capsys, monkeypatch):
  lb = _budget()
  assert lb.main() == 0
  n = sum(lb.code_lines(p) for p in lb.files("mock"))
  assert n > 1000
  monkeypatch.setitem(lb.BUDGET, "mock", n - 1)
  capsys.readouterr()
  assert lb.main() == 1
  assert capsys.readouterr().err == (f"line budget: mock has {n} code lines, over its budget of {n - 1}: make room (remove or merge code), "
                                     "or raise BUDGET in .ci/line_budget.py with the reason in the commit\n")

def test_code_lines_skip_blanks_and_comments(tmp_path):
  p = tmp_path / "m.py"
  p.write_text('"""doc"""\n\n# comment\n  # indented comment\nx = 1  # trailing\n')
  assert _budget().code_lines(p) == 2
