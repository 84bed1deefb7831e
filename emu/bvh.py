"""Ray-tracing facts of RDNA3 (gfx11) and RDNA4 (gfx12) shared by both backends (docs/emu.md "Ray tracing"): the BVH resource descriptor
(T#) fields, node types, node layouts and the address VGPRs of IMAGE_BVH[64]_INTERSECT_RAY. `c_defs()` emits them for
csrc/emu_bvh.h, `c_handler()` the MIMG handlers; pybvh.py is the Python twin. DS_BVH_STACK_RTN_B32 runs its (corrected)
pseudocode like any DS op (pcode/corrections.py)."""
from __future__ import annotations

__all__ = ["BVH_FORMATS", "BVH_OPS", "BVH_TSHARP", "known_mask", "groups", "BVH_TYPE", "NODE_TYPES", "NODE_BYTES", "INVALID_NODE", "MISS", "field", "c_defs", "c_handler"]

BVH_FORMATS = ("MIMG", "VIMAGE")            # RDNA3, RDNA4
BVH_OPS = {"IMAGE_BVH_INTERSECT_RAY": 1, "IMAGE_BVH64_INTERSECT_RAY": 2}   # op -> dwords of the node pointer
# T# bit fields (lo, width) over the 4 descriptor dwords as one little-endian integer. base: address >> 8; size: the largest
# node index (pointer >> 3) in range; box_sort: order box children by entry distance; tri_return: 1 = triangle results
# (t_num, t_denom, i_num, j_num); box_grow: conservative box growth (not modelled: a non-zero value raises "unsupported").
BVH_TSHARP = {"base": (0, 40), "box_grow": (55, 8), "box_sort": (63, 1), "size": (64, 42), "tri_return": (120, 1), "type": (124, 4)}
BVH_TYPE = 8                                 # T# TYPE of a BVH resource
NODE_TYPES = ("TRIANGLE_0", "TRIANGLE_1", "TRIANGLE_2", "TRIANGLE_3", "BOX_FP16", "BOX_FP32", "INSTANCE", "PROCEDURAL")  # pointer[2:0]
NODE_BYTES = {0: 64, 4: 64, 5: 128}          # bytes fetched (and checked) per modelled node type
INVALID_NODE = 0xffffffff                    # child pointer of an empty / missed box slot
MISS = (0x7f800000, 0x3f800000, 0, 0)        # triangle miss: t_num = +inf, t_denom = 1.0, i_num = j_num = 0

def field(desc: int, name: str) -> int:
  lo, w = BVH_TSHARP[name]
  return (desc >> lo) & ((1 << w) - 1)

def known_mask() -> int:
  """The T# bits the model knows (the fields above); a descriptor setting any other bit raises "unsupported"."""
  return sum(((1 << w) - 1) << lo for lo, w in BVH_TSHARP.values())

def groups(fmt: str, np: int, f: dict) -> tuple[int, ...]:
  """First VGPR of each address group (node pointer, extent, origin, direction, inverse direction) of decoded fields `f`
  (Python field names; MIMG vaddr is 256 + n): MIMG consecutive from vaddr, VIMAGE vaddr0..vaddr4 (A16: the three packed
  direction dwords in the direction group, as MIMG)."""
  if fmt == "VIMAGE": return tuple(f[f"vaddr{i}"] for i in range(5))
  r = f["vaddr"] - 256
  return (r, r + np, r + np + 1, r + np + 4, r + np + 7)

def c_defs() -> str:
  """The C side of these tables (included by csrc/emu_bvh.h through the generated translation unit)."""
  L = [f"#define BVH_TS_{k.upper()} {lo}, {w}" for k, (lo, w) in BVH_TSHARP.items()]
  L += [f"#define BVH_TYPE {BVH_TYPE}", f"#define BVH_INVALID_NODE 0x{INVALID_NODE:x}u",
        f"static const uint32_t BVH_KNOWN[4] = {{{', '.join(f'0x{known_mask() >> (32 * i) & 0xffffffff:x}u' for i in range(4))}}};",
        f"static const uint32_t BVH_MISS[4] = {{{', '.join(f'0x{x:x}u' for x in MISS)}}};",
        f"static const uint8_t BVH_NODE_BYTES[8] = {{{', '.join(str(NODE_BYTES.get(i, 0)) for i in range(8))}}};",
        f"static const char *const BVH_NODE_NAMES[8] = {{{', '.join(chr(34) + n + chr(34) for n in NODE_TYPES)}}};"]
  return "\n".join(L) + "\n"

def c_handler(h: str, name: str, fmt: str) -> str:
  """C handler of IMAGE_BVH_INTERSECT_RAY / IMAGE_BVH64_INTERSECT_RAY in encoding `fmt` (csrc/emu_bvh.h does the work):
  the encoding's checks, its T# SGPR and address groups (as `groups`)."""
  np = BVH_OPS[name]
  if fmt == "VIMAGE": chk, sr, g = "", "in->rsrc", ", ".join(f"in->vaddr{i}" for i in range(5))
  else:
    chk, sr = '  if (in->nsa) { set_status(w, ST_UNSUPPORTED, "IMAGE_BVH with NSA (non-sequential address VGPRs) is not modelled"); return; }', "in->srsrc"
    g = f"in->vaddr - 256, in->vaddr - 256 + {np}, in->vaddr - 256 + {np + 1}, in->vaddr - 256 + {np + 4}, in->vaddr - 256 + {np + 7}"
  return f"void {h}(Wave *w, const Inst *in) {{\n{chk + chr(10) if chk else ''}  const int g[5] = {{{g}}};\n  bvh_intersect(w, in, {np}, {sr}, g);\n}}\n"
