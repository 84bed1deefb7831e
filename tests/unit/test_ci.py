"""`mockgpu ci`: the job table against tinygrad's CI (as the corpus README lists it), junit parsing, baselines, selection, and
real runs of the command on a small fake test tree (pytest steps that pass/fail/skip/crash, scripts, a hung step)."""
import json, os, re, signal, subprocess, sys, textwrap, time
from pathlib import Path
import pytest
from mockgpu.tinygrad import ci
from mockgpu.tinygrad.ci_jobs import JOBS, SUITES, from_json

AMD6 = {f"MOCKKFD+AMD:{c}:{a}" for c in ("", "LLVM") for a in ("gfx1100", "gfx1201", "gfx950")}

def test_matrix_matches_tinygrads_ci_table():
  rows = ci.matrix()
  by_job = {j: [r for r in rows if r.job.name == j] for j in ("testamd", "testamdasm", "hcq2", "testmockam", "testnvidia")}
  assert [len(v) for v in by_job.values()] == [6, 2, 1, 1, 2] and len(rows) == 12
  assert {r.dev for r in by_job["testamd"]} == AMD6 and "testamd[MOCKKFD+AMD::gfx1201]" in {r.name for r in rows}
  assert {r.dev for r in by_job["testamdasm"]} == {"MOCKKFD+AMD", "MOCKKFD+AMD:LLVM"}
  assert [r.dev for r in by_job["hcq2"] + by_job["testmockam"]] == ["MOCKKFD+AMD", "MOCKPCI+AMD"]
  assert {r.dev for r in by_job["testnvidia"]} == {"MOCK+CUDA:PTX", "MOCK+NV"}
  amd = by_job["testamd"][0]
  assert amd.env["SKIP_SLOW_TEST"] == "1" and [s.kind for s in amd.job.steps] == ["pytest", "pytest", "pytest", "script"]
  s0, s1, s2, s3 = amd.job.steps
  assert s0.args[:8] == tuple(f"test/backend/{t}.py" for t in ("test_ops", "test_dtype", "test_dtype_alu", "test_linearizer", "test_randomness",
                                                                "test_jit", "test_graph", "test_multitensor"))
  assert s0.args[8:] == ("test/device/test_hcq.py", "test/backend/test_asm_gemm.py::TestAsmGEMM")
  assert s1.args == ("test/unit/test_disk_tensor.py", "-k", "test_copy_from_disk")
  assert s2.env == {"TRANSCENDENTAL": "2"} and [a.rsplit("_", 1)[1] for a in s2.args] == ["sin", "cos", "tan", "exp", "log"]
  assert s3.label == "DEBUG=5 FORWARD_ONLY=1 python test/test_tiny.py TestTiny.test_plus"
  asm = by_job["testamdasm"][0].job
  assert asm.steps[0].kind == "pytest" and asm.steps[0].needs == "test/amd"
  assert [s.label for s in asm.steps[1:]] == ["N=256 python extra/gemm/amd_asm_matmul.py", "N=256 python extra/gemm/amd_copy_matmul.py",
                                              "python test/device/test_amd_llvm.py"]
  hcq2 = by_job["hcq2"][0]
  assert {k: hcq2.env[k] for k in ("HCQ_RUNTIME_DEV", "HCQ2", "FORWARD_ONLY")} == {"HCQ_RUNTIME_DEV": "PYTHON", "HCQ2": "1", "FORWARD_ONLY": "1"}
  assert [s.label for s in hcq2.job.steps] == ["python test/test_tiny.py", "pytest test/backend/test_multitensor.py", "python test/unit/test_jit.py",
                                               "pytest test/device/test_hcq2.py"]
  mam = by_job["testmockam"][0].job.steps
  assert mam[1].env == {"GMMU": "0", "DEV": "MOCKUSB+AMD"} and len(mam) == 4
  nv = {r.dev: r.env for r in by_job["testnvidia"]}
  assert nv["MOCK+NV"]["SKIP_SLOW_TEST"] == "1" and "SKIP_SLOW_TEST" not in nv["MOCK+CUDA:PTX"] and nv["MOCK+CUDA:PTX"]["FORWARD_ONLY"] == "1"
  assert by_job["testnvidia"][0].job.steps[0].args == ("test/backend", "--ignore", "test/backend/test_multitensor.py")

