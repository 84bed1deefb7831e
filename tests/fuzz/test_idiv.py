"""The idiv fuzzer finds and canonically minimises wrong magic numbers (a test-only rule running a copy of tinygrad's fast_idiv
with a wrong `magicgu`, or tinygrad's fast_idiv monkeypatched in-process for 64-bit dtypes), proves and refutes with z3,
checks whole expressions, lowers for every renderer, runs kernels end to end and pins docs/findings.md #2."""
import subprocess, sys, types
import numpy as np
import pytest
from tinygrad.uop.ops import UPat, PatternMatcher, Ops
from tinygrad.dtype import dtypes
from tinygrad.codegen.decomp import op as decomp
from mockgpu.tinygrad.fuzz.core import CampaignConfig, Failure, run_campaign, minimise
from mockgpu.tinygrad.fuzz.errors import ExecutorUnavailable
from mockgpu.tinygrad.fuzz.idiv import IdivFuzzer, lower, points, RENDERERS
from mockgpu.tinygrad.fuzz import idivexpr as ix
from mockgpu.tinygrad.fuzz.idivz3 import prove

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

STOCK_MAGICGU = decomp.magicgu
def _magic_plus_one_from(limit):
  def magicgu(vmax, d):
    m, s = STOCK_MAGICGU(vmax, d)
    return (m + 1, s) if vmax >= limit else (m, s)
  return magicgu

@pytest.fixture
def int64_magic_plus_one(monkeypatch):
  # tinygrad's magic-number computation patched in this process (fast_idiv looks magicgu up at call time): ranges reaching past
  # 2**32, which only 64-bit dtypes hold, get m+1
  monkeypatch.setattr(decomp, "magicgu", _magic_plus_one_from(2**32))

def _campaign(fz, cases, seed=0, **kw):
  return run_campaign(fz, CampaignConfig(seed=seed, time=None, cases=cases, out=None, max_failures=1, **kw))

UINT64_CDIV_1 = {"mode": "uop", "ren": "CLANG", "dtype": "uint64", "box": [[2**32, 2**32]], "expr": ["cdiv", ["x", 0], 1]}

def test_injected_int64_bug_found_and_minimised_canonically(int64_magic_plus_one):
  # known finding 2 is skipped the way a campaign skips known findings
  rep = _campaign(IdivFuzzer(kernel_devices=["CLANG"]), 40, seed=7, ignore=("exception:lower:AssertionError", "exception:kernel:AssertionError"))
  assert [(r.index, r.failure.cls, r.minimised) for r in rep.failures] == [(13, "mismatch", UINT64_CDIV_1)]
  assert rep.failures[0].case == {"mode": "uop", "ren": "LLVM", "dtype": "uint64", "box": [[178494125869389227, 576460752303423487]],
                                  "expr": ["cdiv", ["x", 0], 1]} and rep.failures[0].shrink_checks < 300
  assert rep.failures[0].minimised_failure.message.startswith(
    "CLANG uint64 x0 cdiv 1 with x0 in [4294967296, 4294967296]: at x0=4294967296 expected 4294967296, lowered graph gives 8589934592")
  # other failing starts (nested expressions on other renderers, a signed two-variable sum) minimise to the same case
  fz = IdivFuzzer()
  for start in ({"mode": "uop", "ren": "NV", "dtype": "uint64", "box": [[0, 2**50]], "expr": ["floormod", ["cdiv", ["x", 0], 1], 1000]},
                {"mode": "uop", "ren": "X86", "dtype": "int64", "box": [[2**33, 2**40], [0, 100]], "expr": ["cdiv", ["add", ["x", 0], ["x", 1]], 1]},
                {"mode": "uop", "ren": "AMD", "dtype": "int64", "box": [[0, 2**62]], "expr": ["cmod", ["mul", ["x", 0], ["c", 1]], 1]}):
    f = fz.check(start)
    assert f is not None and f.cls == "mismatch"
    case, _, n = minimise(fz, start, f)
    assert case == UINT64_CDIV_1 and n < 300

def test_int64_stays_int64_only_past_int32():
  # tinygrad narrows an int64 value that fits int32 before lowering (so a 64-bit-only bug needs a range past int32)
  assert lower(ix.to_uop(["cdiv", ["x", 0], 1], [[5, 5]], dtypes.int64)).render(simplify=False) == "(long)((int)(x0))"
  assert lower(ix.to_uop(["cdiv", ["x", 0], 1], [[2**31, 2**31]], dtypes.int64)).dtype == dtypes.int64

