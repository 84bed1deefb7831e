"""The symbolic fuzzer finds and minimises injected wrong rewrite rules (test-only PatternMatchers tried before tinygrad's own
rules: tinygrad itself is not patched), its z3 and brute-force oracles agree, and a short deterministic campaign runs clean."""
import random, subprocess, sys
import pytest
from tinygrad.uop.ops import UPat, PatternMatcher, UOp, Ops
from mockgpu.tinygrad.fuzz.core import CampaignConfig, run_campaign
from mockgpu.tinygrad.fuzz.symbolic import SymbolicFuzzer
from mockgpu.tinygrad.fuzz import cli

# x % c -> x is right when x.vmax < c; the injected bug accepts x.vmax <= c (off by one at x == c)
MOD_OFF_BY_ONE = PatternMatcher([(UPat.var("x") % UPat.cvar("c"), lambda x, c: x if 0 <= x.vmin and x.vmax <= c.arg else None)])
MAX_DROPS_CONST = PatternMatcher([(UPat.var("x").maximum(UPat.cvar("c")), lambda x, c: x)])
def _narrow(b):  # a variable whose claimed range loses its lowest value: right values, unsound vmin
  lo, hi = b.arg.vmin_vmax
  return UOp.variable(b.arg.name, lo + 1, hi, dtype=b.dtype) if lo + 1 < hi else None
NARROW_VAR = PatternMatcher([(UPat(Ops.BUFFER, name="b"), _narrow)])

WEAK = {"case_dtypes": ["weakint"], "casts": False}  # index arithmetic only: tinygrad's rules must be exact here, nothing wraps

def _campaign(fz, cases=3000, seed=0, **kw):
  return run_campaign(fz, CampaignConfig(seed=seed, time=None, cases=cases, out=None, max_failures=1, **kw))

@pytest.mark.parametrize("rules,index,minimised,cls", [
  (MOD_OFF_BY_ONE, 474, {"dtype": "weakint", "vars": [[9, 9]], "expr": ["mod", ["v", 0], ["c", 9]]}, "mismatch"),
  (MAX_DROPS_CONST, 1, {"dtype": "weakint", "vars": [], "expr": ["min", ["c", 0], ["c", -1]]}, "mismatch"),  # min is -max(-x, -y)
  (NARROW_VAR, 0, {"dtype": "weakint", "vars": [[0, 2]], "expr": ["v", 0]}, "bounds"),
], ids=["mod-off-by-one", "max-drops-const", "unsound-vmin"])
def test_finds_and_minimises_injected_rule(rules, index, minimised, cls):
  rep = _campaign(SymbolicFuzzer(extra_rules=rules, **WEAK))
  assert [(r.index, r.minimised, r.minimised_failure.cls, r.failure.cls) for r in rep.failures] == [(index, minimised, cls, cls)]
  assert rep.failures[0].minimised != rep.failures[0].case

def test_z3_oracle_finds_injected_rule_on_a_large_box():
  fz = SymbolicFuzzer(extra_rules=MOD_OFF_BY_ONE)
  f = fz.check({"dtype": "weakint", "vars": [[0, 100000]], "expr": ["mod", ["v", 0], ["c", 100000]]})
  assert f is not None and f.cls == "mismatch" and f.message.startswith("at v0=100000: expected 0, simplified graph gives 100000")
  assert fz.stats() == {"z3-sat": 1}

def test_z3_and_brute_force_agree_on_stock_tinygrad():
  z3fz, brute = SymbolicFuzzer(oracle="z3", **WEAK), SymbolicFuzzer(oracle="brute", **WEAK)
  for i in range(150):
    case = brute.generate(random.Random(i))
    assert (z3fz.check(case) is None) == (brute.check(case) is None), case
  assert z3fz.stats().get("z3-unsat", 0) > 50 and "z3-sat" not in z3fz.stats()

def test_repro_script_runs_standalone(tmp_path):
  fz = SymbolicFuzzer(extra_rules=MAX_DROPS_CONST)
  case = {"dtype": "int32", "vars": [[0, 0]], "expr": ["max", ["v", 0], ["c", 1]]}
  (p:=tmp_path / "repro.py").write_text(src:=fz.repro(case))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True)
  assert "test-only injected" in src and r.returncode == 0 and "simplified: 1" in r.stdout  # stock tinygrad gets it right

def test_finding_zero_numerator_divided_by_bitwise_expression():
  # docs/findings.md #1: simplify raises ZeroDivisionError on 0 // (v|8), v in [0, 5]; the divisor is always in [8, 13]
  fz = SymbolicFuzzer()
  case = {"dtype": "weakint", "vars": [[0, 5]], "expr": ["div", ["c", 0], ["or", ["v", 0], ["c", 8]]]}
  f = fz.check(case)
  assert f is not None and f.cls == "exception:simplify:ZeroDivisionError"

def test_short_deterministic_campaign(tmp_path, capsys):
  rep = _campaign(SymbolicFuzzer(**WEAK), cases=500, seed=1)  # test_long_campaign_two_jobs (slow) runs 300 s
  assert rep.cases == 500 and [(r.index, r.failure.cls) for r in rep.failures] == []
  assert cli.main(["symbolic", "--cases", "100", "--seed", "2", "--out", str(tmp_path), "--quiet", "--opt", 'case_dtypes=["weakint"]',
                   "--opt", "casts=false"]) == 0
  out = capsys.readouterr().out
  assert "fuzz symbolic: seed=2 shard=0/1 jobs=1 cases=100" in out and "failures=0" in out

@pytest.mark.slow
def test_long_campaign_two_jobs(tmp_path):
  rep = run_campaign(SymbolicFuzzer(**WEAK), CampaignConfig(seed=100, time=300, jobs=2, out=tmp_path, max_failures=20))
  assert {r.failure.cls for r in rep.failures} <= {"exception:simplify:ZeroDivisionError"}

def test_cli_replays_a_saved_failure(tmp_path, capsys):
  from mockgpu.tinygrad.fuzz.core import FailureRecord, save_failure
  fz = SymbolicFuzzer()
  case = {"dtype": "weakint", "vars": [[1, 1]], "expr": ["div", ["c", 0], ["or", ["c", 1], ["v", 0]]]}
  f = fz.check(case)
  path = save_failure(fz, FailureRecord("symbolic", 7, 3, case, f, case, f, 0), tmp_path)
  assert path.endswith("symbolic-s7-i3")
  assert cli.main(["--replay", str(tmp_path)]) == 1
  out = capsys.readouterr().out
  assert "REPRODUCED" in out and "replay: 1 failures, 1 still failing" in out
  assert subprocess.run([sys.executable, f"{path}/repro.py"], capture_output=True).returncode == 1
