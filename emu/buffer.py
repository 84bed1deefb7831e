"""Buffer instructions through a resource descriptor (V#, four SGPRs): RDNA3 MUBUF/MTBUF, RDNA4 VBUFFER, and the gfx9
layout CDNA uses. Owns the facts the hardware applies outside the pseudocode: where each V# field sits (read from the
wheel's SQ_BUF_RSRC_WORD* registers, the variant named by ArchSpec.vsharp), how an address is formed (base + SGPR offset +
index * stride + instruction offset + VGPR offset, or the swizzled interleave), which accesses are out of range (loads
read 0, stores and atomics are dropped) and the generated C handlers. The C twin of `Desc`/`map_access` is
csrc/emu_buffer.h; the Python backend uses these functions directly."""
from __future__ import annotations
import functools
from dataclasses import dataclass
from mockgpu.emu.arch import ArchSpec

__all__ = ["BUFFER_FORMATS", "Desc", "layout", "descriptor", "map_access", "c_defines", "c_handler", "fields", "data_bits"]

BUFFER_FORMATS = ("MUBUF", "MTBUF", "VBUFFER")
M32, M64 = 0xffffffff, (1 << 64) - 1
OOB_GFX9 = 4   # no OOB_SELECT field: the range check follows the descriptor type (gfx9 rules, see map_access)

@functools.cache
def layout(arch: ArchSpec) -> dict[str, tuple[int, int, int]]:
  """V# field -> (dword, lowest bit, width), from tinygrad's autogen hsa SQ_BUF_RSRC_WORD0..3 registers."""
  from tinygrad.runtime.autogen import hsa
  w1, w3 = arch.vsharp
  out = {}
  for word, reg in enumerate(("WORD0", f"WORD1{w1}", "WORD2", f"WORD3{w3}")):
    for name, _, off, width, bit in getattr(hsa, f"union_SQ_BUF_RSRC_{reg}_bitfields")._real_fields_: out[name] = (word, off * 8 + bit, width)
  return out

def _get(lay: dict, words, name: str, default: int = 0) -> int:
  if name not in lay: return default
  w, lo, n = lay[name]
  return (words[w] >> lo) & ((1 << n) - 1)

@dataclass(frozen=True)
class Desc:
  """One instruction's view of its V# (plus the SGPR offset, which moves the base and is outside the range check)."""
  base: int         # V# base (48 bits) + SGPR offset: the address of buffer offset 0
  stride: int
  nrec: int         # NUM_RECORDS
  elem: int         # swizzle element size in bytes, 0: linear addressing
  idx_stride: int   # swizzle index stride (lanes)
  add_tid: int
  oob: int          # OOB_SELECT, or OOB_GFX9
  fmt: int          # FORMAT (gfx10+) or DATA_FORMAT | NUM_FORMAT << 4 (gfx9)

def descriptor(arch: ArchSpec, words, soffset: int) -> Desc:
  """Decode the four V# dwords as `arch` lays them out."""
  lay = layout(arch)
  g = lambda n, d=0: _get(lay, words, n, d)
  swz = g("SWIZZLE_ENABLE")
  elem = (2 << g("ELEMENT_SIZE") if "ELEMENT_SIZE" in lay else 2 << swz) if swz else 0   # gfx9: ELEMENT_SIZE; gfx11+: the enable value
  fmt = g("FORMAT") if "FORMAT" in lay else g("DATA_FORMAT") | g("NUM_FORMAT") << 4
  base = (g("BASE_ADDRESS") | g("BASE_ADDRESS_HI") << 32) + soffset
  return Desc(base & M64, g("STRIDE"), g("NUM_RECORDS"), elem, 8 << g("INDEX_STRIDE"), g("ADD_TID_ENABLE"), g("OOB_SELECT", OOB_GFX9), fmt)

