"""`mockgpu emu fidelity`: the status of known instructions (checked against what the emulator does when it runs them), the
agreement of the classification with the C generator, the coverage file's schema and recording (api.OP_HOOKS, the pytest
plugin), staleness warnings and the CLI's answers."""
import json, re, subprocess, sys
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import s_code_end, s_endpgm_ordered_ps_done, s_endpgm, v_add_f32_e32, v_mov_b32_e32, v
import tinygrad.runtime.autogen.amd.cdna.ins as C
from mockgpu.emu import fidelity
from mockgpu.emu.api import OP_HOOKS, run_code
from mockgpu.emu.arch import ARCHS, library_arch, unmodelled_ops
from mockgpu.emu.cli import main
from mockgpu.emu.errors import InvalidInstruction
from mockgpu.pcode.corrections import FIXES

def one(arch, m): return fidelity.implementations(arch)[m]
def code(*insts): return b"".join(i.to_bytes() for i in (*insts, s_endpgm()))

def test_mnemonic():
  assert [fidelity.mnemonic(n) for n in ("VOP2Op_V_ADD_F32_E32", "VOP2 V_ADD_F32_E32", "v_add_f32_e64", "EXP OP0", "VOPD V_DUAL_ADD_F32",
                                          "VOP3SDOp_V_DIV_SCALE_F32", "DSOp_DS_SWIZZLE_B32")] == \
         ["V_ADD_F32", "V_ADD_F32", "V_ADD_F32", "EXP", "V_DUAL_ADD_F32", "V_DIV_SCALE_F32", "DS_SWIZZLE_B32"]

def test_published_corrected_prose():
  assert [(i.fmt, i.op, i.status, i.entry, i.detail) for i in one("gfx1100", "V_ADD_F32")] == \
         [("VOP3", "V_ADD_F32_E64", "published", "VOP3Op_V_ADD_F32_E64", ""), ("VOP2", "V_ADD_F32_E32", "published", "VOP2Op_V_ADD_F32_E32", "")]
  for arch, fam in (("gfx1100", "rdna3"), ("gfx1201", "rdna4"), ("gfx950", "cdna")):   # an entry of corrections.FIXES, with its reason and source
    (i,) = one(arch, "V_DIV_SCALE_F32")
    fx = FIXES[(fam, "VOP3SDOp_V_DIV_SCALE_F32")]
    assert (i.status, i.entry, i.fixes) == ("corrected", "VOP3SDOp_V_DIV_SCALE_F32", tuple((f.reason, f.source) for f in fx))
    assert i.detail.startswith(f"corrections.FIXES[{fam}, VOP3SDOp_V_DIV_SCALE_F32]")
  assert [(i.status, i.entry) for i in one("gfx950", "V_ACCVGPR_READ")] == [("published", "VOP1Op_V_MOV_B32_E32")]   # gen_c.SEMANTICS_ALIAS
  assert [(i.fmt, i.status, i.entry) for i in one("gfx1100", "V_DUAL_ADD_F32")] == [("VOPD", "published", "VOP2Op_V_ADD_F32_E32")]
  (i,) = one("gfx1100", "DS_SWIZZLE_B32")   # prose: the reason of pcode.prose
  assert (i.status, i.entry, i.detail) == ("prose", None, "prose table of swizzle patterns / C-like sketch with for(;;) and braces; "
                                                          "hand-written in mockgpu.emu (wave-level ops)")
  assert [i.status for i in one("gfx1100", "V_WMMA_F32_16X16X16_F16")] == ["prose"] and [i.status for i in one("gfx1100", "S_WAITCNT")] == ["prose"]
  # one encoding hand-written, the other without semantics: the row takes the least trusted status
  r = fidelity.Row("gfx1100", "GLOBAL_LOAD_LDS_ADDTID_B32", one("gfx1100", "GLOBAL_LOAD_LDS_ADDTID_B32"))
  assert [(i.fmt, i.status) for i in r.impls] == [("GLOBAL", "prose"), ("FLAT", "unsupported")] and r.status == "unsupported"

@pytest.mark.parametrize("arch,m,code,msg,detail", [
  ("gfx1100", "S_ENDPGM_ORDERED_PS_DONE", code(s_endpgm_ordered_ps_done()), "unsupported: S_ENDPGM_ORDERED_PS_DONE is pixel-shader only",
   "h_ps_done: S_ENDPGM_ORDERED_PS_DONE is pixel-shader only"),
  ("gfx950", "S_SCRATCH_LOAD_DWORD", C.s_scratch_load_dword(sdata=C.s[4], sbase=C.s[0:1], offset=0).to_bytes() + C.s_endpgm().to_bytes(),
   "unsupported: CalcScalarScratchAddr", "its pseudocode calls CalcScalarScratchAddr(), a machine built-in the emulator does not provide")])
