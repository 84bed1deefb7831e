"""The IP discovery table the AM driver reads from the top of VRAM (`AMDev._run_discovery`): which IP blocks the chip has,
their versions (from the GPU profile) and register base addresses (tinygrad's navi/vega offsets, the same ones the PM4
model uses), the harvest table and the GC geometry."""
from __future__ import annotations
import ctypes, importlib
from tinygrad.runtime.autogen.am import am
from mockgpu.mock.profiles import GPUProfile

__all__ = ["OFFSET", "SIZE", "ip_versions", "bases", "build"]

OFFSET, SIZE = 64 << 10, 10 << 10   # the table sits at vram_size - OFFSET, SIZE bytes long (amdev.py _run_discovery)
SEGMENTS = 9                          # bases per IP: nbio 7.9 uses segment 8
CDNA_SDMA_INSTANCES, CDNA_LIVE_SDMA = 16, 4   # MI3xx list 16 SDMA instances (4 per AID); one AID is live, the rest harvested

def ip_versions(p:GPUProfile) -> dict[str, tuple[int, int, int]]:
  """Discovery name (as in tinygrad's `*_BASE` offsets) -> IP version, for the blocks the AM driver needs."""
  return {"GC": p.gc, "SDMA0": p.sdma, "MMHUB": p.mmhub, "NBIO": p.nbif, "MP0": p.mp0, "MP1": p.mp1, "HDP": p.hdp, "OSSSYS": p.osssys}

def _offsets(p:GPUProfile): return importlib.import_module(f"tinygrad.runtime.autogen.am.{'vega' if p.family == 9 else 'navi'}_offsets")

def bases(p:GPUProfile, name:str) -> tuple[int, ...]:
  """The register segment bases (dword addresses) of IP `name`, instance 0; 0 for the segments the chip has none of."""
  off = _offsets(p)
  return tuple(getattr(off, f"{name}_BASE__INST0_SEG{s}", 0) for s in range(SEGMENTS))

_HWID = {"GC": am.GC_HWID, "SDMA0": am.SDMA0_HWID, "MMHUB": am.MMHUB_HWID, "NBIO": am.NBIF_HWID, "MP0": am.MP0_HWID, "MP1": am.MP1_HWID,
         "HDP": am.HDP_HWID, "OSSSYS": am.OSSSYS_HWID}

def build(p:GPUProfile) -> bytes:
  """The discovery binary (SIZE bytes) for profile `p`."""
  blob = bytearray(SIZE)
  bh = am.struct_binary_header.from_buffer(blob)
  bh.binary_signature = am.BINARY_SIGNATURE
  bh.table_list[am.IP_DISCOVERY].offset, bh.table_list[am.GC].offset, bh.table_list[am.HARVEST_INFO].offset = 0x100, 0x1800, 0x2000
  ih = am.struct_ip_discovery_header.from_buffer(blob, 0x100)
  ih.signature, ih.num_dies, ih.base_addr_64_bit = am.DISCOVERY_TABLE_SIGNATURE, 1, 0
  ih.die_info[0].die_offset = 0x200
  off, n = 0x204, 0
  for name, ver in ip_versions(p).items():
    for inst in range(CDNA_SDMA_INSTANCES if name == "SDMA0" and p.family == 9 else 1):
      ip, b = am.struct_ip_v4.from_buffer(blob, off), bases(p, name)   # every SDMA instance at instance 0's registers (one live AID)
      ip.hw_id, ip.instance_number, ip.num_base_address, (ip.major, ip.minor, ip.revision) = _HWID[name], inst, len(b), ver
      (ctypes.c_uint32 * len(b)).from_buffer(blob, off + 8)[:] = b
      off, n = off + 8 + 4 * len(b), n + 1
  assert off < 0x1800, "discovery records overflow the GC info table"
  am.struct_die_header.from_buffer(blob, 0x200).num_ips = n
  hv = (ctypes.c_uint32 * 34).from_buffer(blob, 0x2000)
  hv[0] = am.HARVEST_TABLE_SIGNATURE
  if p.family == 9:
    for j, inst in enumerate(range(CDNA_LIVE_SDMA, CDNA_SDMA_INSTANCES)): hv[2 + j] = am.SDMA0_HWID | (inst << 16)
  props = dict(p.props)
  se = props["array_count"] // props["simd_arrays_per_engine"]
  if p.family == 9:
    gc = am.struct_gc_info_v2_1.from_buffer(blob, 0x1800)
    (gc.header.version_major, gc.header.version_minor), gc.gc_num_se = (2, 1), se
    gc.gc_num_cu_per_sh, gc.gc_num_sh_per_se = props["cu_per_simd_array"], props["simd_arrays_per_engine"]
  else:
    gc = am.struct_gc_info_v1_0.from_buffer(blob, 0x1800)
    (gc.header.version_major, gc.header.version_minor), gc.gc_num_se = (1, 0), se
    gc.gc_num_wgp0_per_sa = gc.gc_num_wgp1_per_sa = props["cu_per_simd_array"] // 2
    gc.gc_num_sa_per_se = props["simd_arrays_per_engine"]
  gc.gc_max_waves_per_simd, gc.gc_max_scratch_slots_per_cu, gc.gc_lds_size = props["max_waves_per_simd"], props["max_slots_scratch_cu"], props["lds_size_in_kb"]
  return bytes(blob)
