"""The idiv fuzzer finds and minimises an off-by-one magic number (injected through a test-only rule that runs a copy of
tinygrad's fast_idiv with a wrong `magicgu`; tinygrad itself is not patched), checks CPU and mock AMD kernels end to end, and runs a
short deterministic campaign."""
import subprocess, sys, types
import pytest
from tinygrad.uop.ops import UPat, PatternMatcher, Ops
from tinygrad.dtype import dtypes
from tinygrad.codegen.decomp import op as decomp
from mockgpu.tinygrad.fuzz.core import CampaignConfig, Failure, run_campaign
from mockgpu.tinygrad.fuzz.errors import ExecutorUnavailable
from mockgpu.tinygrad.fuzz.idiv import IdivFuzzer, _inputs

def _bad_fast_idiv(delta):
  def magic(vmax, d):
    m, s = decomp.magicgu(vmax, d)
    return m + delta, s
  g = dict(decomp.fast_idiv.__globals__, magicgu=magic)
  g["fast_idiv"] = f = types.FunctionType(decomp.fast_idiv.__code__, g, "fast_idiv", decomp.fast_idiv.__defaults__)
  return f
BAD = {1: _bad_fast_idiv(1), -1: _bad_fast_idiv(-1)}
# pattern callbacks may not be closures: look the broken copy up in a module global
def _cdiv_plus(ctx, x, d): return BAD[1](ctx, x, d.arg) if d.arg > 0 and (x.vmin >= 0 or x.dtype in dtypes.uints) else None
def _cdiv_minus(ctx, x, d): return BAD[-1](ctx, x, d.arg) if d.arg > 0 and (x.vmin >= 0 or x.dtype in dtypes.uints) else None
CDIV = UPat(Ops.CDIV, src=(UPat.var("x", dtypes.ints), UPat.cvar("d")))
MAGIC_PLUS_ONE, MAGIC_MINUS_ONE = PatternMatcher([(CDIV, _cdiv_plus)]), PatternMatcher([(CDIV, _cdiv_minus)])

def _campaign(fz, cases, seed=0):
  return run_campaign(fz, CampaignConfig(seed=seed, time=None, cases=cases, out=None, max_failures=1))

@pytest.mark.parametrize("rules,index,minimised", [
  (MAGIC_PLUS_ONE, 2, {"mode": "uop", "dtype": "int8", "op": "cdiv", "lo": 127, "hi": 127, "d": 1}),
  (MAGIC_MINUS_ONE, 2, None),
], ids=["magic+1", "magic-1"])
def test_finds_and_minimises_off_by_one_magic(rules, index, minimised):
  rep = _campaign(IdivFuzzer(extra_rules=rules, kernel_rate=0, negative_divisors=False), 2000)
  assert [(r.index, r.failure.cls, r.minimised_failure.cls) for r in rep.failures] == [(index, "mismatch", "mismatch")]
  r = rep.failures[0]
  if minimised is not None: assert r.minimised == minimised
  assert r.minimised != r.case and r.minimised["dtype"] == "int8"

def test_magic_mismatch_message_and_repro(tmp_path):
  fz = IdivFuzzer(extra_rules=MAGIC_PLUS_ONE)
  case = {"mode": "uop", "dtype": "uint8", "op": "cdiv", "lo": 0, "hi": 255, "d": 13}
  f = fz.check(case)
  assert f is not None and f.cls == "mismatch" and f.message.startswith("uint8 x in [0, 255] cdiv 13: at x=64 expected 4, lowered graph gives 5")
  (p:=tmp_path / "repro.py").write_text(fz.repro(case))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True)
  assert r.returncode == 0 and "MISMATCH" not in r.stdout  # stock tinygrad's magic numbers are right

def test_stock_lowering_is_exact_on_full_8_and_16_bit_ranges():
  fz = IdivFuzzer()
  for dt in ("uint8", "int8", "uint16", "int16"):
    for d in (3, 7, 10, 255, 641):
      for op in ("cdiv", "cmod", "floordiv", "floormod"):
        hi = {"uint8": 255, "int8": 127, "uint16": 65535, "int16": 32767}[dt]
        assert fz.check({"mode": "uop", "dtype": dt, "op": op, "lo": 0, "hi": hi, "d": min(d, hi)}) is None
  assert fz.stats()["lowered"] > 60

