"""AMD code objects (ELF, as LLVM emits them for tinygrad): load the image, apply R_AMDGPU_REL64 relocations the way
tinygrad's AMDProgram does, and read the kernel descriptor (docs/contracts/kfd.md section 6.2)."""
from __future__ import annotations
import struct
from dataclasses import dataclass
from mockgpu.emu.errors import EmuError

__all__ = ["CodeObject", "load_elf"]

@dataclass(frozen=True)
class CodeObject:
  """A relocated code-object image. `entry` is the byte offset of the first instruction in `image`."""
  image: bytes
  entry: int
  rsrc1: int
  rsrc2: int
  rsrc3: int
  lds_bytes: int
  scratch_bytes_per_lane: int
  kernarg_size: int
  wave32: bool
  dispatch_ptr: bool

  @property
  def user_sgpr_count(self) -> int: return (self.rsrc2 >> 1) & 0x1f

def load_elf(blob: bytes) -> CodeObject:
  """Parse an AMDGPU ELF code object. Raises EmuError naming what is missing (not an ELF, no .rodata descriptor, reloc type)."""
  from tinygrad.runtime.support.elf import elf_loader
  if blob[:4] != b"\x7fELF": raise EmuError("not an ELF code object (magic bytes missing); pass raw instruction bytes with --raw")
  image, sections, relocs = elf_loader(blob)
  image = bytearray(image)
  rodata = next((sh.header.sh_addr for sh in sections if sh.name == ".rodata"), None)
  if rodata is None: raise EmuError("code object has no .rodata section (kernel descriptor); is it an AMDHSA kernel?")
  for off, target, typ, addend in relocs:
    if typ != 5: raise EmuError(f"unsupported AMDGPU relocation type {typ} at {off:#x}; only R_AMDGPU_REL64 (5) is handled")
    image[off:off + 8] = struct.pack("<q", target - off + addend)
  d = bytes(image[rodata:rodata + 64])
  group, private, kernarg = struct.unpack_from("<III", d, 0)
  entry_off, = struct.unpack_from("<q", d, 16)
  rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", d, 44)
  props, = struct.unpack_from("<H", d, 56)
  lds_gran = ((group + 511) // 512) & 0x1ff
  return CodeObject(bytes(image), rodata + entry_off, rsrc1, rsrc2 | (lds_gran << 15), rsrc3, group, private, kernarg,
                    bool(props & 0x400), bool(props & 0x2))
