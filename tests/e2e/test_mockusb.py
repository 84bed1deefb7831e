"""tinygrad's AM driver over its USB path (GMMU=0 DEV=MOCKUSB+AMD, as tinygrad's CI runs it): the mock ASM24 bridge in front
of the mock PCI GPU (gfx950, real firmware from the `fw_env` fixture), numpy as the oracle. Copies larger than the bridge's
256 KiB copy-in windows and 512 KiB SRAM take the chunked copy-in (sentinels, drain fence) and the armed copy-out reads."""
import os, shutil

def _cc() -> str: return os.environ.get("CC") or ("clang" if shutil.which("clang") else "clang-19")   # tinygrad's CPU device (USB syncs it)

def test_tensor_ops_and_big_copies_over_mockusb(run, fw_env):
  r = run("""
    import os, time, numpy as np
    t = time.perf_counter()
    from tinygrad import Tensor, Device
    d = Device["AMD"]
    boot = time.perf_counter() - t
    a, b = np.arange(300_000, dtype=np.float32), np.linspace(-1, 1, 300_000, dtype=np.float32)   # 1.2 MB each
    m = np.arange(64 * 48, dtype=np.float32).reshape(64, 48) / 100
    from mockgpu.mock.am.usb import system
    c = system()
    res = {"arch": d.arch, "iface": type(d.iface).__name__, "boot_s": boot, "ab": (Tensor(a) * 2 + Tensor(b)).numpy().tolist(),
           "mm": (Tensor(m) @ Tensor(m.T)).numpy().tolist()}
    # freeing a CPU-visible VRAM buffer makes tinygrad munmap its GPU VA (nothing is mapped there on hardware): the GPU's
    # mapping, here the identity mirror of VRAM, must survive it
    from tinygrad import dtypes
    from tinygrad.device import Buffer, BufferSpec
    buf = Buffer("AMD", 4096, dtypes.float32, options=BufferSpec(cpu_access=True, nolru=True)).allocate()
    va = buf._buf.va_addr
    buf.deallocate()
    res["still_mapped"] = any(int(l.split("-")[0], 16) <= va < int(l.split()[0].split("-")[1], 16) for l in open("/proc/self/maps"))
    res["after"] = (Tensor.arange(4096, dtype=dtypes.float32) * 3).numpy().tolist()
    from tinygrad.helpers import temp
    lock = temp(f"am_{d.iface.pci_dev.pcibus}.lock")
    out({**res, "bad": c.gpu.mmu.bad, "stats": c.stats, "link": c.link, "lock": lock, "held": os.path.exists(lock)})""",
    "MOCKUSB+AMD", GMMU="0", CC=_cc(), **fw_env)
  import numpy as np
  res = r.result
  a, b = np.arange(300_000, dtype=np.float32), np.linspace(-1, 1, 300_000, dtype=np.float32)
  m = np.arange(64 * 48, dtype=np.float32).reshape(64, 48) / 100
  assert res["arch"] == "gfx950" and res["iface"] == "MOCKUSBIface" and res["link"] and res["bad"] == 0
  assert np.array_equal(np.array(res["ab"], dtype=np.float32), a * 2 + b)
  np.testing.assert_allclose(np.array(res["mm"], dtype=np.float32), m @ m.T, rtol=1e-5)
  assert res["still_mapped"] and res["after"] == [3.0 * i for i in range(4096)]
  assert res["stats"]["control"] > 1000 and res["stats"]["bulk"] > 1000   # every register access is a USB transfer
  assert res["held"] and not os.path.exists(res["lock"])   # tinygrad's lock file is removed as the process exits
  print(f"MOCKUSB gfx950 boot: {res['boot_s']:.2f} s")

def test_gfx942_over_mockusb(run, fw_env):
  # MI300X (GC 9.4.3, PSP/SMU 13.0.6, SDMA 4.4.2) boots behind the bridge too, with its own firmware
  r = run("""
    import numpy as np
    from tinygrad import Tensor, Device
    m = np.arange(32 * 16, dtype=np.float32).reshape(32, 16) / 10
    out({"arch": Device["AMD"].arch, "iface": type(Device["AMD"].iface).__name__, "mm": (Tensor(m) @ Tensor(m.T)).numpy().tolist()})""",
    "MOCKUSB+AMD::gfx942", GMMU="0", CC=_cc(), **fw_env).result
  import numpy as np
  m = np.arange(32 * 16, dtype=np.float32).reshape(32, 16) / 10
  assert r["arch"] == "gfx942" and r["iface"] == "MOCKUSBIface", r
  np.testing.assert_allclose(np.array(r["mm"], dtype=np.float32), m @ m.T, rtol=1e-5)
