"""Real tinygrad on DEV=MOCK+NV:PTX: tinygrad's own NV kernel-driver code path (RM ioctls, UVM, GPFIFO, QMD) on the mock
driver and device thread, kernels run by the PTX engine; numpy as the oracle (checks in nvidia_checks.py)."""
from nvidia_checks import CHECKS, assert_checks, oob_ptx
from test_kernels import never_signalled

def test_tinygrad_on_mock_nv(run):
  r = run(CHECKS + """
from mockgpu.mock.nv.rm import driver
out({**json.loads(json.dumps({"res": res})), "arch": Device["NV"].arch, "launches": sum(ch.launches for ch in driver().channels),
     "shared": any(".shared" in m.src and "bar.sync" in m.src for m in engine._loaded.values()), "thread": driver().thread.thread.is_alive()})
""", dev="MOCK+NV:PTX")
  assert r.result["arch"] == "sm_70" and r.result["thread"] and r.result["launches"] >= 35
  assert_checks(r.result)

def test_jit_and_copies_between_devices(run):
  r = run("""
    import numpy as np
    from tinygrad import Tensor, TinyJit, Device
    @TinyJit
    def f(a, b): return (a * b + 1).sum(axis=0).realize()
    xs = [np.arange(12, dtype=np.float32).reshape(3, 4) + i for i in range(4)]
    outs = [f(Tensor(x), Tensor(x)).numpy().tolist() for x in xs]
    y = Tensor(np.arange(6, dtype=np.int32)).to("CPU").numpy().tolist()
    out({"outs": outs, "want": [(x * x + 1).sum(axis=0).tolist() for x in xs], "cpu": y})
  """, dev="MOCK+NV:PTX")
  assert r.result["outs"] == r.result["want"] and r.result["cpu"] == list(range(6))

def test_kernel_fault_reaches_tinygrad_as_mmu_fault(run):
  r = run("""
    from tinygrad import Tensor, Device
    from tinygrad.device import TinyELF
    from tinygrad.runtime.ops_nv import NVProgram
    dev = Device["NV"]
    buf = dev.allocator.alloc(16)
    ptx = OOB_PTX
    prg = NVProgram(dev, TinyELF(name="oob", lib=ptx.encode(), target=None, signature=()))
    try:
      prg(buf, local_size=(8, 1, 1))
      dev.synchronize()
      msg = "no error"
    except RuntimeError as e: msg = str(e)
    out({"msg": msg, "buf": buf.va_addr})
  """.replace("OOB_PTX", repr(oob_ptx(0x100000000))), dev="MOCK+NV:PTX", HCQDEV_WAIT_TIMEOUT_MS="1500", check=False)
  assert r.result is not None, r.stderr[-3000:]
  # thread 1 is the first out of range (thread 0 writes the buffer itself)
  assert r.result["msg"] == f"MMU fault: 0x{r.result['buf'] + 0x100000000:X} | NV_PFAULT_FAULT_TYPE_PTE | WRITE"
  assert "write fault in global" in r.stderr and "st.global.f32 [%a2+0], %f;" in r.stderr

def test_symbolic_variables_in_a_jit_graph(run):
  """TinyJit graphs with bound variables (a 64-bit value and a symbolic shape). The graph's command pages are bound to the
  GPU and submitted whole, so the GPFIFO segments end in zero dwords, which the host must take as NOP headers."""
  r = run("""
    import numpy as np
    from tinygrad import Tensor, TinyJit, Variable, dtypes
    x = np.arange(-20, 20, dtype=np.int64)
    @TinyJit
    def f(t, a, b): return (t * 3 + Tensor(a + b)).realize()
    @TinyJit
    def g(t, n): return t.shrink(((0, n),)).sum().realize()
    vals, sums = [], []
    for i in range(4):
      a, b = Variable("a", 0, 2**10, dtype=dtypes.int).bind(i), Variable("b", 0, 2**40, dtype=dtypes.long).bind(2**35 + i)
      vals.append(f(Tensor(x), a, b).numpy().tolist())
      sums.append(g(Tensor(x.astype(np.float32)), Variable("n", 1, 40).bind(10 + 7 * i)).item())
    out({"vals": vals, "want": [(x * 3 + 2**35 + 2 * i).tolist() for i in range(4)], "sums": sums,
         "want_sums": [float(x[:10 + 7 * i].sum()) for i in range(4)]})
  """, dev="MOCK+NV:PTX", HCQDEV_WAIT_TIMEOUT_MS="60000")
  assert r.result["vals"] == r.result["want"] and r.result["sums"] == r.result["want_sums"]
  assert "stopped at" not in r.stderr

def test_an_acquire_nothing_satisfies_is_named_before_tinygrads_empty_error(run):
  r, line = never_signalled(run, "MOCK+NV:PTX")
  assert line.startswith("mockgpu: GPFIFO channel 0 (token 1) has been waiting ") and " on SEM_EXECUTE acquire at GP entry " in line and \
    f": 64-bit semaphore at {r['sig']:#x} >= (circular) 0x5 (now 0x0); nothing has written" in line, line
