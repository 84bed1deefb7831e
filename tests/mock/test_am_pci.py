"""The mock PCI GPU's parts without tinygrad's runtime: discovery table, PSP ring, page walk and mirrors, bad input."""
import ctypes, mmap, struct
import pytest
from tinygrad.runtime.autogen import libc
from tinygrad.runtime.autogen.am import am
from mockgpu.mock.am import discovery
from mockgpu.mock.am.device import PCIGPU, BAR2_BYTES
from mockgpu.mock.am.pci import MAX_GPUS, PCI_ROOT, PCIBus, bar_bus, bus
from mockgpu.mock.errors import MockDeviceError
from mockgpu.mock.am.mmu import PageMap
from mockgpu.mock.profiles import PROFILES

@pytest.fixture(scope="module")
def gpu():
  return PCIGPU(PROFILES["gfx950"], autorun=False)

def test_discovery_lists_the_profile_ip_set():
  p = PROFILES["gfx950"]
  blob = bytearray(discovery.build(p))
  bh = am.struct_binary_header.from_buffer(blob)
  assert bh.binary_signature == am.BINARY_SIGNATURE
  die = am.struct_die_header.from_buffer(blob, am.struct_ip_discovery_header.from_buffer(blob, bh.table_list[am.IP_DISCOVERY].offset).die_info[0].die_offset)
  off, seen = ctypes.sizeof(am.struct_die_header) + am.struct_ip_discovery_header.from_buffer(blob, 0x100).die_info[0].die_offset, []
  for _ in range(die.num_ips):
    ip = am.struct_ip_v4.from_buffer(blob, off)
    seen.append((ip.hw_id, ip.instance_number, (ip.major, ip.minor, ip.revision)))
    off += 8 + 4 * ip.num_base_address
  assert (am.GC_HWID, 0, (9,5,0)) in seen and (am.MP0_HWID, 0, (13,0,12)) in seen and (am.MP1_HWID, 0, (13,0,12)) in seen
  assert [s for s in seen if s[0] == am.SDMA0_HWID] == [(am.SDMA0_HWID, i, (4,4,4)) for i in range(16)]
  harvest = struct.unpack_from("<14I", blob, bh.table_list[am.HARVEST_INFO].offset)
  assert harvest[0] == am.HARVEST_TABLE_SIGNATURE and harvest[2:] == tuple(am.SDMA0_HWID | i << 16 for i in range(4, 16))

def test_psp_ring_frame_is_answered(gpu):
  r, p = gpu.regs, gpu.psp.p
  ring, cmd, fence = 0x100000, 0x110000, 0x120000
  frame = am.struct_psp_gfx_rb_frame(fence_value=7, cmd_buf_addr_lo=cmd, fence_addr_lo=fence)
  ctypes.memmove(gpu.vram + ring, bytes(frame), ctypes.sizeof(frame))
  c = am.struct_psp_gfx_cmd_resp.from_address(gpu.vram + cmd)
  c.cmd_id, c.resp.status = am.GFX_CMD_ID_LOAD_TOC, 0xBAD
  r[f"{p}_69"], r[f"{p}_70"], r[f"{p}_71"], r[f"{p}_67"] = ring, 0, 0x10000, 16
  gpu.run_once()
  assert ctypes.c_uint32.from_address(gpu.vram + fence).value == 7 and c.resp.status == 0 and c.resp.tmr_size == 0x100000
  assert gpu.psp.rptr == 16

def test_psp_frame_outside_vram_is_reported_not_a_crash(capfd):
  gpu = PCIGPU(PROFILES["gfx950"], autorun=False)   # its own ring set-up: with the module's GPU it needed the test before it (xdist)
  r, p, ring = gpu.regs, gpu.psp.p, 0x100000
  frame = am.struct_psp_gfx_rb_frame(fence_value=8, cmd_buf_addr_lo=0xFFFFF000, cmd_buf_addr_hi=0xFFFFFF)   # far beyond VRAM
  ctypes.memmove(gpu.vram + ring, bytes(frame), ctypes.sizeof(frame))
  r[f"{p}_69"], r[f"{p}_70"], r[f"{p}_71"], r[f"{p}_67"] = ring, 0, 0x10000, 16
  gpu.run_once()
  assert "lies beyond VRAM" in capfd.readouterr().err

def test_smu_mailbox_answers_dpm_level_count(gpu):
  r = gpu.regs
  r["mmMP1_SMN_C2PMSG_82"], r["mmMP1_SMN_C2PMSG_90"], r["mmMP1_SMN_C2PMSG_66"] = 2 << 16 | 0xFF, 0, 0x5
  gpu.run_once()
  assert (r["mmMP1_SMN_C2PMSG_66"], r["mmMP1_SMN_C2PMSG_90"], r["mmMP1_SMN_C2PMSG_82"]) == (0, 1, 1)

