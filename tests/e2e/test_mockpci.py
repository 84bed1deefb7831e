"""tinygrad's own AM driver on the mock PCI GPU (DEV=MOCKPCI+AMD, default chip gfx950): cold boot with real firmware blobs
(installed by `mockgpu firmware` into a temporary tinygrad cache, hash-checked against tinygrad's pins), then kernels.

Firmware source: $MOCKGPU_FIRMWARE_DEB (a firmware-amd-graphics .deb, what CI downloads), else the installed
firmware-amd-graphics package or /lib/firmware. Without one the tests skip and say so (the `fw_env` fixture, conftest.py)."""
import pytest
from oob_kernel import PRELUDE

@pytest.mark.parametrize("dev", ["MOCKPCI+AMD", "MOCKPCI+AMD::gfx942"])
def test_boot_and_one_liner_on_mockpci(run, fw_env, dev):
  r = run("""
    import time
    t = time.perf_counter()
    from tinygrad import Tensor, Device
    d = Device["AMD"]
    boot = time.perf_counter() - t
    from mockgpu.mock.am.pci import system
    g = system().gpu(0)
    out({"arch": d.arch, "iface": type(d.iface).__name__, "res": (Tensor([1,2,3])+1).numpy().tolist(), "boot_s": boot,
         "psp": dict(g.psp.stats), "bad": g.mmu.bad})""", dev, **fw_env)
  res, arch = r.result, dev.partition("::")[2] or "gfx950"   # gfx950 is the default chip
  assert res["arch"] == arch and res["iface"] == "MOCKPCIIface" and res["res"] == [2, 3, 4]
  assert res["bad"] == 0 and res["psp"]["bootloader 0x20000"] == 1   # every cold boot loads the sOS once (PSP_BL__LOAD_SOSDRV)
  print(f"MOCKPCI {arch} boot: {res['boot_s']:.2f} s")

def test_gfx1100_without_its_smu_blob_fails_with_one_line(run, fw_env):
  r = run("from tinygrad import Device; Device['AMD']", "MOCKPCI+AMD::gfx1100", check=False, **fw_env)
  lines = [ln for ln in r.stderr.splitlines() if "ActivationError" in ln]
  assert r.returncode != 0 and len(lines) == 1 and "smu_13_0_0.bin" in lines[0] and "mockgpu firmware --chip gfx1100" in lines[0], r.stderr

def test_two_gpus_copy_peer_to_peer_and_compute_on_each(run, fw_env):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, Device
    x = np.arange(4096, dtype=np.float32).reshape(64, 64) / 7
    a = Tensor(x, device="AMD:0").realize()
    b = a.to("AMD:1").realize()   # SDMA of GPU 0 writes GPU 1's VRAM, mapped on GPU 0 through GPU 1's BAR0 (P2P)
    s0, s1 = (a * 2 + 1).sum(axis=1).numpy(), (b @ b).numpy()
    back = (b - 3).to("AMD:0").numpy()
    import os
    from tinygrad.helpers import temp
    from mockgpu.mock.am.pci import system, bar_bus
    bus, devs = system(), [Device["AMD:0"].iface.pci_dev.pcibus, Device["AMD:1"].iface.pci_dev.pcibus]
    locks = [temp(f"am_{d}.lock") for d in devs]
    out({"devs": devs, "locks": locks, "held": [os.path.exists(p) for p in locks], "built": sorted(bus.gpus),
         "peer_runs": {i: sum(1 for va, (sz, pa, sysm) in g.mmu.runs.items() if sysm and pa >= bar_bus(0, 0)) for i, g in bus.gpus.items()},
         "s0": s0.tolist(), "s1": s1.tolist(), "back": back.tolist(), "bad": [g.mmu.bad for g in bus.gpus.values()]})""", "MOCKPCI+AMD",
    MOCKGPU_GPUS="2", **fw_env)
  import numpy as np
  res, x = r.result, np.arange(4096, dtype=np.float32).reshape(64, 64) / 7
  assert res["built"] == [0, 1] and res["devs"][0] != res["devs"][1] and res["bad"] == [0, 0]
  import os   # tinygrad's lock file per device existed while the process ran and is gone after it (per-process mock addresses)
  assert res["held"] == [True, True] and not any(os.path.exists(p) for p in res["locks"])
  assert res["peer_runs"]["0"] >= 1 and res["peer_runs"]["1"] >= 1   # each GPU mapped a buffer of the other through its BAR0
  np.testing.assert_allclose(res["s0"], (x * 2 + 1).sum(axis=1), rtol=1e-5)
  np.testing.assert_allclose(res["s1"], x @ x, rtol=1e-5)
  np.testing.assert_array_equal(res["back"], x - 3)

OOB = PRELUDE + '''import numpy as np
print("@@launch", flush=True)
try:
  prg(buf.uop.buffer._buf, global_size=(1, 1, 1), local_size=(4, 1, 1), wait=True)
  err = None
except RuntimeError as e: err = [str(e), str(e.__context__)]
x = np.arange(64, dtype=np.float32).reshape(8, 8)
out({"err": err, "base": buf.uop.buffer._buf.va_addr, "after": (Tensor(x) @ Tensor(x) + 1).numpy().tolist()})
'''

def test_kernel_fault_is_an_ih_vm_fault_and_tinygrad_recovers(run, fw_env):
  # the wait timeout is 10 minutes: the error can only come from the IH entry tinygrad polls after 200 ms of waiting
  p = run(OOB, "MOCKPCI+AMD", HCQDEV_WAIT_TIMEOUT_MS="600000", **fw_env)
  import numpy as np
  r, x = p.result, np.arange(64, dtype=np.float32).reshape(8, 8)
  page = (r["base"] + (1 << 28) * 4) & ~0xFFF
  assert r["err"] == ["Device hang detected", "Device is in error state"], r   # tinygrad's own messages (its AM path names no address)
  out = p.stdout[p.stdout.index("@@launch"):]
  # what tinygrad's AM_IH.interrupt_handler printed: the UTCL2 entry, then the fault registers with the faulting page
  assert "client=SOC15_IH_CLIENTID_UTCL2 src=(0)" in out, out
  status = [ln for ln in out.splitlines() if "GCVM_L2_PROTECTION_FAULT_STATUS:" in ln]
  assert len(status) == 1 and status[0].endswith(f"{page:#x}") and "'rw': 1" in status[0], out
  np.testing.assert_array_equal(r["after"], x @ x + 1)   # the device works after tinygrad's recovery
