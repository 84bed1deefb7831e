"""Divisors 0 and -1 in the render fuzzer. Integer division by 0, and of the minimum by -1, is undefined in C and LLVM at every
width (tinygrad's PYTHON backend returns 0 and the wrapped quotient; x86 traps with SIGFPE; the AMD GPU returns some value): the
reference leaves those lanes undetermined, compares every other lane, and accepts a SIGFPE of a kernel that has such a lane."""
import pytest
from mockgpu.tinygrad.fuzz import render_ir as ir
from mockgpu.tinygrad.fuzz.render import RenderFuzzer

def _case(dt, a, b, op="CDIV", const=None):
  ins = [{"dtype": dt, "bits": [ir.to_bits(v, dt) for v in a]}]
  if const is None: ins.append({"dtype": dt, "bits": [ir.to_bits(v, dt) for v in b]}); nodes = [["in", dt, 0], ["in", dt, 1]]
  else: nodes = [["in", dt, 0], ["const", dt, ir.to_bits(const, dt)]]
  return {"n": len(a), "axis": "LOOP", "inputs": ins, "nodes": nodes + [[op, dt, 0, 1]], "outs": [2]}

@pytest.mark.parametrize("dt,op,a,b,want", [
  ("int32", "CDIV", [7, -7, 5], [0, 2, -1], [None, -3, -5]),
  ("int32", "CMOD", [7, -7, -2**31], [0, 2, -1], [None, -1, None]),
  ("int8", "CDIV", [-128, 127, -128], [-1, -1, 3], [None, -127, -42]),
  ("uint32", "CDIV", [7, 2**32 - 1, 9], [0, 2**32 - 1, 2**32 - 1], [None, 1, 0]),   # unsigned -1 is the maximum: defined
  ("uint64", "CMOD", [5, 6, 7], [0, 0, 4], [None, None, 3]),
])
def test_reference_leaves_undefined_divisions_undetermined(dt, op, a, b, want):
  ub: set = set()
  assert ir.evaluate(_case(dt, a, b, op), ub=ub) == [want] and ub == ({"division"} if None in want else set())

@pytest.mark.parametrize("dt,a,b", [("int32", [7, 12], [0, 5]), ("int64", [-2**63, 12], [-1, 5]), ("uint32", [7, 12], [0, 5]),
                                    ("int8", [-128, 12], [-1, 5]), ("int16", [3, 12], [0, 5])])
def test_undefined_division_lanes_do_not_fail_any_executor(dt, a, b):
  fz = RenderFuzzer(executors=["PYTHON", "CLANG", "LLVM", "X86", "AMD"])
  assert fz.check(_case(dt, a, b)) is None and fz.check(_case(dt, a, None, const=b[0])) is None
  assert fz.stats()["runs"] == 10 and fz.stats().get("division_traps", 0) >= 1  # x86 traps on the input divisor at least

def test_defined_lanes_are_still_compared():
  from tinygrad.helpers import Target
  from tinygrad.uop.ops import Ops
  from tinygrad.renderer.cstyle import ClangRenderer
  from mockgpu.tinygrad.fuzz.kexec import cpu_executor
  class ModOffByOne(ClangRenderer):  # the injected bug: CMOD results are one too high
    code_for_op = {**ClangRenderer.code_for_op, Ops.CMOD: lambda a, b, dtype: f"(({a}%{b})+1)"}
  from tinygrad.device import Device
  ex = cpu_executor("CLANG-MOD", renderer=lambda: ModOffByOne(Target("CPU", "CLANG", Device["CPU"].arch)))
  # lane 0 divides the minimum by -1 (undetermined; clang's code does not trap on the constant -1), lane 1 is 12 % -1 = 0
  f = RenderFuzzer(executors=["PYTHON"], extra=[ex]).check(_case("int32", [-2**31, 12], None, op="CMOD", const=-1))
  assert f is not None and f.message == "CLANG-MOD out0[1] (int32) = 1, reference 0"

def test_finding_f20_narrowing_cast_range_turns_cdiv_into_a_shift():
  # campaign seed 13 case 100: uint32 205 -> int8 is -51 and -51 cdiv 16 is -3; tinygrad gives CAST(int8, uint32) the range
  # [0, 127], so the division becomes a shift (-51 >> 4 = -4) on every backend
  from tinygrad.dtype import dtypes
  from tinygrad.uop.ops import UOp
  v = UOp.variable("x", 0, 2**32 - 1, dtypes.uint32).cast(dtypes.int8)
  assert (v.vmin, v.vmax) == (0, 127)
  case = {"n": 2, "axis": "LOOP", "inputs": [{"dtype": "uint32", "bits": [1375118029, 205]}],
          "nodes": [["in", "uint32", 0], ["CAST", "int8", 0], ["const", "int8", 16], ["CDIV", "int8", 1, 2]], "outs": [3]}
  assert ir.evaluate(case) == [[-3, -3]]
  f = RenderFuzzer(executors=["PYTHON"]).check(case)
  assert f is not None and f.message == "PYTHON out0[0] (int8) = -4, reference -3"
