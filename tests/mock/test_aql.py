"""AQL compute queue (AMD_AQL=1): KERNEL_DISPATCH packets rebuilt into an emulator Dispatch from the kernel descriptor,
vendor-specific PM4-IB packets run on the PM4 machinery, bad packets stop the queue."""
import ctypes
import pytest
from tinygrad.runtime.autogen import amdgpu_kd, hsa, kfd
from tinygrad.runtime.autogen.am import pm4_nv as pm4
from mockgpu.emu.api import Stats

AQL = kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL

class Recorder:
  def __init__(self): self.calls = []
  def __call__(self, d, memory, **run_options):   # the queue's api.run options (threads)
    self.calls.append(d)
    return Stats(instructions=1, workgroups=1, waves=1, seconds=0.0, backend="fake")

def submit(drv, ring, index, packet:bytes):
  ctypes.memmove(ring.addr + index * 64, packet, 64)
  ctypes.c_uint64.from_address(ring.q.rptr_addr - 0x80 + 0x38).value = index + 1   # amd_queue_t.write_dispatch_id
  ring.doorbell.value = index

def test_kernel_dispatch_and_pm4_ib(drv, monkeypatch):
  import mockgpu.emu.api as api
  monkeypatch.setattr(api, "run", rec:=Recorder())
  ring, (code, _), (buf, _) = drv.queue(0, AQL), drv.userptr(0x1000), drv.userptr(0x1000)
  desc = amdgpu_kd.llvm_amdhsa_kernel_descriptor_t.from_address(code + 0x200)
  desc.kernel_code_entry_byte_offset, desc.compute_pgm_rsrc1, desc.compute_pgm_rsrc2 = -0x200, 0x40AF0000, 0x9E
  desc.kernel_code_properties = hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_KERNARG_SEGMENT_PTR \
                              | hsa.AMD_KERNEL_CODE_PROPERTIES_ENABLE_WAVEFRONT_SIZE32
  pkt = hsa.hsa_kernel_dispatch_packet_t(header=hsa.HSA_PACKET_TYPE_KERNEL_DISPATCH, setup=3, workgroup_size_x=32, workgroup_size_y=2,
    workgroup_size_z=1, grid_size_x=128, grid_size_y=2, grid_size_z=3, group_segment_size=512, kernel_object=code + 0x200, kernarg_address=buf)
  submit(drv, ring, 0, bytes(pkt))
  ib = [pm4.PACKET3(pm4.PACKET3_RELEASE_MEM, 6), 0x514, 1 << 29, (buf + 0x100) & 0xFFFFFFFF, buf >> 32, 77, 0, 0]
  for i, v in enumerate(ib): ctypes.c_uint32.from_address(buf + 0x200 + 4 * i).value = v
  vendor = [hsa.HSA_PACKET_TYPE_VENDOR_SPECIFIC | 1 << 16, pm4.PACKET3(pm4.PACKET3_INDIRECT_BUFFER, 2), (buf + 0x200) & 0xFFFFFFFF, buf >> 32,
            len(ib) | pm4.INDIRECT_BUFFER_VALID, 10] + [0] * 10
  submit(drv, ring, 1, b"".join(v.to_bytes(4, "little") for v in vendor))
  drv.run()
  d, = rec.calls
  assert (d.code_addr, d.grid, d.block, d.user_sgprs) == (code, (4, 1, 3), (32, 2, 1), (buf & 0xFFFFFFFF, buf >> 32))
  assert (d.wave64, d.lds_bytes) == (False, 512)
  assert drv.u32(buf + 0x100) == 77 and drv.u64(ring.q.rptr_addr) == 2

@pytest.mark.parametrize("header,msg", [(hsa.HSA_PACKET_TYPE_BARRIER_AND, "BARRIER_AND is not modelled"),
                                        (hsa.HSA_PACKET_TYPE_VENDOR_SPECIFIC | 7 << 16, "format 7")])
def test_unmodelled_aql_packets_stop_the_queue(drv, capsys, header, msg):
  ring = drv.queue(0, AQL)
  submit(drv, ring, 0, header.to_bytes(4, "little") + bytes(60))
  drv.run()
  assert ring.q.error is not None and msg in capsys.readouterr().err
