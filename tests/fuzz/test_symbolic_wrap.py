"""Overflow-aware symbolic fuzzing: the reference semantics of every integer dtype (wrap-around, truncating and floor division,
shifts, casts; signed overflow undefined), an injected rule that is right only without overflow found and minimised, and the
real tinygrad 0.14.0 findings it uncovers (docs/findings.md), pinned at their minimised cases."""
import os, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop.ops import UPat, PatternMatcher, UOp
from tinygrad.dtype import dtypes
from mockgpu.tinygrad.fuzz.core import CampaignConfig, case_rng, run_campaign
from mockgpu.tinygrad.fuzz.symbolic import SymbolicFuzzer, build, wrap_aware_bounds
from mockgpu.tinygrad.fuzz.uopeval import eval_points, eval_exact
from mockgpu.tinygrad.fuzz import symtree

def _ref(dtype, expr, **env): return symtree.ref_exact({"dtype": dtype, "vars": [], "expr": expr}, env)

@pytest.mark.parametrize("dtype,expr,env,want,flags", [
  ("uint8", ["add", ["v", 0], ["c", 100]], {"v0": 200}, 44, {"wrap"}),
  ("uint8", ["sub", ["c", 0], ["c", 1]], {}, 255, {"wrap"}),
  ("uint16", ["neg", ["v", 0]], {"v0": 1}, 65535, {"wrap"}),
  ("uint32", ["mul", ["v", 0], ["v", 0]], {"v0": 65536}, 0, {"wrap"}),
  ("uint64", ["mul", ["v", 0], ["c", 2]], {"v0": 2**64 - 1}, 2**64 - 2, {"wrap"}),
  ("uint64", ["shl", ["c", 3], ["c", 63]], {}, 2**63, {"wrap"}),
  ("int8", ["add", ["v", 0], ["c", 1]], {"v0": 127}, -128, {"wrap", "signed-overflow"}),
  ("int16", ["mul", ["v", 0], ["c", 2]], {"v0": -16384}, -32768, set()),
  ("int32", ["shl", ["c", 1], ["c", 31]], {}, -2**31, {"wrap", "signed-overflow"}),
  ("int64", ["div", ["v", 0], ["c", -1]], {"v0": -2**63}, -2**63, {"wrap", "signed-overflow"}),
  ("int64", ["cmod", ["v", 0], ["c", -1]], {"v0": -2**63}, 0, {"wrap", "signed-overflow"}),  # INT_MIN % -1 is undefined in C
  ("int32", ["div", ["c", -7], ["c", 2]], {}, -4, set()),    # floor (FLOORDIV)
  ("int32", ["mod", ["c", -7], ["c", 2]], {}, 1, set()),     # floor (FLOORMOD)
  ("int32", ["cdiv", ["c", -7], ["c", 2]], {}, -3, set()),   # truncating (CDIV)
  ("int32", ["cmod", ["c", -7], ["c", 2]], {}, -1, set()),   # truncating (CMOD)
  ("int8", ["cdiv", ["c", -128], ["c", 3]], {}, -42, set()),
  ("int8", ["shr", ["c", -128], ["c", 7]], {}, -1, set()),   # arithmetic shift for signed
  ("uint8", ["shr", ["c", 255], ["c", 7]], {}, 1, set()),    # logical for unsigned
  ("int32", ["cast", "int8", ["v", 0]], {"v0": 200}, -56, {"cast-wrap"}),
  ("int32", ["cast", "uint16", ["v", 0]], {"v0": -1}, 65535, {"cast-wrap"}),
  ("int32", ["cast", "bool", ["v", 0]], {"v0": 256}, True, set()),
  ("uint8", ["add", ["cast", "uint8", ["c", True]], ["v", 0]], {"v0": 255}, 0, {"wrap"}),
  ("weakint", ["add", ["v", 0], ["c", 2**40]], {"v0": 2**40}, 2**41, set()),  # index math never wraps
])
def test_reference_semantics_exact(dtype, expr, env, want, flags):
  assert _ref(dtype, expr, **env) == (want, flags)

