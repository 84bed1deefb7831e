"""The mock PCI GPU's interrupt handler ring (mock/am/ih.py) without tinygrad's runtime: entries decoded with tinygrad's
autogen macros (SOC15_*_FROM_IH_ENTRY) and the bit positions its AM_IH.interrupt_handler reads, the fault registers, and
the queue restart after tinygrad's recovery."""
import ctypes
import pytest
from tinygrad.runtime.autogen.am import am
from mockgpu.emu.errors import FaultReport, GPUFault, InvalidInstruction
from mockgpu.mock.am.device import PCIGPU
from mockgpu.mock.am.ih import SQ_ILLEGAL_INST, SQ_MEMVIOL
from mockgpu.mock.errors import PacketError, QueueFault
from mockgpu.mock.profiles import PROFILES

RING, RING_DW = 0x600000, 64   # a 256-byte ring (8 entries) in VRAM

def _gpu(arch:str) -> PCIGPU:
  """A GPU whose IH ring 0 is programmed as tinygrad's AM_IH.init_hw does (FB base 0: MC address = VRAM paddr)."""
  g = PCIGPU(PROFILES[arch], autorun=False)
  r = g.regs
  r["regIH_RB_BASE"], r["regIH_RB_BASE_HI"] = RING >> 8 & 0xFFFFFFFF, RING >> 40
  r["regIH_RB_CNTL"] = r.regs["regIH_RB_CNTL"].encode(rb_enable=1, enable_intr=1, rb_size=(RING_DW - 1).bit_length())
  r["regIH_RB_WPTR"] = r["regIH_RB_RPTR"] = 0
  return g

def _entries(g:PCIGPU) -> list[list[int]]:
  """The entries between RPTR and WPTR, read as tinygrad's interrupt_handler reads them; then drained (RPTR := WPTR)."""
  r, view = g.regs, (ctypes.c_uint32 * RING_DW).from_address(g.vram + RING)
  wptr, rptr, out = r.regs["regIH_RB_WPTR"].decode(r["regIH_RB_WPTR"])["offset"], r["regIH_RB_RPTR"], []
  while rptr != wptr:
    out.append([view[(rptr + i) % RING_DW] for i in range(8)])
    rptr = (rptr + 8) % RING_DW
  r["regIH_RB_RPTR"] = wptr
  return out

def _fields(e:list[int]) -> dict:
  return {n: getattr(am, f"SOC15_{n}_FROM_IH_ENTRY")(e) for n in ("CLIENT_ID", "SOURCE_ID", "RING_ID", "VMID", "PASID", "NODEID")} | \
         {"ctx": [getattr(am, f"SOC15_CONTEXT_ID{i}_FROM_IH_ENTRY")(e) for i in range(4)]}

def _fault(kind:str, space:str, addr:int) -> GPUFault:
  return GPUFault(FaultReport(kind, space, addr, 4, "gfx950", 0x2c, 0x1000, b"", "global_store_dword"))

def test_wave_vm_fault_on_gfx950_is_a_utcl2_entry_with_the_fault_registers():
  g = _gpu("gfx950")
  r, va = g.regs, 0x2000_4100_4abc
  seen = g.report_queue_error(g.gpu, _fault("write", "global", va))
  assert seen.startswith("an IH entry (VM fault at 0x200041004abc)")
  [e] = _entries(g)
  f = _fields(e)
  assert (f["CLIENT_ID"], f["SOURCE_ID"], f["VMID"], f["PASID"]) == (am.SOC15_IH_CLIENTID_UTCL2, 0, 0, 0)
  assert f["ctx"][0] == va >> 12 & 0xFFFFFFFF and f["ctx"][1] & 0xF == va >> 44   # the page, as Linux's gmc_v9 handler decodes it
  st = r.regs["regGCVM_L2_PROTECTION_FAULT_STATUS"].decode(r["regGCVM_L2_PROTECTION_FAULT_STATUS"])
  assert (st["rw"], st["permission_faults"], st["more_faults"], st["vmid"]) == (1, 0b101, 0, 0)   # write: valid | write
  page = r["regGCVM_L2_PROTECTION_FAULT_ADDR_HI32"] << 32 | r["regGCVM_L2_PROTECTION_FAULT_ADDR_LO32"]
  assert page << 12 == va & ~0xFFF   # what tinygrad prints: (HI32 << 32 | LO32) << 12
  g.report_queue_error(g.gpu, _fault("read", "global", 0x3000_0000_0000))   # a second fault before the clear: latched, more_faults
  assert r["regGCVM_L2_PROTECTION_FAULT_ADDR_LO32"] == va >> 12 & 0xFFFFFFFF and r["regGCVM_L2_PROTECTION_FAULT_STATUS"] & 1
  r["regGCVM_L2_PROTECTION_FAULT_CNTL"] |= r.regs["regGCVM_L2_PROTECTION_FAULT_CNTL"].encode(clear_protection_fault_status_addr=1)
  g.run_once()   # the driver's clear (tinygrad's interrupt_handler writes it after reading them)
  assert r["regGCVM_L2_PROTECTION_FAULT_STATUS"] == r["regGCVM_L2_PROTECTION_FAULT_ADDR_LO32"] == r["regGCVM_L2_PROTECTION_FAULT_ADDR_HI32"] == 0
  assert r["regGCVM_L2_PROTECTION_FAULT_CNTL"] & 1 == 0

