"""The oob fuzzer finds and minimises each kind of disagreement when one oracle is deliberately broken (a static check that never
or always flags, an executor that swallows its bounds errors; tinygrad is not patched), agrees with tinygrad on hand-written
kernels with and without a deliberate out-of-bounds index, still reproduces the documented CHECK_OOB finding, and runs a short
deterministic campaign (PYTHON and the mock AMD GPU)."""
import subprocess, sys
import pytest
from mockgpu.tinygrad.fuzz.core import CampaignConfig, run_campaign
from mockgpu.tinygrad.fuzz.oob import OobFuzzer, truth, exhaustive, build_oob_ast, static_check, vectorized_access
from mockgpu.tinygrad.fuzz.errors import ExecFault
from mockgpu.tinygrad.fuzz.kexec import Executor, python_executor

def _never(ast): return False
def _always(ast): return True
_PY = python_executor()
def _swallow(prg, arrays):
  try: _PY.runner(prg, arrays)
  except ExecFault: pass
NOFAULT = Executor("NOFAULT", _PY.renderer, _swallow)

def _campaign(fz, cases, seed=0, max_failures=1, ignore=()):
  return run_campaign(fz, CampaignConfig(seed=seed, time=None, cases=cases, out=None, max_failures=max_failures, ignore=ignore))

def _case(idx, size, dims=(8,), gate=None, mode="load", ibuf=None, axes=None):
  return {"dims": list(dims), "axes": axes or ["LOOP"] * len(dims), "ibuf": ibuf, "mode": mode, "size": size, "idx": idx, "gate": gate}

MINUS_ONE = {"dims": [], "axes": [], "ibuf": None, "mode": "load", "size": 1, "idx": ["c", -1], "gate": None, "dtype": "int32"}
@pytest.mark.parametrize("fz,index,cls,minimised", [
  (OobFuzzer(static=_never), 3, "static-miss", MINUS_ONE),
  (OobFuzzer(static=_always), 0, "false-alarm", {**MINUS_ONE, "idx": ["//", ["c", 0], ["c", 1]]}),
  (OobFuzzer(dynamic=[], extra=[NOFAULT]), 3, "dynamic-miss:NOFAULT", MINUS_ONE),
], ids=["static-never-flags", "static-always-flags", "executor-swallows-faults"])
def test_finds_and_minimises_broken_oracle(fz, index, cls, minimised):
  rep = _campaign(fz, 300, ignore=("static-miss:vectorized",))
  assert [(r.index, r.failure.cls, r.minimised_failure.cls) for r in rep.failures] == [(index, cls, cls)]
  assert rep.failures[0].minimised == minimised and rep.failures[0].case != minimised

@pytest.mark.parametrize("idx,size,gate,want", [
  (["+", ["r", 0], ["c", 1]], 8, None, (True, 1, 8)),                       # deliberate off-by-one
  (["+", ["r", 0], ["c", 1]], 8, ["<", ["r", 0], ["c", 7]], (False, 1, 7)),  # the same index, gated in bounds
  (["%", ["+", ["*", ["r", 0], ["c", 3]], ["c", -7]], ["c", 4]], 4, None, (True, -3, 3)),  # CMOD keeps the dividend's sign
  (["//", ["+", ["r", 0], ["c", -7]], ["c", 2]], 8, None, (True, -3, 0)),   # CDIV truncates toward zero
])
def test_truth_and_tinygrad_agree_on_hand_written_kernels(idx, size, gate, want):
  case = _case(idx, size, gate=gate)
  assert truth(case) == want
  assert OobFuzzer().check(case) is None
  broken = OobFuzzer(static=_never).check(case)
  assert (broken.cls if broken else None) == ("static-miss" if want[0] else None)
  v = OobFuzzer(dynamic=["PYTHON"]).verdicts(case)
  assert (v["truth"], v["static"], v["PYTHON"]) == (want[0], want[0], "fault" if want[0] else "clean")

def test_deliberate_oob_store_is_flagged_both_ways():
  case = _case(["+", ["r", 0], ["c", 1]], 8, mode="store")
  assert static_check(build_oob_ast(case)) is True
  f = OobFuzzer(static=_never).check(case)
  assert f is not None and f.cls == "static-miss" and f.message == "truth=OOB static=False PYTHON=fault AMD=fault AMD-STRICT=fault"

