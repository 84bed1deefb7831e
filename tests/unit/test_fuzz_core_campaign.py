"""The fuzz framework's campaign logic on toy fuzzers: known findings vs new failures (exit codes, --strict), deduplication,
canonical minimisation with `shrink_int`, the minimisation budget apart from --time, replay through repro.py, undecided
(`unknown`) cases, set-up apart from --time. Toy cases are {"a": int, "b": int}; a classifier stands in for `known.classify`."""
import json, types
from mockgpu.tinygrad.fuzz import cli, core, known
from mockgpu.tinygrad.fuzz.core import Fuzzer, Failure, CampaignConfig, run_campaign, minimise, replay, shrink_int, safe_check, signature
from mockgpu.tinygrad.fuzz.errors import Inconclusive

class Bugs(Fuzzer):
  """Known bug: a == 13 raises ZeroDivisionError. New bug (if `new`): b >= 900 is off by one. Undecided (if `undecided`): a < -900."""
  name = "bugs"
  def __init__(self, new=True, undecided=False, repro_exit=1): self.new, self.undecided, self.repro_exit = new, undecided, repro_exit
  def generate(self, rng): return {"a": rng.choice([13, rng.randrange(-1000, 1000)]), "b": rng.randrange(-1000, 1000)}
  def check(self, case):
    if self.undecided and case["a"] < -900: raise Inconclusive("oracle timed out")
    if case["a"] == 13: raise ZeroDivisionError("a is 13")
    if self.new and case["b"] >= 900: return Failure("mismatch", f"at b={case['b']}: expected {case['b']}, got {case['b'] + 1}")
    return None
  def shrink(self, case):
    for k in ("a", "b"):
      for v in shrink_int(case[k], -1000, 999): yield {**case, k: v}
  def repro(self, case): return f"import sys\nprint('case {json.dumps(case)}')\nsys.exit({self.repro_exit})\n"

def classify(kind, f, case): return "K13" if kind == "bugs" and f.cls == "exception:ZeroDivisionError" and case["a"] == 13 else None

def _cfg(tmp_path, **kw):
  return CampaignConfig(**{"seed": 3, "time": None, "cases": 200, "out": tmp_path, "max_failures": 2, "known": classify, **kw})
def _cases(n=200, seed=3): return [Bugs().generate(core.case_rng(seed, i)) for i in range(n)]

def test_known_findings_are_counted_not_failures(tmp_path):
  rep = run_campaign(Bugs(new=False), _cfg(tmp_path))
  n13 = sum(c["a"] == 13 for c in _cases())
  assert n13 > 2  # more known hits than max_failures: they must not stop the campaign
  assert (rep.cases, rep.failures, list(rep.known)) == (200, [], ["K13"])
  hit = rep.known["K13"]
  assert (hit.count, hit.index, hit.failure.cls) == (n13, next(i for i, c in enumerate(_cases()) if c["a"] == 13), "exception:ZeroDivisionError")
  assert (rep.exit_code(), rep.exit_code(strict=True)) == (0, 1)
  assert not list(tmp_path.iterdir())  # known findings are neither minimised nor saved
  assert f"known [K13] x{n13} first index={hit.index} [exception:ZeroDivisionError]: the title" in rep.summary({"K13": "the title"})

def test_new_failure_deduplicated_and_minimised(tmp_path):
  rep = run_campaign(Bugs(), _cfg(tmp_path))
  new = [i for i, c in enumerate(_cases()) if c["a"] != 13 and c["b"] >= 900]
  assert len(new) > 2 and rep.exit_code() == 1
  [r] = rep.failures
  assert (r.index, r.count, r.minimised, r.minimised_failure.message) == (new[0], len(new), {"a": 0, "b": 900}, "at b=900: expected 900, got 901")
  assert [p.name for p in tmp_path.iterdir()] == [f"bugs-s3-i{new[0]}"]
  assert "failures=1 known=" in rep.summary() and f"x{len(new)} at b=900" in rep.summary()

def test_new_failure_does_not_minimise_into_a_known_one():
  class Crash(Bugs):  # a new bug of the known bug's class: a == 26 raises ZeroDivisionError too
    def check(self, case):
      if case["a"] in (13, 26): raise ZeroDivisionError(f"a is {case['a']}")
  f = safe_check(Crash(), {"a": 26, "b": 0})
  assert minimise(Crash(), {"a": 26, "b": 0}, f)[0] == {"a": 13, "b": 0}  # shrink_int(26) bisects to 13: the known bug
  assert minimise(Crash(), {"a": 26, "b": 0}, f, accept=lambda f, c: classify("bugs", f, c) is None)[0] == {"a": 26, "b": 0}

