"""The oob fuzzer over every buffer dtype, vectorised (upcast) and gated accesses, LOCAL axes and explicit opts: exact verdicts
of hand-written kernels (static CHECK_OOB, the PYTHON emulator, the mock AMD GPU's byte model: one element past an 8-element
buffer faults only once the buffer fills its 32-byte alignment, and always in strict mode), F12 through upcast loads of
global and LDS buffers, and the generator's coverage."""
import numpy as np
import pytest
from mockgpu.tinygrad.fuzz.core import case_rng
from mockgpu.tinygrad.fuzz.kexec import executor
from mockgpu.tinygrad.fuzz.oob import OobFuzzer, DTYPES, arrays, expected_fault, generate, itemsize

def _case(dtype="int32", mode="load", off=1, size=8, **kw):
  return {"dims": [8], "axes": ["GLOBAL"], "ibuf": None, "mode": mode, "size": size, "idx": ["+", ["r", 0], ["c", off]], "gate": None,
          "dtype": dtype, "opts": [], **kw}

# one 1-, one 4- and one 8-byte dtype in the default suite (~8 s each on the mock GPU), every dtype in the slow one
@pytest.mark.parametrize("dtype", [d if d in ("int8", "int32", "float64") else pytest.param(d, marks=pytest.mark.slow) for d in DTYPES])
def test_every_dtype_off_by_one(dtype):
  # index 8 of 8 elements: the AMD buffer ends at a 32-byte boundary, so byte 8*itemsize faults exactly when 8*itemsize >= 32;
  # in strict mode (byte-exact allocations) it always does: a store faults, a load is reported
  amd = "fault" if itemsize(_case(dtype)) >= 4 else "clean"
  for mode in ("load", "store"):
    v = OobFuzzer().verdicts(c:=_case(dtype, mode))
    assert (v["truth"], v["static"], v["PYTHON"], v["AMD"], v["AMD-STRICT"]) == (True, True, "fault", amd, "fault")
    assert expected_fault(c, executor("AMD")) is (amd == "fault") and OobFuzzer().check(c) is None
    v = OobFuzzer().verdicts(_case(dtype, mode, gate=["<", ["r", 0], ["c", 7]]))  # the same index, gated in bounds
    assert (v["truth"], v["static"], v["PYTHON"], v["AMD"], v["AMD-STRICT"]) == (False, False, "clean", "clean", "clean")

def test_arrays_per_dtype():
  assert [(a.dtype.name, a.size) for a in arrays(_case("bfloat16"))] == [("uint16", 8), ("uint16", 8)]
  assert [(a.dtype.name, a.size) for a in arrays(_case("bool", "store", space="local"))] == [("bool", 1)]
  assert {k: itemsize(_case(k)) for k in ("bool", "int8", "float16", "bfloat16", "uint32", "float64")} == \
    {"bool": 1, "int8": 1, "float16": 2, "bfloat16": 2, "uint32": 4, "float64": 8}

@pytest.mark.parametrize("space", ["global", "local"])
def test_upcast_load_escapes_check_oob(space):
  # F12 through an explicit UPCAST opt: the 4-wide vector load of index 0..7 from 7 elements is not checked
  c = {**_case(off=0, size=7, opts=[["UPCAST", 0, 4]]), "space": space}
  f = OobFuzzer().check(c)
  strict = "fault" if space == "global" else "clean"  # strict mode is byte-exact for global memory; LDS keeps its granule
  assert f is not None and f.cls == "static-miss:vectorized"
  assert f.message == f"truth=OOB static=False PYTHON=fault AMD=clean AMD-STRICT={strict}"
  assert OobFuzzer().check({**c, "mode": "store"}) is None  # the upcast store is flagged statically
  v = OobFuzzer().verdicts({**c, "opts": [["UPCAST", 0, 8]]})  # an 8-wide access past the end: tinygrad's shape check refuses it
  assert (v["static"], v["PYTHON"], v["AMD"]) == (True, "rejected", "rejected")

def test_opts_that_do_not_apply_are_counted_not_failed():
  fz = OobFuzzer(dynamic=["PYTHON"])
  c = {**_case(), "axes": ["LOOP"], "opts": [["UPCAST", 0, 4]]}  # tinygrad upcasts GLOBAL/LOCAL/WEAK axes, not LOOP
  assert fz.verdicts(c)["static"] == "opts" and fz.check(c) is None and fz.stats() == {"opts_rejected": 1}

def test_local_axes_and_local_opt():
  c = {**_case(off=0), "dims": [2, 4], "axes": ["GLOBAL", "LOCAL"], "idx": ["+", ["*", ["r", 0], ["c", 4]], ["r", 1]]}
  # the contiguous UPCAST of the LOCAL axis makes the load a vector load: F12 (static False); a strided UPCAST stays scalar
  for opts, static in (([], True), ([["LOCAL", 0, 2]], True), ([["UPCAST", 0, 2]], True), ([["UPCAST", 1, 2]], False)):
    v = OobFuzzer().verdicts({**c, "opts": opts})
    assert (v["truth"], v["static"], v["PYTHON"], v["AMD"]) == (False, False, "clean", "clean")
    v = OobFuzzer().verdicts({**c, "opts": opts, "size": 7})
    assert (v["truth"], v["static"], v["PYTHON"], v["AMD"]) == (True, static, "fault", "clean")
    assert OobFuzzer().verdicts({**c, "opts": opts, "size": 7, "mode": "store"})["static"] is True

def test_generator_covers_the_new_dimensions():
  cases = [generate(case_rng(7, i)) for i in range(400)]
  assert {c["dtype"] for c in cases} == set(DTYPES)
  assert sum(c.get("space") == "local" for c in cases) > 40 and all(c["size"] <= 256 for c in cases if c.get("space") == "local")
  assert sum("LOCAL" in c["axes"] for c in cases) > 40 and sum(bool(c.get("opts")) for c in cases) > 40
  assert {o[0] for c in cases for o in c.get("opts", [])} == {"UPCAST", "LOCAL"} and sum(c.get("gate_form") == "where" for c in cases) > 20
  assert all(np.prod(c["dims"]) <= 64 for c in cases if c.get("space") == "local")

@pytest.mark.parametrize("space", ["global", "local"])
def test_where_gated_load(space):
  # out = where(r0 < bound, data[r0+1], 0) without a gate on the INDEX: tinygrad folds the WHERE into the load's gate, so only
  # the selected iterations load (static, PYTHON and AMD agree with the truth over them)
  c = {**_case(gate=["<", ["r", 0], ["c", 7]], gate_form="where"), "space": space}
  v = OobFuzzer(dynamic=["PYTHON", "AMD"]).verdicts(c)
  assert (v["truth"], v["static"], v["PYTHON"], v["AMD"]) == (False, False, "clean", "clean")
  v = OobFuzzer(dynamic=["PYTHON", "AMD"]).verdicts({**c, "gate": ["<", ["r", 0], ["c", 8]]})
  assert (v["truth"], v["static"], v["PYTHON"], v["AMD"]) == (True, True, "fault", "fault" if space == "global" else "clean")
  assert OobFuzzer().describe(c).endswith("idx=(r0+1) gate(where)=(r0<7)")