def test_bench_suite_is_the_in_repo_mocks_measured_steps():
  # the figures for tinygrad's in-repo mock: test_ops (SKIP_SLOW_TEST=1, -n 2) and test_jit on MOCKKFD+AMD
  (bench,) = SUITES["bench"]
  assert bench.devs == {"MOCKKFD+AMD": {}} and bench.env == {"SKIP_SLOW_TEST": "1"}
  assert [s.label for s in bench.steps] == ["pytest test/backend/test_ops.py", "pytest test/backend/test_jit.py"]
  assert set(SUITES) == {"tinygrad", "fast", "bench"} and SUITES["tinygrad"] is JOBS

def test_select_by_job_glob_dev_glob_and_same_device():
  rows = ci.matrix()
  assert {r.job.name for r in ci.select(rows, ["testamd*"])} == {"testamd", "testamdasm"}
  assert [r.name for r in ci.select(rows, ["testamd"], ["*gfx950"])] == ["testamd[MOCKKFD+AMD::gfx950]", "testamd[MOCKKFD+AMD:LLVM:gfx950]"]
  # DEV=MOCKKFD+AMD is gfx1100 with the default compiler: the same device as MOCKKFD+AMD::gfx1100, not the LLVM one
  assert [r.name for r in ci.select(rows, None, ["MOCKKFD+AMD"])] == ["testamd[MOCKKFD+AMD::gfx1100]", "testamdasm[MOCKKFD+AMD]", "hcq2[MOCKKFD+AMD]"]
  assert ci.select(rows, ["nope"]) == [] and len(ci.select(rows, [], [])) == 12
  assert ci.same_dev("MOCKKFD+AMD:LLVM", "MOCKKFD+AMD:LLVM:gfx1100") and not ci.same_dev("MOCK+NV", "MOCK+NV:PTX")
  assert ci.same_dev("MOCKPCI+AMD", "MOCKPCI+AMD::gfx950") and not ci.same_dev("MOCKPCI+AMD", "MOCKPCI+AMD::gfx1100")
  assert [ci.dev_arch(d) for d in ("MOCKPCI+AMD", "MOCKUSB+AMD", "MOCKKFD+AMD", "MOCKKFD+AMD:LLVM:gfx1201", "MOCK+NV")] == \
    ["gfx950", "gfx950", "gfx1100", "gfx1201", ""]

def test_child_env_layers_and_does_not_leak(tmp_path):
  row = next(r for r in ci.matrix() if r.name == "testmockam[MOCKPCI+AMD]")
  caller = {"DEV": "MOCK+NV", "FORWARD_ONLY": "1", "HCQ2": "1", "LLVM_PATH": "/x/libLLVM.so.22", "PYTHONPATH": "/a", "HOME": "/h"}
  env = ci.child_env(caller, row, row.job.steps[0], tmp_path)
  assert env["DEV"] == "MOCKPCI+AMD" and "FORWARD_ONLY" not in env and "HCQ2" not in env   # set by other jobs: never leaked
  assert env["LLVM_PATH"] == "/x/libLLVM.so.22" and env["HOME"] == "/h" and env["PYTHONPATH"] == f"{tmp_path}{os.pathsep}/a"
  usb = ci.child_env(caller, row, row.job.steps[1], tmp_path, extra={"LLVM_PATH": "/y"})
  assert (usb["DEV"], usb["GMMU"], usb["LLVM_PATH"]) == ("MOCKUSB+AMD", "0", "/y")

def test_with_k_ands_the_users_expression():
  assert ci._with_k(("t.py", "-k", "copy"), "small") == ["t.py", "-k", "(copy) and (small)"]
  assert ci._with_k(("t.py",), "small") == ["t.py", "-k", "small"] and ci._with_k(("t.py",), None) == ["t.py"]