def test_exhaustive_index_buffers():
  full = {"dtype": "uint8", "data": list(range(255, -1, -1)), "loop": 1}
  assert exhaustive(_case(["+", ["ld"], ["r", 0]], 300, dims=(2, 256), ibuf=full))
  assert not exhaustive(_case(["+", ["ld"], ["r", 1]], 300, dims=(2, 256), ibuf=full))  # the load's loop also indexes directly
  assert not exhaustive(_case(["ld"], 300, dims=(2, 4), ibuf={"dtype": "int32", "data": [0, 1, 2, 3], "loop": 1}))
  # every uint8 value is loaded: in bounds exactly when size > 255 + r0
  assert OobFuzzer(dynamic=["PYTHON"]).verdicts(_case(["+", ["ld"], ["r", 0]], 257, dims=(2, 256), ibuf=full))["static"] is False
  v = OobFuzzer(dynamic=["PYTHON"]).verdicts(_case(["+", ["ld"], ["r", 0]], 256, dims=(2, 256), ibuf=full))
  assert (v["truth"], v["static"], v["PYTHON"]) == (True, True, "fault")

def test_documented_finding_vectorized_access_escapes_check_oob():
  # F12: the optimizer upcasts the 8-wide GLOBAL loop into vector loads through SHRINK, which validate_index skips
  case = _case(["r", 1], 7, dims=(1, 8), axes=["LOOP", "GLOBAL"])
  assert truth(case) == (True, 0, 7) and vectorized_access(build_oob_ast(case))
  f = OobFuzzer().check(case)
  # index 7 of 7 int32 is inside the 32-byte alignment padding of the AMD executor's buffer: a fault only in strict mode
  assert f is not None and f.cls == "static-miss:vectorized" and f.message == "truth=OOB static=False PYTHON=fault AMD=clean AMD-STRICT=fault"

def test_repro_script_exits_nonzero_while_failing(tmp_path):
  case = _case(["r", 1], 7, dims=(1, 8), axes=["LOOP", "GLOBAL"])
  (p:=tmp_path / "repro.py").write_text(OobFuzzer().repro(case))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=120)
  assert r.returncode == 1 and "truth: OUT OF BOUNDS (indices 0..7, size 7)" in r.stdout and "static CHECK_OOB=1: passes" in r.stdout

def test_shrink_candidates_are_smaller_and_valid():
  case = _case(["+", ["*", ["r", 1], ["c", 4]], ["r", 0]], 20, dims=(1, 5), gate=["&", ["<", ["r", 0], ["c", 3]], ["!=", ["r", 1], ["c", 2]]])
  cands = list(OobFuzzer().shrink(case))
  assert cands[0]["gate"] is None and {"dims": [5], "idx": ["+", ["*", ["r", 0], ["c", 4]], ["c", 0]]}.items() <= \
    next(c for c in cands if c["dims"] == [5]).items()
  for c in cands: build_oob_ast(c)

@pytest.mark.slow  # ~50 s: the default suite covers the AMD worker through test_oob_lds, test_oob_dtypes and test_amd
def test_short_campaign_clean():
  # PYTHON and the mock AMD GPU (worker process): every out-of-bounds case faults the GPU, the worker moves on
  fz = OobFuzzer()
  rep = _campaign(fz, 100, ignore=("static-miss:vectorized",))
  assert (rep.cases, rep.failures, rep.ignored) == (100, [], 0)
  assert rep.stats == {"oob": 21, "in_bounds": 78, "inconclusive": 1, "global": 84, "local": 15, "opts_rejected": 1}
  assert fz.options() == {"dynamic": ["PYTHON", "AMD", "AMD-STRICT"]}

@pytest.mark.slow
def test_long_campaign():
  rep = _campaign(OobFuzzer(), 3000, seed=1, max_failures=5, ignore=("static-miss:vectorized",))
  assert rep.cases == 3000 and [r.minimised_failure.cls for r in rep.failures] == []
