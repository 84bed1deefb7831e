"""Kernels end to end on the mock AMD GPU: tinygrad compiles with LLVM, the PM4 queue dispatches into mockgpu.emu.
numpy is the oracle. One interpreter per group of checks keeps the suite fast."""
import pytest
from oob_kernel import PRELUDE

@pytest.mark.parametrize("dev", ["MOCKKFD+AMD", "MOCK+AMD", "MOCKKFD+AMD:LLVM"])
def test_plus_one(run, dev):
  assert run("from tinygrad import Tensor\nout((Tensor([1, 2, 3]) + 1).tolist())", dev).result == [2, 3, 4]

def test_elementwise_over_dtypes(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, dtypes
    rng, res = np.random.default_rng(1), {}
    for name in ["float32", "float16", "int8", "uint8", "int32", "uint32", "int64", "uint64"]:
      a, b = (rng.integers(0, 50, 64)).astype(name), (rng.integers(1, 50, 64)).astype(name)
      got = ((Tensor(a) + Tensor(b)) * 2 - Tensor(b)).numpy()
      res[name] = bool(np.array_equal(got, (a + b) * 2 - b))
    x, y = rng.random(64).astype(np.float32), rng.random(64).astype(np.float32)
    res["bool"] = bool(np.array_equal((Tensor(x) < Tensor(y)).numpy(), x < y))
    got = (Tensor(x).exp() + Tensor(y).sqrt() * Tensor(x).sin()).numpy()
    res["float_math"] = bool(np.allclose(got, np.exp(x) + np.sqrt(y) * np.sin(x), rtol=1e-4))
    res["where"] = bool(np.array_equal(Tensor(x > 0.5).where(Tensor(x), 0).numpy(), np.where(x > 0.5, x, 0)))
    res["cast"] = bool(np.array_equal(Tensor(x * 100).cast(dtypes.int32).numpy(), (x * 100).astype(np.int32)))
    out(res)""").result
  assert all(r.values()), r

def test_reductions_matmul_conv_argmax(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor
    rng, res = np.random.default_rng(2), {}
    a, b = rng.standard_normal((48, 40)).astype(np.float32), rng.standard_normal((40, 24)).astype(np.float32)
    res["sum"] = bool(np.allclose(Tensor(a).sum(axis=1).numpy(), a.sum(axis=1), atol=1e-4))
    res["max"] = bool(np.array_equal(Tensor(a).max(axis=0).numpy(), a.max(axis=0)))
    res["mean_all"] = bool(np.isclose(Tensor(a).mean().item(), a.mean(), atol=1e-5))
    res["argmax"] = bool(np.array_equal(Tensor(a).argmax(axis=1).numpy(), a.argmax(axis=1)))
    res["matmul"] = bool(np.allclose((Tensor(a) @ Tensor(b)).numpy(), a @ b, atol=1e-4))
    m, n = rng.standard_normal((256, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
    res["matmul256"] = bool(np.allclose((Tensor(m) @ Tensor(n)).numpy(), m @ n, atol=1e-3))
    x, w = rng.standard_normal((1, 2, 8, 8)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    ref = np.zeros((1, 3, 6, 6), np.float32)
    for o in range(3):
      for i in range(6):
        for j in range(6): ref[0, o, i, j] = (x[0, :, i:i+3, j:j+3] * w[o]).sum()
    res["conv2d"] = bool(np.allclose(Tensor(x).conv2d(Tensor(w)).numpy(), ref, atol=1e-4))
    out(res)""").result
  assert all(r.values()), r

