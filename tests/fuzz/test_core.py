"""The fuzz framework on a toy fuzzer with a known bug: determinism, sharding, jobs, minimisation, failure dirs, replay, CLI."""
import json, subprocess, sys
import pytest
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure, CampaignConfig, case_rng, minimise, run_campaign, replay, safe_check
from mockgpu.tinygrad.fuzz.errors import BadFailureDir, UnknownKind, KindUnavailable, FuzzError
from mockgpu.tinygrad.fuzz import registry, cli

class Toy(Fuzzer):
  """'sums' lists of ints; the bug: any element >= 97 that is odd crashes, and a list of length >= 9 gives a wrong sum."""
  name = "toy"
  def generate(self, rng): return [rng.randrange(100) for _ in range(rng.randrange(1, 10))]
  def check(self, case):
    if any(x >= 97 and x % 2 for x in case): raise ZeroDivisionError("odd big element")
    return Failure("mismatch", f"len={len(case)}") if len(case) >= 9 else None
  def shrink(self, case):
    for i in range(len(case)): yield case[:i] + case[i+1:]
    for i, x in enumerate(case):
      if x: yield case[:i] + [x // 2] + case[i+1:]
      if x: yield case[:i] + [x - 1] + case[i+1:]
  def repro(self, case): return f"import sys\ncase = {case!r}\nsys.exit(1 if len(case) >= 9 or any(x >= 97 and x % 2 for x in case) else 0)\n"

def test_case_rng_is_deterministic_and_distinct():
  assert [case_rng(3, 7).random() for _ in range(2)] == [case_rng(3, 7).random()] * 2
  assert case_rng(3, 7).random() != case_rng(3, 8).random() != case_rng(4, 7).random()

def test_safe_check_classifies_exceptions():
  f = safe_check(Toy(), [99])
  assert f is not None and f.cls == "exception:ZeroDivisionError" and "odd big element" in f.message

def test_minimise_keeps_failure_class():
  case, f, n = minimise(Toy(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], Failure("mismatch", ""))
  assert case == [0] * 9 and f.cls == "mismatch" and n > 0
  case, f, _ = minimise(Toy(), [3, 99, 4], Failure("exception:ZeroDivisionError", ""))
  assert case == [99] and f.cls == "exception:ZeroDivisionError"

def _cfg(tmp_path, **kw): return CampaignConfig(**{"seed": 5, "time": None, "cases": 40, "out": tmp_path, "max_failures": 100, **kw})

def test_campaign_deterministic_over_jobs_and_shards(tmp_path):
  one = run_campaign(Toy(), _cfg(tmp_path / "a"))
  two = run_campaign(Toy(), _cfg(tmp_path / "b", jobs=2))
  assert one.cases == two.cases == 40 and one.failures
  key = lambda rep: [(r.index, r.case, r.minimised, r.minimised_failure.cls) for r in rep.failures]
  assert key(one) == key(two)
  # shards 0/2 and 1/2 of 20 cases each together cover the first 40 indices
  # (failures are deduplicated per campaign: each shard keeps its own first case of each failure, the counts add up)
  sh = [run_campaign(Toy(), _cfg(tmp_path / f"s{i}", cases=20, shard=(i, 2))) for i in range(2)]
  classes = lambda reps: sorted(r.minimised_failure.cls for rep in reps for r in rep.failures)
  assert classes(sh) == sorted(2 * classes([one])) and sum(r.count for s in sh for r in s.failures) == sum(r.count for r in one.failures)
  assert all(r.index % 2 == i for i, s in enumerate(sh) for r in s.failures)
  assert [r.count for r in one.failures] == [r.count for r in two.failures]

def test_failure_dir_and_replay(tmp_path):
  rep = run_campaign(Toy(), _cfg(tmp_path, max_failures=1))
  assert len(rep.failures) == 1
  r = rep.failures[0]
  meta = json.loads(open(f"{r.path}/failure.json").read())
  assert meta["seed"] == 5 and meta["index"] == r.index and meta["kind"] == "toy"
  assert json.loads(open(f"{r.path}/case.json").read()) == r.case
  assert json.loads(open(f"{r.path}/minimised.json").read()) == r.minimised
  assert subprocess.run([sys.executable, f"{r.path}/repro.py"]).returncode == 1
  res = replay(tmp_path)
  assert [(x.reproduced, x.returncode) for x in res] == [(True, 1)]
  with pytest.raises(BadFailureDir): replay(tmp_path / "nothing")

def test_ignored_classes_are_counted_not_reported(tmp_path):
  rep = run_campaign(Toy(), _cfg(tmp_path, ignore=("exception:",)))
  assert rep.failures and {r.failure.cls for r in rep.failures} == {"mismatch"} and rep.ignored > 0
  everything = run_campaign(Toy(), _cfg(tmp_path / "all"))
  assert sum(r.count for r in everything.failures) == sum(r.count for r in rep.failures) + rep.ignored and f"ignored={rep.ignored}" in rep.summary()

def test_campaign_without_failures_and_bad_config(tmp_path):
  class Fine(Toy):
    def check(self, case): return None
  rep = run_campaign(Fine(), _cfg(tmp_path, cases=25))
  assert rep.cases == 25 and rep.failures == [] and "failures=0" in rep.summary()
  with pytest.raises(ValueError): run_campaign(Fine(), _cfg(tmp_path, cases=None))
  with pytest.raises(ValueError): run_campaign(Fine(), _cfg(tmp_path, shard=(2, 2)))

def test_progress_bar_shows_rate(tmp_path, capsys):
  run_campaign(Toy(), _cfg(tmp_path, max_failures=1, progress=True))
  err = capsys.readouterr().err
  assert "\rtoy failures=1 known=0 unknown=0: " in err and " cases/s]" in err
  run_campaign(Toy(), _cfg(tmp_path, max_failures=1, progress=None))  # auto: stderr is not a terminal under pytest
  assert capsys.readouterr().err == ""

def test_cli_rejects_bad_shard(capsys):
  with pytest.raises(SystemExit): cli.main(["symbolic", "--shard", "4/4"])
  assert "need 0 <= i < n" in capsys.readouterr().err

def test_registry_and_cli_errors(capsys):
  with pytest.raises(UnknownKind): registry.load("nope")
  assert issubclass(KindUnavailable, FuzzError)
  assert set(registry.KINDS) >= {"symbolic", "idiv", "oob", "render"}
  assert cli.main(["nope"]) == 2 and "unknown fuzzer kind" in capsys.readouterr().err
  assert cli.main(["--list"]) == 0
  out = capsys.readouterr().out
  assert all(k in out for k in registry.KINDS)
  assert cli.main([]) == 2
