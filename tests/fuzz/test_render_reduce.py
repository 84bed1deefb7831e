"""Reductions, vectors and local memory in the render fuzzer: a case with `red` runs an inner REDUCE loop per lane, `opts`
apply tinygrad Opts (UPCAST/UNROLL: vector code, GROUPTOP: a shared-memory reduction on the GPU); the reference folds the
lanes exactly (integers, MAX) or with the reassociation bound (float ADD), every executor agrees, and the renderers really
emit vectors and local memory for them. Finding F19 (AMD float64 reciprocal of 0) is pinned here."""
import math
import numpy as np
import pytest
from mockgpu.tinygrad.fuzz import render_ir as ir
from mockgpu.tinygrad.fuzz.render import RenderFuzzer
from mockgpu.tinygrad.fuzz.kexec import executor

def _in(dt, vals): return {"dtype": dt, "bits": [ir.to_bits(v, dt) for v in vals]}
ISUM = {"n": 2, "axis": "LOOP", "inputs": [_in("int32", [1, 2, 3, 4, 10, 20, 30, 40])], "nodes": [["in", "int32", 0], ["idx", "int32", 0],
        ["MUL", "int32", 0, 1]], "outs": [2], "red": {"k": 4, "op": "ADD"}}
FMAX = {"n": 2, "axis": "GLOBAL", "inputs": [_in("float32", [0.5, 0.25, 3.0, -1.0, 10, 20, 30, 40])], "nodes": [["in", "float32", 0],
        ["SQRT", "float32", 0]], "outs": [1], "red": {"k": 4, "op": "MAX"}}
BSUM = {"n": 4, "axis": "GLOBAL", "inputs": [_in("bfloat16", [0.5, 0.25, 3.0, -1.0] * 4)], "nodes": [["in", "bfloat16", 0],
        ["MUL", "bfloat16", 0, 0]], "outs": [1], "red": {"k": 4, "op": "ADD"}, "opts": [["UPCAST", 0, 2]]}
GROUP = {"n": 4, "axis": "GLOBAL", "inputs": [_in("int32", list(range(16)))], "nodes": [["in", "int32", 0]], "outs": [0],
         "red": {"k": 4, "op": "ADD"}, "opts": [["GROUPTOP", 0, 2]]}
UNROLL = {**GROUP, "opts": [["UNROLL", 0, 2]]}
VEC = {"n": 8, "axis": "GLOBAL", "inputs": [_in("float32", [0.5 * i for i in range(8)])], "nodes": [["in", "float32", 0], ["EXP2", "float32", 0]],
       "outs": [1], "opts": [["UPCAST", 0, 4]]}

def test_reference_folds():
  assert ir.evaluate(ISUM) == [[0, 100]]  # lane 0: idx 0 times anything; lane 1: 10+20+30+40
  v = ir.evaluate(FMAX)[0]
  assert v[0] is None and v[1] == (float(np.float32(math.sqrt(40))), 2**-21)  # sqrt(-1) is NaN; 1 ulp: MAX undetermined
  # 0.25+0.0625+9+1 = 10.3125 exactly; 4 additions may each round at the magnitude of all terms (ulp of bfloat16 at 20.6: 0.125)
  assert ir.evaluate(BSUM) == [[(10.3125, 0.5)] * 4] and ir.evaluate(GROUP) == [[6, 22, 38, 54]]
  wrap = {"n": 1, "axis": "LOOP", "inputs": [_in("int8", [100, 100])], "nodes": [["in", "int8", 0]], "outs": [0], "red": {"k": 2, "op": "ADD"}}
  assert ir.evaluate(wrap) == [[-56]] and ir.evaluate(wrap, signed_overflow=False) == [[None]]
  # 100 + 100 - 100 ends in range but a partial sum overflows int8 in some order: undefined without wrapping
  zig = {**wrap, "inputs": [_in("int8", [100, 100, -100])], "red": {"k": 3, "op": "ADD"}}
  assert ir.evaluate(zig) == [[100]] and ir.evaluate(zig, signed_overflow=False) == [[None]]

@pytest.mark.parametrize("case,skipped", [(ISUM, {}), (FMAX, {}), (BSUM, {"skipped_dtype": 1}), (GROUP, {"skipped_opts": 3}),
                                          (UNROLL, {}), (VEC, {})])
def test_executors_agree(case, skipped):
  fz = RenderFuzzer(executors=["PYTHON", "CLANG", "LLVM", "X86", "AMD"])
  assert fz.check(case) is None
  assert {k: v for k, v in fz.stats().items() if k.startswith("skipped")} == skipped

def test_opts_make_vectors_and_local_memory():
  arrays = ir.to_arrays(VEC, ["float32"])
  src = executor("CLANG").run(ir.build_ast(VEC), arrays)
  assert "float4" in src and arrays[0].tolist()[::2] == [1.0, 2.0, 4.0, 8.0]
  arrays = ir.to_arrays(GROUP, ["int32"])
  src = executor("AMD").run(ir.build_ast(GROUP), arrays)
  assert "addrspace(3)" in src and "barrier" in src and arrays[0].tolist() == [6, 22, 38, 54]

def test_shrink_drops_opts_and_reduction():
  cands = list(RenderFuzzer(executors=["PYTHON"]).shrink(BSUM))
  assert cands[0] == {k: v for k, v in BSUM.items() if k != "opts"}
  assert cands[1]["inputs"][0]["bits"] == BSUM["inputs"][0]["bits"][::4] and "red" not in cands[1]
  assert cands[2]["red"] == {"k": 2, "op": "ADD"} and len(cands[2]["inputs"][0]["bits"]) == 8

F19 = {"n": 1, "axis": "LOOP", "inputs": [{"dtype": "float64", "bits": [0]}], "nodes": [["in", "float64", 0], ["RECIPROCAL", "float64", 0]],
       "outs": [1]}
def test_finding_f19_amd_float64_reciprocal_of_zero_is_nan():
  f = RenderFuzzer(executors=["PYTHON", "CLANG", "AMD"]).check(F19)
  assert f is not None and (f.cls, f.message) == ("mismatch:AMD", "AMD out0[0] (float64) = nan(nan), reference inf(inf) +- 0")

def test_finding_f22_fp8e4m3_max_reduce_starts_from_nan():
  # campaign seed 13 case 88: a MAX reduction over a loop (16 iterations are not unrolled) starts its fp8e4m3 accumulator at the
  # identity -inf, which fp8e4m3 (no infinities) stores as NaN, and PYTHON's max(NaN, x) stays NaN; fp8e5m2 has -inf and is right
  case = {"n": 1, "axis": "LOOP", "inputs": [_in("fp8e4m3", [1.0] * 16)], "nodes": [["in", "fp8e4m3", 0]], "outs": [0], "red": {"k": 16, "op": "MAX"}}
  f = RenderFuzzer(executors=["PYTHON"]).check(case)
  assert f is not None and f.message == "PYTHON out0[0] (fp8e4m3) = nan(nan), reference 1.0(0x1.0000000000000p+0) +- 0"
  assert RenderFuzzer(executors=["PYTHON"]).check({**case, "red": {"k": 8, "op": "MAX"}, "inputs": [_in("fp8e4m3", [1.0] * 8)]}) is None
  e5 = {**case, "inputs": [_in("fp8e5m2", [1.0] * 16)], "nodes": [["in", "fp8e5m2", 0]]}
  assert RenderFuzzer(executors=["PYTHON"]).check(e5) is None
