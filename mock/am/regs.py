"""The register BAR (BAR5) of the mock PCI GPU: a shared-memory array of dwords that tinygrad's AM driver reads and writes
directly (`MMIOInterface` over its mmap; no call reaches the mock per access), plus the names of the registers.

The device thread reacts to *trigger* registers (the driver writes a trigger last, then spins on a status register): it
checks them every round and consumes each trigger (resets it to a value the driver never writes), so repeated identical
writes are still seen. Everything else is plain storage: what the driver writes reads back. The BAR is large enough that no
register tinygrad instantiates is reached through the indirect RSMU window."""
from __future__ import annotations
import ctypes, functools
from tinygrad.runtime.support.amd import AMDReg, import_asic_regs
from mockgpu.mock.am.discovery import bases, ip_versions
from mockgpu.mock.errors import MockDeviceError
from mockgpu.mock.profiles import GPUProfile

__all__ = ["BAR5_BYTES", "RegisterFile", "register_names"]

BAR5_BYTES = 64 << 20   # covers the highest register index of every supported IP set (gfx1100 0x507a4f, MP 14.x 0xdc00bf dwords)

@functools.cache
def register_names(p:GPUProfile) -> dict[str, AMDReg]:
  """Register name -> tinygrad's register (dword index `addr[0]` in BAR5, fields), from tinygrad's register tables at the discovery
  bases (as `AMDev._build_regs`)."""
  v, out = ip_versions(p), {}
  mods = [("mp", "MP0"), ("hdp", "HDP"), ("gc", "GC"), ("mmhub", "MMHUB"), ("osssys", "OSSSYS"), ("nbio" if p.gc < (12,0,0) else "nbif", "NBIO")]
  if p.sdma in {(4,4,2), (4,4,4)}: mods.append(("sdma", "SDMA0"))
  for prefix, ip in mods:
    out.update(import_asic_regs(prefix, v[ip], cls=functools.partial(AMDReg, bases={0: bases(p, ip)})))
  out.update(import_asic_regs("mp", (11,0,0), cls=functools.partial(AMDReg, bases={0: bases(p, "MP1")})))
  return out

class RegisterFile:
  """BAR5 at host address `addr` (BAR5_BYTES long). `regs["regCP_STAT"]` reads, `regs["regCP_STAT"] = 0` writes, `regs.field(name,
  field)` decodes a field of the current value; `has(name)`."""
  def __init__(self, profile:GPUProfile, addr:int):
    self.regs, self.mem = register_names(profile), (ctypes.c_uint32 * (BAR5_BYTES // 4)).from_address(addr)
    self.names = {k: r.addr[0] for k, r in self.regs.items()}
    if (top:=max(self.names.values())) >= BAR5_BYTES // 4:
      raise MockDeviceError(f"register index {top:#x} of the {profile.arch} IP set lies beyond BAR5 ({BAR5_BYTES:#x} bytes); enlarge BAR5_BYTES")
  def has(self, name:str) -> bool: return name in self.names
  def __getitem__(self, name:str) -> int: return self.mem[self.names[name]]
  def __setitem__(self, name:str, value:int): self.mem[self.names[name]] = value & 0xFFFFFFFF
  def field(self, name:str, field:str) -> int: return self.regs[name].decode(self[name])[field]
  def u64(self, lo:str, hi:str) -> int: return self[lo] | self[hi] << 32