def map_access(d: Desc, idx: int, off: int) -> tuple[int, bool]:
  """(address, in range) of the byte at buffer offset `off` (instruction offset + VGPR offset + the component's offset) of
  record `idx`. Range check: OOB_SELECT 0: idx < NUM_RECORDS and off < stride; 1: idx < NUM_RECORDS; 2: NUM_RECORDS != 0;
  3: the byte offset from base (linear or swizzled) < NUM_RECORDS. gfx9 (no OOB_SELECT): ADD_TID_ENABLE (scratch) is not
  checked, stride 0 (raw) checks off < NUM_RECORDS, otherwise idx < NUM_RECORDS."""
  off &= M32
  if d.elem:
    rel = ((idx // d.idx_stride) * d.stride + (off // d.elem) * d.elem) * d.idx_stride + (idx % d.idx_stride) * d.elem + off % d.elem
  else: rel = idx * d.stride + off
  ok = {0: idx < d.nrec and off < d.stride, 1: idx < d.nrec, 2: d.nrec != 0, 3: rel < d.nrec}.get(d.oob)
  if ok is None: ok = True if d.add_tid else off < d.nrec if d.stride == 0 else idx < d.nrec
  return (d.base + rel) & M64, ok

def c_defines(arch: ArchSpec) -> str:
  """`VS_<FIELD>(d)` extractors over the V# dwords `d` for csrc/emu_buffer.h (0 for fields this layout lacks)."""
  lay = layout(arch)
  def ex(n, default="0u"):
    if n not in lay: return default
    w, lo, width = lay[n]
    return f"(((d)[{w}] >> {lo}) & {hex((1 << width) - 1)}u)"
  out = [f"#define VS_{n}(d) {ex(n)}" for n in ("BASE_ADDRESS", "BASE_ADDRESS_HI", "STRIDE", "NUM_RECORDS", "INDEX_STRIDE", "ADD_TID_ENABLE")]
  out.append(f"#define VS_OOB_SELECT(d) {ex('OOB_SELECT', f'{OOB_GFX9}u')}")
  es = f"(2u << {ex('ELEMENT_SIZE')})" if "ELEMENT_SIZE" in lay else f"(2u << {ex('SWIZZLE_ENABLE')})"
  out.append(f"#define VS_ELEM(d) ({ex('SWIZZLE_ENABLE')} ? {es} : 0u)")
  out.append(f"#define VS_FMT(d) {ex('FORMAT') if 'FORMAT' in lay else '(' + ex('DATA_FORMAT') + ' | ' + ex('NUM_FORMAT') + ' << 4)'}")
  return "\n".join(out)

def fields(fmt) -> dict[str, str]:
  """The Inst members of a buffer format, by role (RDNA3 and RDNA4 names differ)."""
  names = {fl.name for fl in fmt.fields}
  return {"rsrc": "srsrc" if "srsrc" in names else "rsrc", "ioff": "offset" if "offset" in names else "ioffset",
          "ret": "th" if "th" in names else "glc"}

def data_bits(ops: dict, name: str) -> tuple[int, int]:
  """(bits of the data VGPRs read, bits written back) of a buffer op; CMPSWAP reads data + compare, returns one value."""
  b = ops.get("vdata", (None, 32))[1]
  return b, b // 2 if "CMPSWAP" in name else b

def c_handler(fmt, h: str, fn: str, u, ops: dict, name: str) -> str:
  """C handler of one buffer op whose pseudocode compiles: descriptor and per-lane address from the machine (Buf in
  csrc/emu_buffer.h), the access itself and the data from pcode's `fn` with MEM routed through the range check."""
  fl = fields(fmt)
  dbits, rbits = data_bits(ops, name)
  atomic = "ATOMIC" in name
  ret = "(in->th & 1)" if fl["ret"] == "th" else "in->glc"
  io = lambda var, bits, out: (f"for (int k = 0; k < {max(1, bits // 32)}; k++) " +
                               (f"VV[((r_data + k) & 255) * MAXLANES + L] = s.{var}.d[k];" if out else f"s.{var}.d[k] = VV[((r_data + k) & 255) * MAXLANES + L];"))
  L = [f"void {h}(Wave *w, const Inst *in) {{", "  PcState s; s.user = w; s.fault = 0; Buf b;",
       f"  if (!buf_setup(w, in, &b, in->{fl['rsrc']}, in->soffset, in->{fl['ioff']}, in->idxen, in->offen, in->vaddr - 256, in->tfe)) return;",
       "  uint32_t *const VV = w->v; const int r_data = in->data0 - 256;",
       f"  w->c->atomic = {int(atomic)}; w->c->space = SP_BUFFER; w->c->buf = &b; s.vgpr_a = 0; s.sgpr_o = 0;",
       "  uint64_t ex = rd_exec(w);",
       "  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L; s.ADDR = buf_lane(w, &b, L);"]
  if "DATA" in u.reads: L.append("    " + io("DATA", dbits, False))
  if "VDATA" in u.reads or ("D16" in name and "VDATA" in u.writes): L.append("    " + io("VDATA", dbits, False))
  L += [f"    {fn}(&s);", "    if (UNLIKELY(s.fault)) { pc_fault(w, &s); break; }"]
  if "VDATA" in u.writes: L.append("    " + io("VDATA", dbits, True))
  if "RETURN_DATA" in u.writes: L.append(f"    if ({ret}) {{ {io('RETURN_DATA', rbits, True)} }}")
  L += ["  }", "  w->c->atomic = 0; w->c->space = SP_GLOBAL;", "}"]
  return "\n".join(L) + "\n"