def test_unsupported_is_what_the_emulator_raises(arch, m, code, msg, detail):
  (i,) = one(arch, m)
  assert i.status == "unsupported" and i.detail.startswith(detail)   # the report gives the reason the emulator raises
  with pytest.raises(InvalidInstruction, match=re.escape(msg)): run_code(code, arch=arch, backend="python", wave64=arch == "gfx950")

@pytest.mark.parametrize("arch", list(ARCHS))
def test_unsupported_agrees_with_the_generator(arch):
  """Every opcode gen_c.generate leaves without a handler is unsupported here, and every other unsupported one is a handler
  that always stops (always_unsupported()) or pseudocode that always calls a built-in the emulator lacks; every pseudocode
  entry reported as run is one a generated handler calls."""
  from mockgpu.emu.gen_c import generate, PROSE_C
  from mockgpu.emu.gen_gfx import GFX_PROSE
  from mockgpu.pcode.cemit import _emit_all
  gen = generate(ARCHS[arch], "", {f"pc_{n}" for n in _emit_all(ARCHS[arch].family)[0]})
  im = [i for v in fidelity.implementations(arch).values() for i in v]
  um = set(unmodelled_ops(ARCHS[arch]).values())   # stopped at dispatch time on this arch, though its library has handlers
  other = lambda i: i.detail.split(":")[0] in fidelity.always_unsupported() or "built-in" in i.detail or i.detail in um
  assert {f"{i.fmt} {i.op}" for i in im if i.status == "unsupported" and not other(i)} == set(gen.missing)
  assert set(fidelity.always_unsupported()) <= {*PROSE_C.values(), *GFX_PROSE.values(), "h_export"}
  called = set(re.findall(r"\bpc_\w+", "\n".join(gen.sources[1:])))   # calls, and function pointers (image atomics)
  assert {f"pc_{i.entry}" for i in im if i.status in ("published", "corrected")} <= called

def test_op_hooks_see_every_dispatch_that_ran():
  seen = []
  OP_HOOKS.append(lambda a, c: seen.append((a, c)))
  try:
    prog = code(v_mov_b32_e32(v[1], 1.0), v_add_f32_e32(v[1], v[1], v[1]), v_add_f32_e32(v[1], v[1], v[1]))
    for be in ("c", "python"): assert run_code(prog, backend=be).op_counts is None   # not asked for: the hook does not change Stats
    bad = code(v_mov_b32_e32(v[1], 1.0), s_code_end())
    for be in ("c", "python"):   # a dispatch that raised: its counts include the instruction that raised, the error carries none unasked
      with pytest.raises(InvalidInstruction) as ei: run_code(bad, backend=be)
      assert ei.value.op_counts is None
  finally: OP_HOOKS.clear()
  assert seen == [("gfx1100", {"VOP1 V_MOV_B32_E32": 1, "VOP2 V_ADD_F32_E32": 2, "SOPP S_ENDPGM": 1})] * 2 + \
                 [("gfx1100", {"VOP1 V_MOV_B32_E32": 1, "SOPP S_CODE_END": 1})] * 2
  for be in ("c", "python"):
    with pytest.raises(InvalidInstruction) as ei: run_code(bad, backend=be, op_counts=True)
    assert ei.value.op_counts == {"VOP1 V_MOV_B32_E32": 1, "SOPP S_CODE_END": 1}

def _cov(tmp_path, ran_add, failed=()):
  tests = {"t.py::test_ka": {"kind": "known-answer", "hw_fact": set(), "source": None, "ran": {("gfx1100", "V_ADD_F32"), ("gfx950", "V_ADD_F32")}},
           "t.py::test_diff": {"kind": "differential", "hw_fact": set(), "source": None, "ran": {("gfx1100", "V_ADD_F32"), ("gfx1100", "S_ENDPGM")}},
           "t.py::test_hw": {"kind": "known-answer", "hw_fact": {"V_DIV_SCALE_F32", "V_DIV_FMAS_F32"}, "source": "issue 10",
                             "ran": {("gfx1100", ran_add)}}}
  fidelity.write_coverage(tmp_path / "cov.json", tests, list(failed), 3, ["tests/isa"])
  return fidelity.load_coverage(tmp_path / "cov.json")

