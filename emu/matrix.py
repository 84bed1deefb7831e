"""Matrix instructions (WMMA, SWMMAC, MFMA) as data: the shape and element types of each op, and per arch family and
wave size where every matrix element lives (lane, VGPR offset from the operand's first register, bit offset). Both backends
run one generic kernel over these tables: csrc/emu_matrix.h (tables emitted by `c_source`) and `execute` (Python reference).

Semantics shared by both kernels (the ISA's pseudocode is only the formula `D = A * B + C`):
* A is M x K (row-major element index m*K+k), B is K x N (k*N+n), C and D are M x N (m*N+n).
* float: elements are widened to f32 (F64: f64) exactly; starting from acc = C[m][n], for k = 0..K-1: acc = acc + A[m][k] * B[k][n]
  with the product and the sum each rounded to f32 (RNE; products of 16-bit floats are exact unless they overflow), then
  acc is rounded (RNE) to the D type; a NaN result is the canonical quiet NaN of the D type.
* XF32 (CDNA3 V_MFMA_*_XF32): each f32 input is first rounded to the nearest xf32 (8-bit exponent, 10 mantissa bits; ties to
  even, NaN stays NaN, denormals kept, rounding past the largest finite value gives infinity); the guides name the format
  but not its rounding, so ties-to-even is this model's choice. Products of two xf32 are exact in f32.
* scaled (gfx950 VOP3PX2 V_MFMA_SCALE_*): every product is A * B * 2^(SA - 127) * 2^(SB - 127), formed exactly and rounded
  once to f32, where SA/SB are the E8M0 scale bytes of the lanes holding the A/B element (each lane holds one 32-element
  K block of the OCP MX formats): byte OPSEL[i] | OPSEL_HI[i] << 1 of scale VGPR i (LLVM accepts only VGPRs there; other
  encodings raise InvalidInstruction); E8M0 0xff is NaN.
* integer (IU8/IU4): A/B are signed when NEG[0]/NEG[1] is set, else unsigned; the exact sum wraps to i32, or saturates
  with the clamp bit.
* float A/B modifiers: NEG[i] negates the elements in bits 0..15 of their VGPR, NEG_HI[i] those in bits 16..31 (f16/bf16);
  C: NEG_HI[2] takes |C|, then NEG[2] negates it. A C operand that is not a VGPR (inline constant, SGPR) gives every
  element the operand's low element bits.
* EXEC is ignored: every lane's registers are read and written.
"""
from __future__ import annotations
import functools, re
from dataclasses import dataclass
import numpy as np

__all__ = ["MatOp", "ops", "c_source", "execute", "ETYPES"]

# element type -> (bits, code): c_source emits the codes as the C enum ET_<TYPE> and the widths as ET_BITS; IU8/IU4 are integers whose signedness comes from NEG, I8 is signed
ETYPES = {"f16": (16, 0), "bf16": (16, 1), "fp8": (8, 2), "bf8": (8, 3), "iu8": (8, 4), "iu4": (4, 5), "f32": (32, 6), "i32": (32, 7),
          "i8": (8, 8), "f64": (64, 9), "f8f6f4": (8, 10), "xf32": (32, 11)}
# F8F6F4: format (and width) from CBSZ (A) / BLGP (B) at run time; XF32: f32 storage, rounded on input
_INT = ("iu8", "iu4", "i32", "i8")