def test_walk_mirrors_vram_at_the_gpu_va_and_rejects_bad_pdes(gpu, capfd):
  va = libc.mmap(0, 1 << 30, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, -1, 0)   # a reservation, as tinygrad's
  target = -(-va // (2 << 20)) * (2 << 20)   # a 2 MiB-aligned VA inside the reservation, covered by root entry 0 of `start`
  start = target & ~((1 << 39) - 1)
  pt = (ctypes.c_uint64 * 512)
  root, pdb1, pdb0, ptb, data = 0x200000, 0x201000, 0x202000, 0x203000, 0x300000
  i0, i1 = (target - start) >> 30 & 0x1FF, (target - start) >> 21 & 0x1FF
  for a in (root, pdb1, pdb0, ptb): ctypes.memset(gpu.vram + a, 0, 0x1000)
  pt.from_address(gpu.vram + root)[0] = pdb1 | 1
  pt.from_address(gpu.vram + pdb1)[i0] = pdb0 | 1
  pt.from_address(gpu.vram + pdb0)[i1] = ptb | 1 | am.AMDGPU_PTE_TF   # gfx9: PDB0 entries with TF are tables
  pt.from_address(gpu.vram + ptb)[0], pt.from_address(gpu.vram + ptb)[1] = data | 1, data + 0x1000 | 1
  pt.from_address(gpu.vram + ptb)[5] = (gpu.vram_size + 0x1000) | 1   # a PTE beyond VRAM
  pt.from_address(gpu.vram + pdb1)[i0 + 1 if i0 < 511 else 0] = (gpu.vram_size << 1) | 1   # a PDE beyond VRAM
  ctypes.memmove(gpu.vram + data, b"vram page", 9)
  base = target
  gpu.mmu.walk(root, start)
  assert ctypes.string_at(base, 9) == b"vram page"   # the CPU sees VRAM at the GPU VA
  assert gpu.gpu.memory.mapped(base, 0x2000) and not gpu.gpu.memory.mapped(base + 0x2000, 1) and not gpu.gpu.memory.mapped(base + 0x5000, 1)
  err = capfd.readouterr().err
  assert "beyond VRAM" in err and gpu.mmu.bad == 2
  gpu.mmu.walk(root, start)   # unchanged tables: served from the cache, same result
  assert gpu.gpu.memory.mapped(base, 0x2000) and gpu.mmu.bad == 4

def test_pagemap_frames_are_stable_per_page():
  pm = PageMap()
  a, b = struct.unpack("<2Q", pm.read(0x7000 * 8, 16))
  assert a >> 63 == b >> 63 == 1 and (a & (1 << 55) - 1) + 1 == b & (1 << 55) - 1
  assert struct.unpack("<Q", pm.read(0x7001 * 8, 8))[0] == b and pm.host(((b & (1 << 55) - 1) << 12) + 4) == 0x7001 << 12 | 4

def test_queue_with_doorbell_outside_the_bar_is_not_started(gpu, capfd):
  r, s = gpu.regs, gpu.sdma
  r[f"{s}_RB_BASE"], r[f"{s}_RB_RPTR_ADDR_LO"] = 0x1000, 0x2000
  r[f"{s}_DOORBELL_OFFSET"] = r.regs[f"{s}_DOORBELL_OFFSET"].encode(offset=BAR2_BYTES)
  r[f"{s}_RB_CNTL"] = r.regs[f"{s}_RB_CNTL"].encode(rb_enable=1, rb_size=10)
  gpu.run_once()
  assert gpu.sq is None and "doorbell byte" in capfd.readouterr().err
  r[f"{s}_RB_CNTL"] = 0

# *** several GPUs on one bus (mock/am/pci.py PCIBus): peer VRAM through BAR0 bus addresses, one host address space ***

def _bus(n:int=2) -> PCIBus: return PCIBus(PROFILES["gfx950"], n, autorun=False)

def _map_4k(g:PCIGPU, va:int, start:int, ptes:dict[int, int]):
  """gfx9 4-level tables in `g`'s VRAM (root at 0x200000) whose walk from `start` maps page `va + 4K*i` with PTE `ptes[i]`."""
  pt, (root, pdb1, pdb0, ptb) = (ctypes.c_uint64 * 512), (0x200000, 0x201000, 0x202000, 0x203000)
  for a in (root, pdb1, pdb0, ptb): ctypes.memset(g.vram + a, 0, 0x1000)
  pt.from_address(g.vram + root)[(va - start) >> 39] = pdb1 | 1
  pt.from_address(g.vram + pdb1)[(va - start) >> 30 & 0x1FF] = pdb0 | 1
  pt.from_address(g.vram + pdb0)[(va - start) >> 21 & 0x1FF] = ptb | 1 | am.AMDGPU_PTE_TF   # gfx9: PDB0 entries with TF are tables
  for i, e in ptes.items(): pt.from_address(g.vram + ptb)[((va - start) >> 12 & 0x1FF) + i] = e
  return root

@pytest.fixture
def va2m():
  """A 2 MiB-aligned VA inside a PROT_NONE reservation (as tinygrad's), and the walk start whose root entry covers it."""
  res = libc.mmap(0, 64 << 20, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, -1, 0)
  va = -(-res // (2 << 20)) * (2 << 20)
  yield va, va & ~((1 << 39) - 1)
  libc.munmap(res, 64 << 20)

def test_bus_lists_n_devices_and_builds_a_gpu_only_when_opened():
  b = _bus(3)
  names = b.listdir(PCI_ROOT)
  assert names == [bus(0), bus(1), bus(2)] and len({n.split(":")[1] for n in names}) == 3   # distinct PCI bus numbers
  assert b.text(f"{PCI_ROOT}/{bus(2)}/device") == f"0x{PROFILES['gfx950'].device_id:04x}\n" and b.open(f"{PCI_ROOT}/{bus(2)}/vendor") == ("id", None)
  assert b.gpus == {}   # scanning the bus builds nothing
  kind, g = b.open(f"{PCI_ROOT}/{bus(1)}/config")
  assert kind == "config" and g is b.gpu(1) and g.index == 1 and list(b.gpus) == [1]
  res = [int(b.text(f"{PCI_ROOT}/{bus(i)}/resource").split()[0], 16) for i in range(3)]
  assert res == [bar_bus(i, 0) for i in range(3)] and len(set(res)) == 3 and all(r + (288 << 30) <= bar_bus(i + 1, 0) for i, r in enumerate(res))
  assert bar_bus(MAX_GPUS - 1, 0) + (288 << 30) <= 1 << 44   # every BAR0 fits the GPU's 44-bit physical address space
  with pytest.raises(FileNotFoundError, match="mock PCI bus has"): b.open(f"{PCI_ROOT}/{bus(3)}/config")

def test_bus_size_is_checked():
  with pytest.raises(MockDeviceError, match=f"1..{MAX_GPUS} GPUs"): PCIBus(PROFILES["gfx950"], MAX_GPUS + 1, autorun=False)

def test_peer_vram_is_mapped_through_its_bar0_bus_address(va2m, capfd):
  va, start = va2m
  b = _bus()
  g0, g1 = b.gpu(0), b.gpu(1)
  data0, data1 = 0x400000, 0x500000
  ctypes.memmove(g0.vram + data0 + 0x10, b"vram of GPU 0", 13)
  ctypes.memmove(g1.vram + data1, b"vram of GPU 1", 13)
  sysbit = am.AMDGPU_PTE_SYSTEM | 1
  # GPU 1: page 0 its own VRAM, page 1 GPU 0's VRAM (bus address = GPU 0's BAR0 + paddr, as tinygrad's p2p_paddrs), page 2
  # a BAR0 slot with no GPU behind it (device 5 of a 2-device bus): invalid
  root = _map_4k(g1, va, start, {0: data1 | 1, 1: bar_bus(0, 0) + data0 | sysbit, 2: bar_bus(5, 0) | sysbit})
  g1.mmu.walk(root, start)
  assert ctypes.string_at(va, 13) == b"vram of GPU 1" and ctypes.string_at(va + 0x1010, 13) == b"vram of GPU 0"
  ctypes.memmove(va + 0x1020, b"peer write", 10)   # what GPU 1 writes there lands in GPU 0's VRAM
  assert ctypes.string_at(g0.vram + data0 + 0x20, 10) == b"peer write"
  assert g1.gpu.memory.mapped(va, 0x2000) and not g1.gpu.memory.mapped(va + 0x2000, 1) and g1.mmu.bad == 1
  assert "no host page at that VA" in capfd.readouterr().err
  assert g0.mmu.walks == 0 and not g0.gpu.memory.mapped(va, 1)   # GPU 0's own map is its own tables'

def test_gpus_share_the_host_address_space(va2m):
  va, start = va2m
  b = _bus()
  g0, g1 = b.gpu(0), b.gpu(1)
  ctypes.memmove(g0.vram + 0x400000, b"GPU 0", 5)
  ctypes.memmove(g1.vram + 0x400000, b"GPU 1", 5)
  assert g0.mmu.host is g1.mmu.host is b.host and g0.pagemap is g1.pagemap is b.pagemap
  r0 = _map_4k(g0, va, start, {0: 0x400000 | 1})
  g0.mmu.walk(r0, start)
  assert ctypes.string_at(va, 5) == b"GPU 0"
  r1 = _map_4k(g1, va, start, {0: 0x400000 | 1})   # tinygrad freed the VA on GPU 0 and gave it to a buffer of GPU 1
  g1.mmu.walk(r1, start)
  assert ctypes.string_at(va, 5) == b"GPU 1"
  g0.mmu.walk(r0, start)   # and back to GPU 0 (its tables still map the VA): its mirror must be put back, not skipped as current
  assert ctypes.string_at(va, 5) == b"GPU 0"
