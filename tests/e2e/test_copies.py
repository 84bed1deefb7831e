"""Copies end to end on DEV=MOCKKFD+AMD: host <-> device through the SDMA engine and the 2 MiB bounce buffers, device to
device between mock GPUs, the no-SDMA fallback, and the arch profiles. numpy is the oracle."""
import pytest

ROUNDTRIP = """
import numpy as np
from tinygrad import Tensor, Device, dtypes
rng, res = np.random.default_rng(0), {}
for name in ["float32", "float16", "int8", "uint8", "int32", "int64", "uint64", "bool"]:
  a = (rng.standard_normal(1000) * 100).astype(name)
  res[name] = bool((Tensor(a, device="AMD").numpy() == a).all())
big = rng.standard_normal(3 << 20).astype("float32")   # 12 MiB: several bounce buffers per direction
res["big"] = bool((Tensor(big, device="AMD").numpy() == big).all())
res["arch"], res["small"] = Device["AMD"].arch, Tensor([1, 2, 3], device="AMD").tolist()
out(res)
"""

@pytest.mark.parametrize("dev", ["MOCKKFD+AMD", "MOCK+AMD"])
def test_roundtrip_all_dtypes(run, dev):
  r = run(ROUNDTRIP, dev).result
  assert r.pop("arch") == "gfx1100" and r.pop("small") == [1, 2, 3]
  assert all(r.values()), r

def test_copy_totals_count_every_sdma_copy(run):
  # mockgpu.mock.sdma.copy_totals (what `mockgpu bench` splits its workloads with): 12 MiB in and out through the 2 MiB bounce
  # buffers are six 2 MiB copies each way, counted with their bytes and time when tinygrad's copy returns (most ran in C,
  # from the device thread's idle wait: mock/sdma.c)
  r = run("""
    import numpy as np
    from mockgpu.mock.sdma import copy_totals
    from tinygrad import Tensor
    big = np.random.default_rng(1).standard_normal(3 << 20).astype("float32")
    t0 = copy_totals()
    ok = bool((Tensor(big, device="AMD").numpy() == big).all())
    t1 = copy_totals()
    out({"ok": ok, "copies": t1.copies - t0.copies, "bytes": t1.bytes - t0.bytes, "timed": t1.seconds > t0.seconds,
         "idle": t1.idle_seconds > t0.idle_seconds})""").result
  assert r == {"ok": True, "copies": 12, "bytes": 24 << 20, "timed": True, "idle": True}, r

def test_copy_between_gpus(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, Device
    a = np.arange(100000, dtype=np.float32)
    t = Tensor(a, device="AMD")
    hops = [t.to(f"AMD:{i}").realize() for i in range(1, 6)]
    b = hops[0].to("AMD:2").realize()
    out({"ok": [bool((h.numpy() == a).all()) for h in hops], "chain": b.to("AMD").realize().tolist()[:3]})""").result
  assert r == {"ok": [True] * 5, "chain": [0.0, 1.0, 2.0]}

def test_without_sdma_copies_use_memmove(run):
  r = run("""
    from tinygrad import Tensor, Device
    out([Device["AMD"].has_sdma_queue, Tensor([4, 5, 6], device="AMD").to("AMD:1").tolist()])""", AMD_DISABLE_SDMA="1").result
  assert r == [False, [4, 5, 6]]

@pytest.mark.parametrize("gpus,env", [(6, {}), (2, {"MOCKGPU_GPUS": "2"})])
def test_more_gpus_than_the_system_has(run, gpus, env):
  p = run(f"from tinygrad import Device; Device['AMD:{gpus - 1}']; Device['AMD:{gpus}']", check=False, **env)
  assert p.returncode != 0 and f"No device found for {gpus}" in p.stderr

@pytest.mark.parametrize("arch", ["gfx1201", "gfx950", "gfx942"])
def test_other_arch_profiles_copy(run, arch):
  from test_cdna_kernels import CDNA, libllvm_for   # gfx950 needs LLVM >= 20 (activation checks it up front)
  r = run("""
    from tinygrad import Tensor, Device
    out([Device["AMD"].arch, Tensor([7, 8, 9], device="AMD").to("AMD:1").tolist()])""", f"MOCKKFD+AMD::{arch}",
    **({"LLVM_PATH": libllvm_for(arch)} if arch in CDNA else {})).result
  assert r == [arch, [7, 8, 9]]

def test_profile_timestamps_on_copies(run):
  r = run("""
    from tinygrad import Tensor, Device
    from tinygrad.device import Compiled
    from tinygrad.helpers import ProfileRangeEvent
    t = Tensor([1.0] * 1000, device="AMD").realize()
    x = t.to("AMD:1").realize()
    Device["AMD"].synchronize(); Device["AMD:1"].synchronize()
    evs = [e for e in Compiled.profile_events if isinstance(e, ProfileRangeEvent) and e.device.startswith("AMD")]
    out({"n": len(evs), "ok": all(e.en is not None and e.en >= e.st for e in evs)})""", PROFILE="1").result
  assert r["n"] >= 1 and r["ok"]

def test_cpu_device_buffers_to_and_from_the_mock(run):
  import os, shutil
  cc = os.environ.get("CC") or ("clang" if shutil.which("clang") else "clang-19")   # tinygrad's CPU backend runs $CC or clang
  r = run("""
    from tinygrad import Tensor
    out([(Tensor([1, 2, 3], device="CPU").to("AMD") * 2).to("CPU").tolist(), (Tensor([4, 5], device="AMD") + 1).to("CPU").tolist()])""",
    CC=cc).result
  assert r == [[2, 4, 6], [5, 6]]

def test_disk_load_larger_than_all_bounce_buffers(run, tmp_path):
  # tinygrad spins (no call into the mock) waiting for a free bounce buffer: only an asynchronous GPU model gets through
  r = run("""
    import os, numpy as np
    from tinygrad import Tensor
    a = np.random.default_rng(0).standard_normal(20 << 20).astype(np.float32)   # 80 MiB > 32 x 2 MiB bounce buffers
    a.tofile(path:=os.environ["BIG"])
    out(bool((Tensor.empty(20 << 20, dtype="float32", device=f"disk:{path}").to("AMD").numpy() == a).all()))""", BIG=str(tmp_path / "big.bin")).result
  assert r is True

def test_unknown_arch_is_a_clear_error(run):
  p = run("from tinygrad import Device; Device['AMD']", "MOCKKFD+AMD::gfx1030", check=False)
  assert p.returncode != 0 and "DEV=MOCKKFD+AMD::gfx1030: mockgpu emulates no gfx1030 GPU; the emulated AMD archs are gfx1100, gfx1201, gfx950" in p.stderr