@dataclass(frozen=True)
class MatOp:
  """One matrix op: D (M x N, type `c`) = A (M x K, type `a`) * B (K x N, type `b`) + C. `lay[wave]` = (A, B, C/D, index)
  tables, one packed `lane | reg << 8 | shift << 16` per element; `opsel_half`: 16-bit C/D sit in the low (OPSEL[2] = 0) or
  high half. `sparse` (1: RDNA4 SWMMAC, 2: CDNA SMFMAC): A holds M x K/2 stored elements, two of every four K (4:2
  structured sparsity); the 2-bit index of stored element j of row m (its position in K group j/2) is in the src2 VGPR at
  the index table's bits, plus the index set times the index bits a lane holds; the set is INDEX_KEY (OPSEL[1:0]) for
  SWMMAC and ABID for SMFMAC (which requires CBSZ = BLGP = 0, as LLVM encodes it); C is read from D. `blocks`: independent
  products (CDNA multi-block MFMA), element index b*M*K + m*K + k etc.; `mfma`: CBSZ/ABID/BLGP apply and NEG/NEG_HI are not modifiers;
  F8F6F4 A/B (gfx950): CBSZ/BLGP give the formats of A/B (MINI_FMTS) instead, and the A/B tables hold element indices
  (`reg * 32 + shift`), the bit position being index * width. `scaled`: VOP3PX2 E8M0 block scales (module docstring)."""
  name: str
  m: int
  n: int
  k: int
  a: str
  b: str
  c: str
  lay: dict
  opsel_half: bool = False
  sparse: int = 0
  blocks: int = 1
  mfma: bool = False
  scaled: bool = False

