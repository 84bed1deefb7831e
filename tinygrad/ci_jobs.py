"""tinygrad's CI jobs that run on mock GPUs, as data (its .github/workflows/test.yml at the commit of the 0.14.0 release line).

`mockgpu ci` runs these against mockgpu. A job has one row per DEV variant (`testamd[MOCKKFD+AMD::gfx1201]`); the job's env,
then the variant's env, then the step's env are applied on top of the caller's. A step is a pytest run (`args` go to
`python -m pytest`) or a script (`args` go to `python`). `needs` names a path the test tree must contain, else the step is
skipped with a note: some steps need parts of tinygrad's git repository that neither the PyPI wheel nor a test-only tree
carries (its assembler tests `test/amd/`; `extra/hcq2/`, which tinygrad's ops_amd imports when HCQ2=1;
`extra/gemm/amd_uop_matmul.py`, which amd_copy_matmul.py imports).
"""
from __future__ import annotations
from dataclasses import dataclass, field

__all__ = ["Step", "Job", "JOBS", "FAST", "BENCH", "SUITES", "from_json"]

@dataclass(frozen=True)
class Step:
  kind: str                                     # "pytest" or "script"
  args: tuple[str, ...]
  env: dict[str, str] = field(default_factory=dict)
  needs: str = ""                               # path relative to the test tree that must exist
  @property
  def label(self) -> str:
    """The step as tinygrad's workflow writes it, e.g. `TRANSCENDENTAL=2 pytest test/backend/test_ops.py::...`."""
    return " ".join([f"{k}={v}" for k, v in self.env.items()] + ["pytest" if self.kind == "pytest" else "python", *self.args])

@dataclass(frozen=True)
class Job:
  name: str
  devs: dict[str, dict[str, str]]               # DEV -> extra env of that variant
  steps: tuple[Step, ...]
  env: dict[str, str] = field(default_factory=dict)

def pytest(*args, needs="", **env) -> Step: return Step("pytest", args, env, needs)
def script(*args, needs="", **env) -> Step: return Step("script", args, env, needs)

_OPS = "test/backend/test_ops.py"
_AMD_DEVS = {f"MOCKKFD+AMD:{c}:{a}": {} for c in ("", "LLVM") for a in ("gfx1100", "gfx1201", "gfx950")}
JOBS: tuple[Job, ...] = (
  Job("testamd", _AMD_DEVS, (
    pytest(*[f"test/backend/{t}.py" for t in ("test_ops", "test_dtype", "test_dtype_alu", "test_linearizer", "test_randomness", "test_jit",
                                               "test_graph", "test_multitensor")],
           "test/device/test_hcq.py", "test/backend/test_asm_gemm.py::TestAsmGEMM"),
    pytest("test/unit/test_disk_tensor.py", "-k", "test_copy_from_disk"),
    pytest(*[f"{_OPS}::TestOps::test_{f}" for f in ("sin", "cos", "tan", "exp", "log")], TRANSCENDENTAL="2"),
    script("test/test_tiny.py", "TestTiny.test_plus", DEBUG="5", FORWARD_ONLY="1")), {"SKIP_SLOW_TEST": "1"}),
  Job("testamdasm", {"MOCKKFD+AMD": {}, "MOCKKFD+AMD:LLVM": {}}, (
    pytest("test/amd/", needs="test/amd"),
    script("extra/gemm/amd_asm_matmul.py", N="256"),
    script("extra/gemm/amd_copy_matmul.py", N="256", needs="extra/gemm/amd_uop_matmul.py"),
    script("test/device/test_amd_llvm.py"))),
  Job("hcq2", {"MOCKKFD+AMD": {}}, (   # HCQ2=1 makes tinygrad's ops_amd import extra.hcq2.ops_amd2
    script("test/test_tiny.py", needs="extra/hcq2"),
    pytest("test/backend/test_multitensor.py", needs="extra/hcq2"),
    script("test/unit/test_jit.py", needs="extra/hcq2"),
    pytest("test/device/test_hcq2.py", needs="extra/hcq2")), {"HCQ_RUNTIME_DEV": "PYTHON", "HCQ2": "1", "FORWARD_ONLY": "1"}),
  # MOCKPCI and MOCKUSB: gfx950 with its firmware installed (mockgpu firmware)
  Job("testmockam", {"MOCKPCI+AMD": {}}, (
    script("test/test_tiny.py"),
    script("test/test_tiny.py", GMMU="0", DEV="MOCKUSB+AMD"),
    pytest("test/device/test_hcq.py"),
    pytest("test/unit/test_disk_tensor.py", "-k", "test_copy_from_disk"))),
  Job("testnvidia", {"MOCK+CUDA:PTX": {}, "MOCK+NV": {"SKIP_SLOW_TEST": "1"}}, (
    pytest("test/backend", "--ignore", "test/backend/test_multitensor.py"),
    script("test/test_tiny.py", "TestTiny.test_plus", DEBUG="5")), {"FORWARD_ONLY": "1"}),
)

