"""tinygrad's own AM driver on the mock PCI GPU (DEV=MOCKPCI+AMD, default chip gfx950): cold boot with real firmware blobs
(installed by `mockgpu firmware` into a temporary tinygrad cache, hash-checked against tinygrad's pins), then kernels.

Firmware source: $MOCKGPU_FIRMWARE_DEB (a firmware-amd-graphics .deb, what CI downloads), else the installed
firmware-amd-graphics package or /lib/firmware. Without one the tests skip and say so (the `fw_env` fixture, conftest.py)."""

def test_boot_and_one_liner_on_mockpci_gfx950(run, fw_env):
  r = run("""
    import time
    t = time.perf_counter()
    from tinygrad import Tensor, Device
    d = Device["AMD"]
    boot = time.perf_counter() - t
    from mockgpu.mock.am.pci import system
    g = system().gpu
    out({"arch": d.arch, "iface": type(d.iface).__name__, "res": (Tensor([1,2,3])+1).numpy().tolist(), "boot_s": boot,
         "psp": dict(g.psp.stats), "bad": g.mmu.bad})""", "MOCKPCI+AMD", **fw_env)
  res = r.result
  assert res["arch"] == "gfx950" and res["iface"] == "MOCKPCIIface" and res["res"] == [2, 3, 4]
  assert res["bad"] == 0 and res["psp"]["bootloader 0x20000"] == 1   # every cold boot loads the sOS once (PSP_BL__LOAD_SOSDRV)
  print(f"MOCKPCI gfx950 boot: {res['boot_s']:.2f} s")

def test_gfx1100_without_its_smu_blob_fails_with_one_line(run, fw_env):
  r = run("from tinygrad import Device; Device['AMD']", "MOCKPCI+AMD::gfx1100", check=False, **fw_env)
  lines = [ln for ln in r.stderr.splitlines() if "ActivationError" in ln]
  assert r.returncode != 0 and len(lines) == 1 and "smu_13_0_0.bin" in lines[0] and "mockgpu firmware --chip gfx1100" in lines[0], r.stderr
