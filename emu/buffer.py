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

__all__ = ["BUFFER_FORMATS", "Desc", "layout", "descriptor", "scalar_desc", "map_access", "c_defines", "c_handler", "fields", "data_bits", "format_table",
           "format_op", "from_format", "to_format", "fmt_load", "fmt_store", "c_format_handler", "tfe_status_vgpr", "LDS_LOADS", "lds_load_op", "c_lds_handler"]

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

def scalar_desc(arch: ArchSpec, words) -> tuple[int, int]:
  """(base, bytes in range) of the V# of a scalar buffer op (S_BUFFER_*): base 48 bits with its two low bits ignored;
  NUM_RECORDS * STRIDE bytes are in range (STRIDE 0: NUM_RECORDS). Index, swizzle, format, ADD_TID and OOB_SELECT do not
  apply; an access of n bytes at offset o is in range iff o + n <= the limit (csrc/emu_buffer.h sbuf_setup)."""
  lay = layout(arch)
  g = lambda n: _get(lay, words, n)
  return (g("BASE_ADDRESS") | g("BASE_ADDRESS_HI") << 32) & ~3, g("NUM_RECORDS") * (g("STRIDE") or 1)

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
  """`VS_<FIELD>(d)` extractors over the V# dwords `d` for csrc/emu_buffer.h (0 for fields this layout lacks), the number
  format codes (NF_*) and the format table BUF_FMTS[code] = {bits X, Y, Z, W (0: absent), number format}."""
  from tinygrad.runtime.autogen import hsa
  lay, tab = layout(arch), format_table(arch)
  rows = ", ".join("{" + ", ".join(map(str, (*tab[i][0], *(0,) * (4 - len(tab[i][0])), tab[i][1]))) + "}" if i in tab else "{0}" for i in range(128))
  pre = [f"#define NF_{n} {getattr(hsa, f'BUF_NUM_FORMAT_{n}')}" for n in ("UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "FLOAT")]
  pre.append(f"static const uint8_t BUF_FMTS[128][5] = {{{rows}}};")
  def ex(n, default="0u"):
    if n not in lay: return default
    w, lo, width = lay[n]
    return f"(((d)[{w}] >> {lo}) & {hex((1 << width) - 1)}u)"
  out = [f"#define VS_{n}(d) {ex(n)}" for n in ("BASE_ADDRESS", "BASE_ADDRESS_HI", "STRIDE", "NUM_RECORDS", "INDEX_STRIDE", "ADD_TID_ENABLE")]
  out.append(f"#define VS_OOB_SELECT(d) {ex('OOB_SELECT', f'{OOB_GFX9}u')}")
  es = f"(2u << {ex('ELEMENT_SIZE')})" if "ELEMENT_SIZE" in lay else f"(2u << {ex('SWIZZLE_ENABLE')})"
  out.append(f"#define VS_ELEM(d) ({ex('SWIZZLE_ENABLE')} ? {es} : 0u)")
  out.append(f"#define VS_FMT(d) {ex('FORMAT') if 'FORMAT' in lay else '(' + ex('DATA_FORMAT') + ' | ' + ex('NUM_FORMAT') + ' << 4)'}")
  return "\n".join(pre + out)

def fields(fmt) -> dict[str, str]:
  """The Inst members of a buffer format, by role (RDNA3 and RDNA4 names differ)."""
  names = {fl.name for fl in fmt.fields}
  return {"rsrc": "srsrc" if "srsrc" in names else "rsrc", "ioff": "offset" if "offset" in names else "ioffset",
          "ret": "th" if "th" in names else "sc0" if "sc0" in names else "glc"}   # gfx9 (CDNA): sc0 is GLC

def data_bits(ops: dict, name: str) -> tuple[int, int]:
  """(bits of the data VGPRs read, bits written back) of a buffer op; CMPSWAP reads data + compare, returns one value."""
  b = ops.get("vdata", (None, 32))[1]
  return b, b // 2 if "CMPSWAP" in name else b

def tfe_status_vgpr(name: str, ops: dict) -> int | None:
  """TFE (texel fail enable): a load into VGPRs also writes its fail status to the VGPR after the returned data, at
  vdata + this many dwords (the data VGPRs as the wheel's OPERANDS size them: B96 3, D16 formats packed two halves per
  VGPR, D16 single values 1). None for ops without a status VGPR (stores, atomics, loads into LDS), where TFE is invalid.
  The status is 0: the emulator has no partially resident resources, so no fetch fails."""
  if "LOAD" not in name or "ATOMIC" in name or "LDS" in name: return None
  return max(1, ops.get("vdata", (None, 32))[1] // 32)

def _c_tfe(n: int) -> str: return f"if (in->tfe) VV[((r_data + {n}) & (NVREG - 1)) * MAXLANES + L] = 0;"

def c_handler(fmt, h: str, fn: str, u, ops: dict, name: str) -> str:
  """C handler of one buffer op whose pseudocode compiles: descriptor and per-lane address from the machine (Buf in
  csrc/emu_buffer.h), the access itself and the data from pcode's `fn` with MEM routed through the range check."""
  fl = fields(fmt)
  dbits, rbits = data_bits(ops, name)
  atomic = "ATOMIC" in name
  ret = "(in->th & 1)" if fl["ret"] == "th" else f"in->{fl['ret']}"
  io = lambda var, bits, out: (f"for (int k = 0; k < {max(1, bits // 32)}; k++) " +
                               (f"VV[((r_data + k) & (NVREG - 1)) * MAXLANES + L] = s.{var}.d[k];" if out else f"s.{var}.d[k] = VV[((r_data + k) & (NVREG - 1)) * MAXLANES + L];"))
  nst = tfe_status_vgpr(name, ops)
  L = [f"void {h}(Wave *w, const Inst *in) {{", "  PC_STATE(s, w); Buf b;",
       f"  if (!buf_setup(w, in, &b, in->{fl['rsrc']}, in->soffset, in->{fl['ioff']}, in->idxen, in->offen, in->vaddr - 256, in->tfe, {int(nst is not None)})) return;",
       "  uint32_t *const VV = w->v; const int r_data = in->data0 - 256;",
       f"  w->c->atomic = {int(atomic)}; w->c->space = SP_BUFFER; w->c->buf = &b; s.vgpr_a = 0; s.sgpr_o = 0;",
       "  uint64_t ex = rd_exec(w);",
       "  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L; s.ADDR = buf_lane(w, &b, L);"]
  if "DATA" in u.reads: L.append("    " + io("DATA", dbits, False))
  if "VDATA" in u.reads or ("D16" in name and "VDATA" in u.writes): L.append("    " + io("VDATA", dbits, False))
  L += [f"    {fn}(&s);", "    if (UNLIKELY(s.fault)) { PC_FAULT(w, s); break; }"]
  if "VDATA" in u.writes: L.append("    " + io("VDATA", dbits, True))
  if "RETURN_DATA" in u.writes: L.append(f"    if ({ret}) {{ {io('RETURN_DATA', rbits, True)} }}")
  if nst is not None: L.append(f"    {_c_tfe(nst)}")
  L += ["  }", "  w->c->atomic = 0; w->c->space = SP_GLOBAL;", "}"]
  return "\n".join(L) + "\n"

# ---------------- data formats (the _FORMAT_ ops: ConvertFromFormat / ConvertToFormat, "Mem access size depends on format")
# gfx10+ unified FORMAT codes in ISA order from 1 (the same names and numbers LLVM's disassembler prints as BUF_FMT_* for
# gfx1100 and gfx1201; the wheel's hsa.BUF_FORMAT_32_UINT = 20 is one of them): data layout, then its number formats
_UFMT = (("8", "UNORM SNORM USCALED SSCALED UINT SINT"), ("16", "UNORM SNORM USCALED SSCALED UINT SINT FLOAT"),
         ("8_8", "UNORM SNORM USCALED SSCALED UINT SINT"), ("32", "UINT SINT FLOAT"), ("16_16", "UNORM SNORM USCALED SSCALED UINT SINT FLOAT"),
         ("10_11_11", "FLOAT"), ("11_11_10", "FLOAT"), ("10_10_10_2", "UNORM SNORM UINT SINT"),
         ("2_10_10_10", "UNORM SNORM USCALED SSCALED UINT SINT"), ("8_8_8_8", "UNORM SNORM USCALED SSCALED UINT SINT"),
         ("32_32", "UINT SINT FLOAT"), ("16_16_16_16", "UNORM SNORM USCALED SSCALED UINT SINT FLOAT"), ("32_32_32", "UINT SINT FLOAT"),
         ("32_32_32_32", "UINT SINT FLOAT"))
NF_FLOATISH = ("UNORM", "SNORM", "USCALED", "SSCALED", "FLOAT")   # number formats whose register value is an f32 (f16 for D16)

def _chans(layout_name: str) -> tuple[int, ...]:
  """channel widths X, Y, Z, W: the name lists them from the most significant bits down, X sits in the lowest bits"""
  return tuple(int(x) for x in reversed(layout_name.split("_")))

@functools.cache
def format_table(arch: ArchSpec) -> dict[int, tuple[tuple[int, ...], int]]:
  """format code -> (channel bits X..W, BUF_NUM_FORMAT value). gfx10+: the unified FORMAT; gfx9: DATA_FORMAT | NUM_FORMAT << 4
  with the layouts named by the wheel's hsa.BUF_DATA_FORMAT enum."""
  from tinygrad.runtime.autogen import hsa
  nf = lambda n: getattr(hsa, f"BUF_NUM_FORMAT_{n}")
  if "FORMAT" in layout(arch):
    codes = [(lay, n) for lay, nfs in _UFMT for n in nfs.split()]
    return {i + 1: (_chans(lay), nf(n)) for i, (lay, n) in enumerate(codes)}
  out = {}
  for v, name in hsa.enum_BUF_DATA_FORMAT.items():
    lay = name.removeprefix("BUF_DATA_FORMAT_")
    if not all(p.isdigit() for p in lay.split("_")): continue
    ch = _chans(lay)
    for n in ("UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "FLOAT"):
      if (n == "FLOAT" and not all(x in (10, 11, 16, 32) for x in ch)) or (n not in ("UINT", "SINT", "FLOAT") and 32 in ch): continue
      out[v | nf(n) << 4] = (ch, nf(n))
  return out

def format_op(name: str) -> tuple[bool, int, bool, bool, bool]:
  """(store, channels, d16, d16 hi, typed: format from the instruction) of a BUFFER/TBUFFER *_FORMAT_* op name"""
  return "STORE" in name, len(name.rsplit("_", 1)[1]), "D16" in name, "D16_HI" in name, name.startswith("TBUFFER")

def _nfname(code: int) -> str:
  from tinygrad.runtime.autogen import hsa
  return {getattr(hsa, f"BUF_NUM_FORMAT_{n}"): n for n in ("UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "FLOAT")}[code]

def _f32(x: float) -> int:
  import numpy as np
  return int(np.array(x, np.float32).view(np.uint32))
def _asf32(u: int) -> float:
  import numpy as np
  return float(np.array(u & M32, np.uint32).view(np.float32))
def f32_to_f16(u: int) -> int:
  """round to nearest even; NaN stays NaN (quieted), as pcode's conversion (and the C twin's pc_cvt) does"""
  from mockgpu.pcode.softfloat import FMTS, cvt
  return cvt(u & M32, FMTS["f32"], FMTS["f16"])
def f16_to_f32(u: int) -> int:
  from mockgpu.pcode.softfloat import FMTS, cvt
  return cvt(u & 0xffff, FMTS["f16"], FMTS["f32"])

def _uf_to_f32(x: int, m: int) -> int:
  """unsigned float with 5 exponent bits (bias 15) and m mantissa bits (10/11-bit channels) -> f32 bits"""
  e, mm = x >> m, x & ((1 << m) - 1)
  if e == 31: return 0x7f800000 | mm << (23 - m)
  if e == 0: return _f32(mm * 2.0 ** (-14 - m))
  return (e + 112) << 23 | mm << (23 - m)

def _f32_to_uf(u: int, m: int) -> int:
  """f32 bits -> unsigned 5-exponent-bit float (round to nearest even; negative values and -0 give 0, NaN a quiet NaN)"""
  ex, mant = (u >> 23) & 0xff, u & 0x7fffff
  if ex == 255: return 31 << m | (1 << (m - 1) if mant else 0)
  if u >> 31 or ex == 0: return 0
  e, full, sh = ex - 112, mant | 1 << 23, 23 - m
  if e < 1: sh, e = sh + 1 - e, 0
  if sh > 24: return 0
  r, rem = full >> sh, full & ((1 << sh) - 1)
  r += rem > (1 << (sh - 1)) or (rem == 1 << (sh - 1) and r & 1)
  if e == 0: return r                   # a denormal that rounds up to 1 << m is the smallest normal: same bits
  r, e = (r >> 1, e + 1) if r >> (m + 1) else (r, e)
  return 31 << m if e >= 31 else e << m | (r & ((1 << m) - 1))

def from_format(x: int, b: int, nf: str) -> int:
  """a b-bit channel of number format nf -> the 32-bit register value (f32 bits for the float-like formats)"""
  s = x - (1 << b) if x >> (b - 1) & 1 else x
  if nf == "UINT": return x
  if nf == "SINT": return s & M32
  if nf == "USCALED": return _f32(x)
  if nf == "SSCALED": return _f32(s)
  if nf == "UNORM": return _f32_div(x, (1 << b) - 1)
  if nf == "SNORM": return _f32_max(_f32_div(s, (1 << (b - 1)) - 1), -1.0)
  return x if b == 32 else f16_to_f32(x) if b == 16 else _uf_to_f32(x, b - 5)

def _f32_div(a: int, b: int) -> int:
  import numpy as np
  return int((np.float32(a) / np.float32(b)).view(np.uint32))
def _f32_max(u: int, lo: float) -> int: return _f32(lo) if _asf32(u) < lo else u

def to_format(u: int, b: int, nf: str) -> int:
  """a 32-bit register value -> the b-bit channel of number format nf (norm: clamp, scale, round to nearest even; scaled:
  clamp, truncate; integers: the low b bits)"""
  import numpy as np
  mask = (1 << b) - 1
  if nf in ("UINT", "SINT"): return u & mask
  if nf == "FLOAT": return u & mask if b == 32 else f32_to_f16(u) if b == 16 else _f32_to_uf(u, b - 5)
  f = np.float32(_asf32(u))
  if np.isnan(f): return 0
  if nf == "UNORM": return int(np.rint(np.float32(min(max(f, np.float32(0)), np.float32(1))) * np.float32(mask))) & mask
  if nf == "SNORM": return int(np.rint(np.float32(min(max(f, np.float32(-1)), np.float32(1))) * np.float32((1 << (b - 1)) - 1))) & mask
  lo, hi = (0, mask) if nf == "USCALED" else (-(1 << (b - 1)), (1 << (b - 1)) - 1)
  return int(min(max(np.trunc(np.float64(f)), lo), hi)) & mask

def _chan_access(bits: tuple[int, ...], c: int) -> tuple[int, int, int]:
  """(byte offset, access bytes, bit shift) of channel c: byte channels are read alone, packed ones through their dword"""
  boff = sum(bits[:c])
  return (boff // 8, bits[c] // 8, 0) if all(x % 8 == 0 for x in bits) else (0, 4, boff)

def fmt_load(d: Desc, idx: int, off: int, fi, nch: int, d16: bool, hi: bool, old: int, rd) -> int:
  """new VDATA bits of a *_LOAD_*FORMAT_* lane; rd(address, bytes) reads checked global memory. The element is in or out
  of range as a whole (out: every channel reads 0); channels the format lacks read 0 (X, Y, Z) or 1 (W; 1.0 for the
  float-like number formats)."""
  bits, nfc = fi
  nf = _nfname(nfc)
  _, ok = map_access(d, idx, off)
  out = old
  for c in range(nch):
    if not ok: v = 0
    elif c < len(bits):
      byte, n, sh = _chan_access(bits, c)
      v = from_format((rd(map_access(d, idx, off + byte)[0], n) >> sh) & ((1 << bits[c]) - 1), bits[c], nf)
    else: v = (0x3f800000 if nf in NF_FLOATISH else 1) if c == 3 else 0
    if d16:
      v = f32_to_f16(v) if nf in NF_FLOATISH else v & 0xffff
      sh = 16 if hi else 16 * c
      out = out & ~(0xffff << sh) | v << sh
    else: out = out & ~(M32 << (32 * c)) | v << (32 * c)
  return out

def fmt_store(d: Desc, idx: int, off: int, fi, nch: int, d16: bool, hi: bool, vdata: int, rd, wr):
  """a *_STORE_*FORMAT_* lane: the instruction's channels the format has are converted and written (packed channels
  read-modify-write their dword); out of range (as a whole) writes nothing"""
  bits, nfc = fi
  nf = _nfname(nfc)
  if not map_access(d, idx, off)[1]: return
  for c in range(min(nch, len(bits))):
    if d16:
      h = (vdata >> (16 if hi else 16 * c)) & 0xffff
      u = f16_to_f32(h) if nf in NF_FLOATISH else (h - (1 << 16) if nf == "SINT" and h >> 15 else h) & M32
    else: u = (vdata >> (32 * c)) & M32
    raw = to_format(u, bits[c], nf)
    byte, n, sh = _chan_access(bits, c)
    a = map_access(d, idx, off + byte)[0]
    if bits[c] != 8 * n: raw = rd(a, 4) & ~(((1 << bits[c]) - 1) << sh) & M32 | raw << sh
    wr(a, n, raw)

def c_format_handler(fmt, h: str, name: str, ops: dict) -> str:
  """C handler of a BUFFER/TBUFFER *_FORMAT_* op (hand-written semantics: the pseudocode's ConvertFromFormat/ConvertToFormat
  and its format-sized accesses are prose): buf_format in csrc/emu_buffer.h per lane."""
  fl = fields(fmt)
  store, nch, d16, hi, typed = format_op(name)
  names = {f.name for f in fmt.fields}
  code = ("in->format" if "format" in names else "(in->dfmt | in->nfmt << 4)") if typed else "b.fmt"
  ndw, nst = (1 if hi else (nch + 1) // 2) if d16 else nch, tfe_status_vgpr(name, ops)   # nst == ndw for loads
  return "\n".join([f"void {h}(Wave *w, const Inst *in) {{", "  PC_STATE(s, w); Buf b; uint32_t vd[4];",
    f"  if (!buf_setup(w, in, &b, in->{fl['rsrc']}, in->soffset, in->{fl['ioff']}, in->idxen, in->offen, in->vaddr - 256, in->tfe, {int(nst is not None)})) return;",
    f"  const uint8_t *fi = BUF_FMTS[({code}) & 127];",
    "  if (!fi[0]) { set_status(w, ST_UNSUPPORTED, MSG_BUF_FORMAT); return; }",
    "  uint32_t *const VV = w->v; const int r_data = in->data0 - 256; w->c->atomic = 0;",
    "  uint64_t ex = rd_exec(w);",
    "  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L; buf_lane(w, &b, L);",
    f"    for (int k = 0; k < {ndw}; k++) vd[k] = VV[((r_data + k) & (NVREG - 1)) * MAXLANES + L];",
    f"    buf_format(&s, &b, fi, {nch}, {int(d16)}, {int(hi)}, {int(store)}, vd);",
    "    if (UNLIKELY(s.fault)) { PC_FAULT(w, s); break; }",
    *([] if store else [f"    for (int k = 0; k < {ndw}; k++) VV[((r_data + k) & (NVREG - 1)) * MAXLANES + L] = vd[k];", f"    {_c_tfe(ndw)}"]),
    "  }", "}"]) + "\n"

# ---------------- loads into LDS: GLOBAL/SCRATCH_LOAD_LDS_* and BUFFER_LOAD_LDS_* (no pseudocode in the wheel) ----------------
LDS_LOADS = ("GLOBAL", "SCRATCH", "MUBUF")   # the formats whose *_LOAD_LDS_* ops run here

_LDS_WIDTH = {"U8": (1, False), "I8": (1, True), "U16": (2, False), "I16": (2, True), "B32": (4, False), "X": (0, False),   # RDNA names
              "UBYTE": (1, False), "SBYTE": (1, True), "USHORT": (2, False), "SSHORT": (2, True), "DWORD": (4, False),       # gfx9 names
              "DWORDX3": (12, False), "DWORDX4": (16, False)}                                                              # gfx950

def lds_load_op(name: str) -> tuple[int, bool, bool] | None:
  """(bytes read, sign-extend, lane address instead of a VGPR: *_ADDTID_*) of a *_LOAD_LDS_* op; 0 bytes: FORMAT_X.
  The multi-dword gfx950 forms (DWORDX3/X4: 12/16 bytes) move each dword in turn."""
  if (w := _LDS_WIDTH.get(name.rsplit("_", 1)[1])) is None: return None
  return w[0], w[1], "ADDTID" in name

def c_lds_handler(fmt, h: str, name: str) -> str:
  """C handler of a load into LDS: each active lane reads memory as the format addresses it (global: SGPR base + VGPR
  offset or a 64-bit VGPR address, *_ADDTID_*: SGPR base + lane * 4; scratch: the lane's private offset; buffer: through
  the V#, out of range reads 0; FORMAT_X: the X channel converted) and writes the dword to LDS at M0 + offset + lane * 4;
  DWORDX3/X4 (GLOBAL, gfx950): the lane's 12/16 bytes, dword by dword (read, then write), to M0 + offset + lane * 12/16"""
  n, sx, tid = lds_load_op(name)
  L = [f"void {h}(Wave *w, const Inst *in) {{", "  PC_STATE(s, w); w->c->atomic = 0;"]
  if fmt.name == "MUBUF":
    L += ["  Buf b; uint32_t vd[4];", "  if (!buf_setup(w, in, &b, in->srsrc, in->soffset, in->offset, in->idxen, in->offen, in->vaddr - 256, in->tfe, 0)) return;",
          "  const uint8_t *fi = BUF_FMTS[b.fmt & 127];",
          *(["  if (!fi[0]) { set_status(w, ST_UNSUPPORTED, MSG_BUF_FORMAT); return; }"] if not n else []),
          "  const uint32_t ioff = (uint32_t)in->offset; w->c->space = SP_BUFFER; w->c->buf = &b; (void)fi; (void)vd;"]
  else:
    L += ["  const int sa = in->saddr != ENC_NULL && in->saddr != 0x7f; const uint64_t sbase = sa ? ((uint64_t)w->s[in->saddr + 1] << 32 | w->s[in->saddr]) : 0;",
          "  const int64_t off = sext((uint64_t)in->offset, 13); const uint32_t ioff = (uint32_t)off;",
          "  const uint32_t *va = w->v + ((in->addr - 256) & (NVREG - 1)) * MAXLANES, *vah = w->v + ((in->addr - 255) & (NVREG - 1)) * MAXLANES; (void)vah; (void)va;"]
  L.append("  uint64_t ex = rd_exec(w);")
  L.append("  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L; uint64_t v;")
  if fmt.name == "MUBUF":
    L.append("    uint64_t a = buf_lane(w, &b, L);")
    L.append(f"    {'v = b_rd(&s, a, ' + str(n) + ');' if n else 'vd[0] = 0; buf_format(&s, &b, fi, 1, 0, 0, 0, vd); v = vd[0];'}")
  elif fmt.name == "SCRATCH":
    L.append(f"    v = p_rd(&s, (uint32_t)((sa ? w->s[in->saddr] : 0) + (in->sve ? va[L] : 0) + off), {n});")
  else:
    addr = "sbase + off + 4u * (uint32_t)L" if tid else "(sa ? sbase + va[L] : ((uint64_t)vah[L] << 32 | va[L])) + off"
    if n > 4:
      L += [f"    for (int k = 0; k < {n // 4}; k++) {{ v = g_rd(&s, {addr} + 4u * (uint32_t)k, 4); if (UNLIKELY(s.fault)) break;",
            f"      l_wr(&s, (uint32_t)(w->s[ENC_M0] + ioff + {n}u * (uint32_t)L + 4u * (uint32_t)k), 4, (uint32_t)v); if (UNLIKELY(s.fault)) break; }}",
            "    if (UNLIKELY(s.fault)) { PC_FAULT(w, s); break; }", "  }", "  w->c->space = SP_GLOBAL;", "}"]
      return "\n".join(L) + "\n"
    L.append(f"    v = g_rd(&s, {addr}, {n});")
  L += ["    if (UNLIKELY(s.fault)) { PC_FAULT(w, s); break; }",
        f"    lds_put(&s, w, L, ioff, {'lds_ext(v, ' + str(n) + ', ' + str(int(sx)) + ')' if n else '(uint32_t)v'});",
        "    if (UNLIKELY(s.fault)) { PC_FAULT(w, s); break; }", "  }", "  w->c->space = SP_GLOBAL;", "}"]
  return "\n".join(L) + "\n"
