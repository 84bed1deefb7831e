"""Encoding tables of one arch family, read from the tinygrad wheel (`tinygrad.runtime.autogen.amd.<family>.ins/enum/operands`).

A `Format` is one base encoding (VOP1, VOP3, SMEM, ...) with its variants (_LIT, _DPP16, _DPP8, _SDST) folded in: the
fixed bits that identify it, the opcode field, the set of valid opcodes, and its fields. The C decoder (gen_decode.py) and
the Python side (disassembly in fault reports, op names in statistics) both use these tables."""
from __future__ import annotations
import functools, importlib
from dataclasses import dataclass
from tinygrad.renderer.amd.dsl import Inst, BitField, FixedBitField, VGPRField, VDSTYField, SBaseField, SRsrcField, SrcField, SSrcField

__all__ = ["Field", "Format", "formats", "operands", "hwreg", "VARIANT_SUFFIXES", "MFMA_LAYOUT_FIXES"]

VARIANT_SUFFIXES = ("_LIT", "_DPP16", "_DPP8", "_SDST", "_SDWA", "_MFMA")
# tinygrad field name -> canonical member of the C `Inst` struct (identity when absent)
CANON = {"ssrc0": "src0", "ssrc1": "src1", "vsrc1": "src1", "data": "data0", "vdata": "data0"}

@dataclass(frozen=True)
class Field:
  name: str       # canonical name
  lo: int
  width: int
  conv: str       # "raw" | "vgpr" (+256) | "vdsty" | "sbase" (<<1) | "srsrc" (<<2) | "lanesel<k>" (<< 3k into lane_sel)

@dataclass(frozen=True)
class Format:
  name: str
  mask: int                     # over the instruction's dwords (little endian, any width)
  value: int
  size: int                     # bytes without literal / DPP dword
  op_field: tuple[int, int] | None   # (lo, width) of `op` (None: VOPD with opx/opy)
  enum: type | None             # the opcode enum class (None: no opcode field)
  valid: frozenset[int]         # valid opcode numbers
  lit_only: frozenset[int]      # opcodes that always carry a literal (FMAMK/FMAAK, S_SETREG_IMM32)
  fields: tuple[Field, ...]
  variants: dict                # "_DPP16"/"_DPP8"/"_LIT"/"_SDWA"/"_SDWA_SDST"/"_MFMA" -> (size, tuple[Field, ...])
  src_fields: tuple[str, ...]   # canonical names of fields that may hold 255 (literal) / DPP markers
  mfma_ops: frozenset[int] = frozenset()   # CDNA VOP3P opcodes with the MFMA field layout (cbsz/abid/acc_cd/acc/blgp)

# Opcodes the wheel lists under a plain encoding that use the MFMA field layout (VOP3P-MAI: cbsz/abid/acc_cd/acc/blgp) on
# hardware: tinygrad's generator adds the CDNA3 XF32 MFMAs from the PDF to VOP3P's op set (renderer/amd/generate.py FIXES),
# while LLVM encodes them as every MFMA (`v_mfma_f32_16x16x8_xf32 v[0:3], v[4:5], v[6:7], v[0:3]` = d3be0000 04020d04:
# bits 60:59, VOP3P's op_sel_hi, are the MAI `acc` bits and 0).
MFMA_LAYOUT_FIXES = {"cdna": {"VOP3P": ("V_MFMA_F32_16X16X8_XF32", "V_MFMA_F32_32X32X4_XF32")}}

def _x2_prefix(family: str) -> tuple[int, int]:
  """(mask, value) the wheel leaves out of VOP3PX2's fixed bits: its first dword is a V_MFMA_LD_SCALE_B32 VOP3P opcode word
  (`x2encoding`, bits 31:16; LLVM: `v_mfma_scale_f32_16x16x128_f8f6f4 ...` = d3ac.... d3ad....). Without it any 64-bit
  instruction followed by an F8F6F4 MFMA would decode as one scaled MFMA."""
  mod = importlib.import_module(f"tinygrad.runtime.autogen.amd.{family}.ins")
  enc = dict(mod.VOP3P._fields)["encoding"]
  return 0xffff << 16, (enc.default << (enc.lo - 16) | mod.VOP3POp.V_MFMA_LD_SCALE_B32.value) << 16

def _base(name: str) -> str:
  while any(name.endswith(s) for s in VARIANT_SUFFIXES):
    name = next(name[:-len(s)] for s in VARIANT_SUFFIXES if name.endswith(s))
  return name

def _conv(f: BitField, name: str) -> str:
  if isinstance(f, VDSTYField): return "vdsty"
  if isinstance(f, VGPRField): return "vgpr"
  if isinstance(f, SBaseField): return "sbase"
  if isinstance(f, SRsrcField): return "srsrc"
  if name.startswith("lane_sel_"): return f"lanesel{name[-1]}"
  return "raw"