def test_dedup_over_jobs_keeps_the_first_case(tmp_path):
  one, two = run_campaign(Bugs(), _cfg(tmp_path / "1")), run_campaign(Bugs(), _cfg(tmp_path / "2", jobs=2))
  key = lambda rep: ([(r.index, r.count, r.minimised) for r in rep.failures], {k: (h.count, h.index) for k, h in rep.known.items()})
  assert key(one) == key(two)
  assert [p.name for p in (tmp_path / "2").iterdir()] == [f"bugs-s3-i{one.failures[0].index}"]

def test_signature_ignores_values():
  assert signature(Failure("mismatch", "at x=5: expected -3, got 0x1f (1.5e3, -inf)\nmore")) == "mismatch|at x=#: expected #, got # (#, #)"
  assert signature(Failure("mismatch:CLANG", "CLANG out0[1] (int8) = 5, reference 4")) == "mismatch:CLANG|CLANG out0[#] (int8) = #, reference #"
  assert signature(Failure("mismatch", "at x=5")) != signature(Failure("bounds", "at x=5"))

def test_cli_exit_codes_known_new_strict(tmp_path, monkeypatch, capsys):
  fz = {"bugs": Bugs(new=False)}
  monkeypatch.setattr(cli, "load", lambda kind, opts: fz[kind])
  monkeypatch.setattr(known, "classify", classify)
  args = ["bugs", "--cases", "200", "--seed", "3", "--out", str(tmp_path), "--quiet"]
  assert cli.main(args) == 0 and "known [K13] x" in capsys.readouterr().out
  assert cli.main(args + ["--strict"]) == 1
  fz["bugs"] = Bugs()
  assert cli.main(args) == 1 and "FAIL [mismatch]" in capsys.readouterr().out

def test_shrink_int_bisects_toward_zero():
  assert list(shrink_int(100)) == [0, 50, 75, 88, 94, 97, 99]
  assert list(shrink_int(-100)) == [0, 100, -50, -75, -88, -94, -97, -99]
  assert list(shrink_int(100, lo=40)) == [40, 70, 85, 93, 97, 99]
  assert list(shrink_int(-7, hi=-2)) == [-2, -5, -6]
  assert list(shrink_int(0)) == [] and list(shrink_int(1)) == [0]

class Threshold(Fuzzer):
  """Fails iff a >= 37 and b <= -5."""
  name = "threshold"
  def check(self, case): return Failure("mismatch", "x") if case["a"] >= 37 and case["b"] <= -5 else None
  def shrink(self, case):
    for k in ("a", "b"):
      for v in shrink_int(case[k]): yield {**case, k: v}

def test_minimisation_is_canonical():
  starts = [{"a": 10**9, "b": -10**9}, {"a": 40, "b": -6}, {"a": 37, "b": -123456}, {"a": 2**62 + 1, "b": -5}]
  res = [minimise(Threshold(), s, Failure("mismatch", "x")) for s in starts]
  assert [r[0] for r in res] == [{"a": 37, "b": -5}] * 4
  assert max(r[2] for r in res) < 4000  # binary search: a few thousand checks from 2**62, not 2**62 steps

