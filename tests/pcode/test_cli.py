"""`python -m mockgpu.pcode coverage` and `show`."""
import json, subprocess, sys
from mockgpu.pcode.cli import main, coverage
from mockgpu.pcode.tables import entries
from mockgpu.pcode.prose import prose

def test_coverage_numbers_add_up():
  r = coverage("rdna3")
  assert r["total"] == len(entries("rdna3")) == 1392 and r["prose"] == len(prose("rdna3"))
  assert r["typed"] + r["prose"] == r["total"] and r["parsed"] >= r["typed"]
  assert r["compiled_c"] == r["typed"] - len(r["missing"]["c"]) and r["compiled_py"] == r["typed"] - len(r["missing"]["python"])
  assert r["missing"] == {"parse": {}, "type": {}, "c": {}, "python": {}} and r["covered"] == r["total"]

def test_cli_json_and_exit_code(capsys):
  rc = main(["coverage", "--arch", "cdna", "--json"])
  out = json.loads(capsys.readouterr().out)
  assert [r["arch"] for r in out] == ["cdna"] and out[0]["total"] == out[0]["covered"] == 1441 and rc == 0

def test_cli_show(capsys):
  assert main(["show", "rdna3", "VOP2Op_V_ADD_F32_E32"]) == 0
  out = capsys.readouterr().out
  assert "D0.f32 = S0.f32 + S1.f32" in out and "static inline void pc_VOP2Op_V_ADD_F32_E32(PcState *s)" in out
  assert main(["show", "rdna3", "NOPE"]) == 2
  assert capsys.readouterr().err == "pcode show: rdna3 has no entry 'NOPE'; names look like VOP2Op_V_ADD_F32_E32\n"
  assert main(["show", "gfx942", "VOP1Op_V_MOV_B32"]) == 2   # a GPU arch names its family; near names are offered
  assert capsys.readouterr().err == ("pcode show: cdna has no entry 'VOP1Op_V_MOV_B32'; did you mean VOP1Op_V_MOV_B64_E32, VOP1Op_V_MOV_B32_E32, "
                                     "SOP1Op_S_MOV_B32?\n")
  assert main(["show", "rdna3", "VOP3Op_V_DIV_FMAS_F32"]) == 0   # a corrected entry names each fix's source and reason
  out = capsys.readouterr().out
  assert "// fix 0 [hardware: instruction results recorded on RDNA3/CDNA GPUs (issue 10)]: with the lane's VCC bit set" in out

def test_module_entry_point():
  r = subprocess.run([sys.executable, "-m", "mockgpu.pcode", "show", "cdna", "SOPPOp_S_SLEEP"], capture_output=True, text=True)
  assert r.returncode == 0 and '"prose": true' in r.stdout
