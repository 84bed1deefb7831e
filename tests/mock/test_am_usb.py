"""The mock USB bridge (DEV=MOCKUSB+AMD) without tinygrad's device runtime: tinygrad's own protocol side
(`CustomASM24Controller`, `System.pci_setup_usb_bars`, pure Python) drives the controller model as the oracle of the protocol;
config space and BAR sizing, BAR decode, MM_INDEX/MM_DATA, XDATA, the SRAM engine and its armed read, the DMA windows in the
page walk, and one specific error per malformed request."""
import ctypes, mmap, struct
import pytest
from tinygrad.runtime.autogen import libc
from tinygrad.runtime.autogen.am import am
from tinygrad.runtime.support.system import System
from tinygrad.runtime.support.usb import CustomASM24Controller
from mockgpu.mock.am import discovery, usb
from mockgpu.mock.errors import USBError
from mockgpu.mock.profiles import PROFILES
from mockgpu.tinygrad.compat.usb import MockUSB3

GiB = 1 << 30

@pytest.fixture(scope="module")
def ctrl():
  return usb.build(PROFILES["gfx950"], autorun=False)

@pytest.fixture(scope="module")
def asm(ctrl):
  """tinygrad's controller class on the mock (it powers the link on), with the BARs set up by tinygrad's code."""
  a = CustomASM24Controller(MockUSB3("mockgpu-asm24", ctrl=ctrl))
  a.bars = System.pci_setup_usb_bars(a, gpu_bus=4, mem_base=0x10000000, pref_mem_base=32 << 30)
  return a

def test_link_starts_down_and_tinygrad_powers_it_on():
  c = usb.build(PROFILES["gfx950"], autorun=False)
  assert c.control_in(0xE4, 1, usb.LTSSM) == b"\x00"
  with pytest.raises(USBError, match="link is down"): c.control_out(0xF0, 0x04 | 0xF << 8, 0, struct.pack("<III", 0, 0, 0))
  CustomASM24Controller(MockUSB3("mockgpu-asm24", ctrl=c))   # reads 0xB450, sends 0xF3, reads 0x78
  assert c.link and c.control_in(0xE4, 1, usb.LTSSM)[0] == usb.LINK_UP == 0x78

def test_tinygrad_sizes_and_places_the_bars(ctrl, asm):
  # BAR0 resized by tinygrad's REBAR walk to the largest offered size (32 GiB), BAR2 the 8 KiB doorbells, BAR4 (I/O) skipped,
  # BAR5 the 64 MiB registers below 4 GiB
  assert asm.bars == {0: (32 * GiB, 32 * GiB), 2: (64 * GiB, 0x2000), 5: (0x10000000, 64 << 20)}
  assert ctrl.fn.u(usb.REBAR + 8) >> 8 & 0x1F == 15   # 2^15 MiB
  for bus in range(4):   # bridges: primary 0, secondary bus+1, subordinate 4; memory enabled
    assert struct.unpack_from("<BBB", ctrl.bridges[bus].data, 0x18) == (0, bus + 1, 4) and ctrl.bridges[bus].u(4, 2) & 2
  assert asm.pcie_cfg_req(0, bus=4) == 0x1002 | PROFILES["gfx950"].device_id << 16

def test_bar_sizing_reads_back_the_size_mask(ctrl):
  cfg = usb.ConfigSpace(bytearray(4096), {0: (1 << 33, 0xC), 5: (64 << 20, 0)})
  cfg.write(0x10, b"\xff" * 8)
  cfg.write(0x24, b"\xff" * 4)
  assert (cfg.u(0x10), cfg.u(0x14), cfg.u(0x24)) == (0xC, 0xFFFFFFFE, 0xFC000000)
  cfg.write(0x10, struct.pack("<II", 0x12345678, 0xB))   # address bits an 8 GiB BAR cannot hold read back as 0
  assert cfg.bar(0) == (0xA_0000_0000, 1 << 33)