def test_vectorised_reference_matches_exact_on_generated_cases():
  # ref_points (numpy, used on every point of a box) and ref_exact (Python ints, used to confirm) agree on values and on the
  # wrap / signed-overflow masks, for every dtype including the 64-bit ones
  fz, seen = SymbolicFuzzer(), set()
  for i in range(300):
    case = fz.generate(case_rng(3, i))
    env = fz._points(case, exhaustive=symtree.domain_size(case) <= 64)  # pylint: disable=protected-access
    vals, wrap, sover = symtree.ref_points(case, env)
    for j in range(0, len(vals), max(1, len(vals) // 16)):
      want, flags = symtree.ref_exact(case, {k: int(v[j]) for k, v in env.items()})
      assert (vals[j] == want, wrap[j], sover[j]) == (True, "wrap" in flags, "signed-overflow" in flags), (case, j)
    seen.add(case["dtype"])
  assert seen == {"weakint", *symtree.INT_DTYPES}

def test_uop_evaluator_truncating_division_at_the_dtype_minimum():
  # numpy's abs(-128) is -128 in int8: the truncating division must not go through it
  x = UOp.variable("x", -128, -128, dtype=dtypes.int8)
  u = build({"dtype": "int8", "vars": [[-128, -128]], "expr": ["cdiv", ["v", 0], ["c", 3]]})[0]
  assert eval_points(u, {"x": np.array([-128]), "v0": np.array([-128])})[0][u].tolist() == [-42] and x.vmin == -128
  assert eval_exact(u, {"v0": -128})[u] == -42

# (x + c) // d -> x // d + c // d when d divides c: right for unbounded integers, wrong once x + c wraps
ADD_DIV_WRAP_ONLY = PatternMatcher([((UPat.var("x") + UPat.cvar("c")) // UPat.cvar("d"),
                                     lambda x, c, d: x // d + c.arg // d.arg if d.arg > 0 and c.arg % d.arg == 0 else None)])
UINT8_ADD_DIV = {"case_dtypes": ["uint8"], "ops": ["add", "div", "max"], "casts": False, "wrap_bounds": True}

@pytest.mark.slow   # ~10 s; test_symbolic.py's injected rules cover finding and minimising by default
def test_finds_and_minimises_injected_wrap_only_rule():
  rep = run_campaign(SymbolicFuzzer(extra_rules=ADD_DIV_WRAP_ONLY, **UINT8_ADD_DIV),
                     CampaignConfig(seed=0, time=None, cases=3000, out=None, max_failures=1))
  want = {"dtype": "uint8", "vars": [[254, 254]], "expr": ["div", ["add", ["c", 1], ["add", ["v", 0], ["c", 1]]], ["c", 2]]}
  assert [(r.index, r.minimised, r.minimised_failure.cls) for r in rep.failures] == [(1217, want, "wrap-mismatch")]
  assert rep.failures[0].minimised_failure.message.startswith("at v0=254: expected 0, simplified graph gives 128")
  # the stock rules get this case right, and the same campaign without the injected rule runs clean up to that index
  assert SymbolicFuzzer(**UINT8_ADD_DIV).check(want) is None
  assert run_campaign(SymbolicFuzzer(**UINT8_ADD_DIV), CampaignConfig(seed=0, time=None, cases=1218, out=None)).failures == []

def test_signed_overflow_is_undefined_unless_asked():
  # int8 127 + 1: undefined in C and poison in LLVM (add nsw), so a rule may assume it does not happen
  case = {"dtype": "int8", "vars": [[127, 127]], "expr": ["lt", ["add", ["v", 0], ["c", 1]], ["c", 0]]}
  assert SymbolicFuzzer().check(case) is None
  f = SymbolicFuzzer(signed_wrap=True).check(case)
  assert f is not None and f.cls == "wrap-mismatch" and f.message.startswith("at v0=127: expected True, simplified graph gives False")

def test_wrap_aware_bounds_leave_stock_bounds_untouched():
  x = UOp.variable("x", 0, 255, dtype=dtypes.uint8)
  s, c = x + 1, x.cast(dtypes.int8)
  assert (s.vmin, s.vmax, c.vmin, c.vmax) == (1, 256, 0, 127)
  with wrap_aware_bounds(): assert (s.vmin, s.vmax, c.vmin, c.vmax) == (0, 255, -128, 127)
  assert (s.vmin, s.vmax, c.vmin, c.vmax) == (1, 256, 0, 127)

# *** real findings in tinygrad 0.14.0 (docs/findings.md), as the fuzzer minimised them ***

@pytest.mark.parametrize("case,cls,msg", [
  # a narrowing CAST to a signed dtype clamps its bounds instead of covering the wrapped values
  ({"dtype": "weakint", "vars": [], "expr": ["cast", "int8", ["c", 128, "uint64"]]}, "cast-bounds",
   "at : node CAST (char)(128) has vmin=128 vmax=127 but takes -128"),  # even an empty range
  ({"dtype": "int32", "vars": [[-2147483648, -2147483648]], "expr": ["cast", "bool", ["cast", "int16", ["v", 0]]]}, "cast-mismatch",
   "at v0=-2147483648: expected False, simplified graph gives True"),
  # folding CAST(CONST) keeps the untruncated value, later folds use it (finding F16's cause)
  ({"dtype": "uint32", "vars": [], "expr": ["mod", ["cast", "uint32", ["c", 4294967296, "int64"]], ["c", 3]]}, "cast-mismatch",
   "at : expected 0, simplified graph gives 1"),
  # -x of an unsigned constant folds to a weakint constant
  ({"dtype": "uint32", "vars": [], "expr": ["cast", "uint64", ["neg", ["c", 1]]]}, "unwrapped-const",
   "at : expected 4294967295, simplified graph gives 18446744073709551615"),
  ({"dtype": "uint32", "vars": [], "expr": ["neg", ["c", 1]]}, "dtype-changed", "at : expected 4294967295, simplified graph gives -1"),
  # an unsigned constant folded to a negative value, then used by max / cmod / // as if it were signed
  ({"dtype": "uint8", "vars": [[0, 0]], "expr": ["max", ["v", 0], ["neg", ["c", 1]]]}, "wrap-mismatch",
   "at v0=0: expected 255, simplified graph gives 0"),
  ({"dtype": "uint64", "vars": [], "expr": ["cmod", ["sub", ["c", 0], ["c", 3]], ["c", 3]]}, "wrap-mismatch",
   "at : expected 1, simplified graph gives 0"),
  ({"dtype": "uint32", "vars": [], "expr": ["div", ["neg", ["c", 1]], ["c", 2]]}, "unwrapped-const",
   "at : expected 2147483647, simplified graph gives 4294967295"),
  # c0 + x < c1 -> x < c1 - c0 and the bounds of x + c are exact-integer: both wrong once x + c wraps
  ({"dtype": "uint8", "vars": [[255, 255]], "expr": ["lt", ["add", ["c", 1], ["v", 0]], ["c", 1]]}, "wrap-mismatch",
   "at v0=255: expected True, simplified graph gives False"),
])
def test_finding_wrap_around_in_symbolic(case, cls, msg):
  f = SymbolicFuzzer().check(case)
  assert f is not None and (f.cls, f.message.split("\n")[0]) == (cls, msg)

def test_wrap_mismatch_caused_by_bounds_is_its_own_class():
  # stock rules fold (4 + v0) // 2 from exact-integer bounds (v0 = 65532: 65536 // 2); with wrap-aware bounds they get 0 right
  case = {"dtype": "uint16", "vars": [[65532, 65532]], "expr": ["div", ["add", ["c", 4], ["v", 0]], ["c", 2]]}
  f = SymbolicFuzzer().check(case)
  assert f is not None and (f.cls, f.message.split("\n")[0]) == ("wrap-bounds", "at v0=65532: expected 0, simplified graph gives 32768")
  assert SymbolicFuzzer(wrap_bounds=True).check(case) is None
  # the injected rule stays wrong with wrap-aware bounds: a rule bug, not the bounds
  want = {"dtype": "uint8", "vars": [[254, 254]], "expr": ["div", ["add", ["c", 1], ["add", ["v", 0], ["c", 1]]], ["c", 2]]}
  assert SymbolicFuzzer(extra_rules=ADD_DIV_WRAP_ONLY).check(want).cls == "wrap-mismatch"

def test_finding_narrowing_cast_compare_through_tensor_api():
  # the cast bounds finding end to end: uint8 200 -> int8 is -56, yet `< 0` is folded to False (numpy: True)
  a = Tensor(np.array([200, 5], np.uint8), device="PYTHON")
  assert a.cast(dtypes.int8).tolist() == [-56, 5]
  assert (a.cast(dtypes.int8) < 0).tolist() == [False, False]  # numpy: [True, False]

def test_default_campaign_meets_only_known_findings():
  from mockgpu.tinygrad.fuzz import known
  rep = run_campaign(SymbolicFuzzer(), CampaignConfig(seed=7, time=None, cases=150, out=None, max_failures=50))
  assert {r.failure.cls for r in rep.failures} <= {"cast-bounds", "cast-mismatch", "unwrapped-const", "dtype-changed", "wrap-mismatch", "wrap-bounds"}
  assert rep.failures and rep.cases == 150
  assert {known.classify("symbolic", r.failure, r.case) for r in rep.failures} <= {"4", "6", "7"}

# *** index expressions under a valid gate (weakint): simplify_valid, uop_given_valid and the codegen rewrite `sym` ***

GATED = {"case_dtypes": ["weakint"], "casts": False, "gate_rate": 1.0}

def test_gated_reference_exact():
  case = {"dtype": "weakint", "vars": [[0, 15]], "expr": ["add", ["mod", ["v", 0], ["c", 4]], ["div", ["v", 0], ["c", 8]]],
          "gate": ["band", ["lt", ["v", 0], ["c", 8]], ["not", ["lt", ["v", 0], ["c", 2]]]]}
  env = {"v0": np.arange(16)}
  assert symtree.ref_points(case, env, case["gate"])[0].tolist() == [2 <= v < 8 for v in range(16)]
  assert symtree.ref_points(case, env)[0].tolist() == [v % 4 + v // 8 for v in range(16)]
  fz = SymbolicFuzzer(**GATED)
  assert fz.check(case) is None and fz.stats() == {"gated-brute": 1}  # under the gate, tinygrad drops `v0 // 8` (always 0): right

def test_finds_and_minimises_injected_valid_parsing_bug(monkeypatch):
  import tinygrad.uop.symbolic as tsym
  orig = tsym.parse_valid
  def off_by_one(v):  # `X < c` read as `X <= c-2`: uop_given_valid then assumes a range one value too small
    r = orig(v)
    return (r[0], True, r[2] - 1) if r is not None and r[1] else r
  monkeypatch.setattr(tsym, "parse_valid", off_by_one)
  rep = run_campaign(SymbolicFuzzer(**GATED), CampaignConfig(seed=0, time=None, cases=2000, out=None, max_failures=1))
  want = {"dtype": "weakint", "vars": [[-1, 0]], "expr": ["v", 0], "gate": ["lt", ["v", 0], ["c", 1]]}
  assert [(r.index, r.minimised, r.minimised_failure.cls) for r in rep.failures] == [(73, want, "valid-mismatch")]
  assert rep.failures[0].minimised_failure.message.startswith("uop_given_valid: at v0=0 (valid holds) expected 0, got -1")
  monkeypatch.setattr(tsym, "parse_valid", orig)
  assert SymbolicFuzzer(**GATED).check(want) is None

def test_finding_sym_turns_integer_and_into_a_product():
  # pm_simplify_valid runs simplify_valid on every AND, also integer bitwise ones, and rebuilds it with UOp.uprod (a product)
  from tinygrad.uop.ops import graph_rewrite
  from tinygrad.uop.symbolic import sym
  a, b = UOp.variable("a", -1, -1), UOp.variable("b", 1, 1)
  assert graph_rewrite(a & (b & a), sym).render() == "(a*b)"
  case = {"dtype": "weakint", "vars": [[-1, -1], [1, 1]], "expr": ["and", ["v", 0], ["and", ["v", 1], ["v", 0]]], "gate": ["c", True]}
  f = SymbolicFuzzer().check(case)
  assert f is not None and f.cls == "valid-mismatch" and f.message.startswith("sym: at v0=-1, v1=1 (valid holds) expected 1, got -1")

def test_finding_sym_integer_and_through_tensor_api():
  src = "from tinygrad import Tensor\na = Tensor.arange(8)\nprint(((a & 3) & a).tolist())"
  r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env={**os.environ, "DEV": "PYTHON"}, timeout=300)
  assert r.stdout.strip() == "[0, 3, 6, 9, 12, 15, 18, 21]", r.stderr[-2000:]  # right: [0, 1, 2, 3, 0, 1, 2, 3]

@pytest.mark.parametrize("case", [
  {"dtype": "uint8", "vars": [[255, 255]], "expr": ["lt", ["add", ["c", 1], ["v", 0]], ["c", 1]]},
  {"dtype": "weakint", "vars": [[-1, -1], [1, 1]], "expr": ["and", ["v", 0], ["and", ["v", 1], ["v", 0]]], "gate": ["c", True]},
  {"dtype": "weakint", "vars": [[0, 15]], "expr": ["mod", ["v", 0], ["c", 4]], "gate": ["lt", ["v", 0], ["c", 8]]},
], ids=["wrap", "gated-finding", "gated-passing"])
def test_repro_scripts_of_new_kinds_run_standalone(tmp_path, case):
  fz = SymbolicFuzzer()
  (p:=tmp_path / "repro.py").write_text(fz.repro(case))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300)
  assert r.returncode == (0 if fz.check(case) is None else 1), r.stdout + r.stderr

def test_z3_encodes_only_mathematical_integers():
  from mockgpu.tinygrad.fuzz.z3oracle import Z3Unsupported, uop_to_z3
  import z3
  x = UOp.variable("x", 0, 300, dtype=dtypes.weakint)
  assert str(uop_to_z3(x.cast(dtypes.weakint) + 1, {"x": z3.Int("x")})) == "x + 1"
  for u in (x.cast(dtypes.uint8), UOp.variable("y", 0, 5, dtype=dtypes.int32) + 1):
    with pytest.raises(Z3Unsupported): uop_to_z3(u, {"x": z3.Int("x"), "y": z3.Int("y")})

def test_finding_zero_numerator_under_a_valid():
  # docs/findings.md #1 through the valid path: uop_given_valid (and codegen's sym) give the divisor a range from the valid,
  # and fold_divmod_general's gcd still divides by the zero numerator's factor
  case = {"dtype": "weakint", "vars": [[-1, -1]], "expr": ["div", ["c", 0], ["v", 0]], "gate": ["lt", ["c", 0], ["v", 0]]}
  f = SymbolicFuzzer().check(case)
  assert f is not None and (f.cls, f.message) == ("exception:valid:ZeroDivisionError",
                                                  "simplifying (0//v0) under valid (0<v0): integer modulo by zero")

def test_z3_proves_gated_rewrites_on_a_large_box(monkeypatch):
  case = {"dtype": "weakint", "vars": [[0, 200000]], "expr": ["div", ["v", 0], ["c", 99999]], "gate": ["lt", ["v", 0], ["c", 100000]]}
  fz = SymbolicFuzzer()
  assert fz.check(case) is None and fz.stats() == {"gated-z3-unsat": 1}
  import tinygrad.uop.symbolic as tsym
  orig = tsym.parse_valid
  monkeypatch.setattr(tsym, "parse_valid", lambda v: (r[0], True, r[2] - 1) if (r:=orig(v)) is not None and r[1] else r)
  fz = SymbolicFuzzer()
  f = fz.check(case)
  assert f is not None and f.cls == "valid-mismatch" and f.message.startswith("uop_given_valid: at v0=99999 (valid holds) expected 1, got 0")
  assert fz.stats() == {"gated-z3-sat": 1}

def test_z3_bit_vectors_prove_and_refute_fixed_width_cases():
  fz = SymbolicFuzzer(bv_timeout_ms=2000)
  # uint32 over the whole range: (x + 3) // 3 stays as it is (right), (1 + x) < 1 is folded to False (wrong at x = 2**32-1)
  assert fz.check({"dtype": "uint32", "vars": [[0, 2**32 - 1]], "expr": ["div", ["add", ["v", 0], ["c", 3]], ["c", 3]]}) is None
  f = fz.check({"dtype": "uint32", "vars": [[0, 2**32 - 1]], "expr": ["lt", ["add", ["c", 1], ["v", 0]], ["c", 1]]})
  assert f is not None and f.cls == "wrap-mismatch" and f.message.startswith("at v0=4294967295: expected True, simplified graph gives False")
  # int64: (x*4)//4 -> x is right wherever x*4 does not overflow (the rest is undefined)
  assert fz.check({"dtype": "int64", "vars": [[-2**63, 2**63 - 1]], "expr": ["div", ["mul", ["v", 0], ["c", 4]], ["c", 4]]}) is None
  assert {k: v for k, v in fz.stats().items() if k.startswith("bv-")} == {"bv-unsat": 2, "bv-sat": 1}