def test_coverage_schema_and_rows(tmp_path):
  cov = _cov(tmp_path, "V_DIV_SCALE_F32")
  assert set(cov) == {"schema", "command", "generated", "mockgpu", "tinygrad", "commit", "paths", "tests_hash", "pcode", "outcome", "tests", "ran"}
  assert cov["tests"] == [{"id": "t.py::test_diff", "kind": "differential"},
                          {"id": "t.py::test_hw", "kind": "known-answer", "hw_fact": ["V_DIV_FMAS_F32", "V_DIV_SCALE_F32"], "source": "issue 10"},
                          {"id": "t.py::test_ka", "kind": "known-answer"}]
  assert cov["ran"] == {"gfx1100": {"S_ENDPGM": [0], "V_ADD_F32": [0, 2], "V_DIV_SCALE_F32": [1]}, "gfx950": {"V_ADD_F32": [2]}}
  assert cov["outcome"] == {"passed": 3, "failed": [], "skipped": 3} and cov["command"] == "mockgpu emu fidelity --update-coverage"
  rs = {r.mnemonic: r for r in fidelity.rows("gfx1100", cov)}
  assert rs["V_ADD_F32"].tests == {"differential": ("t.py::test_diff",), "known-answer": ("t.py::test_ka",), "hw_fact": ()}
  assert rs["V_DIV_SCALE_F32"].tests == {"differential": (), "known-answer": ("t.py::test_hw",), "hw_fact": ("t.py::test_hw",)}
  assert rs["V_DIV_FMAS_F32"].tests == {"differential": (), "known-answer": (), "hw_fact": ()}   # named by the marker, never executed: not counted
  assert fidelity.verdict(rs["V_DIV_SCALE_F32"]) == "runs AMD's pseudocode with a correction (corrections.FIXES); checked against hardware facts"
  assert fidelity.verdict(rs["S_ENDPGM"]).endswith("only compared between the two backends on random inputs (a wrong shared model would pass)")
  assert {r.mnemonic: r.tests["known-answer"] for r in fidelity.rows("gfx950", cov) if any(r.tests.values())} == {"V_ADD_F32": ("t.py::test_ka",)}
  t = fidelity.totals(list(rs.values()))
  assert (t["differential"], t["known-answer"], t["hw_fact"], t["untested"]) == (2, 2, 1, len(rs) - 3)
  assert t["instructions"] == len(rs) == sum(t[s] for s in fidelity.STATUSES)

def test_staleness_warnings(tmp_path):
  assert fidelity.warnings(None) == ["no test coverage data (fidelity_coverage.json is missing): the test columns are empty; regenerate it in a "
                                     "checkout with `mockgpu emu fidelity --update-coverage`"]
  cov = _cov(tmp_path, "V_ADD_F32", failed=["t.py::test_x[1]"])
  cov["tests_hash"] = fidelity.tests_hash(cov["paths"])
  assert fidelity.warnings(cov) == ["1 test(s) failed when it was recorded and are not counted: t.py::test_x[1]"]
  cov["pcode"]["cdna"], cov["tinygrad"], cov["tests_hash"] = "0" * 16, "0.13.0", "0" * 16
  assert [w.split(";")[0] for w in fidelity.warnings(cov)] == ["recorded with tinygrad 0.13.0, this is tinygrad 0.14.0",
    "the cdna pseudocode or its corrections changed since the coverage was recorded", "the tests under tests/isa changed since the coverage was recorded",
    "1 test(s) failed when it was recorded and are not counted: t.py::test_x[1]"]
  (tmp_path / "old.json").write_text('{"schema": 0}')
  with pytest.raises(ValueError, match="schema 0, this mockgpu reads 1; regenerate it: mockgpu emu fidelity --update-coverage"):
    fidelity.load_coverage(tmp_path / "old.json")

def test_shipped_coverage_matches_the_schema():
  cov = fidelity.load_coverage()
  assert cov is not None, "emu/fidelity_coverage.json is missing: run `mockgpu emu fidelity --update-coverage`"
  assert cov["schema"] == fidelity.SCHEMA and cov["paths"] == list(fidelity.DEFAULT_TESTS) and cov["outcome"]["passed"] == len(cov["tests"])
  assert all(t["kind"] in ("differential", "known-answer") and set(t) <= {"id", "kind", "hw_fact", "source"} for t in cov["tests"])
  assert set(cov["ran"]) == {library_arch(a).name for a in ARCHS.values()} and all(0 <= i < len(cov["tests"]) for ms in cov["ran"].values() for ix in ms.values() for i in ix)
  for a, ms in cov["ran"].items(): assert set(ms) <= set(fidelity.implementations(a)), a   # every recorded instruction is one of the arch's