def test_config_request_to_a_missing_function_is_unsupported(asm):
  with pytest.raises(RuntimeError, match="Unsupported Request"): asm.pcie_cfg_req(0, bus=4, dev=1)
  c = usb.build(PROFILES["gfx950"], autorun=False)
  c.control_out(0xF3, 1, 0)
  with pytest.raises(RuntimeError, match="Unsupported Request"):   # bus 2 is unreachable before the bridges get bus numbers
    CustomASM24Controller(MockUSB3("mockgpu-asm24", ctrl=c)).pcie_cfg_req(0, bus=2)

def test_resizable_bar_rejects_a_size_it_does_not_offer(ctrl, asm):
  with pytest.raises(USBError, match="not offered"): asm.pcie_cfg_req(usb.REBAR + 8, bus=4, value=20 << 8)
  ctrl.fn.write(usb.REBAR + 8, struct.pack("<I", 1 << 5 | 15 << 8))

def test_memory_requests_reach_registers_vram_and_doorbells(ctrl, asm):
  g, (bar0, _), (bar2, _), (bar5, _) = ctrl.gpu, asm.bars[0], asm.bars[2], asm.bars[5]
  reg = g.regs.names["regSCRATCH_REG7"]
  asm.pcie_mem_write(bar5 + reg * 4, struct.pack("<I", 0xA0000008))
  assert g.regs["regSCRATCH_REG7"] == 0xA0000008 and bytes(asm.pcie_mem_read(bar5 + reg * 4, 4)) == struct.pack("<I", 0xA0000008)
  ctypes.memmove(g.vram + 0x5000, b"VRAM-bytes", 10)
  assert bytes(asm.pcie_mem_read(bar0 + 0x5000, 12))[:10] == b"VRAM-bytes"
  asm.pcie_mem_write(bar2 + 0x18, struct.pack("<Q", 42))
  assert ctypes.c_uint64.from_address(g.doorbells + 0x18).value == 42
  assert asm.pcie_request(0x20, bar0 + 0x5006, size=2) == int.from_bytes(b"yt", "little")   # single memory read TLP, bytes 2-3
  with pytest.raises(RuntimeError, match="Unsupported Request"): asm.pcie_request(0x20, 0x2_0000_0000)   # no BAR there
  with pytest.raises(USBError, match="reaches no BAR"): asm.pcie_mem_read(0x2_0000_0000, 4)

def test_mm_index_reads_vram_beyond_the_bar(ctrl, asm):
  # what tinygrad's AMDev._read_vram does on a small BAR: the discovery table sits at vram_size - 64 KiB, far beyond BAR0
  bar5, addr = asm.bars[5][0], ctrl.gpu.vram_size - discovery.OFFSET
  asm.pcie_mem_write(bar5 + 6 * 4, struct.pack("<I", addr >> 31))
  asm.pcie_mem_write(bar5, struct.pack("<I", addr & 0x7FFFFFFF | 0x80000000))
  assert struct.unpack("<I", asm.pcie_mem_read(bar5 + 4, 4))[0] == am.BINARY_SIGNATURE
  with pytest.raises(USBError, match="cover MM_DATA \\(offset 4\\) partly"): asm.pcie_request(0x20, bar5 + 4, size=2)
  ctrl.gpu.regs["regSCRATCH_REG6"] = 0x1234   # MM_INDEX bit 31 clear: a register byte offset
  asm.pcie_mem_write(bar5, struct.pack("<I", ctrl.gpu.regs.names["regSCRATCH_REG6"] * 4))
  assert struct.unpack("<I", asm.pcie_mem_read(bar5 + 4, 4))[0] == 0x1234
  asm.pcie_mem_write(bar5 + 6 * 4, struct.pack("<I", ctrl.gpu.vram_size >> 31))
  asm.pcie_mem_write(bar5, struct.pack("<I", 0x80000000))
  with pytest.raises(USBError, match="MM_DATA access at VRAM 0x4800000000"): asm.pcie_mem_read(bar5 + 4, 4)

def test_xdata_windows_are_the_memory_the_gpu_writes(ctrl, asm):
  asm.write(0xA800, bytes(range(1, 9)))   # the copy-in fence, in sys_buf
  assert ctypes.string_at(ctrl.regions["sys_buf"][1] + 0x800, 8) == bytes(range(1, 9)) and asm.read(0xA800, 8) == bytes(range(1, 9))
  ctypes.c_uint32.from_address(ctrl.regions["cq_buf"][1] + 0x10).value = 0xCAFE   # a GPU write to cq_buf
  assert asm.read(0xB810, 4) == struct.pack("<I", 0xCAFE)
  with pytest.raises(USBError, match="XDATA 0x1234"): asm.read(0x1234, 1)
  with pytest.raises(USBError, match="read-only link state"): asm.write(usb.LTSSM, b"\x00")