@pytest.mark.parametrize("rules,minimised", [
  (MAGIC_PLUS_ONE, {"mode": "uop", "ren": "CLANG", "dtype": "uint8", "box": [[1, 1]], "expr": ["cdiv", ["x", 0], 1]}),
  (MAGIC_MINUS_ONE, {"mode": "uop", "ren": "CLANG", "dtype": "uint8", "box": [[1, 1]], "expr": ["cdiv", ["x", 0], 1]}),
], ids=["magic+1", "magic-1"])
def test_finds_and_minimises_off_by_one_magic(rules, minimised):
  rep = _campaign(IdivFuzzer(extra_rules=rules, kernel_rate=0, negative_divisors=False), 200)
  assert [(r.failure.cls, r.minimised_failure.cls, r.minimised) for r in rep.failures] == [("mismatch", "mismatch", minimised)]

def test_z3_proves_correct_32_bit_and_refutes_injected(monkeypatch):
  case = {"mode": "uop", "ren": "CLANG", "dtype": "uint32", "box": [[0, 2**32 - 1]], "expr": ["cdiv", ["x", 0], 3]}
  low = lower(ix.to_uop(case["expr"], case["box"], dtypes.uint32))
  assert low.render(simplify=False) == "(uint)(((ulong)(x0)*2863311531>>33))"  # the widened magic multiply, not a native division
  assert prove(low, case["expr"], case["box"], dtypes.uint32) == ("proved", None)
  expr2 = ["floordiv", ["add", ["mul", ["x", 0], ["c", 3]], ["x", 1]], 10]  # a whole expression, two variables
  box2 = [[0, 2**28], [0, 2**20]]
  assert prove(lower(ix.to_uop(expr2, box2, dtypes.int32), "NV"), expr2, box2, dtypes.int32) == ("proved", None)
  fz = IdivFuzzer()
  assert fz.check(case) is None and fz.stats()["z3-proved"] == 1
  monkeypatch.setattr(decomp, "magicgu", _magic_plus_one_from(0))
  bad = lower(ix.to_uop(case["expr"], case["box"], dtypes.uint32))
  verdict, pt = prove(bad, case["expr"], case["box"], dtypes.uint32)
  from mockgpu.tinygrad.fuzz.uopeval import eval_exact
  assert verdict == "refuted" and eval_exact(bad, {"x0": pt[0]})[bad] != pt[0] // 3
  f = fz.check(case)
  assert f is not None and f.cls == "mismatch" and fz.stats()["z3-refuted"] == 1

def test_z3_unknown_is_never_a_pass():
  fz = IdivFuzzer(z3_timeout_ms=1)
  case = {"mode": "uop", "ren": "CLANG", "dtype": "int32", "box": [[0, 2**20], [0, 2**20], [0, 7]],
          "expr": ["cmod", ["add", ["floordiv", ["mul", ["x", 0], ["c", 37]], 13], ["sub", ["x", 1], ["x", 2]]], 1000003]}
  assert fz.check(case) is None
  assert fz.stats().get("z3-proved", 0) == 0 and fz.stats()["z3-unknown"] == 1  # sampled instead, and counted as unknown

def test_expressions_exact_and_lowered_for_every_renderer():
  dt, expr, box = dtypes.int16, ["cmod", ["sub", ["mul", ["x", 0], ["c", 3]], ["floordiv", ["x", 1], -7]], 10], [[-50, 50], [-20, 20]]
  assert ix.valid(expr, box, dt) and ix.render(expr) == "((x0*3)-(x1//-7)) cmod 10"
  pts = points({"dtype": "int16", "box": box, "expr": expr})
  assert len(pts) == 101 * 41
  xs = [np.array([p[i] for p in pts], dtype=np.int16) for i in range(2)]
  assert ix.evaluate_np(expr, xs).tolist() == [ix.evaluate(expr, list(p)) for p in pts]
  assert ix.evaluate(expr, [-6, 4]) == -7  # -18 - (4 // -7) = -18 - (-1) = -17; cmod 10 keeps the dividend's sign
  fz = IdivFuzzer(negative_divisors=False)
  for ren in RENDERERS:
    assert fz.check({"mode": "uop", "ren": ren, "dtype": "int16", "box": [[0, 30000], [0, 7]],
                     "expr": ["floordiv", ["add", ["x", 0], ["x", 1]], 7]}) is None
  assert not ix.valid(["mul", ["x", 0], ["c", 3]], [[0, 2**31]], dtypes.int32)  # would wrap: never generated, never a case

