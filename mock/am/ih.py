"""The interrupt handler (IH) of the mock PCI GPU: how a stopped queue is reported to tinygrad's AM driver, as the hardware
reports it. tinygrad never waits for an interrupt on this path; it polls the IH ring.

tinygrad's `AM_IH` (runtime/support/am/ip.py) programs ring 0: IH_RB_BASE/_HI (MC address >> 8; MC = VRAM paddr + the FB
base), IH_RB_CNTL (rb_size = log2 of the ring's dwords, rb_enable, enable_intr), IH_RB_WPTR = IH_RB_RPTR = 0. Its
`interrupt_handler()` reads IH_RB_WPTR.offset and IH_RB_RPTR (dword indexes into the ring), decodes every 8-dword entry
between them (the SOC15_*_FROM_IH_ENTRY macros of autogen/am), then `drain()` writes RPTR := WPTR. PCIIface runs it when a
signal wait has made no progress for 200 ms (AMDSignal._sleep -> PCIIface.sleep -> _collect_interrupts): an entry other than
an end-of-pipe or SDMA trap sets `is_err_state`, so the wait raises "Device is in error state", after which on_device_hang
recovers (reset_mec, setup_ring: the device works again) and raises "Device hang detected". For a VM fault on the GC hub it
also prints GCVM_L2_PROTECTION_FAULT_STATUS and the faulting page (FAULT_ADDR << 12), then clears them through
GCVM_L2_PROTECTION_FAULT_CNTL.clear_protection_fault_status_addr.

Entry (SOC15 interrupt vector, 8 dwords): dw0 = client id [7:0] | source id [15:8] | ring id [23:16] | vmid [27:24] |
vmid type [31]; dw3 = pasid [15:0] | node id [23:16]; dw4..7 = source data (tinygrad's "ctx"), all as tinygrad's macros read
them; dw1 = timestamp [31:0], dw2 = timestamp [47:32] (the Linux amdgpu decoder's layout; tinygrad ignores them).

What the model posts (`report`), per cause; clients and source ids are tinygrad's autogen names:
* VM fault: a wave or an engine touched a GPU VA no valid PTE maps. Hub: GC, except SDMA on gfx9, which translates through
  the MM hub. GC hub: client UTCL2 (gfx9) or GFX (gfx10+), source 0 (GFX_11_0_0__SRCID__UTCL2_FAULT); MM hub: client VMC,
  source 0 (the VM_FAULT source; the SOC15 and SOC21 ids agree). Source data: [0] = VA[43:12], [1][3:0] = VA[47:44] (how Linux's
  gmc_v9/v11 handlers decode it). Registers of the hub: <hub>VM_L2_PROTECTION_FAULT_STATUS (_LO32 on gfx12) and
  ADDR_LO32/HI32 = VA >> 12; they latch the first fault until the driver clears them (later faults only set more_faults).
  STATUS fields set: permission_faults = bit 0 (the PTE is not valid) | the access that faulted (bit 1 read, bit 2 write,
  bit 3 execute: the order of PROTECTION_FAULT_CNTL's valid/read/write/execute enables), rw (1 = write), atomic, vmid 0;
  cid (the UTCL2 client number) is not modelled (0). Engine faults report a read (the engine's direction is not recorded).
* A wave error without a VA (an LDS, scratch or ordered-count access out of range: MEMVIOL; an invalid instruction:
  ILLEGAL_INST): client GRBM_CP, source SQ_INTERRUPT_ID, encoding 2 (error) and the error type where tinygrad decodes them
  (gfx9: ctx0[27:26], ctx1[7:4]; gfx11+: ctx1[7:6], ctx0[24:21]).
* A compute packet the CP cannot execute: client GRBM_CP, source CP_BAD_OPCODE_ERROR.
* Anything else (an SDMA packet error, a wave that traps, halts, deadlocks or runs past the watchdog, a model bug): no entry,
  as a hung engine posts none; the stopped queue's stderr line names it and tinygrad's wait times out.
The ring is written only while IH_RB_CNTL has rb_enable and enable_intr; an entry that would make WPTR reach RPTR sets
rb_overflow instead (the hardware drops it the same way). With wptr_writeback_enable, WPTR is also written to
IH_RB_WPTR_ADDR_LO/HI."""
from __future__ import annotations
import ctypes, struct
from typing import Callable
from tinygrad.runtime.autogen.am import am
from mockgpu.emu.errors import GPUFault, InvalidInstruction
from mockgpu.mock.am.regs import RegisterFile
from mockgpu.mock.errors import MockDeviceError, PacketError, QueueFault
from mockgpu.mock.gpu import gpu_clock