def test_sram_engine_writes_slots_and_xdata_sees_the_first_4k(ctrl, asm):
  asm.scsi_write(b"slot16", slot_start=16)
  asm.scsi_write(b"slot0")
  sram = ctrl.regions["sram"][1]
  assert ctypes.string_at(sram + 0x40000, 6) == b"slot16" and ctypes.string_at(sram, 512) == b"slot0" + bytes(507)
  assert asm.read(0xF000, 5) == b"slot0"

def test_armed_sram_read_waits_for_the_gpu_completion(ctrl, asm):
  ctypes.memmove(ctrl.regions["sram"][1], b"copied by SDMA", 14)
  asm.scsi_read_arm(14)
  done = ctypes.c_uint32.from_address(ctrl.regions["cq_buf"][1] + usb.CQ_DONE)
  assert done.value == usb.CQ_ARMED
  with pytest.raises(USBError, match="timed out after 50 ms"): ctrl.bulk_in(512, 50)   # no GPU write of the completion dword
  asm.scsi_read_arm(14)
  done.value = 0   # the GPU's SDMA WRITE of 0 to cq_buf+12 (ops_amd.py _copyout)
  assert bytes(asm.scsi_read(14)) == b"copied by SDMA"

@pytest.mark.parametrize("call, match", [
  (lambda c: c.control_out(0xE0, 0, 0), "request 0xe0 is not part"),
  (lambda c: c.control_in(0xE6, 4), "control IN request 0xe6"),
  (lambda c: c.control_out(0xE5, 0xA000, 0x100), "byte goes in wIndex"),
  (lambda c: c.control_out(0xF3, 2, 0), "must be 0 \\(off\\) or 1"),
  (lambda c: c.control_out(0xF0, 0x04 | 0xF << 8, 0, b"\0" * 8), "8 data bytes: the header is 12"),
  (lambda c: c.control_out(0xF0, 0x60 | 0xF << 8, 3, struct.pack("<III", 0, 0, 1)), "mode\\) 3"),
  (lambda c: c.control_out(0xF0, 0x60 | 0x3 << 8, 1, struct.pack("<III", 0, 0, 1)), "byte_enable 0xF"),
  (lambda c: c.control_out(0xF0, 0x04 | 0x5 << 8, 0, struct.pack("<III", 4 << 24, 0, 0)), "contiguous"),
  (lambda c: c.control_out(0xF0, 0x30 | 0xF << 8, 0, struct.pack("<III", 0, 0, 0)), "fmt_type=0x30 is not modelled"),
  (lambda c: c.control_in(0xF0, 8), "no completion is pending"),
  (lambda c: c.bulk_out(b"\0" * 4), "nothing is armed"),
  (lambda c: c.bulk_in(4), "nothing is armed"),
  (lambda c: c.control_out(0xF2, 1, 0 | 2 << 8), "units covered \\(1 for 1 sectors\\)"),
  (lambda c: c.control_out(0xF2, 64, 31 | 2 << 8), "<= the 512 KiB SRAM"),
])
def test_malformed_requests_raise_a_specific_error(ctrl, asm, call, match):
  with pytest.raises(USBError, match=match): call(ctrl)

def test_bulk_length_must_match_the_armed_transfer(ctrl, asm):
  ctrl.control_out(0xF0, 0x60 | 0xF << 8, 1, struct.pack("<III", asm.bars[0][0] & 0xFFFFFFFF, asm.bars[0][0] >> 32, 2))
  with pytest.raises(USBError, match="bulk OUT of 4 bytes for the armed stream write of 8 bytes"): ctrl.bulk_out(b"\0" * 4)
  ctrl.control_out(0xF0, 0x20 | 0xF << 8, 2, struct.pack("<III", asm.bars[0][0] & 0xFFFFFFFF, asm.bars[0][0] >> 32, 2))
  with pytest.raises(USBError, match="bulk IN of 4 bytes for the armed stream read of 8 bytes"): ctrl.bulk_in(4)