def test_generation_never_raises_and_uop_cases_fit():
  # seed 21 case 59 once drew a uint8 kernel source for values in [4435, ...] (generate raised): sources now overlap the box
  from mockgpu.tinygrad.fuzz.core import case_rng
  from mockgpu.tinygrad.fuzz.idiv import DTYPES
  fz = IdivFuzzer(kernel_rate=0.5)
  cases = [fz.generate(case_rng(21, i)) for i in range(1500)]
  assert all(ix.valid(c["expr"], c["box"], DTYPES[c["dtype"]]) for c in cases if c["mode"] == "uop")
  assert 600 < sum(c["mode"] == "kernel" for c in cases) < 900 and any("n" in c for c in cases)

def test_shrink_steps_bisect_and_prefer_simple_values():
  assert ix.toward(1000) == [0, 500, 750, 875, 938, 969, 985, 993, 997, 999]
  assert ix.toward(-9, 0) == [0, -5, -7, -8] and ix.toward(5, 5) == []
  assert ix.simple_below(40, 0, 100, 7) == list(range(19)) + [20, 21, 27, 28, 30, 31, 32, 33, 34, 35]
  assert ix.compact(["cdiv", ["add", ["x", 2], ["x", 2]], 3], [[0, 1], [0, 2], [5, 6]]) == (["cdiv", ["add", ["x", 0], ["x", 0]], 3], [[5, 6]])

def test_finding_negative_constant_divisor_crashes_lowering():
  # docs/findings.md #2: with DISABLE_FAST_IDIV=0, x // -c on a non-negative signed x hits fast_idiv's `assert d>0`
  fz = IdivFuzzer()
  for case in ({"mode": "uop", "ren": "CLANG", "dtype": "int32", "box": [[0, 255]], "expr": ["floordiv", ["x", 0], -7]},
               {"mode": "uop", "ren": "NV", "dtype": "int64", "box": [[0, 9], [1, 2]], "expr": ["cmod", ["mul", ["x", 0], ["x", 1]], -3]}):
    f = fz.check(case)
    assert f is not None and f.cls == "exception:lower:AssertionError"
    assert f.message.startswith("Sign should have been taken out of divisor (lowering ")
  for dev in ("CLANG", "X86", "NV"):
    f = fz.check({"mode": "kernel", "dev": dev, "dtype": "int32", "expr": ["floordiv", ["x", 0], -7], "src": ["uint8"], "values": [[0, 5, 255]]})
    assert f is not None and f.cls == "exception:kernel:AssertionError"
    assert f.message.startswith(f"Sign should have been taken out of divisor (kernel on {dev}: ")
  f = fz.check(start:={"mode": "uop", "ren": "X86", "dtype": "int32", "box": [[0, 2**30]], "expr": ["floormod", ["x", 0], -1000]})
  assert minimise(fz, start, f)[0] == {"mode": "uop", "ren": "CLANG", "dtype": "int8", "box": [[0, 0]], "expr": ["cdiv", ["x", 0], -1]}

def test_finding_x86_int16_arange_division_crashes():
  # docs/findings.md F23: the X86 renderer's kernel for `Tensor.arange(1024, dtype=int16) // 3` crashes (CPU kernels run in a
  # forked child, so the campaign reports it as kernel-fault instead of dying); CLANG and int32 are fine
  fz = IdivFuzzer()
  f = fz.check({"mode": "kernel", "dev": "X86", "dtype": "int16", "expr": ["floordiv", ["x", 0], 3], "n": 1024})
  assert f is not None and f.cls == "kernel-fault"
  assert f.message.startswith("kernel on X86: X86 kernel int16 x0//3 (x0=arange(1024)): the kernel was killed by SIG")
  assert fz.check({"mode": "kernel", "dev": "CLANG", "dtype": "int16", "expr": ["floordiv", ["x", 0], 3], "n": 1024}) is None
  assert fz.check({"mode": "kernel", "dev": "X86", "dtype": "int32", "expr": ["floordiv", ["x", 0], 3], "n": 1024}) is None