def test_random_assign_jit_and_two_gpus(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, TinyJit
    res = {}
    Tensor.manual_seed(0)
    u = Tensor.rand(4096).numpy()
    res["rand"] = bool(0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.05 and len(np.unique(u)) > 4000)
    t = Tensor.zeros(8).contiguous().realize()
    t.assign(t + 1).realize()
    t.assign(t * 3).realize()
    res["assign"] = t.tolist() == [3.0] * 8
    @TinyJit
    def f(x, y): return ((x * y + 1).contiguous() * 2).realize()
    a, b = np.arange(16, dtype=np.float32), np.full(16, 2, np.float32)
    res["jit"] = all(np.array_equal(f(Tensor(a + i), Tensor(b)).numpy(), ((a + i) * b + 1) * 2) for i in range(5))
    from mockgpu.mock.kfd import system
    res["graph"] = sum(g.stats["indirect_buffers"] for g in system().gpus.values())   # HCQGraph submits IBs
    y = (Tensor(a, device="AMD:1") * 3).to("AMD") + 1
    res["two_gpus"] = bool(np.array_equal(y.numpy(), a * 3 + 1))
    out(res)""").result
  assert r.pop("graph") >= 2, r
  assert all(r.values()), r

def test_profile_times_kernels(run):
  r = run("""
    from tinygrad import Tensor, Device
    from tinygrad.device import Compiled
    from tinygrad.helpers import ProfileRangeEvent
    (Tensor.ones(256).contiguous() * 2).realize()
    Device["AMD"].synchronize()
    evs = [e for e in Compiled.profile_events if isinstance(e, ProfileRangeEvent) and e.device == "AMD"]
    out({"n": len(evs), "ok": all(e.en is not None and e.en >= e.st for e in evs)})""", PROFILE="1").result
  assert r["n"] >= 1 and r["ok"], r

OOB = PRELUDE + '''try:
  prg(buf.uop.buffer._buf, global_size=(1, 1, 1), local_size=(4, 1, 1), wait=True)
  err = None
except RuntimeError as e: err = str(e)
out({"err": err, "base": buf.uop.buffer._buf.va_addr, "other_gpu": (Tensor([1, 2], device="AMD:1") + 1).tolist()})
'''

def test_out_of_bounds_kernel_is_an_mmu_fault_and_the_process_survives(run):
  p = run(OOB)
  r = p.result
  addr = r["base"] + (1 << 28) * 4
  assert r["err"] is not None and f"MMU fault: 0x{addr:X}" in r["err"], r
  assert r["other_gpu"] == [2, 3]
  assert "GPUFault" in p.stderr and "lane=0" in p.stderr and f"addr={addr:#x}" in p.stderr, p.stderr

NEVER_SIGNALLED = """
  import sys
  from tinygrad import Device
  dev = Device[Device.DEFAULT]
  sig = dev.new_signal(value=0)   # nothing ever writes 5 here
  dev.hw_compute_queue_t().wait(sig, 5).signal(dev.timeline_signal, dev.next_timeline()).submit(dev)
  try:
    dev.synchronize()
    err = None
  except RuntimeError as e: err = [str(e), str(e.__context__)]
  print("@@caught", file=sys.stderr)
  out({"err": err, "sig": sig.value_addr})
"""

def never_signalled(run, dev:str) -> tuple[dict, str]:
  """tinygrad waiting (3 s timeout) on a queue blocked on a signal nothing writes: (its error and the signal, the mock's report)."""
  p = run(NEVER_SIGNALLED, dev=dev, HCQDEV_WAIT_TIMEOUT_MS="3000")
  lines = [l for l in p.stderr.splitlines() if l.startswith("mockgpu: ") and " has been waiting " in l]
  assert len(lines) == 1 and p.stderr.index(lines[0]) < p.stderr.index("@@caught"), p.stderr   # once, before tinygrad's error
  assert float(lines[0].split(" has been waiting ")[1].split(" s ")[0]) >= 1.5   # half of tinygrad's timeout
  # tinygrad's on_device_hang lists only the faults the driver reports; a waiting queue is none: RuntimeError('')
  assert p.result["err"][0] == "" and p.result["err"][1].startswith("Wait timeout: 3000 ms! (the signal is not set to "), p.result
  return p.result, lines[0]

def test_a_wait_nothing_satisfies_is_named_before_tinygrads_empty_error(run):
  r, line = never_signalled(run, "MOCKKFD+AMD")
  assert line.startswith("mockgpu: PM4 queue 0 of GPU(node=1 gpu_id=0xa001 arch=gfx1100) has been waiting ") and \
    f": memory dword at {r['sig']:#x} & 0xffffffff >= 0x5 (now 0x0); nothing has written" in line and " on WAIT_REG_MEM at ring dword 0x" in line, line

LDS_OOB = OOB.replace("""  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %o = add i32 %t, 268435456
  %i = zext i32 %o to i64
  %q = getelementptr i32, ptr addrspace(1) %p, i64 %i
  store i32 1, ptr addrspace(1) %q""", """  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %o = add i32 %t, 100000
  %q = getelementptr [16 x i32], ptr addrspace(3) @lds, i32 0, i32 %o
  store volatile i32 1, ptr addrspace(3) %q""").replace("define amdgpu_kernel", "@lds = internal addrspace(3) global [16 x i32] poison, align 4\ndefine amdgpu_kernel")

def test_lds_fault_is_a_hw_fault_that_names_the_lds_offset(run):
  # the LDS offset 0x61a80 (dword 100000) is no GPU virtual address: tinygrad gets the HW exception, not "MMU fault: 0x61A80",
  # and the queue's stderr line says it was an LDS access outside the workgroup's LDS
  p = run(LDS_OOB)
  r = p.result
  assert LDS_OOB != OOB and r["err"] is not None and r["err"].startswith("HW fault:") and "MMU fault" not in r["err"], r
  assert r["other_gpu"] == [2, 3]
  assert "(tinygrad sees: HW fault)" in p.stderr and "write fault in lds: addr=0x61a80 size=4" in p.stderr, p.stderr
  assert "LDS access at offset 0x61a80 outside the workgroup's " in p.stderr, p.stderr

def test_deterministic_results_and_instruction_counts(run):
  code = """
    import numpy as np
    from tinygrad import Tensor
    from mockgpu.mock.kfd import system
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
    r = ((Tensor(a) @ Tensor(b)).relu().sum(axis=0)).numpy()
    out({"r": r.tobytes().hex(), "insts": sum(g.stats["wave_instructions"] for g in system().gpus.values())})"""
  first, second = run(code).result, run(code).result
  assert first == second and first["insts"] > 0

def test_jit_graph_across_two_gpus_with_a_transfer(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, TinyJit
    from mockgpu.mock.kfd import system
    @TinyJit
    def f(x): return (((x * 2).contiguous().to("AMD:1") + 1).contiguous() * 3).realize()
    a = np.arange(32, dtype=np.float32)
    ok = [bool(np.array_equal(f(Tensor(a + i).realize()).numpy(), ((a + i) * 2 + 1) * 3)) for i in range(5)]
    out({"ok": ok, "ibs": sorted(g.stats["indirect_buffers"] for g in system().gpus.values())})""").result
  assert r["ok"] == [True] * 5 and len(r["ibs"]) == 2 and min(r["ibs"]) >= 2, r

def test_aql_queue(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, TinyJit
    @TinyJit
    def f(x): return ((x + 1).contiguous() * 2).realize()
    a = np.arange(64, dtype=np.float32)
    out([(Tensor([1, 2, 3]) + 1).tolist(), all(np.array_equal(f(Tensor(a + i)).numpy(), (a + i + 1) * 2) for i in range(4))])""",
    AMD_AQL="1").result
  assert r == [[2, 3, 4], True]

def test_a_dispatch_tinygrad_waits_for_holds_the_gil_and_runs_on_every_core(run):
  # the mock's GIL policy (mockgpu.mock.device.host_spins) sees a thread spinning in tinygrad's HCQSignal.wait, and a matmul
  # whose result tinygrad waits for grows from the thread count of a released dispatch (made 1 here) to that of a held one (3)
  r = run("""
    import threading, time
    import numpy as np
    import mockgpu.emu.api as api
    api.default_threads = lambda host_waits=False: 1 if host_waits else 3
    seen = []
    api.DISPATCH_HOOKS.append(lambda d, st: seen.append((d.grid, st.extra["threads"])))
    from tinygrad import Tensor, Device
    from mockgpu.mock.device import host_spins
    dev = Device["AMD"]
    sig = dev.new_signal(value=0)
    t = threading.Thread(target=sig.wait, args=(1,))
    t.start()
    time.sleep(0.05)
    spinning = host_spins()
    sig.value = 1
    t.join()
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((512, 512)).astype(np.float32), rng.standard_normal((512, 512)).astype(np.float32)
    ok = bool(np.allclose((Tensor(a) @ Tensor(b)).numpy(), a @ b, atol=1e-3))
    out({"spinning": spinning, "idle": host_spins(), "ok": ok, "threads": max(th for g, th in seen if g[0] * g[1] * g[2] > 1)})""")
  assert r.result == {"spinning": True, "idle": False, "ok": True, "threads": 3}, r.result
