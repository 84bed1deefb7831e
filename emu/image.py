"""Image facts shared by both backends: the image resource descriptor (T#) fields, the swizzle modes, the address VGPRs
per `dim`, the linear layout the emulator models (docs/emu.md "Images"), and how each image encoding's fields map onto the
core's (RDNA3 MIMG, RDNA4 VIMAGE/VSAMPLE: `ALIASES`). `c_defs(family)` emits them for csrc/emu_image.h; pyimage.py reads them directly. The T# FORMAT uses the unified gfx10+ data-format numbering whose table
and conversions live with the buffer instructions (`buffer.format_table`, `from_format` / `to_format`)."""
from __future__ import annotations
import math, re

__all__ = ["TSHARP", "SSHARP", "SW_MODES", "DIM_NAMES", "DIM_COORDS", "DIM_GRADS", "IMG_TYPES", "SEL", "SAMPLE_FLAGS", "ALIASES", "field", "sfield",
           "sample_flags", "c_defs", "linear_pitch", "aliases", "c_aliases", "alias_members"]

# T# bit fields (lo, width) over the descriptor as one little-endian integer (8 dwords; r128=1: the first 4). `depth` is
# depth-1 for 3D, the last array slice for arrays, and pitch-1 (in texels) for a linear 2D image when non-zero.
TSHARP = {"base": (0, 40), "format": (52, 8), "width": (62, 14), "height": (78, 14), "sel_x": (96, 3), "sel_y": (99, 3),
          "sel_z": (102, 3), "sel_w": (105, 3), "base_level": (108, 4), "last_level": (112, 4), "sw_mode": (116, 5), "type": (124, 4),
          "depth": (128, 13), "base_array": (144, 13)}
# T# TYPE values; DIM is the instruction's dim field (address VGPR layout), in the same order from 1D
IMG_TYPES = {8: "1D", 9: "2D", 10: "3D", 11: "CUBE", 12: "1D_ARRAY", 13: "2D_ARRAY", 14: "2D_MSAA", 15: "2D_MSAA_ARRAY"}
DIM_NAMES = ("1D", "2D", "3D", "CUBE", "1D_ARRAY", "2D_ARRAY", "2D_MSAA", "2D_MSAA_ARRAY")
DIM_COORDS = (1, 2, 3, 3, 2, 3, 3, 4)        # x [y] [z | face | slice] [fragment]
DIM_GRADS = (1, 2, 3, 2, 1, 2, 0, 0)         # derivative components per direction (cube: the face's s, t)
# S# (sampler descriptor, 4 dwords from s[ssamp]) bit fields (lo, width) over the descriptor as one integer: address modes
# (ADDR_MODES), LOD limits u4.8 and bias s5.8 (1/256 steps), filters (0 point, 1 bilinear, 2/3 aniso point/bilinear; Z and MIP:
# 0 none, 1 point, 2 linear, 3 point), depth compare (0 never, less, equal, lequal, greater, notequal, gequal, 7 always)
SSHARP = {"clamp_x": (0, 3), "clamp_y": (3, 3), "clamp_z": (6, 3), "max_aniso_ratio": (9, 3), "depth_compare_func": (12, 3),
          "force_unnormalized": (15, 1), "filter_mode": (29, 2), "min_lod": (32, 12), "max_lod": (44, 12), "lod_bias": (64, 14),
          "xy_mag_filter": (84, 2), "xy_min_filter": (86, 2), "z_filter": (88, 2), "mip_filter": (90, 2), "border_color_type": (126, 2)}
ADDR_MODES = ("WRAP", "MIRROR", "CLAMP_LAST_TEXEL", "MIRROR_ONCE_LAST_TEXEL", "CLAMP_HALF_BORDER", "MIRROR_ONCE_HALF_BORDER",
              "CLAMP_BORDER", "MIRROR_ONCE_BORDER")
# the MIMG sampling ops by name: IMAGE_SAMPLE / IMAGE_GATHER4 with the suffixes below, IMAGE_GATHER4H, IMAGE_GET_LOD
SAMPLE_FLAGS = {"O": 1, "B": 2, "C": 4, "D": 8, "L": 16, "LZ": 32, "CL": 64, "G16": 128, "GATHER": 256, "GATHER4H": 512, "GET_LOD": 1024}
SEL = {0: "0", 1: "1", 4: "X", 5: "Y", 6: "Z", 7: "W"}   # DST_SEL values (2, 3 reserved: read as 0)
SW_MODES_GFX11 = ("LINEAR", "256B_S", "256B_D", "256B_R", "4KB_Z", "4KB_S", "4KB_D", "4KB_R", "64KB_Z", "64KB_S", "64KB_D", "64KB_R",
            "RESERVED_12", "RESERVED_13", "RESERVED_14", "RESERVED_15", "64KB_Z_T", "64KB_S_T", "64KB_D_T", "64KB_R_T", "4KB_Z_X",
            "4KB_S_X", "4KB_D_X", "4KB_R_X", "64KB_Z_X", "64KB_S_X", "64KB_D_X", "64KB_R_X", "256KB_Z_X", "256KB_S_X", "256KB_D_X",
            "256KB_R_X")
# gfx12 numbers its swizzle modes anew (AMD's address library, Addr3SwizzleMode); 8..31 are not defined
SW_MODES_GFX12 = ("LINEAR", "256B_2D", "4KB_2D", "64KB_2D", "256KB_2D", "4KB_3D", "64KB_3D", "256KB_3D", *(f"RESERVED_{i}" for i in range(8, 32)))
SW_MODES = {"rdna3": SW_MODES_GFX11, "rdna4": SW_MODES_GFX12}   # by ISA family: the names error messages use

