"""The mock AMD GPU executor (`amdexec`, a worker process running tinygrad's AMD LLVM code on the gfx1100 emulator): it agrees
with numpy on fixed programs, turns an out-of-bounds kernel into a clean fault verdict and recovers for the next case (on a
fresh mock GPU, or in a restarted worker once they are used up, or after the worker died), and its page-granular fault model
is what the oob fuzzer expects. The AMD-only findings F17 and F18 are pinned here."""
import subprocess, sys
import numpy as np
import pytest
from mockgpu.tinygrad.fuzz import render_ir as ir
from mockgpu.tinygrad.fuzz.amdexec import AmdWorker, FaultInfo, parse_fault, slack
from mockgpu.tinygrad.fuzz.errors import ExecFault, ExecutorCrashed
from mockgpu.tinygrad.fuzz.kexec import Executor, executor
from mockgpu.tinygrad.fuzz.oob import OobFuzzer, build_oob_ast, expected_fault
from mockgpu.tinygrad.fuzz.render import RenderFuzzer

def _prog(nodes, inputs, outs, n):
  return {"n": n, "axis": "LOOP", "inputs": [{"dtype": d, "bits": [ir.to_bits(v, d) for v in vals]} for d, vals in inputs], "nodes": nodes,
          "outs": outs}

def _run(case, ex=None):
  arrays = ir.to_arrays(case, [case["nodes"][o][1] for o in case["outs"]])
  (ex or executor("AMD")).run(ir.build_ast(case), arrays)
  return arrays[:len(case["outs"])]

def test_fixed_programs_agree_with_numpy():
  a = np.array([-7, 0, 3, 100, -2**31], np.int32)
  f = np.array([0.5, 2.0, 9.0, 1e-3, 1e30], np.float32)
  d = np.array([0.1, -2.5, 1e300, 3.0, -0.0])
  case = _prog([["in", "int32", 0], ["const", "int32", 3], ["CDIV", "int32", 0, 1], ["in", "float32", 1], ["SQRT", "float32", 3],
                ["in", "float64", 2], ["MUL", "float64", 5, 5], ["CMOD", "int32", 0, 1]],
               [("int32", a.tolist()), ("float32", f.tolist()), ("float64", d.tolist())], [2, 4, 6], 5)
  q, s, sq = _run(case)
  with np.errstate(over="ignore"): want = (d * d).tolist()
  assert q.tolist() == [-2, 0, 1, 33, -715827882] and s.tolist() == np.sqrt(f).tolist() and sq.tolist() == want
  case = _prog([["in", "uint8", 0], ["in", "uint8", 1], ["MAX", "uint8", 0, 1], ["XOR", "uint8", 2, 0], ["in", "float32", 2],
                ["CAST", "int32", 4], ["idx", "int32", 100], ["ADD", "int32", 5, 6]],
               [("uint8", [0, 255, 7, 128]), ("uint8", [1, 3, 200, 128]), ("float32", [-2.5, 7.9, 1e6, -0.0])], [3, 7], 4)
  x, y = _run(case)
  assert x.tolist() == [1, 0, 207, 0] and y.tolist() == [98, 108, 1000102, 103]

def test_oob_kernel_faults_and_the_worker_recovers():
  w = AmdWorker(gpus=2)
  ex = Executor("AMD-T", executor("AMD").renderer, w.run, slack=slack)
  bad = {"dims": [8], "axes": ["LOOP"], "ibuf": None, "mode": "load", "size": 8, "idx": ["+", ["r", 0], ["c", 1000]], "gate": None}
  good = {**bad, "idx": ["r", 0]}
  def arrays(): return [np.arange(8, dtype=np.int32) * 10, np.zeros(8, np.int32)]
  with pytest.raises(ExecFault) as e: ex.run(build_oob_ast(bad), arrays())
  r = e.value.report
  assert isinstance(r, FaultInfo) and r.kind == "read" and r.lane == 0 and r.addr is not None and e.value.executor == "AMD"
  assert str(e.value).startswith("executor=AMD faulted: read fault at addr=0x")
  for _ in range(2):  # on the second mock GPU of the same worker, then (after its fault) in a new worker
    ok = arrays()
    ex.run(build_oob_ast(good), ok)
    assert ok[1].tolist() == [0, 10, 20, 30, 40, 50, 60, 70]
    assert (w.starts, w.faults) in ((1, 1), (2, 2))
    with pytest.raises(ExecFault): ex.run(build_oob_ast({**bad, "mode": "store"}), arrays())
  assert (w.starts, w.faults) == (2, 3)
  w.proc.kill()  # a worker that died is restarted by the next run
  w.proc.wait()
  ok = arrays()
  ex.run(build_oob_ast(good), ok)
  assert ok[1].tolist() == [0, 10, 20, 30, 40, 50, 60, 70] and w.starts == 3
  w.close()

@pytest.mark.parametrize("idx,size,want", [
  (["+", ["r", 0], ["c", 1]], 8, True),     # one past the end: the buffer ends at a 32-byte boundary, so it faults
  (["r", 0], 7, False),                      # index 7 of 7 lies in the (mapped) 32-byte alignment padding: no fault
  (["+", ["r", 0], ["c", -1]], 8, False),    # one before the start: the (mapped) page slack in front
  (["+", ["r", 0], ["c", 1 << 20]], 8, None),  # beyond the guard: other mappings may live there, either verdict is accepted
  (["+", ["r", 0], ["c", -1024]], 8, True),  # past the page slack, inside the unmapped guard
  (["r", 0], 8, False),
])
def test_page_granular_fault_model(idx, size, want):
  case = {"dims": [8], "axes": ["LOOP"], "ibuf": None, "mode": "load", "size": size, "idx": idx, "gate": None}
  assert expected_fault(case, executor("AMD")) is want
  v = OobFuzzer(dynamic=["AMD"]).verdicts(case)
  if want is not None: assert v["AMD"] == ("fault" if want else "clean")
  assert slack(32) == (4064, 0, 1 << 20) and slack(28) == (4064, 4, 1 << 20)