def test_step_failure_reason_names_the_first_exception(tmp_path):
  (log := tmp_path / "s.log").write_text("ok\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    import nope\n"
                                         "ModuleNotFoundError: No module named 'nope'\n\nTraceback (most recent call last):\n  ...\n"
                                         "RuntimeError: later\n----\nFAILED (errors=2)\n")
  assert ci._tail(log) == "ModuleNotFoundError: No module named 'nope' | output ends: FAILED (errors=2)"
  (log := tmp_path / "t.log").write_text("bad.py: the device said no\n\n")
  assert ci._tail(log) == "bad.py: the device said no" and ci._tail(tmp_path / "none.log") == "(no output)"
  (log := tmp_path / "c.log").write_text("..Fatal Python error: Segmentation fault\n\nThread 0x7f01 (most recent call first):\n  File \"a.py\", line 3 in idle\n"
                                         "\nCurrent thread 0x7f00 (most recent call first):\n  File \"b.py\", line 9 in run\n  File \"c.py\", line 2 in main\n"
                                         "\nExtension modules: numpy (total: 1)\n")
  assert ci._tail(log) == ('Fatal Python error: Segmentation fault | output ends: Extension modules: numpy (total: 1) | crashed in: '
                           '"b.py", line 9 in run < "c.py", line 2 in main')

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="8">
<testcase classname="test.test_x.TestA.TestInner" name="test_n" file="test/test_x.py" line="3" time="0.5" />
<testcase classname="test.test_x.TestA" name="test_p[a.b]" file="test/test_x.py" time="0.25">
  <failure message="AssertionError: assert 'a.b' == 1&#10;second line">trace</failure></testcase>
<testcase classname="test.test_x" name="test_setup_err" file="test/test_x.py">
  <error message="failed on setup with &quot;RuntimeError: fixture&quot;">t</error></testcase>
<testcase classname="test.test_x" name="test_xf" file="test/test_x.py">
  <skipped type="pytest.xfail" message="known" /></testcase>
<testcase classname="test.test_x" name="test_skip" file="test/test_x.py">
  <skipped type="pytest.skip" message="no hipcc">x.py:19: no hipcc</skipped></testcase>
<testcase classname="test.test_x" name="test_td" file="test/test_x.py" time="1" />
<testcase classname="test.test_x" name="test_td" file="test/test_x.py">
  <error message="failed on teardown with &quot;ValueError&quot;">t</error></testcase>