def _pack(lane: int, bitpos: int) -> int: return lane | (bitpos // 32) << 8 | (bitpos % 32) << 16

def _rdna3(m: int, n: int, k: int, ta: str, tc: str, wave: int) -> tuple:
  """RDNA3 ISA guide 7.9: lane l holds row l%16 of A (column l%16 of B), K packed from bit 0 of the first VGPR on; lanes
  16..63 repeat lanes 0..15 (read from lanes 0..15 here). C/D: VGPR i of lane l holds (M = G*i + l/16, N = l%16) with
  G = wave/16 lane groups, 16-bit types in the half OPSEL[2] selects."""
  ab = ETYPES[ta][0]
  A = tuple(_pack(r, kk * ab) for r in range(m) for kk in range(k))
  B = tuple(_pack(c, kk * ab) for kk in range(k) for c in range(n))
  g = wave // 16
  C = tuple(_pack((r % g) * 16 + c, (r // g) * 32) for r in range(m) for c in range(n))
  return A, B, C, ()

def _rdna4(m: int, n: int, k: int, ta: str, tc: str, wave: int) -> tuple:
  """RDNA4 ISA guide 7.9 (no repeated lanes): lane group g = l/16 of G = wave/16 holds row l%16 of A (column of B); its
  E = K/G elements are packed from bit 0 in two chunks of E/2: element e is K = e%(E/2) + (E/2)*g + (E/2)*G*(e/(E/2)).
  C/D: lane l holds column l%16, rows (l/16)*R .. +R-1 (R = 256/wave) packed from bit 0 (two 16-bit elements per VGPR)."""
  ab, cb, g = ETYPES[ta][0], ETYPES[tc][0], wave // 16
  ch = k // g // 2
  def kpos(kk): return (kk // ch) % g, (kk // (ch * g)) * ch + kk % ch   # (lane group, element index in the lane)
  A = tuple(_pack(kpos(kk)[0] * 16 + r, kpos(kk)[1] * ab) for r in range(m) for kk in range(k))
  B = tuple(_pack(kpos(kk)[0] * 16 + c, kpos(kk)[1] * ab) for kk in range(k) for c in range(n))
  rows = m * n // wave
  C = tuple(_pack((r // rows) * 16 + c, (r % rows) * cb) for r in range(m) for c in range(n))
  return A, B, C, ()

def _rdna4_sparse(m: int, n: int, k: int, ta: str, tc: str, wave: int) -> tuple:
  """RDNA4 SWMMAC: the stored A (M x K/2) and B, C/D in the dense layouts; the index of stored element e of a lane at bits 2e
  of that lane's index VGPR."""
  A, _, C, _ = _rdna4(m, n, k // 2, ta, tc, wave)
  B = _rdna4(m, n, k, ta, tc, wave)[1]
  ab = ETYPES[ta][0]
  I = tuple((p & 255) | 2 * (((p >> 8) & 255) * 32 + (p >> 16)) // ab << 16 for p in A)
  return A, B, C, I

def _cdna(m: int, n: int, k: int, blocks: int, ta: str, tb: str, tc: str) -> tuple:
  """CDNA3/CDNA4 ISA guide (matrix arithmetic), wave64: lane l holds row l%M of A (column l%N of B) of block (l/M) % blocks; the
  G = 64/(M*blocks) lane groups hold K/G consecutive K each (group l/M for one block), packed from bit 0 of the first VGPR.
  C/D: 4x4 blocks: VGPR i of lane l holds row i, column l%4 of block l/4 (16 blocks); F64 4x4x4 (4 blocks, one f64 per
  lane): lane l holds row l/16, column l%4 of block (l/4)%4, the rows taking the lane groups the 16-block form gives the
  blocks 4..15 (the same split as its A/B, where lane group l/16 holds K); 16x16: VGPRs 4b..4b+3 hold block b, row
  4*(l/16) + i, column l%16; 32x32: VGPRs 16b..16b+15 hold block b, row 8*(i/4) + 4*(l/32) + i%4, column l%32
  (i counts elements: two VGPRs each for F64)."""
  (ab, bb, cb), g = (1 if t == "f8f6f4" else ETYPES[t][0] for t in (ta, tb, tc)), 64 // (m * blocks)
  kper = k // g
  A = tuple(_pack((b + blocks * (kk // kper)) * m + r, (kk % kper) * ab) for b in range(blocks) for r in range(m) for kk in range(k))
  B = tuple(_pack((b + blocks * (kk // kper)) * n + c, (kk % kper) * bb) for b in range(blocks) for kk in range(k) for c in range(n))
  def cpos(b, r, c):
    if m == 4: return (b * 4 + c, r) if blocks == 16 else (16 * r + 4 * b + c, 0)
    if m == 16: return (r // 4) * 16 + c, b * 4 + r % 4
    return ((r // 4) % 2) * 32 + c, b * 16 + (r // 8) * 4 + r % 4
  C = tuple(_pack(cpos(b, r, c)[0], cpos(b, r, c)[1] * cb) for b in range(blocks) for r in range(m) for c in range(n))
  return A, B, C, ()

def _cdna_sparse(m: int, n: int, k: int, ta: str, tb: str, tc: str) -> tuple:
  """CDNA SMFMAC: the stored A (M x K/2) in the dense layout of K/2, B and C/D in the dense layouts; the index of stored
  element e of a lane at bits 2e of the index set (LLVM's v_smfmac operands: A half the VGPRs of the dense B)."""
  A, _, C, _ = _cdna(m, n, k // 2, 1, ta, tb, tc)
  B = _cdna(m, n, k, 1, ta, tb, tc)[1]
  ab = ETYPES[ta][0]
  I = tuple((p & 255) | 2 * (((p >> 8) & 255) * 32 + (p >> 16)) // ab << 16 for p in A)
  return A, B, C, I

def _minifloat(raw: int, e: int, m: int, special: str) -> float:
  """Value of a small OCP float with e exponent and m mantissa bits: special "e4m3" (no infinities, S.1111.111 is NaN),
  "ieee" (all-ones exponent: infinity or NaN) or "finite" (FP6/FP4: every encoding is a number)."""
  s, ex, mant, bias = -1.0 if raw >> (e + m) & 1 else 1.0, (raw >> m) & ((1 << e) - 1), raw & ((1 << m) - 1), (1 << (e - 1)) - 1
  if special == "e4m3" and ex == (1 << e) - 1 and mant == (1 << m) - 1: return float("nan")
  if special == "ieee" and ex == (1 << e) - 1: return s * float("inf") if mant == 0 else float("nan")
  return s * (mant / (1 << m) if ex == 0 else 1 + mant / (1 << m)) * 2.0 ** ((ex or 1) - bias)

# RDNA4 and gfx950 small floats (OCP), by the gfx950 F8F6F4 format code (CBSZ for A, BLGP for B): FP8 E4M3, BF8 E5M2,
# FP6 E2M3, BF6 E3M2, FP4 E2M1; bits of each
MINI_FMTS = ((8, 4, 3, "e4m3"), (8, 5, 2, "ieee"), (6, 2, 3, "finite"), (6, 3, 2, "finite"), (4, 2, 1, "finite"))
MINI = np.array([[_minifloat(i % (1 << b), e, m, sp) for i in range(256)] for b, e, m, sp in MINI_FMTS], np.float32)

_WMMA3 = {"V_WMMA_F32_16X16X16_F16": ("f16", "f16", "f32"), "V_WMMA_F32_16X16X16_BF16": ("bf16", "bf16", "f32"),
          "V_WMMA_F16_16X16X16_F16": ("f16", "f16", "f16"), "V_WMMA_BF16_16X16X16_BF16": ("bf16", "bf16", "bf16"),
          "V_WMMA_I32_16X16X16_IU8": ("iu8", "iu8", "i32"), "V_WMMA_I32_16X16X16_IU4": ("iu4", "iu4", "i32")}

_WMMA4 = {**_WMMA3, "V_WMMA_I32_16X16X32_IU4": ("iu4", "iu4", "i32"),
          **{f"V_WMMA_F32_16X16X16_{x.upper()}_{y.upper()}": (x, y, "f32") for x in ("fp8", "bf8") for y in ("fp8", "bf8")}}

_SWMMAC4 = {"V_SWMMAC_F32_16X16X32_F16": ("f16", "f16", "f32"), "V_SWMMAC_F32_16X16X32_BF16": ("bf16", "bf16", "f32"),
            "V_SWMMAC_F16_16X16X32_F16": ("f16", "f16", "f16"), "V_SWMMAC_BF16_16X16X32_BF16": ("bf16", "bf16", "bf16"),
            "V_SWMMAC_I32_16X16X32_IU8": ("iu8", "iu8", "i32"), "V_SWMMAC_I32_16X16X32_IU4": ("iu4", "iu4", "i32"),
            "V_SWMMAC_I32_16X16X64_IU4": ("iu4", "iu4", "i32"),
            **{f"V_SWMMAC_F32_16X16X32_{x.upper()}_{y.upper()}": (x, y, "f32") for x in ("fp8", "bf8") for y in ("fp8", "bf8")}}

def _mk(name: str, t: tuple, layout, k: int = 16, **kw) -> MatOp:
  return MatOp(name, 16, 16, k, *t, {w: layout(16, 16, k, t[0], t[2], w) for w in (32, 64)}, **kw)

_MFMA_T = {"F8F6F4": "f8f6f4", "F32": "f32", "I32": "i32", "F16": "f16", "BF16": "bf16", "I8": "i8", "F64": "f64", "FP8": "fp8", "BF8": "bf8",
           "XF32": "xf32"}

def _mfma_ops() -> dict[str, MatOp]:
  """Every V_MFMA_* / V_SMFMAC_* of the wheel's cdna enums (VOP3P, VOP3PX2 for the scaled forms) whose element types and
  layout are modelled (see docs/emu.md)."""
  from tinygrad.runtime.autogen.amd.cdna.enum import VOP3POp, VOP3PX2Op
  out = {}
  for name in [*VOP3POp.__members__, *VOP3PX2Op.__members__]:
    pat = r"V_(?:MFMA|(SMFMAC))_(SCALE_)?(F32|I32|F64)_(\d+)X(\d+)X(\d+)(?:_(\d+)B)?_([A-Z0-9]+)(?:_([A-Z0-9]+))?"
    if not (mt := re.fullmatch(pat, name)): continue
    sp, sc, d, m, n, k, nb, ta, tb = mt.groups()
    if ta not in _MFMA_T or (tb or ta) not in _MFMA_T: continue
    t, blocks, (m, n, k) = (_MFMA_T[ta], _MFMA_T[tb or ta], _MFMA_T[d]), int(nb or 1), map(int, (m, n, k))
    lay = _cdna_sparse(m, n, k, *t) if sp else _cdna(m, n, k, blocks, *t)
    out[name] = MatOp(name, m, n, k, *t, {64: lay}, sparse=2 if sp else 0, blocks=blocks, mfma=True, scaled=bool(sc))
  return out

@functools.cache
def ops(family: str) -> dict[str, MatOp]:
  """The matrix ops of an arch family by opcode member name (without encoding suffix)."""
  if family == "cdna": return _mfma_ops()
  if family == "rdna3": return {n: _mk(n, t, _rdna3, opsel_half=ETYPES[t[2]][0] == 16) for n, t in _WMMA3.items()}
  k = lambda n: int(n.split("X")[2].split("_")[0])
  if family == "rdna4": return {**{n: _mk(n, t, _rdna4, k(n)) for n, t in _WMMA4.items()},
                                **{n: _mk(n, t, _rdna4_sparse, k(n), sparse=True) for n, t in _SWMMAC4.items()}}
  return {}

# ---------------- C tables ----------------
def _cfloat(x: float) -> str: return "NAN" if np.isnan(x) else ("-" if x < 0 else "") + "INFINITY" if np.isinf(x) else float(x).hex() + "f"

def c_source(family: str) -> tuple[str, dict[str, str]]:
  """C for the main translation unit: the 8-bit float tables, the kernel (csrc/emu_matrix.h), the family's layout tables and
  `MatOp`s and one handler per op; and {op name: handler name}."""
  L, names, seen = [f"static const float MAT_MINI[{len(MINI)}][256] = {{{', '.join('{' + ', '.join(map(_cfloat, r)) + '}' for r in MINI)}}};",
                    f"static const uint8_t MAT_MINI_BITS[{len(MINI)}] = {{{', '.join(str(f[0]) for f in MINI_FMTS)}}};",
                    *(f"#define MAT_{x.upper()}(in) {f'((in)->{x})' if family == 'cdna' else '0'}" for x in ("cbsz", "abid", "blgp")),
                    f"#define MAT_SCALE(in, i) {'((i) ? (in)->scale_src1 : (in)->scale_src0)' if family == 'cdna' else '0'}",
                    "enum { " + ", ".join(f"ET_{n.upper()} = {c}" for n, (_, c) in ETYPES.items()) + " };",
                    f"static const uint8_t ET_BITS[] = {{{', '.join(str(b) for b, _ in sorted(ETYPES.values(), key=lambda x: x[1]))}}};",
                    '#include "emu_matrix.h"'], {}, {}
  def table(t: tuple) -> str:
    if t not in seen:
      seen[t] = f"MLAY{len(seen)}"
      L.append(f"static const uint32_t {seen[t]}[{len(t)}] = {{{', '.join(map(str, t))}}};")
    return seen[t]
  for name, op in ops(family).items():
    lay = ", ".join("{" + ", ".join(table(x) if x else "0" for x in op.lay.get(w, ((),) * 4)) + "}" for w in (32, 64))
    L.append(f"static const MatOp MOP_{name} = {{{op.m}, {op.n}, {op.k}, {op.blocks}, {ETYPES[op.a][1]}, {ETYPES[op.b][1]}, {ETYPES[op.c][1]}, "
             f"{int(op.opsel_half)}, {int(op.sparse)}, {int(op.mfma)}, {int(op.scaled)}, {{{lay}}}}};")
    L.append(f"static void hm_{name}(Wave *w, const Inst *in) {{ mat_run(w, in, &MOP_{name}); }}")
    names[name] = f"hm_{name}"
  return "\n".join(L), names

# ---------------- Python reference kernel ----------------
def _decode(raw: np.ndarray, t: str) -> np.ndarray:
  """Raw element bits (uint64) -> float32/float64 (exact) or int64 (sign-extended for I8/I32; IU* unsigned here)."""
  if t == "f16": return raw.astype(np.uint16).view(np.float16).astype(np.float32)
  if t == "bf16": return (raw.astype(np.uint32) << 16).view(np.float32)
  if t == "f32": return raw.astype(np.uint32).view(np.float32)
  if t == "xf32":   # RNE to 10 mantissa bits, NaN kept
    b = raw.astype(np.uint32)
    return np.where((b & 0x7fffffff) <= 0x7f800000, (b + 0xfff + ((b >> 13) & 1)) & 0xffffe000, b).astype(np.uint32).view(np.float32)
  if t == "f64": return raw.view(np.float64)
  if t in ("fp8", "bf8"): return MINI[int(t == "bf8")][raw]
  if t == "i8": return raw.astype(np.uint8).view(np.int8).astype(np.int64)
  if t == "i32": return raw.astype(np.uint32).view(np.int32).astype(np.int64)
  return raw.astype(np.int64)

def _encode(x: np.ndarray, t: str) -> np.ndarray:
  """float32 (float64 for F64) results -> raw bits of type t (RNE, canonical NaN) as Python ints."""
  if t == "f64": return np.where(np.isnan(x), 0x7ff8000000000000, x.view(np.uint64)).tolist()
  if t == "f32": return np.where(np.isnan(x), 0x7fc00000, x.view(np.uint32)).astype(np.int64).tolist()
  if t == "f16":
    with np.errstate(all="ignore"): h = x.astype(np.float16).view(np.uint16).astype(np.int64)
    return np.where(np.isnan(x), 0x7e00, h).tolist()
  b = x.view(np.uint32).astype(np.int64)
  return np.where(np.isnan(x), 0x7fc0, (b + 0x7fff + ((b >> 16) & 1)) >> 16 & 0xffff).tolist()

def _blgp_lane(blgp: int, lane: int) -> int:
  """The lane B is read from under MFMA's BLGP: 1/2 broadcast lanes 0-31 / 32-63 to both halves, 3 rotates down by 16
  lanes, 4..7 broadcast the 16-lane group blgp-4 to all."""
  return (lane, lane % 32, lane % 32 + 32, (lane + 16) % 64, lane % 16, 16 + lane % 16, 32 + lane % 16, 48 + lane % 16)[blgp]

def execute(op: MatOp, v: list, wave: int, f: dict, cscalar: int | None) -> str | None:
  """Run `op` on the VGPR file `v` ([reg][lane] of u32) with the decoded fields `f` (src0/src1/src2/vdst as 256 + VGPR slot,
  neg, neg_hi, opsel, clmp, cbsz/abid/blgp); `cscalar`: the raw value of a non-VGPR C operand. Returns an error or None."""
  if wave not in op.lay: return f"{op.name} is not defined in wave{wave}"
  if f["src0"] < 256 or f["src1"] < 256: return "matrix op A and B must be VGPRs"
  if op.sparse and f["src2"] < 256: return "SWMMAC index (src2) must be a VGPR"
  iset = f.get("abid", 0) if op.sparse == 2 else f.get("opsel", 0) & 3   # sparse index set: SMFMAC ABID, SWMMAC INDEX_KEY
  if op.sparse == 2 and (f.get("cbsz", 0) or f.get("blgp", 0)): return "SMFMAC with CBSZ or BLGP != 0 is not modelled"
  if op.sparse and iset * 2 * (op.m * op.k // 2 // wave) >= 32:
    return f"{'SMFMAC ABID' if op.sparse == 2 else 'SWMMAC INDEX_KEY (OPSEL[1:0])'} selects bits beyond the index VGPR"
  if op.scaled and min(f["scale_src0"], f["scale_src1"]) < 256: return "scaled MFMA scale operands must be VGPRs"
  A, B, C, I = (np.array(x, np.int64) for x in op.lay[wave])
  neg, neg_hi = (0, 0) if op.mfma else (f.get("neg", 0), f.get("neg_hi", 0))
  fmt_sel = op.a == "f8f6f4"
  fmts = (f.get("cbsz", 0), f.get("blgp", 0)) if fmt_sel else (0, 0)
  if max(fmts) >= len(MINI_FMTS): return f"{op.name}: CBSZ/BLGP format {max(fmts)} is not one of FP8/BF8/FP6/BF6/FP4 (0..4)"
  blgp = f.get("blgp", 0) if op.mfma and not fmt_sel else 0
  half = ((f.get("opsel", 0) >> 2) & 1) * 16 if op.opsel_half else 0
  nv = len(v)
  sexp = [None, None]
  def read(lay, base, t, i):
    bits = MINI_FMTS[fmts[i]][0] if t == "f8f6f4" else ETYPES[t][0]
    lane, reg, sh = lay & 255, (lay >> 8) & 255, lay >> 16
    if t == "f8f6f4": reg, sh = (reg * 32 + sh) * bits // 32, (reg * 32 + sh) * bits % 32
    if base is None: raw = np.full(lay.shape, cscalar & ((1 << bits) - 1), np.uint64)
    else:
      sh = sh + (half if i == 2 else 0)
      def el(l, r, s):
        if i == 1: l = _blgp_lane(blgp, l)
        return ((v[(base + r) % nv][l] | v[(base + r + 1) % nv][l] << 32) >> s) & ((1 << bits) - 1)
      raw = np.array([el(l, r, s) for l, r, s in zip(lane.tolist(), reg.tolist(), sh.tolist())], np.uint64)
      if op.scaled and i < 2:   # the E8M0 byte of the lane holding each element
        sel, sv = (f.get("opsel", 0) >> i & 1) | (f.get("opsel_hi", 0) >> i & 1) << 1, v[(f[f"scale_src{i}"] - 256) % nv]
        sexp[i] = np.array([(sv[l] >> (8 * sel)) & 255 for l in lane.tolist()], np.int64)
    x = MINI[fmts[i]][raw] if t == "f8f6f4" else _decode(raw, t)
    if t in ("iu8", "iu4"): return np.where((neg >> i & 1) & (x >> (bits - 1)).astype(bool), x - (1 << bits), x)
    if t in _INT: return x
    ft = np.float64 if t == "f64" else np.float32
    if i < 2:
      m = np.where(sh < 16, neg >> i & 1, neg_hi >> i & 1).astype(bool)
      return np.where(m, -x, x).astype(ft)
    if neg_hi >> 2 & 1: x = np.abs(x)
    return (-x if neg >> 2 & 1 else x).astype(ft)
  nb, ka = op.blocks, op.k // 2 if op.sparse else op.k
  a = read(A, f["src0"] - 256, op.a, 0).reshape(nb, op.m, ka)
  b = read(B, f["src1"] - 256, op.b, 1).reshape(nb, op.k, op.n)
  c = read(C, f["vdst"] - 256 if op.sparse else f["src2"] - 256 if f["src2"] >= 256 else None, op.c, 2).reshape(nb, op.m, op.n)
  if op.mfma and not fmt_sel:   # CBSZ/ABID: block b multiplies the A of block ABID of its group of 2^CBSZ blocks
    cb = f.get("cbsz", 0)
    a = a[[(blk >> cb << cb) | (f.get("abid", 0) & ((1 << cb) - 1)) for blk in range(nb)]]
  kk = np.tile(np.arange(ka), (op.m, 1))   # the B row (K) each stored A element multiplies
  if op.sparse:   # K = 4*(j/2) + the element's 2-bit index
    key = iset * 2 * (op.m * ka // wave)
    idx = [(v[(f["src2"] - 256) % nv][p & 255] >> ((p >> 16) + key)) & 3 for p in I.tolist()]
    kk = np.array([4 * (j % ka // 2) + x for j, x in enumerate(idx)]).reshape(op.m, ka)
  with np.errstate(all="ignore"):
    terms = a[:, :, :, None] * b[:, kk]   # [block][m][j][n], each product rounded to the float type (exact in int64)
    if op.scaled:   # exact product times both block scales, rounded once to f32; E8M0 0xff is NaN
      sa, sb = sexp[0].reshape(nb, op.m, ka)[:, :, :, None], sexp[1].reshape(nb, op.k, op.n)[:, kk]
      exact = a.astype(np.float64)[:, :, :, None] * b.astype(np.float64)[:, kk] * 2.0 ** (sa + sb - 254)
      terms = np.where((sa == 255) | (sb == 255), np.nan, exact).astype(np.float32)
    if op.c in _INT:
      acc = (c + terms.sum(axis=2)).reshape(-1)
      out = ((np.clip(acc, -2**31, 2**31 - 1) if f.get("clmp", 0) else acc) & 0xffffffff).tolist()
    else:
      acc = c
      for j in range(ka): acc = acc + terms[:, :, j, :]
      out = _encode(acc.reshape(-1), op.c)
  bits, d = ETYPES[op.c][0], f["vdst"] - 256
  for e, p in enumerate(C.tolist()):
    lane, reg, sh = p & 255, (d + ((p >> 8) & 255)) % nv, (p >> 16) + half
    if bits == 64: v[reg][lane], v[(reg + 1) % nv][lane] = out[e] & 0xffffffff, out[e] >> 32; continue
    m = ((1 << bits) - 1) << sh
    v[reg][lane] = (v[reg][lane] & ~m & 0xffffffff) | (int(out[e]) << sh & m)
  return None
