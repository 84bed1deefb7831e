"""The out-of-bounds store kernel the e2e fault tests launch through real tinygrad: lane t stores to p[t + 2^28], far past
the 16-int buffer. PRELUDE is a script's start (device `dev`, buffer `buf`, program `prg`); each test appends its launch.
Test modules import it by this module's unique name (`from oob_kernel import PRELUDE`)."""

PRELUDE = '''from tinygrad import Device, Tensor
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
'''