def test_kernels_on_cpu_renderers_and_mock_gpus_end_to_end():
  fz = IdivFuzzer()
  for dev in ("CLANG", "LLVM", "X86", "AMD", "NV"):
    assert fz.check({"mode": "kernel", "dev": dev, "dtype": "int32", "expr": ["floordiv", ["x", 0], 641], "src": ["uint16"],
                     "values": [[0, 1, 640, 641, 65535]]}) is None
    assert fz.check({"mode": "kernel", "dev": dev, "dtype": "uint16", "expr": ["floormod", ["add", ["mul", ["x", 0], ["c", 3]], ["c", 5]], 13],
                     "n": 300}) is None
  case = {"mode": "kernel", "dev": "CLANG", "dtype": "int64", "expr": ["cmod", ["sub", ["x", 0], ["x", 1]], 1000003], "src": ["uint32", "uint8"],
          "values": [[0, 2**32 - 1, 1000002, 3000009], [255, 0, 7, 9]]}
  assert fz.check(case) is None
  assert fz.stats() == {"kernel-CLANG": 3, "kernel-LLVM": 2, "kernel-X86": 2, "kernel-AMD": 2, "kernel-NV": 2}
  with pytest.raises(ExecutorUnavailable, match=r"kernel_devices=\['CUDA'\]"): IdivFuzzer(kernel_devices=["CUDA"])

def test_injected_bug_in_cpu_kernels_found_and_repro(monkeypatch, tmp_path):
  monkeypatch.setattr(decomp, "magicgu", _magic_plus_one_from(0))  # every magic number off by one, in this process
  fz = IdivFuzzer()
  start = {"mode": "kernel", "dev": "X86", "dtype": "int32", "expr": ["floordiv", ["add", ["x", 0], ["c", 1234]], 641], "src": ["uint16"],
           "values": [[0, 7, 640, 51968, 65535]]}  # 51968 is the one input the off-by-one magic gets wrong
  f = fz.check(start)
  assert f is not None and f.cls == "kernel-mismatch" and f.message.startswith("X86 kernel int32 (x0+1234)//641 (x0: uint16): at x0=")
  case, _, _ = minimise(fz, start, f, time_limit=600)  # every candidate compiles a kernel: slow on a loaded machine
  assert case == {"mode": "kernel", "dev": "CLANG", "dtype": "uint8", "expr": ["cdiv", ["x", 0], 1], "src": ["uint8"], "values": [[1]]}
  (p:=tmp_path / "repro.py").write_text(fz.repro(case))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0 and r.stdout.strip() == "0 mismatches of 1"  # a fresh process runs stock tinygrad: passes

class _AmdFailure(IdivFuzzer):  # renders the script of an AMD kernel failure for a case that passes
  def find(self, case): return Failure("kernel-mismatch", "injected"), [0]

@pytest.mark.parametrize("dev,env", [("AMD", "MOCKKFD+AMD"), ("NV", "MOCK+NV:PTX")])
def test_gpu_kernel_repro_runs_on_the_mock_gpu(tmp_path, dev, env):
  case = {"mode": "kernel", "dev": dev, "dtype": "int32", "expr": ["floordiv", ["x", 0], 641], "src": ["uint16"],
          "values": [[0, 1, 640, 641, 65535]]}
  (p:=tmp_path / "repro.py").write_text(src:=_AmdFailure().repro(case))
  assert f'os.environ["DEV"] = "{env}"' in src and f'device="{dev}"' in src
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0 and r.stdout.strip() == "0 mismatches of 5"

def test_uop_repro_script(tmp_path):
  fz = IdivFuzzer(extra_rules=MAGIC_PLUS_ONE)
  case = {"mode": "uop", "ren": "LLVM", "dtype": "uint8", "box": [[0, 255]], "expr": ["cdiv", ["x", 0], 13]}
  f = fz.check(case)
  assert f is not None and f.message.startswith("LLVM uint8 x0 cdiv 13 with x0 in [0, 255]: at x0=64 expected 4, lowered graph gives 5")
  (p:=tmp_path / "repro.py").write_text(fz.repro(case))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True)
  assert r.returncode == 0 and "MISMATCH" not in r.stdout and "x=[64]: expected 4, got 4" in r.stdout  # stock tinygrad is right

def test_short_deterministic_campaigns():
  rep = _campaign(IdivFuzzer(negative_divisors=False, kernel_devices=["CLANG", "LLVM", "X86"]), 300)
  assert rep.cases == 300 and rep.failures == []
  rep = _campaign(IdivFuzzer(kernel_rate=0), 300)
  assert [(r.index, r.minimised, r.minimised_failure.cls) for r in rep.failures] == \
    [(0, {"mode": "uop", "ren": "CLANG", "dtype": "int8", "box": [[0, 0]], "expr": ["cdiv", ["x", 0], -1]}, "exception:lower:AssertionError")]

@pytest.mark.slow
def test_long_campaign_two_jobs(tmp_path):
  rep = run_campaign(IdivFuzzer(negative_divisors=False, kernel_rate=0.05), CampaignConfig(seed=100, time=300, jobs=2, out=tmp_path, max_failures=20))
  assert rep.failures == []