def test_minimise_budget_is_apart_from_time(tmp_path, monkeypatch):
  # a fake clock (binary fractions, so the sums are exact): a check costs 1/64 s, producing a minimisation candidate 1/2 s
  now = [0.0]
  monkeypatch.setattr(core, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
  class Slow(Fuzzer):
    name = "slow"
    def generate(self, rng): return rng.randrange(10)
    def check(self, case):
      now[0] += 1/64
      return Failure("mismatch", "x") if case == 0 else None
    def shrink(self, case):  # never runs out: only the budget stops the minimiser
      for k in range(1, 10**6): now[0] += 0.5; yield case - k
  rep = run_campaign(Slow(), CampaignConfig(seed=0, time=2.0, out=None, minimise_time=5.0, max_failures=10))
  zeros = [i for i in range(128) if Slow().generate(core.case_rng(0, i)) == 0]
  assert [(r.index, r.count, r.shrink_checks) for r in rep.failures] == [(zeros[0], len(zeros), 9)]
  # --time counts checks only (128 x 1/64 s); minimisation stopped at the 10th candidate, 9 x (1/2 + 1/64) + 1/2 s after it began
  assert (rep.cases, rep.seconds, rep.minimise_seconds) == (128, 2.0, 9 * (0.5 + 1/64) + 0.5)

def test_setup_is_apart_from_time(monkeypatch):
  # prepare() (GPU workers, first compiles) runs once per job before the clock starts: --time buys cases, the report shows setup
  now = [0.0]
  monkeypatch.setattr(core, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
  class SlowStart(Fuzzer):
    name, prepared = "slowstart", 0
    def prepare(self): now[0] += 8.0; self.prepared += 1
    def generate(self, rng): return rng.randrange(10)
    def check(self, case): now[0] += 1/64
  fz = SlowStart()
  rep = run_campaign(fz, CampaignConfig(seed=0, time=1.0, out=None))
  assert (fz.prepared, rep.cases, rep.seconds, rep.setup_seconds) == (1, 64, 1.0, 8.0)
  assert "time=1.0s (+8.0s setup, +0.0s minimising) rate=64.0 cases/s" in rep.summary()

def test_replay_runs_repro_script(tmp_path, capsys):
  run_campaign(Bugs(repro_exit=0), _cfg(tmp_path / "passes"))
  [res] = replay(tmp_path / "passes")
  assert (res.reproduced, res.returncode, res.expected_cls) == (False, 0, "mismatch") and 'case {"a": 0, "b": 900}' in res.output
  assert cli.main(["--replay", str(tmp_path / "passes")]) == 0 and "passes now" in capsys.readouterr().out
  run_campaign(Bugs(repro_exit=1), _cfg(tmp_path / "fails"))
  assert [(r.reproduced, r.state) for r in replay(tmp_path / "fails")] == [(True, "REPRODUCED")]
  assert cli.main(["--replay", str(tmp_path / "fails")]) == 1 and "REPRODUCED" in capsys.readouterr().out
  # a script that dies of an exception its failure class does not name still fails, but differently
  run_campaign(Bugs(repro_exit="int(None)"), _cfg(tmp_path / "crashes"))
  assert [(r.reproduced, r.raised, r.state) for r in replay(tmp_path / "crashes")] == \
         [(True, "TypeError", "fails differently (repro.py raised TypeError)")]
  assert cli.main(["--replay", str(tmp_path / "crashes")]) == 1 and "fails differently" in capsys.readouterr().out
  run_campaign(Bugs(new=False), _cfg(tmp_path / "known", known=None))  # the known bug as a failure: its repro raises what it names
  (d:=next((tmp_path / "known").iterdir()) / "repro.py").write_text("raise ZeroDivisionError('a is 13')\n")
  assert [(r.raised, r.state) for r in replay(d.parent)] == [("ZeroDivisionError", "REPRODUCED")]

def test_undecided_cases_are_unknown_not_passes(tmp_path):
  rep = run_campaign(Bugs(new=False, undecided=True), _cfg(tmp_path))
  n = sum(c["a"] < -900 for c in _cases())
  assert n > 0 and rep.unknown == n and rep.failures == [] and f"unknown={n}" in rep.summary()
  assert safe_check(Bugs(undecided=True), {"a": -995, "b": 0}) == Failure("unknown", "oracle timed out")

def test_z3_timeout_is_unknown():
  from mockgpu.tinygrad.fuzz.symbolic import SymbolicFuzzer
  # a nonlinear modulo over a 10^15-point box: z3 cannot decide it in 1 ms, and decides it (no counterexample) in 20 s
  case = {"dtype": "weakint", "vars": [[-100000, 100000], [1, 100000], [-100000, 100000]],
          "expr": ["mod", ["mul", ["v", 0], ["v", 2]], ["add", ["v", 1], ["c", 7]]]}
  f = safe_check(SymbolicFuzzer(oracle="z3", z3_timeout_ms=1), case)
  assert f is not None and f.cls == "unknown" and "z3 answered unknown (timeout=1ms)" in f.message
  assert safe_check(SymbolicFuzzer(oracle="z3", z3_timeout_ms=20000), case) is None

def test_cli_minimise_time_option():
  a = cli.parser().parse_args(["idiv", "--minimise-time", "7"])
  assert (a.minimise_time, cli.parser().parse_args(["idiv"]).minimise_time, a.strict) == (7.0, 60.0, False)
