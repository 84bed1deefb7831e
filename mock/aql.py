"""AQL compute queue (KFD queue type COMPUTE_AQL: `AMD_AQL=1`, docs/contracts/kfd.md section 5.5): a ring of 64-byte HSA packets.

tinygrad emits two packet types: KERNEL_DISPATCH (the CP builds the wave state from the kernel descriptor and the
packet) and VENDOR_SPECIFIC with AMD's PM4-IB format (one INDIRECT_BUFFER packet whose IB runs on the PM4 machinery of
`PM4Queue`). The write pointer counts packets (`amd_queue_t.write_dispatch_id`); the doorbell holds the last index."""
from __future__ import annotations
import ctypes, struct
from tinygrad.runtime.autogen import amdgpu_kd, hsa
from mockgpu.mock.gpu import GPU, TRACE
from mockgpu.mock.pm4 import PM4Queue

__all__ = ["AQLQueue"]

PACKET = 64
# kernel_code_properties enable bits -> user SGPRs the CP loads, in ABI order
USER_SGPRS = ((hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER, "private segment buffer", 4),
              (hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_DISPATCH_PTR, "dispatch ptr", 2),
              (hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_QUEUE_PTR, "queue ptr", 2),
              (hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_KERNARG_SEGMENT_PTR, "kernarg ptr", 2),
              (hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_DISPATCH_ID, "dispatch id", 2),
              (hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_FLAT_SCRATCH_INIT, "flat scratch init", 2),
              (hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_PRIVATE_SEGMENT_SIZE, "private segment size", 1))

class AQLQueue(PM4Queue):
  """An AQL queue: HSA packets in the ring, PM4 inside vendor-specific IB packets."""
  engine = "AQL"

  def __init__(self, gpu:GPU, qid:int, ring:int, ring_size:int, rptr_addr:int, doorbell_addr:int, wptr_addr:int):
    super().__init__(gpu, qid, ring, ring_size, rptr_addr, doorbell_addr)
    self.wptr_addr = wptr_addr
    self.amd_queue = wptr_addr - hsa.amd_queue_t.write_dispatch_id.offset   # tinygrad's gart holds an amd_queue_t
    self.slots = ring_size // PACKET

  @property
  def put(self) -> int: return int.from_bytes(self.gpu.read(self.wptr_addr, 8, "AQL", "write pointer (amd_queue_t.write_dispatch_id)"), "little")

  def step(self) -> bool:
    if self.ibs: return super().step()
    pos, end = self.rptr, self.put
    if pos >= end: return False
    addr = self.ring + (pos % self.slots) * PACKET
    pkt = self.gpu.read(addr, PACKET, "AQL", "packet")
    self.where, self.header = f"AQL packet {pos:#x}", int.from_bytes(pkt[:4], "little")
    if end - pos > self.slots: raise self.bad(f"ring overrun: write index {end:#x} is more than {self.slots} packets ahead of {pos:#x}")
    if (typ:=self.header & 0xFF) == hsa.HSA_PACKET_TYPE_KERNEL_DISPATCH: self.kernel_dispatch(addr, pkt, pos)
    elif typ == hsa.HSA_PACKET_TYPE_VENDOR_SPECIFIC:
      if self.header >> 16 != 1: raise self.bad(f"vendor-specific AQL packet format {self.header >> 16} (only 1, PM4 IB, is modelled)")
      ib = list(struct.unpack_from("<4I", pkt, 4))
      if ib[0] != self.pm4.PACKET3(self.pm4.PACKET3_INDIRECT_BUFFER, 2): raise self.bad(f"PM4-IB AQL packet holds {ib[0]:#x}, not an IB")
      self.indirect_buffer(*ib[1:])
    else: raise self.bad(f"AQL packet type {hsa.hsa_packet_type_t.get(typ, typ)} is not modelled")
    if TRACE: self.trace(hsa.hsa_packet_type_t.get(self.header & 0xFF, "?"), self.where, [self.header])
    self.rptr = pos + 1
    return True

  def kernel_dispatch(self, addr:int, raw:bytearray, index:int):
    from mockgpu.emu.api import Dispatch
    pkt = hsa.hsa_kernel_dispatch_packet_t.from_buffer(raw)
    desc = amdgpu_kd.llvm_amdhsa_kernel_descriptor_t.from_buffer(self.gpu.read(pkt.kernel_object, 64, "AQL", "kernel descriptor"))
    if pkt.completion_signal.handle: raise self.bad("KERNEL_DISPATCH with a completion signal is not modelled (tinygrad never sets one)")
    block, grid = (pkt.workgroup_size_x, pkt.workgroup_size_y, pkt.workgroup_size_z), (pkt.grid_size_x, pkt.grid_size_y, pkt.grid_size_z)
    if any(b == 0 or g % b for g, b in zip(grid, block)): raise self.bad(f"grid {grid} is not a multiple of the workgroup {block}")
    props, user = desc.kernel_code_properties, []
    q = hsa.amd_queue_t.from_buffer(self.gpu.read(self.amd_queue, ctypes.sizeof(hsa.amd_queue_t), "AQL", "amd_queue_t (before the write pointer)"))
    values = {"private segment buffer": list(q.scratch_resource_descriptor), "dispatch ptr": [addr & 0xFFFFFFFF, addr >> 32],
              "queue ptr": [self.amd_queue & 0xFFFFFFFF, self.amd_queue >> 32], "dispatch id": [index & 0xFFFFFFFF, index >> 32],
              "kernarg ptr": [(pkt.kernarg_address or 0) & 0xFFFFFFFF, (pkt.kernarg_address or 0) >> 32],
              "flat scratch init": [0, 0], "private segment size": [pkt.private_segment_size]}
    for bit, name, n in USER_SGPRS:
      if props & bit: user += values[name][:n]
    p = self.gpu.profile
    self.launch(Dispatch(arch=p.arch, code_addr=pkt.kernel_object + desc.kernel_code_entry_byte_offset,
                         grid=tuple(g // b for g, b in zip(grid, block)), block=block, user_sgprs=tuple(user),
                         rsrc1=desc.compute_pgm_rsrc1, rsrc2=desc.compute_pgm_rsrc2, rsrc3=desc.compute_pgm_rsrc3,
                         wave64=p.wave_size == 64 or not props & hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_WAVEFRONT_SIZE32,
                         lds_bytes=pkt.group_segment_size, scratch_bytes_per_lane=pkt.private_segment_size))