def _fields(cls: type[Inst], skip: set[str] = frozenset()) -> tuple[Field, ...]:
  out = []
  for n, f in cls._fields:
    if isinstance(f, FixedBitField) or n == "op" or n in skip: continue
    if f.lo // 32 != f.hi // 32: raise ValueError(f"{cls.__name__}.{n} crosses a dword boundary; the decoder generator cannot split it")
    out.append(Field("lane_sel" if n.startswith("lane_sel_") else CANON.get(n, n), f.lo, f.hi - f.lo + 1, _conv(f, n)))
  return tuple(out)

def _variant_ops(cls) -> frozenset[int]:
  if cls is None: return frozenset()
  f = dict(cls._fields)["op"]
  return frozenset(o.value for o in (f.allowed if f.allowed is not None else f._enum))

@functools.cache
def formats(family: str) -> tuple[Format, ...]:
  """The base formats of `family` in decode order (tinygrad's detect_format order, then the formats it does not list)."""
  from tinygrad.renderer.amd import _load_formats
  mod = importlib.import_module(f"tinygrad.runtime.autogen.amd.{family}.ins")
  classes = {n: c for n, c in vars(mod).items() if isinstance(c, type) and issubclass(c, Inst) and c is not Inst and c.__module__ == mod.__name__}
  order = list(dict.fromkeys([_base(c.__name__) for c in _load_formats()[family]] + sorted({_base(n) for n in classes})))
  out = []
  for b in order:
    base, group = classes[b], [c for n, c in classes.items() if _base(n) == b]
    fixed = [f for _, f in base._fields if isinstance(f, FixedBitField)]
    mask = sum(f.mask << f.lo for f in fixed); value = sum(f.default << f.lo for f in fixed)
    if b == "VOP3PX2": mask, value = mask | _x2_prefix(family)[0], value | _x2_prefix(family)[1]
    opf = dict(base._fields).get("op")
    valid: set[int] = set(); lit_only: set[int] = set()
    if opf is not None:
      for c in group:
        f = dict(c._fields)["op"]
        ops = {o.value for o in (f.allowed if f.allowed is not None else f._enum)}
        valid |= ops
      base_ops = set().union(*({o.value for o in (dict(c._fields)["op"].allowed or dict(c._fields)["op"]._enum)} for c in group if not c.__name__.endswith("_LIT")))
      lit_only = valid - base_ops
    else:
      e = dict(base._fields).get("opx")
      valid = {o.value for o in e._enum} if e is not None else set()
      lit_only = {o.value for o in e._enum if "FMAMK" in o.name or "FMAAK" in o.name} if e is not None else set()
    variants = {}
    for suf in ("_DPP16", "_DPP8", "_LIT", "_SDWA", "_SDWA_SDST", "_MFMA"):
      if (v := classes.get(b + suf)) is not None:
        basenames = {n for n, _ in base._fields}
        variants[suf] = (v._base_size, _fields(v, skip=basenames - ({"literal"} if suf == "_LIT" else set())))
    fields = _fields(base)
    srcs = tuple(CANON.get(n, n) for n, f in base._fields if type(f) in (SrcField, SSrcField))
    out.append(Format(b, mask, value, base._base_size, (opf.lo, opf.hi - opf.lo + 1) if opf is not None else None,
                      opf._enum if opf is not None else (dict(base._fields)["opx"]._enum if "opx" in dict(base._fields) else None),
                      frozenset(valid), frozenset(lit_only), fields, variants, srcs,
                      _variant_ops(classes.get(b + "_MFMA")) | {opf._enum[n].value for n in MFMA_LAYOUT_FIXES.get(family, {}).get(b, ())}))
  return tuple(out)

@functools.cache
def operands(family: str) -> dict:
  """OPERANDS of the family: {enum member: {field: (Fmt, bits, OpType)}}."""
  return importlib.import_module(f"tinygrad.runtime.autogen.amd.{family}.operands").OPERANDS

def hwreg(family: str, name: str) -> int:
  """S_GETREG/S_SETREG id of hardware register `name` (enum HWREG member without the HW_REG_ prefix), -1 if the family has none."""
  m = importlib.import_module(f"tinygrad.runtime.autogen.amd.{family}.enum").HWREG
  return m[f"HW_REG_{name}"].value if f"HW_REG_{name}" in m.__members__ else -1

def mode_hwreg(family: str) -> int:
  """S_GETREG/S_SETREG id of the MODE register (HW_REG_MODE; RDNA4 names it HW_REG_WAVE_MODE)."""
  return max(hwreg(family, "MODE"), hwreg(family, "WAVE_MODE"))
