"""The opt-in GPU executors of the render fuzzer: the mock gfx1201 and gfx950 AMD GPUs (gfx950 compiled in its worker with a
libLLVM >= 20) and the mock NVIDIA GPU through tinygrad's PTX renderer agree with the reference on fixed programs, in the dtypes
their renderers support (fp8 only on gfx950, no bfloat16 on PTX)."""
import pytest
from mockgpu.tinygrad.fuzz import render_ir as ir
from mockgpu.tinygrad.fuzz.kexec import GPU_EXECUTORS, EXECUTORS, executor
from mockgpu.tinygrad.fuzz.render import RenderFuzzer

def _in(dt, *vals): return {"dtype": dt, "bits": [ir.to_bits(v, dt) for v in vals]}
INT = {"n": 4, "axis": "GLOBAL", "inputs": [_in("int32", -7, 0, 3, -2**31), _in("int32", 2, 0, -1, -1), _in("float32", 0.5, 2.0, 9.0, -0.0)],
       "nodes": [["in", "int32", 0], ["in", "int32", 1], ["CDIV", "int32", 0, 1], ["in", "float32", 2], ["SQRT", "float32", 3],
                 ["CMOD", "int32", 0, 1]], "outs": [2, 4, 5]}
HALF = {"n": 3, "axis": "LOOP", "inputs": [_in("float16", 2048.0, 0.1, -3.5)],
        "nodes": [["in", "float16", 0], ["const", "float16", ir.to_bits(1.0, "float16")], ["ADD", "float16", 0, 1], ["MUL", "float16", 2, 0],
                  ["CAST", "float32", 3]], "outs": [4, 2]}
BF16 = {"n": 3, "axis": "LOOP", "inputs": [_in("bfloat16", 1.5390625, -2.0, 0.0078125)],
        "nodes": [["in", "bfloat16", 0], ["MUL", "bfloat16", 0, 0], ["CAST", "float32", 1], ["EXP2", "bfloat16", 0]], "outs": [2, 1, 3]}
FP8 = {"n": 3, "axis": "LOOP", "inputs": [_in("fp8e4m3", 3.5, -0.25, 1.125), _in("float32", 3.0, 0.3, -100.0)],
       "nodes": [["in", "fp8e4m3", 0], ["CAST", "float32", 0], ["in", "float32", 1], ["CAST", "fp8e5m2", 2], ["CAST", "fp8e4m3", 2]],
       "outs": [1, 3, 4]}

def test_gpu_executors_are_opt_in():
  assert EXECUTORS == ("PYTHON", "CLANG", "LLVM", "X86", "CLANG-A64", "LLVM-A64", "AMD")
  assert GPU_EXECUTORS == ("AMD", "AMD-gfx1201", "AMD-gfx950", "NV")

@pytest.mark.parametrize("name,cases,runs", [("AMD-gfx1201", (INT, HALF, BF16, FP8), 3), ("AMD-gfx950", (INT, HALF, BF16, FP8), 4),
                                             ("NV", (INT, HALF, BF16, FP8), 2)])
def test_gpu_executor_agrees_with_the_reference(name, cases, runs):
  fz = RenderFuzzer(executors=[name])
  assert [fz.check(c) for c in cases] == [None] * 4 and fz.stats()["runs"] == runs
  arrays = ir.to_arrays(BF16 if name != "NV" else HALF, ["float32", "bfloat16", "bfloat16"] if name != "NV" else ["float32", "float16"])
  executor(name).run(ir.build_ast(BF16 if name != "NV" else HALF), arrays)
  if name == "NV": assert arrays[0].tolist() == [float("inf"), 0.10992431640625, 8.75] and arrays[1].tolist() == [2048.0, 1.099609375, -2.5]
  else: assert arrays[0].tolist() == [2.375, 4.0, 6.103515625e-05] and arrays[1].tolist() == [0x4018, 0x4080, 0x3880]

def test_gfx950_lowers_in_its_worker_and_skips_opts_it_cannot_apply():
  # campaign seed 12 case 66, minimised: an UNROLL without a reduce loop is refused by tinygrad in the worker: not run, not a crash
  case = {"n": 1, "axis": "LOOP", "inputs": [], "nodes": [["const", "float64", ir.to_bits(1.0, "float64")]], "outs": [0], "opts": [["UNROLL", 0, 4]]}
  fz = RenderFuzzer(executors=["PYTHON", "AMD-gfx950"])
  assert fz.check(case) is None and fz.stats()["skipped_opts"] == 2

@pytest.mark.parametrize("name", ["AMD-gfx1201", "AMD-gfx950"])
def test_repro_script_runs_on_the_opt_in_gpus(tmp_path, name):
  import subprocess, sys
  # F19 (float64 1/0 is NaN on every AMD target): the script activates the right mock (gfx950 with a libLLVM >= 20) and exits 1
  case = {"n": 1, "axis": "LOOP", "inputs": [_in("float64", 0.0)], "nodes": [["in", "float64", 0], ["RECIPROCAL", "float64", 0]], "outs": [1]}
  (p:=tmp_path / "repro.py").write_text(RenderFuzzer(executors=["PYTHON", name]).repro(case))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300)
  assert r.returncode == 1 and f"{name:9s} out0[0] = nan reference [inf, 0.0] MISMATCH" in r.stdout, r.stdout + r.stderr[-2000:]

def test_finding_f22_on_gfx950():
  case = {"n": 1, "axis": "LOOP", "inputs": [_in("fp8e4m3", *[1.0] * 16)], "nodes": [["in", "fp8e4m3", 0]], "outs": [0],
          "red": {"k": 16, "op": "MAX"}}
  f = RenderFuzzer(executors=["AMD-gfx950"]).check(case)
  assert f is not None and f.message == "AMD-gfx950 out0[0] (fp8e4m3) = nan(nan), reference 1.0(0x1.0000000000000p+0) +- 0"