def test_cli_explains_one_instruction(tmp_path, capsys):
  assert main(["fidelity", "v_div_scale_f32_e64", "--arch", "rdna3"]) == 0
  out = capsys.readouterr().out.splitlines()
  fx = FIXES[("rdna3", "VOP3SDOp_V_DIV_SCALE_F32")]
  i = out.index("V_DIV_SCALE_F32")
  assert out[i + 1].startswith("gfx1100: corrected: runs AMD's pseudocode with a correction (corrections.FIXES); ")
  j = i + 3 + 2 * len(fx)
  assert out[i + 2:j] == [
    f"  VOP3SD V_DIV_SCALE_F32: corrected, pseudocode VOP3SDOp_V_DIV_SCALE_F32; corrections.FIXES[rdna3, VOP3SDOp_V_DIV_SCALE_F32] ({len(fx)} fixes)",
    *(line for f in fx for line in (f"    reason: {f.reason}", f"    source: {f.source}"))]
  assert [l.split(" (")[0] for l in out[j:j + 3]] == ["  differential tests", "  known-answer tests", "  hw_fact tests"]
  assert main(["fidelity", "V_DIV_SCALEE_F32"]) == 2
  assert capsys.readouterr().err == ("mockgpu emu fidelity: no instruction 'V_DIV_SCALEE_F32' on gfx1100, gfx1201, gfx950, gfx942; "
                                     "did you mean V_DIV_SCALE_F32, V_DIV_SCALE_F64, V_DIV_FMAS_F32?\n")
  assert main(["fidelity", "--arch", "gfx1100", "--status", "unsupported", "--json", str(tmp_path / "r.json")]) == 0
  doc = json.loads((tmp_path / "r.json").read_text())
  assert set(doc["archs"]) == {"gfx1100"} and "S_ENDPGM_ORDERED_PS_DONE" in doc["archs"]["gfx1100"]["instructions"]
  assert {r["status"] for r in doc["archs"]["gfx1100"]["instructions"].values()} == {"unsupported"}
  assert doc["archs"]["gfx1100"]["totals"]["unsupported"] == len(doc["archs"]["gfx1100"]["instructions"])
  assert main(["fidelity", "--totals"]) == 0
  out = capsys.readouterr().out.splitlines()
  assert out[-6] == "| arch | instructions | published | corrected | prose | unsupported | differential | known-answer | hw_fact | untested |"
  assert [l.split(" |")[0] for l in out[-4:]] == ["| gfx1100 (rdna3)", "| gfx1201 (rdna4)", "| gfx950 (cdna)", "| gfx942 (cdna)"]
  g950, g942 = ([int(x) for x in row.strip("| ").split(" | ")[1:]] for row in out[-2:])   # instructions, statuses, test kinds
  stop = len(unmodelled_ops(ARCHS["gfx942"]))   # gfx942 runs gfx950's library but stops at the FP8/BF8 ops (FNUZ formats)
  assert g942[0] == g950[0] and g942[4] == g950[4] + stop and g942[1] + g942[3] == g950[1] + g950[3] - stop and g942[-1] >= g950[-1]

TEST_FILE = '''
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import v_add_f32_e32, v_mul_f32_e32, s_endpgm, v
from mockgpu.emu.api import run_code
def run(*i): return run_code(b"".join(x.to_bytes() for x in (*i, s_endpgm())), backend="python")
@pytest.mark.hw_fact("V_ADD_F32", "v_mul_f32", source="a GPU")
@pytest.mark.parametrize("n", [1, 2])
def test_hw(n): run(*[v_add_f32_e32(v[1], v[1], v[1])] * n)
@pytest.mark.differential
def test_diff(): run(v_mul_f32_e32(v[1], v[1], v[1]))
def test_fails(): run(v_mul_f32_e32(v[1], v[1], v[1])); assert False
'''

def test_plugin_records_passing_tests(tmp_path):
  (tmp_path / "test_probe.py").write_text(TEST_FILE)
  p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "-p", "mockgpu.emu.fidelity_plugin",
                      f"--fidelity-coverage={tmp_path / 'cov.json'}", "test_probe.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
  assert p.returncode == 1 and "test_probe.py::test_hw is marked hw_fact('V_MUL_F32') but never executes V_MUL_F32" in p.stdout, p.stdout[-3000:]
  cov = json.loads((tmp_path / "cov.json").read_text())
  assert cov["tests"] == [{"id": "test_probe.py::test_diff", "kind": "differential"},
                          {"id": "test_probe.py::test_hw", "kind": "known-answer", "hw_fact": ["V_ADD_F32", "V_MUL_F32"], "source": "a GPU"}]
  assert cov["ran"] == {"gfx1100": {"S_ENDPGM": [0, 1], "V_ADD_F32": [1], "V_MUL_F32": [0]}}
  assert cov["outcome"] == {"passed": 2, "failed": ["test_probe.py::test_fails"], "skipped": 0} and cov["paths"] == ["test_probe.py"]