def test_rejected_lowering_is_not_a_gpu_fault():
  # the 4-wide GLOBAL load of a 3-element buffer is upcast; tinygrad's lowering refuses it (invalid shrink) on every executor,
  # which is right (element 3 is out of bounds) although on AMD it would lie in the alignment padding
  case = {"dims": [4], "axes": ["GLOBAL"], "ibuf": None, "mode": "load", "size": 3, "idx": ["r", 0], "gate": None}
  v = OobFuzzer().verdicts(case)
  assert (v["truth"], v["static"], v["PYTHON"], v["AMD"]) == (True, True, "rejected", "rejected") and OobFuzzer().check(case) is None

def test_worker_errors_name_the_cause():
  w = AmdWorker(arch="gfx9999")
  case = _prog([["const", "int32", 5]], [], [0], 1)
  with pytest.raises(ExecutorCrashed, match=r"executor=AMD crashed: .*ActivationError: DEV=MOCKKFD\+AMD::gfx9999: mockgpu emulates no gfx9999 GPU"):
    _run(case, Executor("AMD-X", executor("AMD").renderer, w.run))
  w.close()

def test_parse_fault_report():
  err = ("mockgpu: PM4 queue 0 of GPU(node=1 gpu_id=0xa001 arch=gfx1100) stopped at rptr=0x5e (tinygrad sees: MMU fault: 0x7F4A16BB1900): "
         "GPUFault: write fault in global: addr=0x7f4a16bb1900 size=4 arch=gfx1100 pc=0x24 (abs 0x7f4a167e2024) lane=3 wave=0 "
         "workgroup=(0, 0, 0) inst='global_store_b32(v0, v1, s[0:1]) [GLOBAL GLOBAL_STORE_B32]' raw=0; nearest allocation 'x'")
  f = parse_fault("MMU fault: 0x7F4A16BB1900 | NotPresent=1 ReadOnly=0", err)
  assert f == FaultInfo("MMU fault: 0x7F4A16BB1900 | NotPresent=1 ReadOnly=0", 0x7f4a16bb1900, "write", 3, 0x24,
                        "global_store_b32(v0, v1, s[0:1]) [GLOBAL GLOBAL_STORE_B32]", "global")
  assert parse_fault("HW fault: reset=0", "") == FaultInfo("HW fault: reset=0") and parse_fault("MMU fault: 0x10 | x", "").addr == 0x10

def test_render_float_classes_hold_on_amd():
  # LLVM's AMDGPU expansions of llvm.sqrt/exp2/log2 and of fdiv stay inside the documented ULP classes (SIN: see the report)
  vals = [0.5, 3.0, 1e-3, 123.456, 1e20]
  for op in ("SQRT", "EXP2", "LOG2", "RECIPROCAL"):
    case = _prog([["in", "float32", 0], [op, "float32", 0]], [("float32", vals)], [1], 5)
    assert RenderFuzzer(executors=["AMD"]).check(case) is None, op

# F17 (docs/findings.md): an out-of-range float -> uint8 cast in one element corrupts its neighbour on AMD
F17 = _prog([["in", "float32", 0], ["CAST", "uint8", 0]], [("float32", [-7.373724937438965, 1.0])], [1], 2)
def test_finding_f17_cast_poison_spreads_to_the_neighbour():
  assert _run(F17)[0].tolist()[1] == 255
  f = RenderFuzzer(executors=["PYTHON", "CLANG", "LLVM", "AMD"]).check(F17)
  assert f is not None and f.cls == "mismatch:AMD" and f.message == "AMD out0[1] (uint8) = 255, reference 1"

# F18 (docs/findings.md): LLVM's AMDGPU code for `udiv i32 C, (x & m)` with C >= 2**31 masks the quotient with m
F18 = {"n": 1, "axis": "LOOP", "inputs": [{"dtype": "uint32", "bits": [1]}], "nodes": [["const", "uint32", 4294967293], ["in", "uint32", 0],
       ["const", "uint32", 15], ["AND", "uint32", 1, 2], ["CDIV", "uint32", 0, 3]], "outs": [4]}
def test_finding_f18_udiv_of_large_constant_is_masked():
  f = RenderFuzzer(executors=["PYTHON", "CLANG", "LLVM", "AMD"]).check(F18)
  assert f is not None and f.cls == "mismatch:AMD" and f.message == "AMD out0[0] (uint32) = 15, reference 4294967293"
  small = {**F18, "nodes": [["const", "uint32", 100]] + F18["nodes"][1:]}
  assert RenderFuzzer(executors=["AMD"]).check(small) is None

def test_repro_script_runs_on_the_mock_gpu(tmp_path):
  (p:=tmp_path / "repro.py").write_text(RenderFuzzer(executors=["PYTHON", "AMD"]).repro(F18))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300)
  assert r.returncode == 1 and "AMD       out0[0] = 15 reference 4294967293 MISMATCH" in r.stdout
