"""PSP (MP0: bootloader mailbox and sOS command ring) and SMU (MP1 message mailbox) of the mock PCI GPU.

The PSP "loads" what the driver hands it: bootloader components (C2PMSG_35/36), the KM ring (C2PMSG_64/69/70/71) and ring
frames (write pointer C2PMSG_67, in dwords); each frame's command gets status 0 and its fence value is written. Firmware
is never interpreted (the driver has verified it against tinygrad's pinned sha256); the command ids are counted in
`stats`. The SMU answers every message with success; GetDpmFreqByIndex reports one DPM level of `DPM_MHZ`."""
from __future__ import annotations
import collections, ctypes
from tinygrad.runtime.autogen.am import am
from mockgpu.mock.am.regs import RegisterFile
from mockgpu.mock.errors import MockDeviceError

__all__ = ["PSP", "SMU", "DPM_MHZ"]

DPM_MHZ = 1000
FRAME = ctypes.sizeof(am.struct_psp_gfx_rb_frame)
READY = 0x80000000

class PSP:
  """Reacts to the MP0 mailbox registers; `vram(paddr, size)` returns the host address of VRAM bytes (bounds-checked)."""
  def __init__(self, regs:RegisterFile, vram):
    self.regs, self.vram, self.rptr, self.stats = regs, vram, 0, collections.Counter()
    self.p = "regMP0_SMN_C2PMSG" if regs.has("regMP0_SMN_C2PMSG_35") else "regMPASP_SMN_C2PMSG"
    regs[f"{self.p}_35"] = regs[f"{self.p}_64"] = READY   # bootloader and sOS ready; C2PMSG_81 == 0: sOS not running (cold boot)

  def poll(self):
    r, p = self.regs, self.p
    if (comp:=r[f"{p}_35"]) & READY == 0:   # bootloader: load component `comp` from msg1 (C2PMSG_36 << 20)
      self.stats[f"bootloader {comp:#x}"] += 1
      if comp == am.PSP_BL__LOAD_SOSDRV: r[f"{p}_81"] = 1
      r[f"{p}_35"] = READY
    if r[f"{p}_64"] & READY == 0:   # ring create (KM) or destroy
      self.stats["ring create" if r[f"{p}_64"] >> 16 == am.PSP_RING_TYPE__KM else "ring control"] += 1
      self.rptr, r[f"{p}_64"] = 0, READY
    if (wptr:=r[f"{p}_67"]) != self.rptr:
      base, size, start = r.u64(f"{p}_69", f"{p}_70"), r[f"{p}_71"], self.rptr
      self.rptr = wptr   # consumed even if the frames are bad: a bad ring is reported once, not re-read every round
      if size == 0 or size % FRAME: raise MockDeviceError(f"PSP: ring write pointer C2PMSG_67={wptr:#x} but the ring size C2PMSG_71={size:#x} "
                                                          f"is not a non-zero multiple of the {FRAME}-byte frame")
      pos = start
      for _ in range(size // FRAME):
        if pos == wptr: break
        fr = am.struct_psp_gfx_rb_frame.from_address(self.vram(base + (pos * 4) % size, FRAME))
        cmd = am.struct_psp_gfx_cmd_resp.from_address(self.vram(fr.cmd_buf_addr_lo | fr.cmd_buf_addr_hi << 32, ctypes.sizeof(am.struct_psp_gfx_cmd_resp)))
        self.stats[am.enum_psp_gfx_cmd_id.get(cmd.cmd_id, f"cmd {cmd.cmd_id:#x}")] += 1
        cmd.resp.status = 0
        if cmd.cmd_id == am.GFX_CMD_ID_LOAD_TOC: cmd.resp.tmr_size = 0x100000
        ctypes.c_uint32.from_address(self.vram(fr.fence_addr_lo | fr.fence_addr_hi << 32, 4)).value = fr.fence_value
        pos = (pos + FRAME // 4) & 0xFFFFFFFF
      else: raise MockDeviceError(f"PSP: write pointer C2PMSG_67={wptr:#x} never meets the read pointer {start:#x} (not a multiple of "
                                  f"{FRAME // 4} dwords ahead); the ring is left as it is")

class SMU:
  """Reacts to the MP1 message mailboxes (regular: 66/82/90, debug: 75/53/54)."""
  BOXES = (("mmMP1_SMN_C2PMSG_66", "mmMP1_SMN_C2PMSG_82", "mmMP1_SMN_C2PMSG_90"), ("mmMP1_SMN_C2PMSG_75", "mmMP1_SMN_C2PMSG_53", "mmMP1_SMN_C2PMSG_54"))
  def __init__(self, regs:RegisterFile): self.regs, self.stats = regs, collections.Counter()
  def poll(self):
    r = self.regs
    for msg, arg, resp in self.BOXES:
      if (m:=r[msg]) == 0: continue
      self.stats[m] += 1
      # read back only by GetDpmFreqByIndex: (clk << 16 | 0xff) asks for the number of levels, (clk << 16 | level) for a frequency
      r[arg] = 1 if r[arg] & 0xFF == 0xFF else DPM_MHZ
      r[msg], r[resp] = 0, 1
