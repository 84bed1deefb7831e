"""The oob fuzzer's strict-mode executor (AMD-STRICT: the mock AMD GPU with MOCKGPU_STRICT=1 and byte-exact buffer allocations)
against the faithful one (AMD: whole pages mapped): an access outside the buffer but inside its page faults only in strict
mode (a store as a GPU write fault, a load as the mock's strict-mode read report), in bounds both are clean, and the
worker keeps its GPU after a strict read report."""
import pytest
from mockgpu.tinygrad.fuzz.amdexec import parse_strict_read, strict_slack, GUARD
from mockgpu.tinygrad.fuzz.kexec import amd_worker
from mockgpu.tinygrad.fuzz.oob import OobFuzzer, expected_fault, STRICT

def _case(idx, size, dtype="int32", mode="load"):
  return {"dims": [8], "axes": ["GLOBAL"], "ibuf": None, "mode": mode, "size": size, "idx": idx, "gate": None, "dtype": dtype, "opts": []}

@pytest.mark.parametrize("case,amd,strict,kind", [
  (_case(["r", 0], 8), "clean", "clean", None),
  (_case(["r", 0], 7), "clean", "fault", "strict-read"),                              # index 7 of 7: the alignment padding
  (_case(["r", 0], 7, mode="store"), "clean", "fault", "write"),
  (_case(["+", ["r", 0], ["c", 1]], 8, "int8"), "clean", "fault", "strict-read"),     # byte 8 of 8: 24 bytes of padding follow
  (_case(["+", ["r", 0], ["c", -1]], 8, "int8"), "clean", "fault", "strict-read"),    # byte -1: the page slack in front
  (_case(["+", ["r", 0], ["c", -1]], 8, "int8", "store"), "clean", "fault", "write"),
])
def test_strict_mode_is_byte_exact(case, amd, strict, kind):
  fz = OobFuzzer(dynamic=["AMD", STRICT])
  v = fz.verdicts(case)
  assert (v["AMD"], v[STRICT]) == (amd, strict) and fz.check(case) is None
  assert expected_fault(case, fz.executors()[1]) is (strict == "fault")
  if kind is not None: assert v[f"{STRICT}:detail"].startswith(f"{kind} fault at addr=0x")  # the parsed report (amdexec.FaultInfo)

def test_strict_read_keeps_the_gpu():
  w = amd_worker()  # one worker serves AMD and AMD-STRICT
  w.close()  # a fresh worker: earlier tests in this process may have retired some of its GPUs with real faults
  fz = OobFuzzer(dynamic=[STRICT])
  faults, starts = w.faults, w.starts
  assert [fz.verdicts(_case(["r", 0], 7))[STRICT] for _ in range(10)] == ["fault"] * 10
  assert (w.faults - faults, w.starts - starts) == (10, 1)  # reads outside the buffer do not retire a GPU: one start for all ten

def test_parse_strict_read_and_slack():
  line = ("mockgpu: PM4Queue: 1 read(s) outside every allocation but inside its mapped page (strict mode); the first: read fault in "
          "global: addr=0x7f3543effffc size=4 arch=gfx1100 pc=0x24 (abs 0x1000) lane=3 wave=0 workgroup=(0, 0, 0) inst='s_load_b32' raw=00")
  info = parse_strict_read(line)
  assert (info.kind, info.space, info.addr, info.lane, info.pc, info.inst) == ("strict-read", "global", 0x7f3543effffc, 3, 0x24, "s_load_b32")
  assert parse_strict_read("nothing here") is None and strict_slack(28) == (0, 0, GUARD)