__all__ = ["IH", "ENTRY_DWORDS", "SQ_ILLEGAL_INST", "SQ_MEMVIOL"]

ENTRY_DWORDS = 8
VM_FAULT_SRC = 0   # UTCL2 / VMC fault source id (GFX_11_0_0__SRCID__UTCL2_FAULT; the VMC and gfx9 UTCL2 sources have the same id)
SQ_ILLEGAL_INST, SQ_MEMVIOL = 1, 2   # SQ error types, tinygrad's ['EDC_FUE', 'ILLEGAL_INST', 'MEMVIOL', 'EDC_FED']
PERM_VALID, PERM_ACCESS = 1, {"read": 2, "write": 4, "atomic": 6, "fetch": 8}

class IH:
  """Posts IH ring 0 entries and latches the VM fault registers of the GPU whose registers are `regs`. `vram_at(paddr, size)`:
  host address of VRAM (raises MockDeviceError outside it); `family`: the GC major version."""
  def __init__(self, regs:RegisterFile, vram_at:Callable[[int, int], int], family:int):
    self.r, self.vram_at, self.family = regs, vram_at, family
    self.soc21 = family >= 10
    self.status = {hub: f"reg{hub}VM_L2_PROTECTION_FAULT_STATUS{'_LO32' if family >= 12 else ''}" for hub in ("GC", "MM")}
    self.posted = 0

  def poll(self):
    """The driver's clear of a hub's fault registers (PROTECTION_FAULT_CNTL.clear_protection_fault_status_addr, consumed)."""
    r = self.r
    for hub in ("GC", "MM"):
      if r[cntl:=f"reg{hub}VM_L2_PROTECTION_FAULT_CNTL"] & 1:
        r[self.status[hub]] = r[f"reg{hub}VM_L2_PROTECTION_FAULT_ADDR_LO32"] = r[f"reg{hub}VM_L2_PROTECTION_FAULT_ADDR_HI32"] = 0
        r[cntl] &= ~1

  def post(self, client:int, src:int, ctx:tuple[int, int, int, int]=(0, 0, 0, 0), vmid:int=0) -> str|None:
    """Write one entry at IH_RB_WPTR and advance it. Returns None, or why nothing was written."""
    r = self.r
    cntl = r.regs["regIH_RB_CNTL"].decode(r["regIH_RB_CNTL"])
    if not (cntl["rb_enable"] and cntl["enable_intr"]): return "the IH ring is not enabled (IH_RB_CNTL rb_enable/enable_intr)"
    n = 1 << cntl["rb_size"]   # ring dwords
    fb = (r["regMMMC_VM_FB_LOCATION_BASE"] & 0xFFFFFF) << 24
    wptr = r.regs["regIH_RB_WPTR"].decode(r["regIH_RB_WPTR"])["offset"] % n
    if (wptr + ENTRY_DWORDS) % n == r["regIH_RB_RPTR"] % n:
      r["regIH_RB_WPTR"] |= 1   # rb_overflow
      return "the IH ring is full (rb_overflow set)"
    ts = gpu_clock()
    entry = struct.pack("<8I", client | src << 8 | vmid << 24, ts & 0xFFFFFFFF, ts >> 32 & 0xFFFF, 0, *ctx)
    try: ctypes.memmove(self.vram_at((r.u64("regIH_RB_BASE", "regIH_RB_BASE_HI") << 8) - fb + wptr * 4, len(entry)), entry, len(entry))
    except MockDeviceError as e: return f"the IH ring lies outside VRAM ({e})"
    wptr = (wptr + ENTRY_DWORDS) % n
    r["regIH_RB_WPTR"] = r.regs["regIH_RB_WPTR"].encode(offset=wptr)
    if cntl["wptr_writeback_enable"]:
      try: ctypes.c_uint32.from_address(self.vram_at(r.u64("regIH_RB_WPTR_ADDR_LO", "regIH_RB_WPTR_ADDR_HI") - fb, 4)).value = wptr << 2
      except MockDeviceError: pass   # the ring entry is written; the driver reads the register
    self.posted += 1
    return None

  def vm_fault(self, hub:str, va:int, access:str="read") -> str|None:
    """A VM fault at GPU VA `va` on hub "GC" or "MM" (`access`: read, write, atomic, fetch): latch the registers, post the entry."""
    r, st = self.r, self.status[hub]
    if r[st] or r[f"reg{hub}VM_L2_PROTECTION_FAULT_ADDR_LO32"] or r[f"reg{hub}VM_L2_PROTECTION_FAULT_ADDR_HI32"]: r[st] |= 1   # more_faults
    else:
      r[st] = r.regs[st].encode(permission_faults=PERM_VALID | PERM_ACCESS.get(access, PERM_ACCESS["read"]), rw=int(access in ("write", "atomic")), atomic=int(access == "atomic"))
      r[f"reg{hub}VM_L2_PROTECTION_FAULT_ADDR_LO32"], r[f"reg{hub}VM_L2_PROTECTION_FAULT_ADDR_HI32"] = va >> 12 & 0xFFFFFFFF, va >> 44
    if hub == "MM": client = am.SOC21_IH_CLIENTID_VMC if self.soc21 else am.SOC15_IH_CLIENTID_VMC
    else: client = am.SOC21_IH_CLIENTID_GFX if self.soc21 else am.SOC15_IH_CLIENTID_UTCL2
    return self.post(client, VM_FAULT_SRC, (va >> 12 & 0xFFFFFFFF, va >> 44 & 0xF, 0, 0))

  def sq_error(self, err_type:int) -> str|None:
    """A wave error (SQ_INTERRUPT_ID, encoding 2) of type `err_type` (SQ_ILLEGAL_INST, SQ_MEMVIOL)."""
    ctx = (err_type << 21, 2 << 6, 0, 0) if self.soc21 else (2 << 26, err_type << 4, 0, 0)
    return self.post(am.SOC21_IH_CLIENTID_GRBM_CP if self.soc21 else am.SOC15_IH_CLIENTID_GRBM_CP, am.GFX_9_0__SRCID__SQ_INTERRUPT_ID, ctx)

  def report(self, exc:BaseException) -> str:
    """Post what the hardware reports for a queue stopped by `exc`. Returns what tinygrad will see."""
    if isinstance(exc, GPUFault) and exc.report.va is not None: why, what = self.vm_fault("GC", va:=exc.report.va, exc.report.kind), f"VM fault at {va:#x}"
    elif isinstance(exc, QueueFault):
      why, what = self.vm_fault("MM" if exc.engine == "SDMA" and self.family < 10 else "GC", exc.addr), f"VM fault at {exc.addr:#x}"
    elif isinstance(exc, (GPUFault, InvalidInstruction)):
      kind = SQ_MEMVIOL if isinstance(exc, GPUFault) else SQ_ILLEGAL_INST
      why, what = self.sq_error(kind), f"SQ error {['EDC_FUE', 'ILLEGAL_INST', 'MEMVIOL', 'EDC_FED'][kind]}"
    elif isinstance(exc, PacketError) and exc.engine == "PM4":
      client = am.SOC21_IH_CLIENTID_GRBM_CP if self.soc21 else am.SOC15_IH_CLIENTID_GRBM_CP
      why, what = self.post(client, am.GFX_9_0__SRCID__CP_BAD_OPCODE_ERROR), "CP_BAD_OPCODE_ERROR"
    else: return "no IH entry (the hardware posts none for this): its signal wait times out, then 'Device hang detected'"
    if why is not None: return f"no IH entry ({why}): its signal wait times out"
    return f"an IH entry ({what}): after 200 ms of waiting, 'Device is in error state', then recovery and 'Device hang detected'"