# a fast slice for a project's own CI (mockgpu's runs it on every submission): tinygrad's test_tiny on every mock DEV of the
# table (MOCKPCI+AMD and MOCKUSB+AMD need gfx950's firmware in tinygrad's cache: `mockgpu firmware`; MOCKUSB with GMMU=0 as
# tinygrad's testmockam runs it: as long as the MOCKPCI row, measured side by side), its HCQ and JIT tests on the default
# one; a few minutes on 2 cores
FAST: tuple[Job, ...] = (
  Job("tiny", {**_AMD_DEVS, "MOCKPCI+AMD": {}, "MOCKUSB+AMD": {"GMMU": "0"}, "MOCK+CUDA:PTX": {}, "MOCK+NV": {}}, (pytest("test/test_tiny.py"),)),
  Job("hcq-jit", {"MOCKKFD+AMD": {}}, (pytest("test/device/test_hcq.py"), pytest("test/backend/test_jit.py"))),
)
# the two steps whose wall time the in-repo mock is measured by (test_ops 218 s, test_jit 44 s, 2 cores, -n 2): `--suite bench`
BENCH: tuple[Job, ...] = (
  Job("bench", {"MOCKKFD+AMD": {}}, (pytest(_OPS), pytest("test/backend/test_jit.py")), {"SKIP_SLOW_TEST": "1"}),
)
SUITES = {"tinygrad": JOBS, "fast": FAST, "bench": BENCH}   # `mockgpu ci --suite NAME`

def from_json(data:list[dict]) -> tuple[Job, ...]:
  """A job table from its JSON form (`mockgpu ci --table FILE`).

  Args:
    data: a list of `{"name", "devs": {DEV: {env}}, "env": {..}, "steps": [{"kind": "pytest"|"script", "args": [..], "env": {..},
      "needs": ".."}]}`; `env` and `needs` are optional.
  Returns:
    the jobs, in file order.
  Raises:
    ValueError: naming the job and field that is malformed.
  """
  jobs = []
  for i, j in enumerate(data):
    name = j.get("name", f"#{i}") if isinstance(j, dict) else f"#{i}"
    try:
      steps = tuple(Step(s["kind"], tuple(map(str, s["args"])), {k: str(v) for k, v in s.get("env", {}).items()}, s.get("needs", ""))
                    for s in j["steps"])
      if bad := [s.kind for s in steps if s.kind not in ("pytest", "script")]: raise ValueError(f"step kind {bad[0]!r} is not pytest or script")
      jobs.append(Job(str(j["name"]), {str(d): {k: str(v) for k, v in e.items()} for d, e in j["devs"].items()}, steps,
                      {k: str(v) for k, v in j.get("env", {}).items()}))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
      raise ValueError(f"job table: job {name}: malformed ({type(e).__name__}: {e}); see docs/ci.md for the format") from None
  return tuple(jobs)
