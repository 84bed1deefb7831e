"""Kernels end to end on the mock AMD GPU: tinygrad compiles with LLVM, the PM4 queue dispatches into mockgpu.emu.
numpy is the oracle. One interpreter per group of checks keeps the suite fast."""
import pytest

@pytest.mark.parametrize("dev", ["MOCKKFD+AMD", "MOCK+AMD", "MOCKKFD+AMD:LLVM"])
def test_plus_one(run, dev):
  assert run("from tinygrad import Tensor\nout((Tensor([1, 2, 3]) + 1).tolist())", dev).result == [2, 3, 4]

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

OOB = '''
from tinygrad import Device, Tensor
from tinygrad.device import TinyELF
from tinygrad.helpers import DEV
dev = Device["AMD"]
src = """
define amdgpu_kernel void @oob(ptr addrspace(1) noalias align 4 %p) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  %o = add i32 %t, 268435456
  %i = zext i32 %o to i64
  %q = getelementptr i32, ptr addrspace(1) %p, i64 %i
  store i32 1, ptr addrspace(1) %q
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
"""
buf = Tensor.zeros(16, dtype="int32").contiguous().realize()
prg = dev.runtime(TinyELF(dev.compiler.compile(src), "oob", DEV.target("AMD"), ()))
try:
  prg(buf.uop.buffer._buf, global_size=(1, 1, 1), local_size=(4, 1, 1), wait=True)
  err = None
except RuntimeError as e: err = str(e)
out({"err": err, "base": buf.uop.buffer._buf.va_addr, "other_gpu": (Tensor([1, 2], device="AMD:1") + 1).tolist()})
'''

def test_out_of_bounds_kernel_is_an_mmu_fault_and_the_process_survives(run):
  p = run(OOB, HCQDEV_WAIT_TIMEOUT_MS="20000")
  r = p.result
  addr = r["base"] + (1 << 28) * 4
  assert r["err"] is not None and f"MMU fault: 0x{addr:X}" in r["err"], r
  assert r["other_gpu"] == [2, 3]
  assert "GPUFault" in p.stderr and "lane=0" in p.stderr and f"addr={addr:#x}" in p.stderr, p.stderr
