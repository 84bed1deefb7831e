"""`kexec.check_param_slots` reports a PARAM slot collision (finding F1) only when the rendered function's parameters really
do not match the CPU runtime's argument order: a case it used to flag (a variable numbered onto a buffer's slot, but emitted
after every buffer by the C renderer) runs correctly on CLANG and is not flagged, while LLVM, which names arguments by slot,
and X86, which orders them by slot, still are; the F1 case faults when run without the check."""
import dataclasses
import pytest
from mockgpu.tinygrad.fuzz import render_ir as ir
from mockgpu.tinygrad.fuzz.errors import ExecFault, ParamSlotCollision
from mockgpu.tinygrad.fuzz.kexec import check_param_slots, executor
from mockgpu.tinygrad.fuzz.render import RenderFuzzer

# seed 7 case 175: buffers 0, 1, 2, 4, 5 (slot 3, the XOR x^x, folds away), core_id numbered 5 like the last buffer
SHARED = {"n": 2, "axis": "GLOBAL", "inputs": [{"dtype": "int8", "bits": [8, 119]},
          {"dtype": "uint64", "bits": [4004212230140437709, 10589492497241584578]}, {"dtype": "uint16", "bits": [1, 0]}],
          "nodes": [["in", "int8", 0], ["XOR", "int8", 0, 0], ["in", "uint64", 1], ["const", "uint64", 0], ["SHL", "uint64", 2, 3],
                    ["in", "uint16", 2], ["OR", "uint16", 5, 5]], "outs": [6, 1, 4]}

def test_shared_slot_in_runtime_order_is_not_a_collision():
  ast, ex = ir.build_ast(SHARED), executor("CLANG")
  check_param_slots(ast, ex.renderer(), "CLANG")  # raised ParamSlotCollision before: core_id 5 <= last buffer slot 5
  arrays = ir.to_arrays(SHARED, ["uint16", "int8", "uint64"])
  ex.run(ast, arrays)
  assert [a.tolist() for a in arrays[:3]] == [[1, 0], [0, 0], [4004212230140437709, 10589492497241584578]]
  assert RenderFuzzer(executors=["PYTHON", "CLANG"]).check(SHARED) is None

@pytest.mark.parametrize("name", ["LLVM", "X86"])
def test_shared_slot_collides_where_the_renderer_breaks(name):
  # LLVM names arguments %data<slot> (a duplicate name); X86 sorts its arguments by slot and puts core_id before buffer 5
  with pytest.raises(ParamSlotCollision) as e: check_param_slots(ir.build_ast(SHARED), executor(name).renderer(), name)
  assert (e.value.buffers, e.value.variables) == ([0, 1, 2, 4, 5], [("core_id", 5)])
  if name == "X86":
    with pytest.raises(ExecFault, match="SIGSEGV"):
      dataclasses.replace(executor(name), threads=False).run(ir.build_ast(SHARED), ir.to_arrays(SHARED, ["uint16", "int8", "uint64"]))

def test_f1_collision_is_real():
  case = {"n": 2, "axis": "GLOBAL", "inputs": [{"dtype": "float32", "bits": [1065353216, 0]}, {"dtype": "bool", "bits": [1, 0]},
          {"dtype": "float32", "bits": [1065353216, 1065353216]}], "nodes": [["in", "float32", 0], ["in", "bool", 1], ["const", "bool", 0],
          ["AND", "bool", 1, 2], ["in", "float32", 2], ["WHERE", "float32", 3, 0, 4]], "outs": [5]}  # F1 (tests/fuzz/test_render.py)
  ex = executor("CLANG")
  with pytest.raises(ParamSlotCollision) as e: check_param_slots(ir.build_ast(case), ex.renderer(), "CLANG")
  assert (e.value.buffers, e.value.variables) == ([0, 3], [("core_id", 2)])
  with pytest.raises(ExecFault, match="SIGSEGV"):  # run anyway: the thread id arrives in a buffer's argument
    dataclasses.replace(ex, threads=False).run(ir.build_ast(case), ir.to_arrays(case, ["float32"]))