# The core (csrc/emu_image.h, pyimage.py) reads MIMG's field names; the decoder sets them for the other encodings from this
# table: member -> (source field | None, op, k): value = source + k ("+"), source & k ("&"), or k (None). The address dwords
# are va0..va<nva-1> (VGPR numbers 0..255): MIMG names one contiguous block (vaddr); VIMAGE (vaddr0..4) and VSAMPLE
# (vaddr0..3) name one VGPR per dword, and when an instruction has more address dwords than fields the last field starts a
# contiguous block holding the rest (gfx12 partial NSA). RDNA4's atomics return the old value with th[0] (MIMG: glc).
ALIASES = {
  "MIMG": {"va0": ("vaddr", "+", -256), "nva": (None, "=", 1)},
  "VIMAGE": {"srsrc": ("rsrc", "+", 0), "glc": ("th", "&", 1), "nsa": (None, "=", 0), "lwe": (None, "=", 0),
             **{f"va{i}": (f"vaddr{i}", "+", 0) for i in range(5)}, "nva": (None, "=", 5)},
  "VSAMPLE": {"srsrc": ("rsrc", "+", 0), "ssamp": ("samp", "+", 0), "glc": ("th", "&", 1), "nsa": (None, "=", 0),
              **{f"va{i}": (f"vaddr{i}", "+", 0) for i in range(4)}, "nva": (None, "=", 4)},
}
NVA = 5   # the most address fields of an encoding (va0..va4)

def alias_members(fmts) -> set[str]:
  """The `Inst` members the core needs beyond the encodings' own fields, for an arch whose formats are `fmts` (names)."""
  al = [ALIASES[f] for f in fmts if f in ALIASES]
  return {f"va{i}" for i in range(NVA)} | {"nva", "srsrc", "ssamp", "glc", "nsa", "lwe", "unrm"} if al else set()

def c_aliases(fmt: str) -> list[str]:
  """The decoder's C statements that set the core's members from format `fmt`'s fields (after the fields are decoded)."""
  return [f"in->{m} = {k};" if src is None else f"in->{m} = in->{src} {'&' if op == '&' else '+'} {k};" for m, (src, op, k) in ALIASES.get(fmt, {}).items()]

def aliases(fmt: str, f: dict) -> None:
  """The Python decoder's twin of c_aliases: add the core's members to the decoded fields `f` of format `fmt`."""
  for m, (src, op, k) in ALIASES.get(fmt, {}).items(): f[m] = k if src is None else f[src] & k if op == "&" else f[src] + k

def field(desc: int, name: str) -> int:
  lo, w = TSHARP[name]
  return (desc >> lo) & ((1 << w) - 1)

def sfield(desc: int, name: str) -> int:
  lo, w = SSHARP[name]
  return (desc >> lo) & ((1 << w) - 1)

def sample_flags(name: str) -> int | None:
  """SAMPLE_FLAGS of a MIMG sampling op (IMAGE_SAMPLE*, IMAGE_GATHER4*, IMAGE_GET_LOD), None for any other op. The flags say
  which address VGPRs the op takes (docs/emu.md "Sampling")."""
  if name in ("IMAGE_GATHER4H", "IMAGE_GET_LOD"): return SAMPLE_FLAGS[name[6:]]
  m = re.fullmatch(r"IMAGE_(SAMPLE|GATHER4)((?:_[A-Z0-9]+)*)", name)
  if m is None or not all(p in SAMPLE_FLAGS for p in m[2].split("_")[1:]): return None
  return sum(SAMPLE_FLAGS[p] for p in m[2].split("_")[1:]) | (SAMPLE_FLAGS["GATHER"] if m[1] == "GATHER4" else 0)

def linear_pitch(width: int, bpp: int) -> int:
  """Row pitch in texels of a linear level: the width rounded up to a multiple of 256 / gcd(256, bpp) texels, the smallest
  count whose row is a whole number of 256-byte units (csrc/emu_image.h img_pitch computes the same)."""
  step = 256 // math.gcd(256, bpp)
  return -(-width // step) * step

def c_defs(family: str) -> str:
  """The C side of these tables for ISA `family` (included by csrc/emu_image.h through the generated translation unit)."""
  L = [f"#define TS_{k.upper()} {lo}, {w}" for k, (lo, w) in TSHARP.items()]
  L += [f"#define SS_{k.upper()} {lo}, {w}" for k, (lo, w) in SSHARP.items()]
  L += [f"#define SF_{k} {v}" for k, v in SAMPLE_FLAGS.items()]
  L.append(f"static const uint8_t DIM_GRADS[8] = {{{', '.join(map(str, DIM_GRADS))}}};")
  L.append(f"static const uint8_t DIM_COORDS[8] = {{{', '.join(map(str, DIM_COORDS))}}};")
  L.append(f"static const char *const SW_MODE_NAMES[32] = {{{', '.join(f'{chr(34)}{n}{chr(34)}' for n in SW_MODES[family])}}};")
  L.append(f"static const char *const DIM_NAMES[8] = {{{', '.join(f'{chr(34)}{n}{chr(34)}' for n in DIM_NAMES)}}};")
  return "\n".join(L) + "\n"