def test_sdma_fault_goes_through_the_mm_hub_on_gfx9_and_the_gc_hub_on_gfx11():
  g9, g11 = _gpu("gfx950"), _gpu("gfx1100")
  for g in (g9, g11): g.report_queue_error(g.gpu, QueueFault("SDMA", 0x2000_0000_5000, 64, "copy source"))
  [e9], [e11] = _entries(g9), _entries(g11)
  assert (_fields(e9)["CLIENT_ID"], _fields(e9)["SOURCE_ID"]) == (am.SOC15_IH_CLIENTID_VMC, 0)
  assert g9.regs["regMMVM_L2_PROTECTION_FAULT_ADDR_LO32"] == 0x2000_0000_5 & 0xFFFFFFFF and g9.regs["regGCVM_L2_PROTECTION_FAULT_STATUS"] == 0
  assert (_fields(e11)["CLIENT_ID"], _fields(e11)["SOURCE_ID"]) == (am.SOC21_IH_CLIENTID_GFX, am.GFX_11_0_0__SRCID__UTCL2_FAULT)
  assert g11.regs["regGCVM_L2_PROTECTION_FAULT_ADDR_HI32"] == 0x2 and g11.regs["regGCVM_L2_PROTECTION_FAULT_ADDR_LO32"] == 0x5

@pytest.mark.parametrize("arch", ["gfx950", "gfx1100"])
def test_wave_errors_without_a_va_are_sq_errors_where_tinygrad_decodes_them(arch):
  g = _gpu(arch)
  g.report_queue_error(g.gpu, _fault("write", "lds", 0x61a80))
  g.report_queue_error(g.gpu, InvalidInstruction(FaultReport("invalid", "code", 0x1000, 4, arch, 0, 0x1000, b"\xff" * 4, "?"), "no such opcode"))
  for e, err in zip(_entries(g), (SQ_MEMVIOL, SQ_ILLEGAL_INST)):
    f, c = _fields(e), _fields(e)["ctx"]
    assert f["CLIENT_ID"] == am.SOC15_IH_CLIENTID_GRBM_CP == am.SOC21_IH_CLIENTID_GRBM_CP and f["SOURCE_ID"] == am.GFX_9_0__SRCID__SQ_INTERRUPT_ID
    if arch == "gfx1100": enc, typ = c[1] >> 6 & 3, c[0] >> 21 & 0xF   # tinygrad: soc21 enc_type ctx1[7:6], err_type ctx0[24:21]
    else: enc, typ = c[0] >> 26 & 3, (((c[0] & 0xfff) | ((c[0] >> 16) & 0xf000) | ((c[1] << 16) & 0xff0000)) >> 20) & 0xF   # tinygrad's gfx9 decoding
    assert (enc, typ) == (2, err)
  assert g.regs["regGCVM_L2_PROTECTION_FAULT_STATUS"] == 0

def test_compute_packet_error_is_cp_bad_opcode_and_other_stops_post_nothing():
  g = _gpu("gfx950")
  g.report_queue_error(g.gpu, PacketError("PM4", "rptr 0x10", 0xC0FF1000, "unknown opcode"))
  assert "no IH entry" in g.report_queue_error(g.gpu, PacketError("SDMA", "rptr 0x10", 0xFF, "unknown opcode"))
  [e] = _entries(g)
  assert (_fields(e)["CLIENT_ID"], _fields(e)["SOURCE_ID"]) == (am.SOC15_IH_CLIENTID_GRBM_CP, am.GFX_9_0__SRCID__CP_BAD_OPCODE_ERROR)

def test_ring_wraps_and_a_full_ring_sets_overflow_instead_of_overwriting():
  g = _gpu("gfx950")
  r = g.regs
  for i in range(7): assert g.ih.vm_fault("GC", 0x1000 * (i + 1)) is None   # 7 of 8 slots: WPTR one entry behind RPTR
  assert "full" in g.ih.vm_fault("GC", 0x9000) and r["regIH_RB_WPTR"] & 1   # rb_overflow
  assert [_fields(e)["ctx"][0] for e in _entries(g)] == list(range(1, 8))
  r["regIH_RB_WPTR"] &= ~1
  g.ih.vm_fault("GC", 0xA000)   # after the drain the ring wraps: the entry lands in slot 7, the next in slot 0
  g.ih.vm_fault("GC", 0xB000)
  assert r.regs["regIH_RB_WPTR"].decode(r["regIH_RB_WPTR"])["offset"] == 8 and [_fields(e)["ctx"][0] for e in _entries(g)] == [0xA, 0xB]

def test_disabled_ring_posts_nothing_and_says_so():
  g = PCIGPU(PROFILES["gfx950"], autorun=False)
  assert "not enabled" in g.report_queue_error(g.gpu, _fault("read", "global", 0x5000)) and g.ih.posted == 0

def test_recovered_compute_queue_starts_empty_despite_the_old_doorbell():
  # tinygrad's recovery (on_device_hang -> recover -> setup_ring) sets the faulted queue up again on the same ring and doorbell,
  # whose memory still holds the old write pointer: the new queue must not run the old ring again
  g = _gpu("gfx950")
  r = g.regs
  r["regCP_HQD_PQ_BASE"], r["regCP_HQD_PQ_RPTR_REPORT_ADDR"] = 0x7000_0000 >> 8, 0x7100_0000
  r["regCP_HQD_PQ_CONTROL"] = r.regs["regCP_HQD_PQ_CONTROL"].encode(queue_size=8)
  r["regCP_HQD_PQ_DOORBELL_CONTROL"] = r.regs["regCP_HQD_PQ_DOORBELL_CONTROL"].encode(doorbell_offset=6)
  db = ctypes.c_uint64.from_address(g.doorbells + 6 * 4)
  db.value = 0x1234   # the old queue's last write pointer
  r["regCP_HQD_ACTIVE"] = 1
  g.run_once()
  g.run_once()
  assert g.pq is not None and g.pq.put == 0 and g.pq.rptr == 0 and g.pq.error is None
  db.value = 0x10   # tinygrad's first submit after the recovery
  g.pq.latch()
  assert g.pq.put == 0x10