def test_page_walk_mirrors_the_dma_windows_and_gmmu0_huge_pages():
  va = libc.mmap(0, 8 * GiB, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, -1, 0)   # a reservation, as tinygrad's
  start = -(-va // GiB) * GiB   # root entry 0 of the walk: 1 GiB aligned, inside the reservation
  c = usb.build(PROFILES["gfx950"], autorun=False, va_window=(start, start + 4 * GiB))
  g, pt = c.gpu, (ctypes.c_uint64 * 512)
  root, pdb1, pdb0, ptb = 0x200000, 0x201000, 0x202000, 0x203000
  for a in (root, pdb1, pdb0, ptb): ctypes.memset(g.vram + a, 0, 0x1000)
  sysbit, leaf1g = am.AMDGPU_PTE_SYSTEM | 1, am.AMDGPU_PDE_PTE | 1   # gfx9: a PDB1 entry with PDE_PTE is a 1 GiB page
  pt.from_address(g.vram + root)[0] = pdb1 | 1
  pt.from_address(g.vram + pdb1)[0] = pdb0 | 1
  pt.from_address(g.vram + pdb1)[1] = 0x40000000 | leaf1g   # VA start+1 GiB -> VRAM 1 GiB (GMMU=0 identity pages)
  pt.from_address(g.vram + pdb1)[5] = 0x40000000 | leaf1g   # VA start+5 GiB: outside the VA window
  pt.from_address(g.vram + pdb0)[0] = ptb | 1 | am.AMDGPU_PTE_TF
  pt.from_address(g.vram + ptb)[0] = usb.WINDOWS["cq_buf"][1] | sysbit   # the controller's cq_buf
  pt.from_address(g.vram + ptb)[1] = usb.WINDOWS["sram"][1] + 0x1000 | sysbit   # SRAM page 1
  pt.from_address(g.vram + ptb)[2] = 0x12345000 | sysbit   # no window, no host frame: invalid
  ctypes.memmove(c.regions["cq_buf"][1], b"cq", 2)
  ctypes.memmove(c.regions["sram"][1] + 0x1000, b"sram1", 5)
  ctypes.memmove(g.vram + 0x40000000 + 0x1234, b"vram", 4)
  g.mmu.walk(root, start)
  assert ctypes.string_at(start, 2) == b"cq" and ctypes.string_at(start + 0x1000, 5) == b"sram1"
  assert ctypes.string_at(start + GiB + 0x1234, 4) == b"vram"
  ctypes.memmove(start + 0x1000 + 8, b"GPU", 3)   # GPU writes land in the controller's SRAM
  assert ctypes.string_at(c.regions["sram"][1] + 0x1008, 3) == b"GPU"
  assert g.gpu.memory.mapped(start, 0x2000) and g.gpu.memory.mapped(start + GiB, GiB) and not g.gpu.memory.mapped(start + 0x2000, 1)
  assert not g.gpu.memory.mapped(start + 5 * GiB, 1) and g.mmu.bad == 2
  g.mmu.host.host_mapped(start + GiB + 0x1000, 0x1000)   # tinygrad maps a page of its own there: the mirror is cut, offsets kept
  assert [(a - start, b - start, v) for a, b, v in g.mmu.host.mirrors.overlapping(start + GiB, start + GiB + 0x3000)] == \
    [(GiB, GiB + 0x1000, (g.fds[0], 0x40000000)), (GiB + 0x2000, 2 * GiB, (g.fds[0], 0x40002000))]
  libc.munmap(va, 8 * GiB)

def test_no_usb_device_listed_unless_dev_is_mockusb(monkeypatch):
  from tinygrad.helpers import DEV
  monkeypatch.setattr(DEV, "value", [t for t in DEV.value if t.interface != "MOCKUSB"])
  assert MockUSB3.list_devices(0xADD1, 0x0001) == [] and MockUSB3.list_devices(0x3801, 0x0001) == []
  with pytest.raises(ValueError, match="not a handle"): MockUSB3("usb:1-1")
