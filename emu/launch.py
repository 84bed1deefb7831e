"""Launch a code object the way tinygrad's AMD runtime does (docs/contracts/kfd.md 6.3/6.4): buffers' addresses as u64 kernel
arguments, s[0:1] = kernarg pointer (after the dispatch packet pointer when the descriptor enables it). Used by the CLI,
the benchmark and tests; the KFD model builds Dispatch itself from the PM4 registers."""
from __future__ import annotations
import ctypes, struct
from dataclasses import dataclass, field
from mockgpu.emu.api import Dispatch, Stats, run
from mockgpu.emu.codeobj import CodeObject
from mockgpu.emu.memory import MemoryMap

__all__ = ["Launch", "prepare"]

@dataclass
class Launch:
  """A code object placed in host memory with its kernel arguments, ready to dispatch repeatedly."""
  dispatch: Dispatch
  memory: MemoryMap
  keep: list = field(default_factory=list)   # host buffers that must outlive the dispatches

  def run(self, **kw) -> Stats:
    """api.run() of this dispatch; keyword arguments are run() options (budget, backend, op_counts, capture, watch)."""
    return run(self.dispatch, self.memory, **kw)

def _host(size: int, align: int = 256) -> tuple[ctypes.Array, int]:
  buf = ctypes.create_string_buffer(size + align)
  return buf, (ctypes.addressof(buf) + align - 1) & ~(align - 1)

def prepare(co: CodeObject, arch: str, grid, block, buffer_addrs: list[int], scalars: list[int] = (), memory: MemoryMap | None = None) -> Launch:
  """Copy the code object and kernel arguments into registered host buffers and build the Dispatch.

  Args: co: loaded code object. arch: target name. grid: workgroups. block: threads. buffer_addrs: device addresses (host
  addresses registered in `memory` by the caller) passed as u64 kernel arguments, then `scalars` as u32.
  Returns: Launch."""
  memory = MemoryMap() if memory is None else memory
  keep = []
  img, code_base = _host(len(co.image))
  ctypes.memmove(code_base, co.image, len(co.image))
  memory.add(code_base, len(co.image), "code object")
  args = b"".join(struct.pack("<Q", a) for a in buffer_addrs) + b"".join(struct.pack("<I", x & 0xffffffff) for x in scalars)
  ka_size = max(len(args), co.kernarg_size, 8) + 64
  ka, ka_base = _host(ka_size)
  ctypes.memmove(ka_base, args, len(args))
  memory.add(ka_base, ka_size, "kernargs")
  keep += [img, ka]
  user = []
  if co.dispatch_ptr:   # hsa_kernel_dispatch_packet_t right after the kernargs (workgroup sizes, grid in threads)
    pkt = ka_base + max(len(args), co.kernarg_size)
    pkt = (pkt + 7) & ~7
    ctypes.memmove(pkt + 4, struct.pack("<HHH", *block), 6)
    ctypes.memmove(pkt + 12, struct.pack("<III", *(g * b for g, b in zip(grid, block))), 12)
    ctypes.memmove(pkt + 40, struct.pack("<Q", ka_base), 8)
    user += [pkt & 0xffffffff, pkt >> 32]
  user += [ka_base & 0xffffffff, ka_base >> 32]
  d = Dispatch(arch, code_base + co.entry, tuple(grid), tuple(block), tuple(user), co.rsrc1, co.rsrc2, co.rsrc3, not co.wave32,
               co.lds_bytes, co.scratch_bytes_per_lane)
  return Launch(d, memory, keep)
