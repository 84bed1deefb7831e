"""The oob fuzzer on local (LDS, DEFINE_LOCAL) data buffers: an injected static check blind to LDS and an injected lowering that
puts every LDS index one element past its buffer are each found by a campaign and minimised (default budget) to a one-element
LDS; hand-written LDS kernels give exact verdicts (PYTHON byte-exact, the mock AMD GPU by its 512-byte LDS granule); the
float16-LDS spec failure on PYTHON (Python < 3.12 emulates float16; docs/findings.md F24) is pinned."""
import subprocess, sys
import pytest
from tinygrad.dtype import AddrSpace
from tinygrad.helpers import Target
from tinygrad.runtime.ops_python import PythonRenderer
from tinygrad.uop.ops import Ops, UPat, PatternMatcher
from mockgpu.tinygrad.fuzz.amdexec import lds_slack
from mockgpu.tinygrad.fuzz.core import CampaignConfig, run_campaign
from mockgpu.tinygrad.fuzz.kexec import executor, python_executor
from mockgpu.tinygrad.fuzz.oob import OobFuzzer, static_check, truth, expected_fault

def _campaign(fz, cases):
  # a generous minimisation budget keeps the minimised case independent of the machine's load; the checks are bounded below
  # (measured: 20 checks, ~28 s on the mock GPU, inside the default --minimise-time 60)
  return run_campaign(fz, CampaignConfig(seed=0, time=None, cases=cases, out=None, max_failures=1, ignore=("static-miss:vectorized",),
                                         minimise_time=3600))

def _blind_to_lds(ast):
  return False if any(u.op is Ops.BUFFER and u.addrspace is AddrSpace.LOCAL for u in ast.toposort()) else static_check(ast)

class _LdsPlusOne(PythonRenderer):
  """Lowers every LDS index one element too far (the injected bug)."""
  extra_matcher = PatternMatcher([(UPat(Ops.INDEX, src=(UPat(name="b"), UPat.var("i")), name="x"),
    lambda x, b, i: x.replace(src=(b, i + 1), tag="lds+1") if x.tag is None and b.addrspace is AddrSpace.LOCAL else None)]) + \
    (PythonRenderer.extra_matcher or PatternMatcher([]))

ONE_LDS = {"dims": [], "axes": [], "ibuf": None, "mode": "load", "size": 1, "gate": None, "dtype": "int32", "space": "local"}

@pytest.mark.slow   # ~20 s; the LDS verdict tests and test_oob.py's campaigns run by default
def test_static_check_blind_to_lds_is_found_and_minimised():
  rep = _campaign(OobFuzzer(static=_blind_to_lds), 300)   # PYTHON and the mock AMD GPU, as the CLI runs it
  assert [(r.index, r.failure.cls, r.minimised_failure.cls) for r in rep.failures] == [(5, "static-miss", "static-miss")]
  assert rep.failures[0].minimised == {**ONE_LDS, "idx": ["c", -1]} and rep.failures[0].shrink_checks <= 30

def test_lds_index_one_past_the_end_is_found_and_minimised():
  fz = OobFuzzer(dynamic=[], extra=[python_executor("LDS+1", lambda: _LdsPlusOne(Target("PYTHON")))])
  rep = _campaign(fz, 300)
  assert [(r.index, r.failure.cls, r.minimised_failure.cls) for r in rep.failures] == [(2, "dynamic-fault:LDS+1", "dynamic-fault:LDS+1")]
  # the fill loop's store to lds[0] of a one-element LDS lands on lds[1]
  assert rep.failures[0].minimised == {**ONE_LDS, "idx": ["c", 0]}
  assert rep.failures[0].minimised_failure.message == \
    "truth=in-bounds static=False LDS+1=fault (LDS+1: store out of bounds, size is 1, access is 1, value is 0)"

def _lds(off, mode="load"):
  return {"dims": [2, 4], "axes": ["GLOBAL", "LOCAL"], "ibuf": None, "mode": mode, "size": 4, "idx": ["+", ["r", 1], ["c", off]],
          "gate": None, "dtype": "int32", "space": "local", "opts": []}

@pytest.mark.parametrize("off,want", [
  (0, (False, False, "clean", "clean")),
  (1, (True, True, "fault", "clean")),      # lds[4] of 4 int32: bytes 16..19 lie in the 512-byte LDS allocation
  (124, (True, True, "fault", "clean")),    # lanes read bytes 496..511: still inside
  (125, (True, True, "fault", "fault")),    # lane 3 reads byte 512: the emulator faults
  (-1, (True, True, "fault", "fault")),     # lds[-1]: the address wraps below 0
])
def test_lds_kernel_verdicts(off, want):
  v = OobFuzzer().verdicts(case:=_lds(off))
  assert (v["truth"], v["static"], v["PYTHON"], v["AMD"]) == want
  assert OobFuzzer().check(case) is None
  # inside the allocation nothing may fault; outside it LLVM may drop an access it proves out of bounds, so it is left open
  assert expected_fault(case, executor("AMD")) is (False if 0 <= off <= 124 else None)

def test_lds_store_and_gate():
  v = OobFuzzer().verdicts({**_lds(1, "store"), "gate": ["<", ["r", 1], ["c", 3]]})  # lds[r1+1] only for r1 < 3
  assert (v["truth"], v["static"], v["PYTHON"], v["AMD"]) == (False, False, "clean", "clean")
  v = OobFuzzer().verdicts(_lds(1, "store"))
  assert (v["truth"], v["static"], v["PYTHON"]) == (True, True, "fault")

def test_lds_slack_is_the_granule():
  assert [lds_slack(n) for n in (1, 16, 512, 513)] == [(0, 511, 1 << 31), (0, 496, 1 << 31), (0, 0, 1 << 31), (0, 511, 1 << 31)]
  assert truth(_lds(125)) == (True, 125, 128)

@pytest.mark.skipif(sys.version_info >= (3, 12), reason="PythonRenderer emulates float16 only on Python < 3.12")
def test_float16_lds_fails_tinygrads_spec_on_python(tmp_path):
  # new finding: the float16 emulation rewrites a LOCAL float16 buffer to float32 and leaves AFTER(CAST) behind, which the spec rejects
  f = OobFuzzer(dynamic=["PYTHON"]).check({**_lds(0), "dtype": "float16"})
  assert f is not None and f.cls == "dynamic-crash:PYTHON"
  assert "UOp verification failed at" in f.message
  assert "on Ops.AFTER dtypes.float 2 [(Ops.CAST, dtypes.float, dtypes.float), (Ops.BARRIER" in f.message
  # the campaign's minimised case (seed 11): its repro script exits 1 naming the error
  (p:=tmp_path / "repro.py").write_text(OobFuzzer(dynamic=["PYTHON"]).repro({**ONE_LDS, "idx": ["c", 0], "dtype": "float16"}))
  r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=120)
  assert r.returncode == 1 and "PYTHON raised RuntimeError: UOp verification failed at 12 on Ops.AFTER dtypes.float 2" in r.stdout
  # F24 through the Tensor API: a float16 max (its REG accumulator) on DEV=PYTHON; elementwise float16 works
  import numpy as np
  from tinygrad import Tensor
  a = Tensor(np.arange(16, dtype=np.float32), device="PYTHON").half()
  assert (a + 1).float().tolist()[:3] == [1.0, 2.0, 3.0]
  with pytest.raises(RuntimeError, match=r"UOp verification failed at \d+ on Ops.AFTER dtypes.float 3 \[\(Ops.CAST, dtypes.float, dtypes.float\)"):
    a.max().float().item()