<testcase classname="" name="test.test_broken" file="test/test_broken.py"><error message="collection failure">ImportError while importing
E   ModuleNotFoundError: No module named 'nothere'</error></testcase>
<testcase classname="mod.Cls" name="test_nofile" />
</testsuite></testsuites>"""

def test_parse_junit(tmp_path):
  (f := tmp_path / "j.xml").write_text(JUNIT)
  got = {k: (v["outcome"], v["reason"]) for k, v in ci.parse_junit(f).items()}
  assert got == {"test/test_x.py::TestA::TestInner::test_n": ("passed", ""),
                 "test/test_x.py::TestA::test_p[a.b]": ("failed", "AssertionError: assert 'a.b' == 1"),
                 "test/test_x.py::test_setup_err": ("error", 'failed on setup with "RuntimeError: fixture"'),
                 "test/test_x.py::test_xf": ("skipped", "xfail: known"), "test/test_x.py::test_skip": ("skipped", "no hipcc"),
                 "test/test_x.py::test_td": ("error", 'failed on teardown with "ValueError"'),
                 "test/test_broken.py": ("error", "collection failure: ModuleNotFoundError: No module named 'nothere'"),
                 "mod.Cls::test_nofile": ("passed", "")}
  assert ci.parse_junit(f)["test/test_x.py::TestA::TestInner::test_n"]["time"] == 0.5
  (bad := tmp_path / "cut.xml").write_text(JUNIT[:200])
  with pytest.raises(ci.ET.ParseError): ci.parse_junit(bad)

def _res(tests:dict[str, str], k=None, skipped="", step="pytest t.py") -> dict:
  return {"rows": [{"job": "j", "dev": "D", "name": "j[D]", "steps": [{"step": step, "k": k, "skipped": skipped,
          "tests": {n: {"outcome": o, "reason": f"why {n}"} for n, o in tests.items()}}]}]}

def test_regressions():
  base = _res({"a": "passed", "b": "passed", "c": "passed", "d": "failed", "e": "skipped", "f": "passed"})
  now = _res({"a": "passed", "b": "failed", "c": "error", "d": "failed", "e": "failed", "g": "failed"})
  assert ci.regressions(base, now) == [("j[D]", "b", "failed: why b"), ("j[D]", "c", "error: why c"), ("j[D]", "f", "missing now (its step ran)")]
  assert ci.regressions(base, _res({"a": "passed"}, k="a")) == []            # a different -k selection: missing is not a regression
  assert ci.regressions(base, _res({}, skipped="needs test/amd")) == []      # the step did not run
  assert ci.regressions(base, _res({"b": "failed"}, step="pytest other.py")) == []   # the step was not in the baseline
  assert ci.regressions({"rows": []}, now) == []

def test_find_llvm(tmp_path):
  (a := tmp_path / "a").mkdir(); (b := tmp_path / "b").mkdir()
  libs = {n: a / n for n in ("libLLVM.so.19.1", "libLLVM.so.22.1", "libLLVM-21.so", "libLLVM-15.so.1", "libLLVMfoo.so.30")}
  for p in libs.values(): p.write_bytes(b"")
  (b / "libLLVM.so.23.1").symlink_to(tmp_path / "gone")   # a dangling link is not a library
  assert ci.find_llvm(20, [str(b), str(a)]) == str(libs["libLLVM.so.22.1"])
  libs["libLLVM.so.22.1"].unlink()
  assert ci.find_llvm(20, [str(a)]) == str(libs["libLLVM-21.so"])
  with pytest.raises(ci.CIError, match=r"gfx950 needs libLLVM >= 30 .*set LLVM_PATH"): ci.find_llvm(30, [str(a)])

def test_cpu_compiler_picks_the_newest_clang_nn_only_when_needed(tmp_path):
  for n in ("clang-14", "clang-19", "clang-tidy-19", "clang-3x"): (tmp_path / n).write_text("#!/bin/sh\n"); (tmp_path / n).chmod(0o755)
  assert ci.cpu_compiler({"PATH": str(tmp_path)}) == {"CC": str(tmp_path / "clang-19")}
  assert ci.cpu_compiler({"PATH": str(tmp_path), "CC": "gcc"}) == {}
  (tmp_path / "clang").write_text("#!/bin/sh\n"); (tmp_path / "clang").chmod(0o755)
  assert ci.cpu_compiler({"PATH": str(tmp_path)}) == {}
  assert ci.cpu_compiler({"PATH": str(tmp_path / "empty")}) == {}

def test_steps_that_need_tinygrads_git_tree_say_what():
  needs = {(j.name, s.args[0]): s.needs for j in ci.JOBS for s in j.steps if s.needs}
  assert needs[("testamdasm", "test/amd/")] == "test/amd" and needs[("testamdasm", "extra/gemm/amd_copy_matmul.py")] == "extra/gemm/amd_uop_matmul.py"
  assert {n for (j, _), n in needs.items() if j == "hcq2"} == {"extra/hcq2"} and sum(j == "hcq2" for j, _ in needs) == 4

def test_from_json_rejects_malformed_tables():
  with pytest.raises(ValueError, match="job j: malformed"): from_json([{"name": "j", "devs": {"D": {}}, "steps": [{"kind": "bash", "args": []}]}])
  with pytest.raises(ValueError, match="job #0: malformed"): from_json([{"devs": {}}])

# *** the command, for real, on a fake test tree ***

TREE = {
  "test/test_a.py": """
    import os, pytest
    def test_env(): assert (os.environ["DEV"], os.environ.get("X"), os.environ.get("LEAK")) in (("FAKE0", None, None), ("FAKE1", "1", None))
    def test_fails(): assert 1 + 1 == 3
    @pytest.mark.skip(reason="no hipcc")
    def test_skipped(): pass
    @pytest.mark.parametrize("n", [1, 2])
    def test_param(n): assert n in (1, 2)""",
  "test/test_crash.py": """
    import os, signal
    def test_first(): pass
    def test_second(): os.kill(os.getpid(), signal.SIGABRT)
    def test_third(): pass""",
  # stands in for a process that used a mock for 0.2 s: mockgpu.usage appends its totals to the step's usage file at exit
  "test/ok.py": "import os, sys, time; from mockgpu.usage import timed\nwith timed('device_s'): time.sleep(0.2)\n"
                "sys.exit(0 if os.environ['STEPV'] == 'on' else 3)",
  "test/bad.py": "raise SystemExit('bad.py: the device said no')",
  "test/llvm.py": "import os, sys; print(os.environ.get('LLVM_PATH')); sys.exit(0 if os.environ.get('LLVM_PATH') == sys.argv[1] else 1)",
  "test/hang.py": """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open(sys.argv[1], "w").write(str(child.pid))
    time.sleep(120)""",
}

def _table(pidfile:Path) -> list[dict]:
  return [{"name": "fake", "devs": {"FAKE0": {}, "FAKE1": {"X": "1"}}, "steps": [
            {"kind": "pytest", "args": ["test/test_a.py"]},
            {"kind": "script", "args": ["test/ok.py"], "env": {"STEPV": "on"}},
            {"kind": "script", "args": ["test/bad.py"]},
            {"kind": "pytest", "args": ["test/amd/"], "needs": "test/amd"}]},
          {"name": "crashy", "devs": {"FAKE0": {}}, "env": {"LEAK": "crashy"}, "steps": [{"kind": "pytest", "args": ["test/test_crash.py"]}]},
          {"name": "hang", "devs": {"FAKE0": {}}, "steps": [{"kind": "script", "args": ["test/hang.py", str(pidfile)]}]},
          {"name": "llvm", "devs": {"FAKE::gfx950": {}}, "steps": [{"kind": "script", "args": ["test/llvm.py", "/found/libLLVM.so.21"]}]}]

def _mockgpu_ci(*args, cwd) -> subprocess.CompletedProcess:
  env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")} | {"DEV": "LEAKED", "LEAK": "1",
         "PYTEST_ADDOPTS": "-p no:hypothesispytest"}   # the caller's env reaches the steps; hypothesis' plugin is slow to import
  return subprocess.run([sys.executable, "-m", "mockgpu", "ci", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

@pytest.fixture
def tree(tmp_path):
  for name, src in TREE.items():
    (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "tree" / name).write_text(textwrap.dedent(src).lstrip())
  (tmp_path / "table.json").write_text(json.dumps(_table(tmp_path / "hang.pid")))
  return tmp_path

def _outcomes(res:dict) -> dict[str, dict[str, str]]:
  return {r["name"]: {n: t["outcome"] for s in r["steps"] for n, t in s["tests"].items()} for r in res["rows"]}

@pytest.mark.parametrize("jobs", ["1", "3"])   # -j 3: the rows run at once; the result and the table keep the job table's order
def test_ci_end_to_end_on_a_fake_tree(tree, jobs):
  p = _mockgpu_ci("--tests", "tree", "--table", "table.json", "--json", "out.json", "--job", "fake", "--job", "crashy", "-j", jobs, cwd=tree)
  assert p.returncode == 1, p.stderr
  res = json.loads((tree / "out.json").read_text())
  assert res["version"] == 1 and res["tinygrad"] == "0.14.0" and res["mockgpu"] == "0.1.0" and res["tests"] == str(tree / "tree")
  fake = {"test/test_a.py::test_env": "passed", "test/test_a.py::test_fails": "failed", "test/test_a.py::test_skipped": "skipped",
          "test/test_a.py::test_param[1]": "passed", "test/test_a.py::test_param[2]": "passed", "python test/bad.py": "failed",
          "STEPV=on python test/ok.py": "passed"}
  assert _outcomes(res) == {"fake[FAKE0]": fake, "fake[FAKE1]": fake, "crashy[FAKE0]": {"test/test_crash.py::test_first": "passed",
                                                                                         "pytest test/test_crash.py": "failed"}}
  steps = {s["step"]: s for s in res["rows"][0]["steps"]}
  assert steps["pytest test/amd/"]["skipped"].startswith("needs test/amd (in a tinygrad checkout)")
  assert steps["python test/bad.py"]["exit_code"] == 1 and steps["python test/bad.py"]["tests"]["python test/bad.py"]["reason"] == \
    "exit code 1: bad.py: the device said no"
  assert steps["pytest test/test_a.py"]["tests"]["test/test_a.py::test_fails"]["reason"] == "assert (1 + 1) == 3"
  assert steps["pytest test/test_a.py"]["command"] == [sys.executable, "-m", "pytest", "test/test_a.py"]
  # mockgpu's own seconds: only ok.py used a mock; processes that never did report nothing (null, "-" in the table)
  assert 0.2 <= steps["STEPV=on python test/ok.py"]["mock"]["device_s"] < 30 and steps["STEPV=on python test/ok.py"]["mock"]["driver_s"] == 0
  assert steps["python test/bad.py"]["mock"] is None and steps["pytest test/test_a.py"]["mock"] is None
  # the crashed pytest (SIGABRT, no junit) still reports what it ran and names the test that was running
  crash = res["rows"][2]["steps"][0]
  assert crash["exit_code"] == -6 and crash["tests"]["pytest test/test_crash.py"]["reason"].startswith(
    "killed by SIGABRT while running test/test_crash.py::test_second before pytest wrote its junit report: Fatal Python error: Aborted")
  table = p.stdout.splitlines()
  assert table[0].split() == ["job", "DEV", "passed", "failed", "skipped", "wall", "s", "mock", "s"]
  assert 0.2 <= float(table[1].split()[-1]) < 30 and table[3].split()[-1] == "-"
  assert [l.split()[:5] for l in table[1:4]] == [["fake", "FAKE0", "4", "2", "1"], ["fake", "FAKE1", "4", "2", "1"],
                                                 ["crashy", "FAKE0", "1", "1", "0"]]
  assert table[4].split()[:4] == ["total", "9", "5", "2"]
  assert "fake[FAKE1] test/test_a.py::test_fails: failed: assert (1 + 1) == 3" in p.stdout and "steps not run:" in p.stdout
  assert p.stderr.count("ci [") == 9 and p.stderr.count("ci   -> ") == 9
  if jobs == "1": assert "ci [9/9] crashy[FAKE0] step 1/1: pytest test/test_crash.py" in p.stderr
  else: assert re.search(r"ci   -> crashy\[FAKE0\]: 1 passed, 1 failed, 0 skipped in [\d.]+ s", p.stderr), p.stderr

def _alive(pid:int, marker:bytes) -> bool:
  try: return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z" and marker in Path(f"/proc/{pid}/cmdline").read_bytes()
  except (FileNotFoundError, ProcessLookupError): return False

def test_ci_kills_a_hung_step_with_its_process_group(tree):
  p = _mockgpu_ci("--tests", "tree", "--table", "table.json", "--job", "hang", "--timeout", "6", "--json", "out.json", cwd=tree)
  assert p.returncode == 1, p.stderr
  step = json.loads((tree / "out.json").read_text())["rows"][0]["steps"][0]
  assert step["timeout"] and step["tests"][step["step"]]["reason"].startswith("timeout after 6 s (process group killed)")
  child = int((tree / "hang.pid").read_text())   # the script's own child, in its process group
  for _ in range(200):   # SIGKILL is delivered asynchronously: a loaded machine may take a moment to reap it
    if not _alive(child, b"time.sleep(120)"): break
    time.sleep(0.1)
  assert not _alive(child, b"time.sleep(120)") and "(TIMEOUT)" in p.stderr

def test_ci_interrupt_kills_running_steps_and_starts_no_more(tree):
  """Ctrl-C while a row runs in its thread: the hung step's process group is killed, the queued row (llvm) never starts, and
  the command says it was interrupted (exit 130)."""
  env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")} | {"PYTEST_ADDOPTS": "-p no:hypothesispytest"}
  p = subprocess.Popen([sys.executable, "-m", "mockgpu", "ci", "--tests", "tree", "--table", "table.json", "--job", "hang", "--job", "llvm"], cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  for _ in range(600):   # until the hang step's own child exists
    if (tree / "hang.pid").exists() and (tree / "hang.pid").read_text(): break
    time.sleep(0.1)
  child = int((tree / "hang.pid").read_text())
  p.send_signal(signal.SIGINT)
  out, err = p.communicate(timeout=120)
  assert p.returncode == 130 and "mockgpu ci: interrupted" in err, err[-2000:]
  for _ in range(200):
    if not _alive(child, b"time.sleep(120)"): break
    time.sleep(0.1)
  assert not _alive(child, b"time.sleep(120)")
  assert err.count("ci [") == 1 and "llvm" not in err, err

def test_ci_baseline_and_selection(tree):
  sel = ("--tests", "tree", "--table", "table.json", "--job", "fake", "--dev", "FAKE1")
  p = _mockgpu_ci(*sel, "--json", "base.json", cwd=tree)
  assert p.returncode == 1 and list(_outcomes(json.loads((tree / "base.json").read_text()))) == ["fake[FAKE1]"]
  p = _mockgpu_ci(*sel, "--step", "python", "--baseline", "base.json", cwd=tree)   # bad.py fails as in the baseline: no regression
  assert p.returncode == 0 and "0 regression(s)" in p.stdout and "python test/bad.py: failed" in p.stdout, p.stdout + p.stderr
  (tree / "tree/test/ok.py").write_text("raise SystemExit(5)")
  p = _mockgpu_ci(*sel, "--baseline", "base.json", "-k", "param and not 2", cwd=tree)
  assert p.returncode == 1, p.stdout + p.stderr
  assert p.stdout.split("regression(s)")[0].split()[-1] == "1" and "fake[FAKE1] STEPV=on python test/ok.py: failed: exit code 5" in p.stdout
  assert _mockgpu_ci(*sel, "--step", "test_a", "-n", "2", "-k", "param", "--json", "x.json", cwd=tree).returncode == 0
  res = json.loads((tree / "x.json").read_text())
  assert _outcomes(res) == {"fake[FAKE1]": {"test/test_a.py::test_param[1]": "passed", "test/test_a.py::test_param[2]": "passed"}}
  assert res["rows"][0]["steps"][0]["command"][-4:] == ["-k", "param", "-n", "2"]

def test_ci_usage_errors(tree, monkeypatch, capsys):
  monkeypatch.chdir(tree)
  def run(*args) -> tuple[int, str, str]: return (ci.main(["--table", "table.json", *args]), *capsys.readouterr())
  rc, _, err = run("--tests", ".")
  assert rc == 2 and err.startswith("mockgpu ci: --tests .: no test/ folder there")
  assert run("--tests", "tree", "--job", "nope")[0::2] == \
    (2, "mockgpu ci: no job variant matches --job ['nope'] --dev None; see `mockgpu ci --list`\n")
  assert run("--tests", "tree", "--step", "zzz")[0::2] == (2, "mockgpu ci: no step of the selected jobs contains 'zzz'; see `mockgpu ci --list`\n")
  rc, out, _ = run("--list", "--tests", "tree", "--job", "fake")
  assert rc == 0 and out.splitlines()[:2] == ["fake[FAKE0]  env: DEV=FAKE0", "  pytest test/test_a.py"]
  assert "  pytest test/amd/  [needs test/amd: missing, will be skipped]" in out.splitlines()
  (tree / "bad.json").write_text("{}")
  assert run("--tests", "tree", "--baseline", "bad.json")[0::2] == \
    (2, "mockgpu ci: --baseline bad.json: not a `mockgpu ci --json` result (no rows list)\n")

def test_ci_sets_llvm_path_for_gfx950_only_when_the_caller_has_none(tree, monkeypatch, capsys):
  monkeypatch.chdir(tree)
  monkeypatch.delenv("LLVM_PATH", raising=False)
  monkeypatch.setattr(ci, "find_llvm", lambda: "/found/libLLVM.so.21")
  assert ci.main(["--table", "table.json", "--tests", "tree", "--job", "llvm", "--json", "l.json"]) == 0, capsys.readouterr()
  assert json.loads((tree / "l.json").read_text())["rows"][0]["steps"][0]["env"]["LLVM_PATH"] == "/found/libLLVM.so.21"
  monkeypatch.setenv("LLVM_PATH", "/mine/libLLVM.so.22")
  monkeypatch.setattr(ci, "find_llvm", lambda: pytest.fail("LLVM_PATH was set: no search"))
  assert ci.main(["--table", "table.json", "--tests", "tree", "--job", "llvm"]) == 1   # the caller's LLVM_PATH reaches the step
  assert "exit code 1: /mine/libLLVM.so.22" in capsys.readouterr().out
  monkeypatch.delenv("LLVM_PATH")
  monkeypatch.setattr(ci, "find_llvm", lambda: (_ for _ in ()).throw(ci.CIError("gfx950 needs libLLVM >= 20 ...")))
  assert ci.main(["--table", "table.json", "--tests", "tree", "--job", "llvm"]) == 2
  assert capsys.readouterr().err == "mockgpu ci: gfx950 needs libLLVM >= 20 ...\n"