def test_wide_inputs_hold_edges_and_multiples():
  xs = _inputs({"mode": "uop", "dtype": "uint32", "op": "cdiv", "lo": 0, "hi": 2**32 - 1, "d": 641})
  assert {0, 1, 2**32 - 1, 2**32 - 2, 640, 641, 642, 2**31, 2**31 - 1} <= set(xs) and len(xs) > 4000
  assert all(0 <= x < 2**32 for x in xs) and xs == sorted(xs)

def test_kernels_on_cpu_and_mock_amd_end_to_end():
  fz = IdivFuzzer()
  assert fz.check({"mode": "kernel", "src": "uint16", "dst": "int32", "op": "floordiv", "d": 641, "values": [0, 1, 640, 641, 65535]}) is None
  assert fz.check({"mode": "kernel", "src": "arange", "dst": "uint16", "op": "floormod", "d": 13, "n": 300}) is None
  case = {"mode": "kernel", "src": "uint32", "dst": "int64", "op": "floormod", "d": 1000003, "values": [0, 2**32 - 1, 1000002, 3000009]}
  assert fz.check(case) is None
  assert fz.stats() == {"kernel": 3, "kernel-AMD": 3}
  assert IdivFuzzer(kernel_devices=[]).options()["kernel_devices"] == []
  with pytest.raises(ExecutorUnavailable, match=r"kernel_devices=\['NV'\]"): IdivFuzzer(kernel_devices=["NV"])

class _AmdFailure(IdivFuzzer):  # renders the script of an AMD kernel failure for a case that passes
  def find(self, case): return Failure("kernel-mismatch:AMD", "injected"), [0]

def test_amd_kernel_repro_runs_on_the_mock_gpu(tmp_path):
  case = {"mode": "kernel", "src": "uint16", "dst": "int32", "op": "floordiv", "d": 641, "values": [0, 1, 640, 641, 65535]}
  (p:=tmp_path / "repro.py").write_text(src:=_AmdFailure().repro(case))
  assert 'os.environ["DEV"] = "MOCKKFD+AMD"' in src and 'device="AMD"' in src
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0 and r.stdout.strip() == "0 mismatches of 5"

def test_finding_negative_constant_divisor_crashes_lowering():
  # docs/findings.md #2: with DISABLE_FAST_IDIV=0, x // -c on a non-negative signed x hits fast_idiv's `assert d>0`
  fz = IdivFuzzer()
  f = fz.check({"mode": "uop", "dtype": "int32", "op": "floordiv", "lo": 0, "hi": 255, "d": -7})
  assert f is not None and f.cls == "exception:lower:AssertionError" and "Sign should have been taken out of divisor" in f.message
  f = fz.check({"mode": "kernel", "src": "uint8", "dst": "int32", "op": "floordiv", "d": -7, "values": [0, 5, 255]})
  assert f is not None and f.cls == "exception:kernel:AssertionError"

def test_short_deterministic_campaigns():
  rep = _campaign(IdivFuzzer(negative_divisors=False), 600)
  assert rep.cases == 600 and rep.failures == []
  rep = _campaign(IdivFuzzer(kernel_rate=0), 2000)
  assert [(r.index, r.minimised, r.minimised_failure.cls) for r in rep.failures] == \
    [(16, {"mode": "uop", "dtype": "int8", "op": "cdiv", "lo": 1, "hi": 1, "d": -1}, "exception:lower:AssertionError")]

@pytest.mark.slow
def test_long_campaign_two_jobs(tmp_path):
  rep = run_campaign(IdivFuzzer(negative_divisors=False, kernel_rate=0.05), CampaignConfig(seed=100, time=300, jobs=2, out=tmp_path, max_failures=20))
  assert rep.failures == []
