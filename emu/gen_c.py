"""Generate the C translation unit of one arch: decoded-field struct and decoder (from the wheel's encoding tables), one
handler per (format, opcode) that sets up PcState, calls pcode's generated `pc_<EnumClass>_<MEMBER>` and writes results
back, and the handler tables. The hand-written parts live in csrc/ (machine state, operands, scheduler, prose ops)."""
from __future__ import annotations
import functools, pathlib, re
from dataclasses import dataclass, field
from mockgpu.emu import matrix
from mockgpu.emu.arch import ArchSpec
from mockgpu.emu import buffer, bvh, facts
from mockgpu.emu.isa import Format, formats, hwreg, mode_hwreg, operands
from mockgpu.emu.pcinfo import Usage, usage
from mockgpu.pcode.state import MODE_VIEWS, WIDE
from mockgpu.emu.gen_gfx import GFX_PROSE, EXPORT_FORMATS, IMAGE_FORMATS, vinterp, image
from mockgpu.emu.image import c_defs as image_defs, c_aliases as image_aliases, alias_members as image_members

__all__ = ["GEN_VERSION", "Generated", "generate", "FAST_MODES", "PROSE_C", "PROSE_STOP", "FLOW", "FLOW_OPS", "flow_of", "UNMODELLED", "STATE_ZERO", "SALU_RAW", "INT_CLAMP", "MODS_ON_BITS",
           "SEMANTICS_ALIAS", "D16_PRESERVE", "SGPR_DST", "dst_sgpr", "ds_writes_vdst", "pc_reads", "zero_unset", "f16_half", "handler_names",
           "int_clamp", "acc_rules", "dpp16_src", "dpp16_table", "struct_members", "LAYOUT_STRUCTS", "semantics_entry", "zero_hi16"]

GEN_VERSION = "1"

# The hand-written semantics, in one place: ops whose pseudocode is prose (mockgpu.pcode.prose) or absent, by member name
# (C handlers in csrc/emu_prose.h). Matrix ops (WMMA, ...) run the generic kernel of csrc/emu_matrix.h over the tables of
# mockgpu.emu.matrix. Everything else executes pcode's generated C.
PROSE_C = {
  "S_ENDPGM": "h_endpgm", "S_BARRIER": "h_barrier", "S_CODE_END": "h_code_end", "S_TRAP": "h_trap",
  "S_WAITCNT": "h_nop", "S_WAITCNT_VSCNT": "h_nop", "S_WAITCNT_VMCNT": "h_nop", "S_WAITCNT_EXPCNT": "h_nop",
  "S_WAITCNT_LGKMCNT": "h_nop", "S_WAITCNT_DEPCTR": "h_nop", "S_DELAY_ALU": "h_nop", "S_SLEEP": "h_sleep", "S_SETPRIO": "h_nop",
  "S_CLAUSE": "h_nop", "S_NOP": "h_nop", "S_SET_INST_PREFETCH_DISTANCE": "h_nop", "S_SENDMSG": "h_sendmsg", "S_ICACHE_INV": "h_nop",
  "S_DCACHE_INV": "h_nop", "S_GL1_INV": "h_nop", "S_TTRACEDATA": "h_nop", "S_TTRACEDATA_IMM": "h_nop", "S_WAIT_IDLE": "h_nop",
  "S_INCPERFLEVEL": "h_nop", "S_DECPERFLEVEL": "h_nop", "S_WAIT_EVENT": "h_nop", "S_SENDMSGHALT": "h_sendmsghalt", "S_SETHALT": "h_sethalt", "S_SETKILL": "h_setkill",
  "S_SENDMSG_RTN_B32": "h_sendmsg_rtn32", "S_SENDMSG_RTN_B64": "h_sendmsg_rtn64",
  "V_NOP": "h_nop", "V_PIPEFLUSH": "h_nop", "S_GETREG_B32": "h_getreg", "S_SETREG_B32": "h_setreg", "S_SETREG_IMM32_B32": "h_setreg_imm",
  "S_ROUND_MODE": "h_round_mode", "S_DENORM_MODE": "h_denorm_mode", "DS_NOP": "h_nop",
  "BUFFER_GL0_INV": "h_nop", "BUFFER_GL1_INV": "h_nop", "GLOBAL_INV": "h_nop", "GLOBAL_WB": "h_nop", "GLOBAL_WBINV": "h_nop",
  "BUFFER_INV": "h_nop", "BUFFER_WBL2": "h_nop",
  "S_WAIT_ALU": "h_nop", "S_WAIT_LOADCNT": "h_nop", "S_WAIT_STORECNT": "h_nop", "S_WAIT_SAMPLECNT": "h_nop", "S_WAIT_BVHCNT": "h_nop",
  "S_WAIT_EXPCNT": "h_nop", "S_WAIT_DSCNT": "h_nop", "S_WAIT_KMCNT": "h_nop", "S_WAIT_LOADCNT_DSCNT": "h_nop", "S_WAIT_STORECNT_DSCNT": "h_nop",
  "DS_SWIZZLE_B32": "h_ds_swizzle", "DS_APPEND": "h_ds_append", "DS_CONSUME": "h_ds_consume",
  "S_BARRIER_SIGNAL": "h_nop", "S_BARRIER_WAIT": "h_barrier", "V_MFMA_LD_SCALE_B32": "h_mfma_ld_scale",
  "DS_READ_B64_TR_B4": "h_ds_read_tr_b4", "DS_READ_B64_TR_B8": "h_ds_read_tr_b8", "DS_READ_B64_TR_B16": "h_ds_read_tr_b16",
  "DS_READ_B96_TR_B6": "h_ds_read_tr_b6",
  "S_MEMTIME": "h_memtime", "S_MEMREALTIME": "h_memtime", "S_DCACHE_WB": "h_nop", "S_DCACHE_WB_VOL": "h_nop", "S_DCACHE_INV_VOL": "h_nop",
  "S_DCACHE_DISCARD": "h_nop", "S_DCACHE_DISCARD_X2": "h_nop", "S_ATC_PROBE": "h_nop", "S_ATC_PROBE_BUFFER": "h_nop", "S_WAKEUP": "h_nop",
  "V_CLREXCP": "h_nop", "S_SET_VALU_COEXEC_MODE": "h_nop", "S_RFE_RESTORE_B64": "h_rfe_restore", "V_SCREEN_PARTITION_4SE_B32": "h_screen_partition",
  "DS_GWS_INIT": "h_gws_init", "DS_GWS_SEMA_V": "h_gws_sema_v", "DS_GWS_SEMA_BR": "h_gws_sema_br", "DS_GWS_SEMA_P": "h_gws_sema_p",
  "DS_GWS_SEMA_RELEASE_ALL": "h_gws_release_all", "DS_GWS_BARRIER": "h_gws_barrier", "DS_ORDERED_COUNT": "h_ds_ordered",
  "S_ENDPGM_SAVED": "h_endpgm", "S_SLEEP_VAR": "h_sleep", "S_ENDPGM_ORDERED_PS_DONE": "h_ps_done", "DS_ADD_GS_REG_RTN": "h_gs_reg", "DS_SUB_GS_REG_RTN": "h_gs_reg",
  "S_SUBVECTOR_LOOP_BEGIN": "h_subvec_begin", "S_SUBVECTOR_LOOP_END": "h_subvec_end",
  "S_PREFETCH_INST": "h_nop", "S_PREFETCH_INST_PC_REL": "h_nop", "S_PREFETCH_DATA": "h_nop", "S_PREFETCH_DATA_PC_REL": "h_nop",
  "S_BUFFER_PREFETCH_DATA": "h_nop", "S_VERSION": "h_nop",
}
# Prose ops that only stop the dispatch with an error, by handler: (status, facts.MSG key). Both backends take them from here
# (C: generated handlers; pybackend.prose), so such an op is added by a PROSE_C row and, for a new text, a facts.MSG entry.
PROSE_STOP = {"h_code_end": ("INVALID", "CODE_END"), "h_rfe_restore": ("INVALID", "RFE_RESTORE"), "h_mfma_ld_scale": ("INVALID", "MFMA_LD_SCALE"),
              "h_screen_partition": ("UNSUPPORTED", "SCREEN_PARTITION"), "h_ps_done": ("UNSUPPORTED", "PS_DONE"), "h_gs_reg": ("UNSUPPORTED", "GS_REG"),
              "h_lds_param_load": ("UNSUPPORTED", "LDS_PARAM")}
# Ops with pseudocode that must not run it: it would silently leave out wave state the emulator does not model. Both backends
# raise InvalidInstruction("unsupported") with the reason (C: generated handlers `hu_<NAME>`).
_GPR_IDX = "VGPR indexing mode (S_SET_GPR_IDX_*: MODE.GPR_IDX_EN, M0-indexed VALU operands) is not modelled"
_FORK = "the fork/join stack (S_CBRANCH_G_FORK/I_FORK/JOIN: MODE.CSP and its SGPR entries) is not modelled; compilers do not emit it"
_BLOCK = ("block loads/stores (up to 32 VGPRs selected by M0) are not modelled: the wheel's pseudocode addresses memory through "
          "VGPR[lane][ADDR], not the instruction's address")
UNMODELLED = {**dict.fromkeys(("S_SET_GPR_IDX_ON", "S_SET_GPR_IDX_OFF", "S_SET_GPR_IDX_IDX", "S_SET_GPR_IDX_MODE"), _GPR_IDX),
              **dict.fromkeys(("S_CBRANCH_G_FORK", "S_CBRANCH_I_FORK", "S_CBRANCH_JOIN"), _FORK),
              **dict.fromkeys(("GLOBAL_LOAD_BLOCK", "GLOBAL_STORE_BLOCK", "SCRATCH_LOAD_BLOCK", "SCRATCH_STORE_BLOCK"), _BLOCK)}
# How each handler leaves the pc, for the pre-scan that decides whether a dispatch may run its workgroups on several threads
# (csrc/emu_sched.c `prescan`, docs/emu.md "Multi-core dispatch"): PLAIN falls through, END has no successor, REL branches to
# pc + 4 + SIMM16 * 4 or falls through (every PC assignment of its pseudocode is one of those two), IND jumps where no scan can
# follow (S_SETPC_B64, ...), WIDE reads or writes dispatch-wide state whose values depend on the order workgroups run in (GWS,
# the ordered count, the emulated clock), GETREG is WIDE when its register is the clock. A dispatch whose code reaches IND or WIDE
# runs on one thread. `flow_of` classifies; ops are by member name.
FLOW = {"PLAIN": 0, "END": 1, "REL": 2, "IND": 3, "WIDE": 4, "GETREG": 5}
FLOW_OPS = {**dict.fromkeys(("S_ENDPGM", "S_ENDPGM_SAVED", "S_CODE_END"), "END"),
            **dict.fromkeys(("S_SUBVECTOR_LOOP_BEGIN", "S_SUBVECTOR_LOOP_END"), "REL"),
            **dict.fromkeys(("DS_GWS_INIT", "DS_GWS_SEMA_V", "DS_GWS_SEMA_BR", "DS_GWS_SEMA_P", "DS_GWS_SEMA_RELEASE_ALL", "DS_GWS_BARRIER",
                             "DS_ORDERED_COUNT", "S_SENDMSG_RTN_B32", "S_SENDMSG_RTN_B64", "S_MEMTIME", "S_MEMREALTIME"), "WIDE"),
            "S_GETREG_B32": "GETREG"}
_REL_PC = re.compile(r"^\s*PC\s*=\s*PC\s*\+\s*(signext\(SIMM16\.i16\s*\*\s*16'4\)\s*\+\s*)?4LL;?\s*$")

def flow_of(base_name: str, text: str | None) -> str:
  """The FLOW class of the op `base_name` whose semantics are `text` (its pseudocode; None: hand-written or none)."""
  if base_name in FLOW_OPS: return FLOW_OPS[base_name]
  if base_name in PROSE_C or text is None: return "PLAIN"
  pcs = [ln for ln in text.split("\n") if re.match(r"\s*PC\s*=", ln.split("//")[0])]
  return "PLAIN" if not pcs else "REL" if all(_REL_PC.match(ln.split("//")[0]) for ln in pcs) else "IND"
# DS_READ_*_TR_* (gfx950 transposing LDS reads): element bits and dwords per lane (csrc/emu_prose.h ds_read_tr)
DS_READ_TR = {"DS_READ_B64_TR_B4": (4, 2), "DS_READ_B64_TR_B8": (8, 2), "DS_READ_B64_TR_B16": (16, 2), "DS_READ_B96_TR_B6": (6, 3)}
# Integer clamp (prose in the ISA: the clamp bit saturates an integer result to its type's range), for the VOP3/VOP3SD/VOP3P
# ops that add: the exact result of the formula below is formed from the fetched sources (typed by the wheel's OPERANDS:
# element width/count/signedness; V_DOT*_IU* take signedness from NEG[1:0] as their pseudocode does) and saturated to the
# destination's type, per 16-bit half for packed ops. '+' S0 + S1, '-' S0 - S1, 'r' S1 - S0, 'c'/'b'/'B' the same with the
# lane's carry-in bit (+ / - / -), '3' S0 + S1 + S2, 'x' (S0 ^ S1) + S2, 'm' S0 * S1 + S2, 'd' S2 + sum S0[k] * S1[k],
# 's' S2 + sum |S0[k] - S1[k]|, 'h' (sum |S0[k] - S1[k]| << 16) + S2, 'M' as 's' skipping bytes where S1[k] == 0.
# Carry-outs (VCC / SDST) are the pseudocode's. Not covered: V_QSAD/MQSAD (several saturating fields), multiplies, shifts.
INT_CLAMP = {"V_ADD_NC_U32": "+", "V_ADD_NC_I32": "+", "V_SUB_NC_U32": "-", "V_SUB_NC_I32": "-", "V_SUBREV_NC_U32": "r",
             "V_ADD_NC_U16": "+", "V_ADD_NC_I16": "+", "V_SUB_NC_U16": "-", "V_SUB_NC_I16": "-",
             "V_PK_ADD_U16": "+", "V_PK_ADD_I16": "+", "V_PK_SUB_U16": "-", "V_PK_SUB_I16": "-",
             "V_ADD_CO_U32": "+", "V_SUB_CO_U32": "-", "V_SUBREV_CO_U32": "r", "V_ADD_CO_CI_U32": "c", "V_SUB_CO_CI_U32": "b",
             "V_SUBREV_CO_CI_U32": "B", "V_ADD3_U32": "3", "V_XAD_U32": "x",
             **{f"V_{m}": "m" for m in ("MAD_U32_U24", "MAD_I32_I24", "MAD_U64_U32", "MAD_I64_I32", "MAD_CO_U64_U32", "MAD_CO_I64_I32",
                                       "MAD_U16", "MAD_I16", "MAD_U32_U16", "MAD_I32_I16", "PK_MAD_U16", "PK_MAD_I16")},
             "V_DOT4_I32_IU8": "d", "V_DOT4_U32_U8": "d", "V_DOT8_I32_IU4": "d", "V_DOT8_U32_U4": "d",
             "V_SAD_U8": "s", "V_SAD_U16": "s", "V_SAD_U32": "s", "V_SAD_HI_U8": "h", "V_MSAD_U8": "M"}
# Pseudocode names for an SALU op's raw register fields (S_MOVRELS/MOVRELD/MOVRELSD_2: "raw value from instruction")
SALU_RAW = {"SRC0": "src0", "SRC1": "src1", "DST": "sdst"}
# Ops with untyped (B16/B32) sources whose abs/neg input modifiers act as on floats of that width (ISA: V_CNDMASK takes
# input modifiers; LLVM folds a float negation of a select into them, e.g. the sign of tinygrad's sin).
MODS_ON_BITS = ("V_CNDMASK_B32", "V_CNDMASK_B16")
# OMOD (x2, x4, x0.5 on a float result) applies only while MODE.IEEE is clear: the GPUs ignore it in IEEE mode (issue 10,
# recorded on RDNA3/CDNA). One rule for both backends: `omod_of` here, and the C macro EMU_OMOD generated from the same bit.
MODE_IEEE_BIT = MODE_VIEWS[("WAVE_MODE", "IEEE")][0]
def omod_of(mode: int, omod: int) -> int: return 0 if mode >> MODE_IEEE_BIT & 1 else omod
HWREGS = ("SH_MEM_BASES", "SHADER_CYCLES", "SHADER_CYCLES_LO", "SHADER_CYCLES_HI")   # S_GETREG ids the C needs (-1: absent)
# Ops without pseudocode in the wheel whose ISA description is another entry's: the CDNA AccVGPR moves are plain register
# moves (V_MOV_B32's pseudocode with their own operands; the decoder has already resolved AccVGPR operands to unified
# slots); RDNA3 FLAT_ATOMIC_CSUB_U32 (absent from the wheel's XML, added from the PDF) is the clamped subtract of its
# GLOBAL/BUFFER twins, on the FLAT address.
# gfx9's V_EXP/LOG_LEGACY_F32 ("power / base 2 logarithm with legacy semantics"; the wheel has no pseudocode, the guides
# specify no difference but an older, less exact approximation) run the IEEE ops' pseudocode: same special values and MODE.
SEMANTICS_ALIAS = {"V_ACCVGPR_READ": "VOP1Op_V_MOV_B32_E32", "V_ACCVGPR_WRITE": "VOP1Op_V_MOV_B32_E32", "V_ACCVGPR_MOV_B32": "VOP1Op_V_MOV_B32_E32",
                   "V_EXP_LEGACY_F32": "VOP1Op_V_EXP_F32_E32", "V_LOG_LEGACY_F32": "VOP1Op_V_LOG_F32_E32",
                   "FLAT_ATOMIC_CSUB_U32": "GLOBALOp_GLOBAL_ATOMIC_CSUB_U32"}
# gfx9 (ArchSpec.d16_zero_hi): 16-bit VALU results zero bits 31:16, except these ops, whose VOP3 op_sel[3] picks the half
# written and which preserve the other half (the gfx9 "op_sel" forms of the mads/fmas)
D16_PRESERVE = ("V_MAD_F16", "V_MAD_U16", "V_MAD_I16", "V_FMA_F16", "V_DIV_FIXUP_F16", "V_MAC_F16", "V_MADAK_F16", "V_MADMK_F16")
# the Inst members the hand-written C reads, declared for every arch even when its encodings lack them
CORE_FIELDS = ("op", "opx", "opy", "vsrc0", "lane_sel", "literal", "src0", "src1", "src2", "vdst", "sdst", "simm16", "opsel", "neg", "abs",
               "neg_hi", "opsel_hi", "opsel_hi2", "omod", "clmp", "dpp", "fi", "bc", "row_mask", "bank_mask", "src0_neg", "src0_abs",
               "src1_neg", "src1_abs", "dst_sel", "dst_unused", "src0_sel", "src1_sel", "src0_sext", "src1_sext", "s0", "s1", "sd", "tfe")
_FW = {"F16": 16, "BF16": 16, "F32": 32, "F64": 64, "PK2_F16": 16, "PK2_BF16": 16, "PK2_F32": 32}
_VALU = ("VOP1", "VOP2", "VOP3", "VOP3SD", "VOP3P", "VOPC")
_SALU = ("SOP1", "SOP2", "SOPC", "SOPK", "SOPP")
_VMEM = ("FLAT", "GLOBAL", "SCRATCH", "VFLAT", "VGLOBAL", "VSCRATCH")
_FLAT = ("FLAT", "VFLAT")   # generic addresses: the shared/private apertures route to LDS/scratch (flat_space in csrc/emu_ops.h)

@dataclass(frozen=True)
class Generated:
  sources: tuple[str, ...]            # main translation unit (decoder, tables, scheduler), then the handler chunks
  handlers: tuple[str, ...]           # hid -> "FORMAT OPNAME"
  hbase: dict[str, int]               # format -> first hid
  missing: dict[str, str]             # "FORMAT OPNAME" -> why it has no semantics
  zeroed: dict[str, tuple[str, ...]]  # handler -> PcState members it zeroes (read by its entries, fed by no machine state: STATE_ZERO)
  cnames: tuple[str, ...] = ()        # hid -> the C function of its handler table slot ("0": none); the translator (translate.py) reads both
  handler_src: dict = field(default_factory=dict)   # generated handler name -> its C (with its OpInfo constants)
  xlat_src: dict = field(default_factory=dict)      # handler name -> its translator variant's C (_xvalu, X of _vopd_half)
  flows: tuple[int, ...] = ()         # hid -> FLOW (the HFLOW table): the translator runs PLAIN steps in blocks
  fuse: tuple[str, ...] = ()          # the variants in xlat_src that are lane-local (write their rows only, cannot fail): translate.py fuses runs of them
  groups: dict = field(default_factory=dict)   # plain global load handler -> (its load-group C: _load_group, address field, dwords): translate.py

def _fw(fmt) -> int:
  n = fmt.name.removeprefix("FMT_NUM_")
  return _FW.get(n, 0)

def _opinfo(ops: dict, fmtname: str, name: str) -> tuple[list[int], list[int], int, int]:
  sb, sf = [0, 0, 0], [0, 0, 0]
  for k, (fmt, bits, _) in ops.items():
    i = {"src0": 0, "vsrc0": 0, "ssrc0": 0, "src1": 1, "vsrc1": 1, "ssrc1": 1, "src2": 2}.get(k)
    if i is not None: sb[i], sf[i] = bits, _fw(fmt) or (bits if re.sub(r"_E(32|64)$", "", name) in MODS_ON_BITS else 0)
  d = ops.get("vdst") or ops.get("sdst")
  db = d[1] if d else 0
  if fmtname == "VOP3P" and db == 16: db = 32   # V_FMA_MIXLO/MIXHI_F16: the pseudocode writes D0[15:0] / D0[31:16] itself
  return sb, sf, db, (_fw(d[0]) if d else 0)

def _packed(fmtname: str, ops: dict) -> int:
  """VOP3P sources holding two 16-bit values (PK2_*: f16, bf16, i16, u16), as a bit mask over src0..2: op_sel/op_sel_hi pick
  their halves, neg/neg_hi negate the halves of the float ones."""
  if fmtname != "VOP3P": return 0
  return sum(1 << i for i, k in enumerate(("src0", "src1", "src2")) if k in ops and re.fullmatch(r"FMT_NUM_PK2_(F|BF|I|U|B)16", ops[k][0].name))

def pk32(fmtname: str, ops: dict, u: Usage) -> int:
  """VOP3P sources holding two 32-bit values in a register pair (gfx90a+ V_PK_*_F32, PK2_F32/PK2_B32), as a bit mask:
  op_sel picks the dword for the low result, op_sel_hi the one for the high result, neg/neg_hi negate them (f32). Not
  for entries that apply OPSEL themselves (V_PK_MOV_B32)."""
  if fmtname != "VOP3P" or "OPSEL" in u.reads: return 0
  return sum(1 << i for i, k in enumerate(("src0", "src1", "src2")) if k in ops and ops[k][0].name in ("FMT_NUM_PK2_F32", "FMT_NUM_PK2_B32"))

def _ityp(fmt) -> tuple[int, int, int]:
  """(element bits, elements, signed: 1, from NEG: 2) of an integer operand format: U32, I24, PK2_U16, PK4_IU8, ..."""
  m = re.fullmatch(r"FMT_NUM_(?:PK(\d+)_)?(IU|U|I|B)(\d+)", fmt.name)
  if m is None: return 0, 0, 0
  return int(m[3]), int(m[1] or 1), {"I": 1, "IU": 2}.get(m[2], 0)

def int_clamp(fmtname: str, ops: dict, name: str) -> tuple | None:
  """(kind, element bits, elements, signedness of S0 S1 S2 (bit i; bit 3: S0/S1 from NEG), S2 bits, dest bits, dest signed,
  packed) when the clamp bit of this VOP3/VOP3SD/VOP3P op saturates its integer result (INT_CLAMP), else None."""
  if fmtname not in ("VOP3", "VOP3SD", "VOP3P") or name not in INT_CLAMP: return None
  kind, s0, s2, d = INT_CLAMP[name], ops.get("src0") or ops["vsrc0"], ops.get("src2"), ops["vdst"][0]
  eb, n, sg = (8, 4, 0) if kind == "M" else _ityp(s0[0])
  s1g, (b2, _, s2g), (db, dn, dg) = _ityp((ops.get("src1") or ops["vsrc1"])[0])[2], _ityp(s2[0]) if s2 else (0, 0, 0), _ityp(d)
  packed = int(dn == 2)
  if packed: eb, n, b2 = 16, 1, 16 if b2 else 0
  return kind, eb, n, (sg & 1) | (s1g & 1) << 1 | (s2g & 1) << 2 | (8 if sg & 2 else 0), b2, db, dg & 1, packed

# operand types of a VALU `vdst` field that name an SGPR (V_READLANE/V_READFIRSTLANE; CDNA types theirs OPR_SREG_NOVCC)
SGPR_DST = ("OPR_SREG", "OPR_SDST", "OPR_SREG_NOVCC")

def dst_sgpr(ops: dict, name: str) -> bool:
  """True when a (non-compare) VALU op writes its result to the SGPR its vdst field names, once per wave."""
  vd = ops.get("vdst")
  return vd is not None and vd[2] is not None and vd[2].name in SGPR_DST and not name.startswith(("V_CMP_", "V_CMPX_"))

def zero_hi16(arch: ArchSpec, name: str, dbits: int) -> bool:
  """True when this op's 16-bit VALU result zeroes bits 31:16 of the destination VGPR (gfx9, ArchSpec.d16_zero_hi)."""
  return arch.d16_zero_hi and dbits == 16 and name not in D16_PRESERVE

def semantics_entry(member, ents: dict) -> str:
  """The pseudocode entry an opcode executes: its own `<EnumClass>_<MEMBER>`, its SEMANTICS_ALIAS target, or, for a VOP3
  (_E64) form the wheel gives no entry of its own (the VOP1 ops on CDNA), the entry of its VOP1/VOP2/VOPC (_E32) form."""
  own, base = f"{type(member).__name__}_{member.name}", re.sub(r"_E(32|64)$", "", member.name)
  if base in SEMANTICS_ALIAS: return SEMANTICS_ALIAS[base]
  if own in ents or not member.name.endswith("_E64"): return own
  return next((e for e in (f"{c}_{base}_E32" for c in ("VOP1Op", "VOP2Op", "VOPCOp")) if e in ents), own)

def acc_rules(arch: ArchSpec) -> dict[str, list[tuple[frozenset | None, str | None, int, tuple[str, ...]]]]:
  """Where CDNA AccVGPR operands are: {format: [(opcodes or None for all, flag field or None for always, flag bit, fields)]}.
  The decoder adds ACCUM_OFFSET to each listed VGPR field (256 + n) whose flag bit is set, so every VGPR field holds
  256 + its slot in the unified register file. Memory formats: the `acc` bit moves the data/return registers; MFMA
  (VOP3P _MFMA layout, VOP3PX2): acc[0] src0 (A), acc[1] src1 (B), acc_cd src2 (C) and vdst (D) (SMFMAC: vdst only, its
  src2 is the index VGPR, e.g. LLVM's `v_smfmac_f32_16x16x32_f16 a[0:3], v[4:5], v[8:11], v16`); ops whose operand types
  are OPR_ACCVGPR / OPR_SRC_ACCVGPR (V_ACCVGPR_READ/WRITE/MOV) always."""
  if not arch.num_agprs: return {}
  out: dict = {}
  for f in formats(arch.family):
    names, r = {fl.name for fl in f.fields}, []
    if "acc" in names and f.op_field and f.name not in ("VOP3PX2",):
      r.append((None, "acc", 0, tuple(fl.name for fl in f.fields if fl.conv == "vgpr" and fl.name not in ("addr", "vaddr"))))
    mf = frozenset(f.valid) if f.name == "VOP3PX2" else f.mfma_ops
    sp = frozenset(o for o in mf if f.enum(o).name.startswith("V_SMFMAC_"))   # src2 is the sparse index: always a VGPR
    if mf: r += [(mf, "acc", 0, ("src0",)), (mf, "acc", 1, ("src1",)), (mf - sp, "acc_cd", 0, ("vdst", "src2"))]
    if sp: r.append((sp, "acc_cd", 0, ("vdst",)))
    always: dict = {}
    for op in sorted(f.valid) if f.enum is not None and f.op_field else ():
      for k, (_, _, t) in operands(arch.family).get(f.enum(op), {}).items():
        if t is not None and t.name in ("OPR_ACCVGPR", "OPR_SRC_ACCVGPR"): always.setdefault({"vsrc0": "src0"}.get(k, k), set()).add(op)
    r += [(frozenset(ops), None, 0, (fld,)) for fld, ops in sorted(always.items())]
    if r: out[f.name] = r
  return out

def f16_half(text: str) -> int:
  """Bit offset of the f16 half a VOP3P entry writes (`D0[31 : 16].f16` of V_FMA_MIXHI_F16: 16, else 0); clamp applies there."""
  return 16 if re.search(r"D0\[31 : 16\]\.f16", text) else 0

def _set_scalars(u: Usage, kind: str) -> list[str]:
  r, out = u.reads | u.writes, []
  if "SCC" in r: out.append("s.SCC = w->scc;")
  if "EXEC" in r or "EXEC_LO" in r: out.append("s.EXEC = rd_exec(w); s.EXEC_LO = (uint32_t)s.EXEC;")
  if "EXECZ" in r: out.append("s.EXECZ = rd_exec(w) == 0;")
  if "VCCZ" in r: out.append("s.VCCZ = rd_vcc(w) == 0;")
  if "M0" in r: out.append("s.M0 = w->s[ENC_M0];")
  if "PC" in r: out.append("s.PC = w->c->code_addr + w->pc0;")
  if "WAVE64" in r or "WAVE32" in r: out.append("s.WAVE64 = w->c->wave_size == 64;")
  if "SIMM16" in r: out.append("s.SIMM16 = (uint64_t)(int64_t)(int16_t)in->simm16;")
  if "SIMM32" in r: out.append("s.SIMM32 = in->lit;")
  if "INST_ABS" in r: out.append("s.INST_ABS = in->abs; s.INST_NEG = in->neg; s.INST_OMOD = in->omod;")   # V_BITOP3's truth table
  return out

def _writeback_scalars(u: Usage) -> list[str]:
  out = []
  if "SCC" in u.writes: out.append("w->scc = (uint32_t)(s.SCC & 1);")
  if "EXEC" in u.writes: out.append("wr_exec(w, s.EXEC);")
  if "EXEC_LO" in u.writes and "EXEC" not in u.writes: out.append("w->s[SREG_EXEC_LO] = (uint32_t)s.EXEC_LO;")
  if "M0" in u.writes: out.append("w->s[ENC_M0] = (uint32_t)s.M0;")
  if "PC" in u.writes: out.append("w->pc = s.PC - w->c->code_addr;")
  return out

_CHECK = "if (UNLIKELY(s.fault)) { PC_FAULT(w, s); return; }"
# The straight 32-lane loops run in the float modes kernels use and tell the compiler which: one copy of the loop per MODE low
# byte of FAST_MODES, with MODE a known constant, so pcode's mode tests fold away and the loop stays vectorisable. 0xf0 (nearest
# even, denormals kept: PC_MODE_DEFAULT, tinygrad's LLVM kernels), 0xc0 (f32 denormals flushed: LLVM's kernel-descriptor default,
# tinygrad's DSL-assembled kernels). Handlers whose pseudocode never reads MODE have one loop for every mode; other modes,
# output modifiers and a fault with some lanes inactive run the per-lane loop (tests check the fast loops against the Python
# backend and numpy).
FAST_MODES = (0xf0, 0xc0)

def _mode_loops(modes: tuple[int, ...], loop: str) -> tuple[str, str]:
  """(condition, C) of a fast loop `loop` specialised to each MODE low byte in `modes` (() : mode-independent), the first laid
  out as the likely one."""
  if not modes: return "1", loop
  cond = "(" + " || ".join(f"(w->mode & 0xff) == {m:#x}" for m in modes) + ")"
  arms = [f"{{ s.MODE = {m:#x} | (w->mode & ~0xffu); {loop} }}" for m in modes]
  return cond, " else ".join(f"if ({'LIKELY' if i == 0 else ''}((w->mode & 0xff) == {m:#x})) {a}" for i, (m, a) in enumerate(zip(modes[:-1], arms))) + (" else " if len(arms) > 1 else "") + arms[-1]

def _salu(f: Format, h: str, fn: str, u: Usage, ops: dict) -> str:
  sb, sf, db, _ = _opinfo(ops, f.name, h)
  L = [f"void {h}(Wave *w, const Inst *in) {{", "  PC_STATE(s, w);"]
  if f.name == "SOPK":   # D0 is SDST; RDNA names the immediate SIMM16 (S0 = SDST), CDNA calls it S0 (S_CMPK_*: S0 = SDST, S1 = imm)
    db = ops.get("sdst", (None, 32))[1]
    L.append(f"  s.D0.q[0] = scalar_src(w, in, in->sdst, {db}, 0);")
    L.append("  s.S0.q[0] = s.D0.q[0]; s.S1.q[0] = (uint16_t)in->simm16;" if "S1" in u.reads else
             "  s.S0.q[0] = (uint16_t)in->simm16;" if "SIMM16" not in u.reads and "S0" in u.reads else "  s.S0.q[0] = s.D0.q[0];")
  else:
    for i, e in enumerate(("in->src0", "in->src1")):
      if sb[i]: L.append(f"  s.S{i}.q[0] = scalar_src(w, in, {e}, {sb[i]}, {sf[i]});")
    if "D0" in u.reads and db: L.append(f"  s.D0.q[0] = scalar_src(w, in, in->sdst, {db}, 0);")
  L += ["  " + x for x in _set_scalars(u, "salu")]
  for nm, fld in SALU_RAW.items():   # S_MOVREL*: SGPR numbers from the encoding
    if nm in u.reads: L.append(f"  s.{nm} = (uint64_t)in->{fld};")
  if "VCC" in u.reads | u.writes: L.append("  s.VCC = rd_vcc(w);")
  L += [f"  {fn}(&s);", f"  {_CHECK}"]
  if "D0" in u.writes and db: L.append(f"  sdst_write(w, in->sdst, {_d0(db)}, {db});" if db <= 64 else f"  sdst_write_reg(w, in->sdst, &s.D0, {db});")
  if "VCC" in u.writes: L.append("  wr_vcc(w, s.VCC);")
  L += ["  " + x for x in _writeback_scalars(u)]
  return "\n".join(L) + "\n}\n"

def _srcm(bits: int, packed: bool) -> str:
  if packed: return "SRCPK"
  return {16: "SRC16", 32: "SRC32", 64: "SRC64"}.get(bits, "SRC32")

def _fast_lanes(arch: ArchSpec) -> int:
  """Lanes of the full-EXEC fast path (a fixed-count loop the compiler vectorises): the arch's only wave size, else 32."""
  return arch.wave_sizes[0] if len(arch.wave_sizes) == 1 else 32

# D0 as an SGPR write of `db` bits reads it: a 32-bit result as its low word, which the operation stored as such (a 64-bit read of a
# member just written as 32 bits waits for the store: ~2% of the translated matmul in S_ADD_I32 alone)
def _d0(db: int) -> str: return "s.D0.d[0]" if db <= 32 else "s.D0.q[0]"

# a lane loop's D0 as 32-bit rows: a 64-bit result split from its 64-bit member (its halves read through the union's 32-bit view
# kept V_LSHLREV_B64's loop scalar: gcc does not vectorise that access)
HI64 = "(uint32_t)(s.D0.q[0] >> 32)"
def _lo(db: int, zh: bool) -> str: return "(uint32_t)s.D0.q[0]" if db == 64 else f"s.D0.d[0]{' & 0xffff' if zh else ''}"

def _full(n: int) -> str: return "0xffffffffull" if n == 32 else "~0ull"

# The straight loop over `n` lanes running `inner`. vcc "r"/"rw": the entry reads (and writes) VCC only as its own lane's bit,
# indexed by laneId, and reads laneId nowhere else (pcode's `lane_bits`: V_CNDMASK; the carry ops, V_DIV_SCALE), so each lane runs
# as lane 0 with its incoming bit as the whole mask, and the bits the lanes leave are gathered after the loop: exactly the mask
# running the lanes in order leaves, without the read-modify-write of the mask in PcState that made each lane wait on the previous
# one, and with no shift by the lane number in the loop (both kept it scalar).
# zero: the members a compare writes only as its own lane's bit (D0, CDNA's and RDNA's CMPX EXEC), all bits 0 before the loop: each
# lane runs as lane 0 from 0 and the bits are packed after the loop.
def _lane_loop(n: int, inner: list[str], vcc: str = "", zero: tuple[str, ...] = (), nl: str = "") -> str:
  """The loop over lanes 0..n-1 (nl: over the first `nl` rows' lanes of V, a runtime count, lane L being the wave's lane
  lb + L (laneId, its VCC bit): the translator's variants, where a fused run passes V + lb for each chunk of XCHUNK lanes, a
  constant count, and the others every active lane from 0; the lanes after keep their values and their mask bits are 0, a mask
  written ("rw") is whole only from lb 0. gcc's -O2 cost model leaves a runtime count's loop scalar: translated kernels compile
  with -fvect-cost-model=cheap)."""
  part = bool(nl)
  head, ln = f"for (int L = 0; L < {nl or n}; L++)", "lb + L" if part else "L"
  if zero:
    mem = {m: "s.D0.q[0]" if m == "D0" else f"s.{m}" for m in zero}
    return (f"{{ {' '.join(f'uint32_t bo{m}[{n}];' for m in zero)} for (int L = 0; L < {n}; L++) {{ s.laneId = 0; "
            f"{' '.join(f'{x} = 0;' for x in mem.values())} {' '.join(inner)} {' '.join(f'bo{m}[L] = (uint32_t){x};' for m, x in mem.items())} }} "
            f"{' '.join(f'{x} = lanes_pack(bo{m}, {n});' for m, x in mem.items())} }}")
  if not vcc: return f"{head} {{ s.laneId = (uint64_t)({ln}); {' '.join(inner)} }}"
  w = vcc == "rw"
  vdecl, pack = (f"uint32_t vout[{n}]; ", f"lanes_pack_n(vout, {nl})" if part else f"lanes_pack(vout, {n})") if w else ("", "")
  return (f"{{ const uint64_t vin = s.VCC; uint32_t cin[{n}]; {vdecl}lanes_unpack(vin, cin, {n}); "
          f"{head} {{ s.laneId = 0; s.VCC = cin[{ln}]; {' '.join(inner)}{' vout[L] = (uint32_t)s.VCC;' if w else ''} }} "
          f"s.VCC = {f'(vin & ~{_full(n)}) | {pack}' if w else 'vin'}; }}")

def _vcc_lanes(u: Usage) -> str:   # _lane_loop's vcc for an entry of usage `u`
  return ("rw" if "VCC" in u.writes else "r") if u.lane_index_only and u.lane_bits == {"VCC"} else ""

def _cmp_lanes(u: Usage) -> tuple[str, ...]:   # _lane_loop's zero for a compare of usage `u`, () when its lanes are not independent
  w = tuple(m for m in ("D0", "EXEC") if m in u.writes)
  return w if w and u.lane_index_only and u.lane_bits == set(w) else ()

def _valu(f: Format, h: str, fn: str, u: Usage, ops: dict, name: str, wave: ArchSpec, text: str,
          modes: tuple[int, ...] = FAST_MODES, wide: frozenset = frozenset(), pure: bool = False) -> tuple[str, str | None, bool]:
  """(the handler's C, its translator variant's C or None: _xvalu, whether the variant may run in a fused run: Generated.fuse). wide: the members `fn` reads as 64 bits (_wide_reads);
  pure: `fn` cannot fault (no memory, register file or hook access, no bounded loop: _FAULTS)."""
  sb, sf, db, dfw = _opinfo(ops, f.name, name)
  fmt = f.name
  enc32 = fmt in ("VOP1", "VOP2", "VOPC")
  t16, zh, sdwa = int(enc32 and wave.true16), zero_hi16(wave, name, db), "_SDWA" in f.variants or "_SDWA_SDST" in f.variants
  packed, mix = _packed(fmt, ops), int("FMA_MIX" in name or "MAD_MIX" in name)
  cmp = name.startswith(("V_CMP_", "V_CMPX_"))
  vcc_src2 = fmt in ("VOP3", "VOP3SD") and "src2" in ops and ops["src2"][0].name == "FMT_NUM_M64"
  if vcc_src2: sb[2] = 0
  dsts = dst_sgpr(ops, name)
  carry = fmt == "VOP3SD" and "D1" in u.writes   # V_MAD_U64_U32 / V_MAD_I64_I32: { D1.u1, D0.u64 } = ..., D1 is the lane's SDST bit
  e = {"VOP1": ("in->src0", "0", "0"), "VOP2": ("in->src0", "in->src1", "0"), "VOPC": ("in->src0", "in->src1", "0")}.get(fmt, ("in->src0", "in->src1", "in->src2"))
  mods = "0, 0, 0, 0, 0" if enc32 else "in->opsel, in->neg, in->abs, in->neg_hi, (in->opsel_hi | in->opsel_hi2 << 2)"
  p32 = pk32(fmt, ops, u)
  oi = f"static const OpInfo OI_{h} = {{{{{sb[0]}, {sb[1]}, {sb[2]}}}, {{{sf[0]}, {sf[1]}, {sf[2]}}}, {db if not cmp else 0}, {dfw}, {t16}, {packed}, {mix}, {p32}}};\n"
  if (ic := int_clamp(fmt, ops, name)): oi += f"static const IClamp IC_{h} = {{'{ic[0]}', {', '.join(map(str, ic[1:]))}}};\n"
  L = [f"void {h}(Wave *w, const Inst *in) {{", "  VOps o; PC_STATE(s, w);"]
  edst = "in->vdst" if not (cmp or dsts) and "vdst" in ops else "0"
  fastok = all(b in (0, 32, 64) for b in sb) and db != 16 and not packed and not p32 and not mix and not (u.wave_vgpr or dsts)
  fmods = "0" if enc32 else "(in->opsel | in->neg | in->abs | in->neg_hi | in->omod | in->clmp)"
  setup = f"valu_setup(w, in, &OI_{h}, &o, {e[0]}, {e[1]}, {e[2]}, {edst}, {mods})"
  if fastok: setup = f"valu_fast(w, in, &OI_{h}, &o, {e[0]}, {e[1]}, {e[2]}, {edst}, {fmods}) || " + setup
  L.append(f"  if (!({setup})) return;")
  if fmt in ("VOP3", "VOP3SD") and dfw: L.append("  o.omod = EMU_OMOD(w->mode, in->omod); o.clamp = in->clmp; o.post = o.omod | o.clamp;")
  if fmt == "VOP3P" and dfw: L.append("  o.clamp = in->clmp; o.post = o.clamp;")
  if ic: L.append("  o.clamp = in->clmp; o.post = o.clamp;")
  pre = _set_scalars(u, "valu")   # the state the pseudocode reads besides its sources (also in the translator's XV_ variant)
  if "VCC" in u.reads | u.writes:
    # a wave32 lane mask in SGPRs: the low one alone (rd_vcc: one 32-bit load); constants keep their 64-bit value's low half
    mask = "scalar_src(w, in, in->src2, w->c->wave_size == 64 || in->src2 >= 128 ? 64 : 32, 0) & w->c->wave_mask"
    pre.append(f"s.VCC = {mask if vcc_src2 else 'rd_vcc(w)'};")
  if cmp: pre.append(("s.D0.q[0] = 0;" if "D0" in u.writes else "") + (" s.EXEC = 0;" if "EXEC" in u.writes else ""))
  if mix or "OPSEL" in u.reads: pre.append("s.OPSEL = in->opsel; s.OPSEL_HI = in->opsel_hi | in->opsel_hi2 << 2;")
  if mix or "NEG" in u.reads: pre.append("s.NEG = in->neg;")   # V_DOT*_IU*: NEG[0]/NEG[1] make S0/S1 signed
  for nm, ex in (("SRC0", "in->src0 - 256"), ("SRC1", "in->src1 - 256"), ("SRC2", "in->src2 - 256"), ("DST", "in->vdst - 256"), ("VDST", "in->vdst - 256")):
    if nm in u.reads: pre.append(f"s.{nm} = (uint64_t)({ex});")
  L += ["  " + x for x in pre]
  xv, fuse = None, False
  if u.wave_vgpr or dsts:   # wave-wide: evaluated once, sources are scalars or register numbers
    for i in range(3):
      if sb[i]: L.append(f"  if ({e[i]} < 256) s.S{i}.q[0] = scalar_src(w, in, {e[i]}, {sb[i]}, {sf[i]});")
    L += ["  s.laneId = 0;", f"  {fn}(&s);", f"  {_CHECK}"]
    if "D0" in u.writes:
      L.append(f"  sdst_write(w, in->vdst - 256, {_d0(db)}, {db});" if dsts else "  { DSTLOCALS(o) uint64_t ex = o.exec; while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; DST32(o, L, s.D0.d[0]); } }")
  else:
    for i in range(3):
      if sb[i]: L.append(f"  SRCLOCALS(o, {i})")
    if carry: L.append("  uint64_t cout = 0; s.D1.q[0] = 0;")
    dm = {16: "32" if zh else "16", 32: "32", 64: "64"}.get(db, "32")
    has_dst = "D0" in u.writes and not cmp and edst != "0"
    L.append("  DSTLOCALS(o)")
    body = []
    for i in range(3):
      if sb[i]:
        if sb[i] > 64: body.append(f"for (int k = 0; k < {sb[i] // 32}; k++) s.S{i}.d[k] = (o.lo[{i}] + k * MAXLANES)[L];")
        elif sb[i] == 64: body.append(f"s.S{i}.q[0] = SRC64({i}, L);")
        elif f"S{i}" in wide: body.append(f"s.S{i}.q[0] = {_srcm(sb[i], bool(packed >> i & 1))}({i}, L);")
        else: body.append(f"s.S{i}.d[0] = {_srcm(sb[i], bool(packed >> i & 1))}({i}, L);"); L.append(f"  s.S{i}.d[1] = 0;")
    if "D0" in u.reads and not cmp and edst != "0":
      if dm == "64" or "D0" in wide: body.append(f"s.D0.q[0] = OLD{dm}(o, L);")
      else: body.append(f"s.D0.d[0] = OLD{dm}(o, L);"); L.append("  s.D0.d[1] = 0;")
    # the fast loops' body: they run without clamp (o.post has it), so without the integer clamp's lines, and so the ops of INT_CLAMP
    # (V_ADD_CO_U32 & co.) get a translator variant too
    fbody = [*body, f"{fn}(&s);"] + (["cout |= (s.D1.q[0] & 1) << L;"] if carry else [])
    if ic:   # the exact result, from the sources and the lane's carry-in before the pseudocode updates VCC
      srcs = ", ".join(f"s.S{i}.q[0]" if sb[i] else "0" for i in range(3))
      body.append(f"uint64_t icv = o.clamp ? iclamp(&IC_{h}, {srcs}, {'(uint32_t)(s.VCC >> L) & 1' if ic[0] in 'cbB' else '0'}, in->neg) : 0;")
    body.append(f"{fn}(&s);")
    if carry: body.append("cout |= (s.D1.q[0] & 1) << L;")
    if ic: body.append("if (o.clamp) s.D0.q[0] = icv;" if db == 64 else "if (o.clamp) s.D0.d[0] = (uint32_t)icv;")
    zero = _cmp_lanes(u) if cmp else ()   # a compare's mask bits: each lane its own (_lane_loop)
    fast = not ("S0" in u.writes and sb[0]) and not u.lane_vgpr and (not cmp or bool(zero))
    lanebit = _vcc_lanes(u)   # each lane touches only its own VCC bit: no chain between lanes (_lane_loop)
    if fast:   # any lane active, no output modifiers: a straight loop over every lane into a local buffer, then one write-back
      # pass of the active lanes (a compare's mask bits masked with EXEC); a fault with some lanes inactive may be theirs, so
      # the per-lane loop below reruns the instruction from its set-up
      n = _fast_lanes(wave)
      inner = fbody + ([f"outl[L] = {_lo(db, zh)};" + (f" outh[L] = {HI64};" if db == 64 else "")] if has_dst else [])
      cond, loops = _mode_loops(modes, _lane_loop(n, inner, lanebit, zero))
      full = _full(n)
      L.append(f"  if (LIKELY(o.exec && !(o.exec & ~{full}) && w->c->wave_size == {n} && !o.post && {cond})) {{")
      L.append(f"    uint32_t outl[{n}], outh[{n}]; (void)outh;")
      L.append(f"    {loops}")
      redo = " ".join(pre) + (" cout = 0;" if carry else "")
      L.append(f"    if (UNLIKELY(s.fault)) {{ if (o.exec != {full}) {{ s.fault = 0; {redo} goto lanes; }} PC_FAULT(w, s); return; }}")
      for m in zero: L.append(f"    {'s.D0.q[0]' if m == 'D0' else 's.' + m} &= o.exec;")
      if has_dst:
        val = "(uint64_t)outh[L] << 32 | outl[L]" if db == 64 else "outl[L]"
        L.append(f"    if (LIKELY(o.exec == {full})) {{ " + (f"memcpy(dd, outl, {4 * n});" if dm == "32" else f"for (int L = 0; L < {n}; L++) DST{dm}(o, L, {val});") +
                 f" }} else for (uint64_t e = o.exec; e; e &= e - 1) {{ int L = __builtin_ctzll(e); DST{dm}(o, L, {val}); }}")
      L.append("  } else {")
      L.append("  lanes: ;")
      if fastok and has_dst and not (carry or cmp) and dm in ("32", "64"):   # SDWA (dpp_kind 4) takes the handler
        xv = _xvalu(h, e, sb, sf, db, dm, fmods, pre, fbody, modes, wave, "VCC" in u.writes, fmt == "VOP3SD", _writeback_scalars(u), zh, lanebit, pure)
        fuse = pure and "VCC" not in u.writes and not _writeback_scalars(u)   # lane-local: writes its rows only, cannot fail
    L.append("  uint64_t ex = o.exec;")
    L.append("  while (ex) {")
    L.append("    int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L;")
    L += ["    " + b for b in body]
    L.append(f"    {_CHECK}")
    if has_dst:
      post = {32: "post_f32", 64: "post_f64", 16: "post_f16"}.get(dfw) if dfw == db else None
      val = "s.D0.q[0]" if db == 64 else "s.D0.d[0]"
      if post: val = f"(o.post ? {post}(&o, {val}) : {val})"
      elif fmt == "VOP3P" and dfw == 16: val = f"(o.post ? post_f16_at(&o, {val}, {f16_half(text)}) : {val})"
      L.append(f"    DST{dm}(o, L, {val}{' & 0xffff' if zh else ''});")
    if "S0" in u.writes and sb[0]: L.append(f"    if ({e[0]} >= 256) {{ uint32_t r = {e[0]} - 256{' & 127' if t16 and sb[0] == 16 else ''}; w->v[r * MAXLANES + L] = s.S0.d[0]; }}")
    L.append("  }")
    if fast: L.append("  }")
    if sdwa and has_dst: L.append("  if (UNLIKELY(in->dpp_kind == 4)) sdwa_dst(w, in, &o);")
  cdst = ("(in->dpp_kind == 4 && in->sd ? in->sdst : SREG_VCC_LO)" if sdwa else "SREG_VCC_LO") if fmt == "VOPC" else "in->vdst - 256"
  if cmp and "D0" in u.writes: L.append(f"  sdst_write(w, {cdst}, s.D0.q[0] & w->c->wave_mask, w->c->wave_size);")
  if cmp and "EXEC" in u.writes: L.append("  wr_exec(w, s.EXEC);")
  if carry: L.append("  sdst_write(w, in->sdst, cout & o.exec & w->c->wave_mask, w->c->wave_size);")
  if "VCC" in u.writes:   # a lane mask written by a VALU op: bits of inactive lanes are 0 (LLVM tests a carry mask with s_cmp)
    if fmt == "VOP3SD": L.append("  sdst_write(w, in->sdst, s.VCC & o.exec & w->c->wave_mask, w->c->wave_size);")
    else: L.append("  wr_vcc(w, s.VCC & o.exec);")
  L += ["  " + x for x in _writeback_scalars(u) if not x.startswith(("wr_exec", "w->scc")) or not cmp]
  return oi + "\n".join(L) + "\n}\n", xv, fuse

# The translator's variant of a VALU handler's fast path (translate.py's blocks call XV_<handler> for a step while XFAST holds:
# csrc/emu_xlat.h, the active lanes of an EMU_FAST_LANES wave are lanes 0..nl-1, the first of FAST_MODES, no poisoning): the
# handler's lane loop in that mode over those lanes, with each source read straight from its VGPR row or as one scalar value (decided by the instruction's operand
# fields, constants in a translated kernel, so the compiler keeps a scalar in a register and drops valu_fast's operand set-up).
# It returns 0 for modifiers and DPP/SDWA (XG_<handler>, constants: folded away) and for a fault (nothing was written: the
# interpreter's handler, XHANDLER, reruns the instruction and reports it), so its state never has its address taken and lives in
# registers; the block runs the handler then, and for every step while XFAST does not hold. An op that cannot fault (pure) writes
# its destination rows from the loop (lane by lane: each lane's sources are read before its write); XE_<handler> says whether it
# may write EXEC (the block then checks XFAST again). It runs lanes lb..lb+nl-1 with V + lb as its VGPR file: 0..nl-1 alone, a
# chunk of XCHUNK in a fused run of lane-local variants (Generated.fuse: pure, no mask or scalar written), whose lanes are
# independent. V is the wave's VGPR file
# (w->v), which a block reads once, so every row address has one base the compiler sees through. Kept apart from the handlers
# (Generated.xlat_src): only translated kernels compile them, after csrc/emu_xlat.h (XSRC32/64).

def _xsrc(i: int, e: str, bits: int, fw: int) -> str:
  return (f"const int xr{i} = ({e}) >= 256; const uint32_t *xlo{i} = V + (xr{i} ? ({e}) - 256 : 0) * MAXLANES, "
          f"*xhi{i} = V + (xr{i} ? ({e}) - 255 & (NVREG - 1) : 0) * MAXLANES; const uint64_t xv{i} = xr{i} ? 0 : scalar_src(w, in, {e}, {bits}, {fw}); "
          f"(void)xhi{i}; (void)xlo{i};")

def _xbody(body: list[str]) -> list[str]:
  return [b.replace("SRC32(", "XSRC32(").replace("SRC64(", "XSRC64(").replace("OLD32(o, L)", "dd[L]")
           .replace("OLD64(o, L)", "((uint64_t)dd2[L] << 32 | dd[L])") for b in body]

def _xvalu(h: str, e: tuple, sb: list, sf: list, db: int, dm: str, fmods: str, pre: list[str], body: list[str], modes: tuple[int, ...],
           wave: ArchSpec, vcc_w: bool, sd: bool, wb: list[str], zh: bool, lanebit: str = "", pure: bool = False) -> str:
  n, xbody = _fast_lanes(wave), _xbody(body)
  loop = lambda out, hi: _mode_loops(modes[:1], _lane_loop(n, [*xbody, f"{out}[L] = {_lo(db, zh)};" + (f" {hi}[L] = {HI64};" if hi else "")],
                                                           lanebit, nl="nl"))[1]
  ew = (vcc_w and sd) or any("EXEC" in x for x in wb)   # may write EXEC (an SDST naming it, the entry's own EXEC): XE_<h>
  L = [f"enum {{ XE_{h} = {int(ew)} }};", f"static inline int XG_{h}(const Inst *in) {{ return !(in->dpp_kind || {fmods}); }}",
       f"static inline __attribute__((always_inline)) int XV_{h}(Wave *w, uint32_t *V, const Inst *in, int lb, int nl) {{",
       f"  if (!XG_{h}(in)) return 0;", f"  if (nl > {n}) __builtin_unreachable();   /* XFAST: so the compiler knows the rows do not overlap within the loop */",
       "  PC_STATE_IF(s, w, 0);", *("  " + x for x in pre), *(f"  {_xsrc(i, e[i], sb[i], sf[i])}" for i in range(3) if sb[i]),
       "  uint32_t *dd = V + (in->vdst - 256) * MAXLANES, *dd2 = V + ((in->vdst - 255) & (NVREG - 1)) * MAXLANES; (void)dd2;",
       *(f"  s.S{i}.d[1] = 0;" for i in range(3) if sb[i] and sb[i] <= 32), *(["  s.D0.d[1] = 0;"] if any("dd[L]" in b for b in xbody) and dm == "32" else [])]
  if pure: L.append(f"  {loop('dd', 'dd2' if dm != '32' else '')}")
  else: L += [f"  uint32_t outl[{n}], outh[{n}]; (void)outh; {loop('outl', 'outh' if db == 64 else '')}", "  if (UNLIKELY(s.fault)) return 0;",
              f"  memcpy(dd, outl, 4 * nl);{' memcpy(dd2, outh, 4 * nl);' if dm != '32' else ''}"]
  if vcc_w: L.append("  const uint64_t xm = nl >= 64 ? ~0ull : (1ull << nl) - 1;   /* the active lanes' bits */\n" +
                     ("  sdst_write(w, in->sdst, s.VCC & xm & w->c->wave_mask, w->c->wave_size);" if sd else "  wr_vcc(w, s.VCC & xm);"))
  return "\n".join(L + ["  " + x for x in wb] + ["  return 1;", "}"]) + "\n"

def _vgpr_in(var: str, reg: str, bits: int) -> str:
  n = max(1, bits // 32)
  return f"for (int k = 0; k < {n}; k++) s.{var}.d[k] = VV[(({reg.replace('in->', 'r_')}) + k) * MAXLANES + L];"

def _vgpr_out(var: str, reg: str, bits: int) -> str:
  n = max(1, bits // 32)
  return f"for (int k = 0; k < {n}; k++) VV[(({reg.replace('in->', 'r_')}) + k) * MAXLANES + L] = s.{var}.d[k];"

_PLAIN_LD = re.compile(r"VDATA\[(\d+) : (\d+)\] = MEM\[(?:ADDR|addr)(?: \+ (\d+)U)?\]\.b32")
_PLAIN_ST = re.compile(r"MEM\[(?:ADDR|addr)(?: \+ (\d+)U)?\]\.b32 = VDATA\[(\d+) : (\d+)\]")

def plain_dwords(text: str) -> tuple[str, int] | None:
  """("load"|"store", n) if the pseudocode is exactly n consecutive dword copies between MEM[ADDR + 4k] and VDATA[32k+31 : 32k]
  (GLOBAL_LOAD/STORE_B32..B128, CDNA's _DWORD[X2..X4]), which the C handler may run as one range check per wave (`lanes_in_range`);
  else None. RDNA4/CDNA texts first compute `addr = CalcGlobalAddr(...)`, the hook that returns the handler's ADDR."""
  lines = [x.strip().rstrip(";") for x in text.strip().splitlines()]
  if lines and lines[0].startswith("addr = CalcGlobalAddr("): lines = lines[1:]
  for kind, rx, grp in (("load", _PLAIN_LD, lambda m: (m[1], m[2], m[3])), ("store", _PLAIN_ST, lambda m: (m[2], m[3], m[1]))):
    ms = [rx.fullmatch(x) for x in lines]
    if all(ms) and all(grp(m) == (str(32 * k + 31), str(32 * k), str(4 * k) if k else None) for k, m in enumerate(ms)): return kind, len(ms)
  return None

def _plain_fast(kind: str, n: int, r: str) -> list[str]:
  """The wave-level fast path of a plain dword load/store: all active lanes inside one registered range -> direct copies in lane
  order (what the per-lane pseudocode loop does when nothing faults); otherwise the per-lane loop below runs, with its exact checks.
  With every lane active, or lanes 0..n-1 for n a multiple of four (tinygrad's workgroups of 16 threads), the addresses come
  from a straight loop (vectorised) and the copies move four lanes at a time (csrc/emu_core.h plain_ld_full / plain_st_full)."""
  cp = (f"{{ uint32_t x; memcpy(&x, p + 4 * k, 4); VV[({r} + k) * MAXLANES + L] = x; }}" if kind == "load" else
        f"{{ uint32_t x = VV[({r} + k) * MAXLANES + L]; memcpy(p + 4 * k, &x, 4); }}")
  addr = "uint64_t a = A[L] = (sa ? sbase + va[L] : ((uint64_t)vah[L] << 32 | va[L])) + off; lo = a < lo ? a : lo; hi = a > hi ? a : hi;"
  cpy = lambda nl, b, a: f"{{ plain_{'ld' if kind == 'load' else 'st'}_full(VV + {r} * MAXLANES, {b}, va, {a}, {nl}, {n}); w->c->atomic = 0; return; }}"
  # the lanes' addresses sharing their high dword (an SGPR base, or the same high VGPR on every lane): the bounds are base plus
  # the 32-bit min / max (vectorised, eight lanes an instruction), unless an address wraps past 2^64 (then the general loop)
  full = lambda nl: (f"{{ uint32_t dh = 0, mn = ~0u, mx = 0; const uint32_t h0 = vah[0]; for (int L = 0; L < {nl}; L++) {{ dh |= vah[L] ^ h0; "
                     f"mn = va[L] < mn ? va[L] : mn; mx = va[L] > mx ? va[L] : mx; }} const uint64_t base = (sa ? sbase : (uint64_t)h0 << 32) + off; "
                     f"if ((sa || !dh) && base + mx >= base && lanes_in_range(w, base + mn, base + mx, {4 * n})) {cpy(nl, 'base', 0)} }} "
                     f"for (int L = 0; L < {nl}; L++) {{ {addr} }} if (lanes_in_range(w, lo, hi, {4 * n})) {cpy(nl, 0, 'A')}")
  return ["  uint64_t A[MAXLANES], lo = ~0ull, hi = 0;",
          "  if (ex == w->c->wave_mask) {   /* every lane active */",
          f"    if (w->c->wave_size == 32) {{ {full(32)} }}", f"    else {{ {full(64)} }}",
          "  } else if (ex && !(ex & (ex + 1)) && !(__builtin_popcountll(ex) & 3)) {   /* lanes 0..pn-1 (pn a multiple of four): a partial wave */",
          f"    const int pn = __builtin_popcountll(ex); {full('pn')}",
          "  } else {",
          f"  for (uint64_t e = ex; e; e &= e - 1) {{ int L = __builtin_ctzll(e); {addr} }}",
          f"  if (ex && lanes_in_range(w, lo, hi, {4 * n})) {{",
          f"    for (uint64_t e = ex; e; e &= e - 1) {{ int L = __builtin_ctzll(e); uint8_t *p = (uint8_t *)(uintptr_t)A[L]; for (int k = 0; k < {n}; k++) {cp} }}",
          "    w->c->atomic = 0; return;", "  }", "  }"]

def _load_group(h: str, A: str, OFF: str, OFFW: int, n: int) -> str:
  """The load-group entries of plain global load `h` (n dwords, address field A, offset field OFF of OFFW bits) for the
  translator: consecutive loads of one address VGPR pair and SGPR base (LLVM's immediate offsets off one pointer: tinygrad's
  matmul loads eight B128s in two such runs) scan the lanes' addresses once. GC_ (the run's first load): every lane of an
  EMU_FAST_LANES wave active, the lanes' addresses sharing their high dword or an SGPR base, the lowest and highest address
  over the run's offsets [omin, omax] inside one registered range -> 1 and that base; which holds every load's own range, so
  each then copies as its fast path would (G_) and none can fault; else 0, and each load runs as it is."""
  va = f"w->v + (in->{A} - 256) * MAXLANES"
  return (f"static inline int64_t GO_{h}(const Inst *in) {{ return sext((uint64_t)in->{OFF}, {OFFW}); }}\n"
          f"static inline __attribute__((always_inline)) int GC_{h}(Wave *w, const Inst *in, int64_t omin, int64_t omax, uint64_t *base) {{\n"
          "  if (w->c->wave_size != EMU_FAST_LANES || rd_exec(w) != w->c->wave_mask) return 0;\n"
          f"  const int sa = in->saddr != ENC_NULL && in->saddr != 0x7f; const uint32_t *va = {va}, *vah = w->v + ((in->{A} - 255) & (NVREG - 1)) * MAXLANES;\n"
          "  uint32_t dh = 0, mn = ~0u, mx = 0; const uint32_t h0 = vah[0];\n"
          "  for (int L = 0; L < EMU_FAST_LANES; L++) { dh |= vah[L] ^ h0; mn = va[L] < mn ? va[L] : mn; mx = va[L] > mx ? va[L] : mx; }\n"
          "  const uint64_t b = sa ? ((uint64_t)w->s[in->saddr + 1] << 32 | w->s[in->saddr]) : (uint64_t)h0 << 32;\n"
          "  const uint64_t lo = b + (uint64_t)omin + mn, hi = b + (uint64_t)omax + mx;   /* a wrap on either side leaves lo > hi */\n"
          f"  if ((!sa && dh) || lo > hi || !lanes_in_range(w, lo, hi, {4 * n})) return 0;\n"
          "  *base = b; return 1;\n}\n"
          f"static inline __attribute__((always_inline)) void G_{h}(Wave *w, const Inst *in, uint64_t base) {{\n"
          f"  w->c->space = SP_GLOBAL; plain_ld_full(w->v + (in->vdst - 256) * MAXLANES, base + (uint64_t)GO_{h}(in), {va}, 0, EMU_FAST_LANES, {n}); w->c->atomic = 0;\n}}\n")

def _mem(f: Format, h: str, fn: str, u: Usage, ops: dict, name: str, text: str = "", groups: dict | None = None) -> str:
  fmt = f.name
  atomic = "ATOMIC" in name or (fmt == "DS" and u.writes & {"MEM"} and "RETURN_DATA" in u.writes)
  # RDNA3 names first, RDNA4 (VGLOBAL/VSCRATCH/VFLAT, SMEM) second: address/data VGPR, immediate offset and its width, return bit
  names = {fl.name for fl in f.fields}
  A, D = ("vaddr" if "vaddr" in names else "addr"), ("vsrc" if "vsrc" in names else "data0")
  OFF, OFFW = ("ioffset", 24) if "ioffset" in names else ("offset", 21 if fmt == "SMEM" else 13)
  RET = "(in->th & 1)" if "th" in names else "in->sc0" if "sc0" in names else "in->glc"   # gfx9: sc0 is GLC
  L = [f"void {h}(Wave *w, const Inst *in) {{", "  PC_STATE(s, w);",
       f"  w->c->atomic = {int(bool(atomic))};",
       "  uint32_t *const VV = w->v; (void)VV;" + ("" if fmt == "SMEM" else f" const int r_vdst = in->vdst - 256, r_data0 = in->{D} - 256; (void)r_vdst; (void)r_data0;")
       + (" const int r_data1 = in->data1 - 256; (void)r_data1;" if fmt == "DS" else "")]
  L += ["  " + x for x in _set_scalars(u, "mem")]
  if fmt == "SMEM":
    db = ops.get("sdata", (None, 32))[1]
    if "imm" in names:   # gfx9: IMM selects an immediate or SGPR[OFFSET[6:0]]; SOFFSET_EN adds SGPR[SOFFSET] (then OFFSET is no SGPR)
      off = f"(in->imm ? (uint64_t)(int64_t)sext((uint64_t)in->{OFF}, {OFFW}) : in->soffset_en ? 0 : w->s[in->{OFF} & 127])" \
            " + (in->soffset_en ? w->s[in->soffset] : 0)"
    else: off = f"(uint64_t)(int64_t)sext((uint64_t)in->{OFF}, {OFFW}) + (in->soffset != ENC_NULL ? w->s[in->soffset] : 0)"
    al = smem_align(name)
    if name.startswith("S_BUFFER_"):   # through the V# in s[sbase:sbase+3] (csrc/emu_buffer.h sbuf_setup)
      L.append(f"  Buf b; if (!sbuf_setup(w, &b, in->sbase, (uint32_t)({off}), {al})) return;")
      L.append("  s.ADDR = b.addr; s.laneId = 0; w->c->buf = &b; w->c->space = SP_BUFFER;")
    else:
      L.append(f"  s.ADDR = ((uint64_t)w->s[in->sbase + 1] << 32 | w->s[in->sbase]) + {off}; s.ADDR &= ~{al - 1}ull; s.laneId = 0;")
      L.append("  w->c->space = SP_GLOBAL;")
    for var in ("SDATA", "DATA"):   # stores and atomics (CDNA) read their data from s[sdata..]
      if var in u.reads: L.append(f"  for (int k = 0; k < {max(1, db // 32)}; k++) s.{var}.d[k] = in->sdata + k < NSREG ? w->s[in->sdata + k] : 0;")
    L += [f"  {fn}(&s);", "  w->c->space = SP_GLOBAL;", f"  {_CHECK}"]
    if "SDATA" in u.writes: L.append(f"  sdst_write_reg(w, in->sdata, &s.SDATA, {db});")
    if "RETURN_DATA" in u.writes: L.append(f"  if ({RET}) sdst_write_reg(w, in->sdata, &s.RETURN_DATA, {db // 2 if 'CMPSWAP' in name else db});")
    L.append("  w->c->atomic = 0;")
    return "\n".join(L) + "\n}\n"
  space = {"DS": "SP_LDS"}.get(fmt, "SP_SCRATCH" if "SCRATCH" in fmt else "SP_GLOBAL")
  L.append(f"  w->c->space = {space};")
  dbits = ops.get("vdst", (None, 32))[1]
  if fmt == "DS":
    d0 = ops.get("data0", (None, 32))[1]; d1 = ops.get("data1", (None, 32))[1]
    uses_off = bool(u.reads & {"OFFSET", "OFFSET0", "OFFSET1"})
    L.append("  s.OFFSET = (uint64_t)(in->offset0 | in->offset1 << 8); s.OFFSET0 = (uint64_t)in->offset0; s.OFFSET1 = (uint64_t)in->offset1;")
    if u.wave_vgpr:
      L += ["  s.ADDR = (uint64_t)(in->addr - 256); s.DATA0.q[0] = (uint64_t)(in->data0 - 256); s.VDST = (uint64_t)(in->vdst - 256);",
            "  s.laneId = 0;", f"  {fn}(&s);", f"  {_CHECK}", "  w->c->atomic = 0;"]
      return "\n".join(L) + "\n}\n"
    L.append("  uint64_t ex = rd_exec(w);")
    L.append("  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L;")
    L.append(f"    s.ADDR = (uint64_t)w->v[(in->addr - 256) * MAXLANES + L]{'' if uses_off else ' + (uint64_t)(in->offset0 | in->offset1 << 8)'}; s.ADDR_BASE = s.ADDR;")
    if u.reads & {"DATA", "DATA0"}: L.append("    " + _vgpr_in("DATA", "in->data0", d0).replace("s.DATA.", "s.DATA.") + " s.DATA0 = s.DATA;")
    if u.reads & {"DATA2", "DATA1"}: L.append("    " + _vgpr_in("DATA2", "in->data1", d1) + " s.DATA1 = s.DATA2;")
    if "RETURN_DATA" in u.reads: L.append("    " + _vgpr_in("RETURN_DATA", "in->vdst", dbits))
    L += [f"    {fn}(&s);", f"    {_CHECK}"]
    if ds_writes_vdst(name, u): L.append("    " + _vgpr_out("RETURN_DATA", "in->vdst", dbits))
    if "ADDR" in u.writes: L.append("    w->v[(in->addr - 256) * MAXLANES + L] = (uint32_t)s.ADDR;")   # DS_BVH_STACK: the updated stack address
    L.append("  }")
  else:
    data = (ops.get("data") or ops.get("vsrc") or (None, 32))[1]
    L.append("  uint64_t ex = rd_exec(w);")
    L.append("  int sa = in->saddr != ENC_NULL && in->saddr != 0x7f;")
    L.append("  uint64_t sbase = sa ? ((uint64_t)w->s[in->saddr + 1] << 32 | w->s[in->saddr]) : 0;")
    L.append(f"  int64_t off = sext((uint64_t)in->{OFF}, {OFFW});")
    if "SGPR_ADDR" in u.reads: L.append("  s.SGPR_ADDR = sbase;")   # *_ADDTID_B32: SGPR base + INST_OFFSET + lane * 4
    if "INST_OFFSET" in u.reads: L.append(f"  s.INST_OFFSET = (uint32_t)in->{OFF};")
    L.append("  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L;")
    L.insert(-1, f"  const uint32_t *va = w->v + (in->{A} - 256) * MAXLANES, *vah = w->v + ((in->{A} - 255) & (NVREG - 1)) * MAXLANES;"
                 " const uint32_t ssa = sa ? w->s[in->saddr] : 0, sve = in->sve;")
    pl = plain_dwords(text)
    if space == "SP_GLOBAL" and fmt not in _FLAT and pl:
      L[-1:-1] = _plain_fast(pl[0], pl[1], "r_vdst" if pl[0] == "load" else "r_data0")
      if pl[0] == "load" and groups is not None: groups[h] = (_load_group(h, A, OFF, OFFW, pl[1]), A, pl[1])
    if space == "SP_SCRATCH": L.append("    s.ADDR = (uint32_t)(ssa + (sve ? va[L] : 0) + off);")
    else: L.append("    s.ADDR = (sa ? sbase + va[L] : ((uint64_t)vah[L] << 32 | va[L])) + off;")
    if fmt in _FLAT: L.append("    w->c->space = flat_space(s.ADDR);")
    if pl and pl[0] == "store" and pl[1] > 1:   # the whole access is checked before any dword is written
      L.append(f"    for (int k = 0; k < {pl[1]} && !s.fault; k++) s.fault = !emu_wr_check(&s, s.ADDR + 4 * k, 4);")
      L.append(f"    {_CHECK}")
    if "DATA" in u.reads: L.append("    " + _vgpr_in("DATA", "in->data0", data))
    if "STORE" in name and ("VDATA" in u.reads or "VDATA" in u.writes): L.append("    " + _vgpr_in("VDATA", "in->data0", data))
    elif "D16" in name and "VDATA" in u.writes: L.append("    " + _vgpr_in("VDATA", "in->vdst", dbits))   # the other half is preserved
    L += [f"    {fn}(&s);", f"    {_CHECK}"]
    if "VDATA" in u.writes and "STORE" not in name: L.append("    " + _vgpr_out("VDATA", "in->vdst", dbits))
    if "RETURN_DATA" in u.writes:   # atomics return with GLC / th[0] / sc0; GLOBAL_LOAD_ADDTID_B32 loads into RETURN_DATA
      L.append(f"    if ({RET if atomic else 1}) {{ " + _vgpr_out("RETURN_DATA", "in->vdst", dbits) + " }")
    L.append("  }")
  L.append("  w->c->atomic = 0;")
  return "\n".join(L) + "\n}\n"

def ds_writes_vdst(name: str, u: Usage) -> bool:
  """Whether a DS op writes VDST: loads and the _RTN atomics do; an atomic without _RTN never does, whatever the encoding's
  VDST field holds (hardware, issue 10; the wheel's pseudocode assigns RETURN_DATA in both forms)."""
  return "RETURN_DATA" in u.writes and ("_RTN" in name or "MEM" not in u.writes)

def smem_align(name: str) -> int:
  """The alignment an SMEM access's address is forced to: its size for the RDNA4 byte/short loads (S_[BUFFER_]LOAD_U8/I8/
  U16/I16), else a dword (the ISA ignores the two low address bits of scalar dword accesses)."""
  m = re.search(r"_[UI](8|16)$", name)
  return int(m[1]) // 8 if m else 4

def ds_counter_m0(ents: dict) -> bool:
  """DS_APPEND/DS_CONSUME address the LDS counter at M0[15:0] + offset (RDNA3: `addr = M0.base + offset`) or at the offset
  alone (RDNA4: `addr = offset`), as the wheel's pseudocode says."""
  return "DSOp_DS_APPEND" in ents and "M0.base" in ents["DSOp_DS_APPEND"].text

def _vopd_ops(ops: dict) -> dict:
  """OPERANDS of a VOPD half's target with the VOPD entry's own keys (srcy0, vsrcy1, vdsty) renamed to the VOP2 ones."""
  return {{"srcy0": "src0", "vsrcy1": "src1", "vdsty": "vdst"}.get(k, k): v for k, v in ops.items()}

def _vopd_half(h: str, fn: str, u: Usage, ops: dict, name: str, modes: tuple[int, ...] = FAST_MODES, wide: frozenset = frozenset(),
               pure: bool = False) -> tuple[str, str]:
  """(the half's C, its translator variant's C: X<h>; pure as _valu's)"""
  sb, sf, db, dfw = _opinfo(ops, "VOP2", name)
  ops_of = "  int e0 = y ? in->srcy0 : in->srcx0, e1 = y ? in->vsrcy1 : in->vsrcx1, ed = y ? in->vdsty : in->vdstx;"
  L = [f"void {h}(Wave *w, const Inst *in, int y, uint32_t *out, uint64_t exec) {{",
       "  PC_STATE(s, w); VOps o;",
       f"  static const OpInfo oi = {{{{{sb[0]}, {sb[1]}, 0}}, {{{sf[0]}, {sf[1]}, 0}}, 32, {dfw}, 0, 0, 0}};", ops_of,
       "  if (!(valu_fast(w, in, &oi, &o, e0, e1, 0, ed, 0) || valu_setup(w, in, &oi, &o, e0, e1, 0, ed, 0, 0, 0, 0, 0))) return;"]
  pre = _set_scalars(u, "valu") + (["s.VCC = rd_vcc(w);"] if "VCC" in u.reads else [])
  L += ["  " + x for x in pre]
  L.append("  DSTLOCALS(o)")
  L += [f"  SRCLOCALS(o, {i}) s.S{i}.d[1] = 0;" for i in range(2) if sb[i]]
  def part(m): return "q" if m in wide else "d"   # as _valu: a member the entry reads as 64 bits is stored whole
  body = [f"s.S{i}.{part(f'S{i}')}[0] = SRC32({i}, L);" for i in range(2) if sb[i]] + ([f"s.D0.{part('D0')}[0] = OLD32(o, L);"] if "D0" in u.reads else [])
  body += [f"s.S2.{part('S2')}[0] = OLD32(o, L);"] if sb[2] else []   # the VOP3P form of an accumulating op: S2 is the destination
  L += ["  s.D0.d[1] = 0;"] * ("D0" in u.reads) + ["  s.S2.d[1] = 0;"] * bool(sb[2])
  body += [f"{fn}(&s);", "tmp[L] = s.D0.d[0];"]
  L.append("  uint32_t tmp[MAXLANES];")
  cond, loops = _mode_loops(modes, _lane_loop(32, body, _vcc_lanes(u)))
  L.append(f"  if (LIKELY(exec == 0xffffffffull && w->c->wave_size == 32 && {cond})) {{ {loops} memcpy(out, tmp, 128); }}")
  L.append("  else { uint64_t ex = exec; while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; s.laneId = (uint64_t)L; " + " ".join(body) + " out[L] = tmp[L]; } }")
  L.append(f"  {_CHECK}")
  # the translator's variant (as XV_ of _valu, under XFAST): 0 for a fault (the handler's rerun reports it), else 1. The loop
  # writes `out` lane by lane: the caller's buffer, or the destination row itself when XP_<h> (the op cannot fault) and the other
  # half does not read it (translate.py D)
  xbody = [b.replace("tmp[L]", "out[L]") for b in _xbody(body)]
  X = [f"enum {{ XP_{h} = {int(pure)} }};", f"static inline __attribute__((always_inline)) int X{h}(Wave *w, uint32_t *V, const Inst *in, int y, uint32_t *out, int lb, int nl) {{",
       "  if (nl > 32) __builtin_unreachable();", "  PC_STATE_IF(s, w, 0);", ops_of, *("  " + x for x in pre),
       *(f"  {_xsrc(i, f'e{i}', sb[i], sf[i])}" for i in range(2) if sb[i]), "  uint32_t *dd = V + (ed - 256) * MAXLANES;",
       *(f"  s.S{i}.d[1] = 0;" for i in range(3) if sb[i]), *(["  s.D0.d[1] = 0;"] * ("D0" in u.reads)),
       f"  {_mode_loops(modes[:1], _lane_loop(32, xbody, _vcc_lanes(u), nl='nl'))[1]}", "  return !s.fault;"]
  return "\n".join(L) + "\n}\n", "\n".join(X) + "\n}\n"

def _vopd_target(fam: str, name: str, ents: dict) -> str | None:
  """The pseudocode entry a VOPD half runs: the VOP1/VOP2/VOP3 op of the same name, the VOPD entry itself (RDNA4
  V_DUAL_DOT2ACC_F32_BF16), else for an accumulating V_DUAL_<X>ACC_<T> the VOP3P V_<X>_<T> whose S2 is the destination
  (D = D + X(S0, S1); RDNA3 V_DUAL_DOT2ACC_F32_BF16 -> V_DOT2_F32_BF16)."""
  base = name.replace("V_DUAL_", "V_")
  for cls in ("VOP2Op", "VOP1Op", "VOP3Op"):
    for suf in ("_E32", "", "_E64"):
      if f"{cls}_{base}{suf}" in ents: return f"{cls}_{base}{suf}"
  if f"VOPDOp_{name}" in ents: return f"VOPDOp_{name}"
  if (m := re.fullmatch(r"V_(\w+)ACC_(\w+)", base)) and f"VOP3POp_V_{m[1]}_{m[2]}" in ents: return f"VOP3POp_V_{m[1]}_{m[2]}"
  return None

def _fields_c(f: Format, fields, dw: int = 0) -> list[str]:
  out = []
  for fl in fields:
    v = f"((w[{fl.lo // 32 + dw}] >> {fl.lo % 32}) & {hex((1 << fl.width) - 1)}u)"
    if fl.conv == "vgpr": out.append(f"in->{fl.name} = (int32_t){v} + 256;")
    elif fl.conv == "sbase": out.append(f"in->{fl.name} = (int32_t){v} << 1;")
    elif fl.conv == "srsrc": out.append(f"in->{fl.name} = (int32_t){v} << 2;")
    elif fl.conv == "vdsty": out.append(f"in->{fl.name} = 256 + (int32_t)(({v} << 1) | (((in->vdstx - 256) & 1) ^ 1));")
    elif fl.conv.startswith("lanesel"): out.append(f"in->lane_sel |= (int32_t){v} << {3 * int(fl.conv[-1])};")
    else: out.append(f"in->{fl.name} = (int32_t){v};")
  return out

def _decoder(arch: ArchSpec, fmts: tuple[Format, ...]) -> tuple[str, list[str]]:
  members = sorted({fl.name for f in fmts for fl in f.fields} | {fl.name for f in fmts for v in f.variants.values() for fl in v[1]}
                   | set(CORE_FIELDS) | image_members(f.name for f in fmts))
  L = [f"#define EMU_INST_FIELDS int32_t {', '.join(members)};"]
  D = ["static int emu_decode(const uint32_t *w, int ndw, Inst *in) {", "  uint32_t op; (void)op;"]
  for fi, f in enumerate(fmts):
    conds = []
    for k in range((f.mask.bit_length() + 31) // 32):
      m, v = (f.mask >> (32 * k)) & 0xffffffff, (f.value >> (32 * k)) & 0xffffffff
      if m: conds.append(f"(ndw > {k} && (w[{k}] & {hex(m)}u) == {hex(v)}u)")
    opx = ""
    if f.op_field:
      lo, wd = f.op_field
      opx = f"(op = (w[{lo // 32}] >> {lo % 32}) & {hex((1 << wd) - 1)}u, 1)"
      conds.append(f"(ndw > {lo // 32}) && {opx} && VALID_{f.name}[op]")
    D.append(f"  if ({' && '.join(conds) or '0'}) {{")
    D.append(f"    in->fmt = {fi}; in->size = {f.size}; in->valid = 1;")
    D += ["    " + x for x in _fields_c(f, f.fields) + image_aliases(f.name)]
    if f.op_field: D.append("    in->op = (int32_t)op;")
    else:
      D.append("    if (!VALID_VOPD[in->opx] || !VALID_VOPD[in->opy]) return 0;" if f.name == "VOPD" else "    in->op = 0;")
    srcs = list(f.src_fields)
    if f.mfma_ops:
      D.append(f"    if (MFMA_{f.name}[op]) {{")
      D += ["      " + x for x in _fields_c(f, f.variants["_MFMA"][1])]
      D.append("    }")
    sdwa = f.variants.get("_SDWA") or f.variants.get("_SDWA_SDST")
    if sdwa and "src0" in srcs and arch.enc_sdwa >= 0:
      D.append(f"    if (in->src0 == {arch.enc_sdwa}) {{ in->dpp_kind = 4; in->size = {sdwa[0]}; if (ndw * 4 < {sdwa[0]}) return -1;")
      D += ["      " + x for x in _fields_c(f, sdwa[1])]
      D.append("      return 1; }")
    if "_DPP16" in f.variants and "src0" in srcs:
      sz, flds = f.variants["_DPP16"]
      D.append(f"    if (in->src0 == {arch.enc_dpp16}) {{ in->dpp_kind = 1; in->size = {sz}; if (ndw * 4 < {sz}) return -1;")
      D += ["      " + x for x in _fields_c(f, flds)]
      D.append("      return 1; }")
    if "_DPP8" in f.variants and "src0" in srcs and arch.enc_dpp8 >= 0:
      sz, flds = f.variants["_DPP8"]
      D.append(f"    if (in->src0 == {arch.enc_dpp8} || in->src0 == {arch.enc_dpp8 + 1}) {{ in->dpp_kind = in->src0 == {arch.enc_dpp8} ? 2 : 3;"
               f" in->size = {sz}; if (ndw * 4 < {sz}) return -1;")
      D += ["      " + x for x in _fields_c(f, flds)]
      D.append("      return 1; }")
    lit = " || ".join([f"in->{s} == 255" for s in srcs] + ([f"LITONLY_{f.name}[{'in->opx] || LITONLY_' + f.name + '[in->opy' if f.name == 'VOPD' else 'in->op'}]"] if f.lit_only else []))
    if lit:
      D.append(f"    if ({lit}) {{ if (ndw * 4 < {f.size + 4}) return -1; in->has_lit = 1; in->lit = w[{f.size // 4}]; in->literal = (int32_t)in->lit; in->size = {f.size + 4}; }}")
    D.append("    if (ndw * 4 < in->size) return -1;")
    D.append("    return 1;")
    D.append("  }")
  D.append("  return 0;\n}\n")
  T = []
  for f in fmts:
    n = 1 << (f.op_field[1] if f.op_field else 5)
    T.append(f"static const uint8_t VALID_{f.name}[{n}] = {{{', '.join('1' if i in f.valid else '0' for i in range(n))}}};")
    if f.lit_only: T.append(f"static const uint8_t LITONLY_{f.name}[{n}] = {{{', '.join('1' if i in f.lit_only else '0' for i in range(n))}}};")
    if f.mfma_ops: T.append(f"static const uint8_t MFMA_{f.name}[{n}] = {{{', '.join('1' if i in f.mfma_ops else '0' for i in range(n))}}};")
  return "\n".join(L), "\n".join(T) + "\n" + "\n".join(D) + _acc_fix(arch, fmts) + _vrows(arch, fmts)

def _vrows(arch: ArchSpec, fmts: tuple[Format, ...]) -> str:
  """emu_vrows(in): an upper bound of 1 + the highest VGPR row a decoded instruction may write: its highest register field
  (any field that holds a VGPR: the 9-bit sources, the VGPR fields of every encoding and variant, after emu_acc_fix) plus
  the widest operand of the arch, capped at NVREG. The scheduler zeroes that many rows in each launched wave."""
  regs = sorted({fl.name for f in fmts for fl in (*f.fields, *(x for v in f.variants.values() for x in v[1])) if fl.conv in ("vgpr", "vdsty")}
                | {n for f in fmts for n in f.src_fields})
  rows = max(bits for ops in operands(arch.family).values() for _, bits, _ in ops.values()) // 32
  return ("\nstatic uint32_t emu_vrows(const Inst *in) {\n  int32_t m = 0;\n" + "".join(f"  if (in->{r} > m) m = in->{r};\n" for r in regs)
          + f"  return m < 256 ? 0 : m - 256 + {rows} > NVREG ? NVREG : (uint32_t)(m - 256 + {rows});\n}}\n")

def _acc_fix(arch: ArchSpec, fmts: tuple[Format, ...]) -> str:
  """emu_acc_fix(in, off): move the AccVGPR operands of a decoded instruction to their unified slots (acc_rules)."""
  L = ["static void emu_acc_fix(Inst *in, int off) {", "  (void)in; (void)off;", "  switch (in->fmt) {"]
  rules = acc_rules(arch)
  for fi, f in enumerate(fmts):
    if f.name not in rules: continue
    L.append(f"  case {fi}:")
    for ops, flag, bit, flds in rules[f.name]:
      cond = [f"(in->{flag} >> {bit} & 1)"] if flag else []
      if ops is not None and ops != f.valid:
        cond.insert(0, f"MFMA_{f.name}[in->op]" if ops == f.mfma_ops else "(" + " || ".join(f"in->op == {o}" for o in sorted(ops)) + ")")
      fl = list(flds) + (["vsrc0"] if "src0" in flds and ("_DPP16" in f.variants or "_SDWA" in f.variants) else [])
      body = " ".join(f"if (in->{x} >= 256) in->{x} += off;" for x in fl)
      L.append(f"    if ({' && '.join(cond) or '1'}) {{ {body} }}")
    L.append("    break;")
  L += ["  }", "}"]
  return "\n" + "\n".join(L) + "\n"

def _pcode_entries(family: str) -> dict:
  from mockgpu.pcode.tables import entries
  return entries(family)

def _usage(family: str, ents: dict, ename: str) -> Usage:
  try: from mockgpu.pcode.cemit import metadata
  except ImportError: metadata = None
  return usage(ents[ename].text, metadata(family, ename) if metadata is not None else None)

def handler_names(arch: ArchSpec) -> tuple[tuple[str, ...], dict[str, int]]:
  """hid -> "FORMAT OPNAME" for every (format, opcode) slot, and the first hid of each format."""
  names, base = [], {}
  for f in formats(arch.family):
    base[f.name] = len(names)
    n = 1 << (f.op_field[1] if f.op_field else 5)
    for i in range(n):
      try: nm = f.enum(i).name if f.enum is not None else f"OP{i}"
      except ValueError: nm = f"OP{i}"
      names.append(f"{f.name} {nm}")
  return tuple(names), base

# Pseudocode state no machine state feeds. Every PcState member an entry reads is set by its handler from the wave (operands,
# encoding fields, registers), or zeroed by zero_unset (the Python backend's State starts at 0 too); each member that can be
# zeroed is listed here with the reason it reads as 0 (tests/isa/test_hw_emu_paths.py checks every arch against this table).
STATE_ZERO = {
  "D0": "partial results (a 16-bit half, D0[hi : lo]) read the rest of D0, which the handler never writes back",
  "ADDR0": "DS_CONDXCHG32_RTN_B64 assigns it before reading it", "ADDR1": "DS_CONDXCHG32_RTN_B64 assigns it before reading it",
  "WAVE_STATUS_COND_DBG_SYS": "conditional-debug status: no debugger sets it, so S_CBRANCH_CDBG* fall through",
  "WAVE_STATUS_COND_DBG_USER": "conditional-debug status: no debugger sets it, so S_CBRANCH_CDBG* fall through",
  "WAVE_STATUS_PRIV": "S_RFE_B64 clears it (a 1-bit write); nothing reads it: no trap handler runs",
  "TRAPSTS_INVALID": "exception status the float min/max entries set on a signalling NaN (a 1-bit write); no trap handler reads it",
  "SDWA_SRC0_SEL": "gfx9 V_CVT_*_FP8/BF8 byte select: the SDWA operand fetch has already moved src0_sel's byte to bits 7:0 "
                   "(the VOP3 form converts byte 0: its op_sel byte select is not modelled)",
  "OFFSET": "an argument of CalcScalarScratchAddr (gfx9 S_SCRATCH_*), which no backend provides: they raise unsupported",
  "SBASE": "an argument of CalcScalarScratchAddr (gfx9 S_SCRATCH_*), which no backend provides: they raise unsupported",
  "SOFFSET": "an argument of CalcScalarScratchAddr (gfx9 S_SCRATCH_*), which no backend provides: they raise unsupported",
}
# what in a pseudocode function's C can set s->fault: memory, register-file and hook accesses (pcode_rt.h) and bounded loops
_FAULTS = re.compile(r"s->fault|\bPC_(?:EXT|MEM|VGPR|SGPR)_")
_PC_FN = re.compile(r"^static inline void (pc_\w+)\(PcState \*s\) \{\n(.*?)^\}", re.S | re.M)

def _wide_reads(pcode_c: str) -> dict[str, frozenset]:
  """pc_* function -> the operand members (S0, S1, S2, D0) its C reads as 64 bits (`.q[`), e.g. a 32-bit shift count masked as
  a u64. The handlers store such a member whole (.q[0], high half 0): a 32-bit store read back as 64 bits stalls store
  forwarding and keeps the lane loop from vectorising (V_LSHLREV_B32 ran scalar, 10% of an elementwise kernel); the other
  members keep their 32-bit store, which a 32-bit (float) read needs to stay in a register."""
  return {m[1]: frozenset(x for x in ("S0", "S1", "S2", "D0") if f"s->{x}.q[" in m[2]) for m in _PC_FN.finditer(pcode_c)}
_PC_ACCESS = re.compile(r"s->(\w+)(\.[dq]\[\d+\])?\s*(=(?!=))?")
_HANDLER_SETS = re.compile(r"\bs\.(\w+)(?:\.[dq]\[[^\]]*\])?\s*=(?!=)")
_PC_CALL = re.compile(r"\b(pc_\w+)\(&s\)")
_STATE_FIXED = frozenset({"user", "fault", "fault_msg", "MODE"})   # PC_STATE sets these

@functools.cache
def _discarding_hooks() -> frozenset[str]:
  """The PC_EXT_ hooks whose macro in csrc/ ignores its arguments (`#define PC_EXT_X(s, ...)` without __VA_ARGS__: the RDNA4/CDNA
  address built-ins return the handler's ADDR), so what the pseudocode passes them is never read."""
  src = "".join(p.read_text() for p in sorted((pathlib.Path(__file__).parent / "csrc").glob("*.h")))
  return frozenset(m[1] for m in re.finditer(r"#define PC_EXT_(\w+)\(s, \.\.\.\)(.*)", src) if "__VA_ARGS__" not in m[2])

def _drop_hook_args(body: str) -> str:
  out, i, hooks = [], 0, _discarding_hooks()
  for m in re.finditer(r"PC_EXT_(\w+)\(s", body):
    if m.start() < i or m[1] not in hooks: continue
    depth, j = 1, m.end()
    while depth: depth += {"(": 1, ")": -1}.get(body[j], 0); j += 1
    out += [body[i:m.end()], ")"]; i = j
  return "".join(out) + body[i:]

def pc_reads(pcode_c: str) -> dict[str, frozenset[str]]:
  """The PcState members each emitted `pc_*` function reads: every `s->X` that is not the whole target of an assignment
  (`s->X = ...`, `s->X.d[k] = ...`) nor an argument of a hook that ignores it (_discarding_hooks); a partial write reads its
  member (read-modify-write), and so does a read after the function's own assignment (not flow-sensitive: conservative)."""
  return {m[1]: frozenset(x[1] for x in _PC_ACCESS.finditer(_drop_hook_args(m[2])) if not x[3]) - _STATE_FIXED
          for m in _PC_FN.finditer(pcode_c)}

def zero_unset(text: str, reads: dict[str, frozenset[str]]) -> tuple[str, tuple[str, ...]]:
  """A handler's C with the PcState members its `pc_*` calls read but it never sets zeroed right after PC_STATE (so no
  member is read uninitialised, and each reads as the Python backend's State default, 0), and those members."""
  need = frozenset().union(*(reads.get(f, frozenset()) for f in _PC_CALL.findall(text)))
  zero = tuple(sorted(need - set(_HANDLER_SETS.findall(text))))
  if not zero or "PC_STATE(s, w);" not in text: return text, ()
  fill = " ".join(f"memset(&s.{m}, 0, sizeof(s.{m}));" if m in WIDE else f"s.{m} = 0;" for m in zero)
  return text.replace("PC_STATE(s, w);", f"PC_STATE(s, w); {fill}", 1), zero

# DPP16 source-lane rules (dpp_ctrl, 9 bits): described once here, run by pybackend and generated into the C as the table
# DPP16_SRC[ctrl][lane] (csrc/emu_ops.h dpp16_src). gfx9 (ArchSpec.dpp_gfx9) adds the wave-wide shifts/rotates by one lane and
# the row broadcasts and has no row_xmask; gfx11 (ArchSpec.dpp_bcast_row0) runs row_bcast:15/31 as a broadcast of each row's lane 0.
_DPP_GFX9 = {0x130: lambda L: (L + 1, L + 1 < 64), 0x134: lambda L: ((L + 1) & 63, True), 0x138: lambda L: (L - 1, L > 0),
             0x13c: lambda L: ((L - 1) & 63, True), 0x142: lambda L: ((L & ~15) - 1, L >= 16), 0x143: lambda L: (31, L >= 32)}

def dpp16_src(ctl: int, L: int, gfx9: bool = False, bcast_row0: bool = False) -> tuple[int, int]:
  """(source lane, valid) of lane L under DPP16 control `ctl`: valid 1, 0 (out of range: bound_ctrl writes 0, else the lane keeps
  its value) or -1 (a control this arch does not have: unsupported)."""
  row, r = L & ~15, L & 15
  if bcast_row0 and ctl in (0x142, 0x143): return row, 1
  if gfx9 and ctl in _DPP_GFX9: sl, ok = _DPP_GFX9[ctl](L); return (sl, 1) if ok else (L, 0)
  if gfx9 and ctl >= 0x160: return L, -1
  if ctl <= 0xff: return (L & ~3) | ((ctl >> ((L & 3) * 2)) & 3), 1                                      # quad_perm
  if 0x101 <= ctl <= 0x10f: return (row | (r + (ctl & 15)), 1) if r + (ctl & 15) <= 15 else (L, 0)       # row_shl
  if 0x111 <= ctl <= 0x11f: return (row | (r - (ctl & 15)), 1) if r - (ctl & 15) >= 0 else (L, 0)        # row_shr
  if 0x121 <= ctl <= 0x12f: return row | ((r - (ctl & 15)) & 15), 1                                       # row_ror
  if ctl == 0x140: return row | (15 - r), 1                                                               # row_mirror
  if ctl == 0x141: return row | (r & 8) | (7 - (r & 7)), 1                                                # row_half_mirror
  if 0x150 <= ctl <= 0x15f: return row | (ctl & 15), 1                                                    # row_share / row_newbcast
  if 0x160 <= ctl <= 0x16f: return row | (r ^ (ctl & 15)), 1                                              # row_xmask
  return L, -1

@functools.cache
def dpp16_table(arch: ArchSpec) -> tuple[tuple[int, ...], ...]:
  """[ctrl][lane] -> the source lane, -1 out of range, -2 unsupported (dpp16_src for this arch); the C's DPP16_SRC."""
  return tuple(tuple(sl if ok == 1 else -1 if ok == 0 else -2 for sl, ok in (dpp16_src(c, L, arch.dpp_gfx9, arch.dpp_bcast_row0) for L in range(64)))
               for c in range(512))

def _dpp16_table(arch: ArchSpec) -> str:
  return "static const int8_t DPP16_SRC[512][64] = {\n" + ",\n".join("{" + ",".join(map(str, row)) + "}" for row in dpp16_table(arch)) + "};"

# The C structs Python mirrors with ctypes (cbackend.py): the library reports their layout (emu_layout), tests compare it
LAYOUT_STRUCTS = ("MRange", "WatchRec", "EmuArgs")

def struct_members(name: str) -> tuple[str, ...]:
  """The member names, in order, of `typedef struct { ... } name;` in csrc/emu_core.h."""
  src = re.sub(r"/\*.*?\*/", "", (pathlib.Path(__file__).parent / "csrc" / "emu_core.h").read_text(), flags=re.S)
  body = re.search(r"typedef struct \{([^{}]*)\} " + name + ";", src)[1]
  return tuple(re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", d)[1] for decl in body.split(";") if decl.strip() for d in decl.split(","))

def _layout() -> str:
  """emu_layout("EmuArgs") = sizeof, emu_layout("EmuArgs.grid") = offsetof, -1 for an unknown name (LAYOUT_STRUCTS)."""
  rows = [f'{{"{s}", sizeof({s})}}, ' + " ".join(f'{{"{s}.{m}", offsetof({s}, {m})}},' for m in struct_members(s)) for s in LAYOUT_STRUCTS]
  return ("#include <stddef.h>\nint64_t emu_layout(const char *name) {\n  static const struct { const char *n; int64_t v; } T[] = {\n    "
          + "\n    ".join(rows) + "\n  };\n  for (size_t i = 0; i < sizeof(T) / sizeof(T[0]); i++) if (!strcmp(T[i].n, name)) return T[i].v;\n"
          "  return -1;\n}")

def always_inline(pcode_c: str, moded: set[str]) -> str:
  """Declarations making the VALU entries that read MODE always_inline: their fast loops (one per FAST_MODES byte) vectorise only
  inlined, and gcc's size estimate (the f32-flush path of pc_ffma & co. counted before MODE folds) would keep some out of line."""
  return "\n".join(f"static inline void {f}(PcState *s) __attribute__((always_inline));" for f in sorted(moded) if re.match(r"pc_VOP(1|2|3|3P|D)Op_", f))

def generate(arch: ArchSpec, pcode_c: str, pcode_fns: set[str], chunks: int = 2) -> Generated:
  """The C sources for `arch` given pcode's emitted C and the set of `pc_*` functions it defines: the main translation
  unit and `chunks` units of handlers, compiled in parallel and linked into one library."""
  fmts = formats(arch.family)
  ops_tab = operands(arch.family)
  ents = _pcode_entries(arch.family)
  mat_c, mat_h = matrix.c_source(arch.family)
  fields_def, decoder = _decoder(arch, fmts)
  names, hbase = handler_names(arch)
  handlers, tables, missing, decls, unmod, xlat, fuse, groups = [], [], {}, [], set(), {}, set(), {}
  flows = [0] * len(names)
  moded, cnames = {m[1] for m in _PC_FN.finditer(pcode_c) if "s->MODE" in m[2]}, []   # pc_* functions that read MODE (_mode_loops)
  pure = {m[1] for m in _PC_FN.finditer(pcode_c) if not _FAULTS.search(m[2])}
  wide = _wide_reads(pcode_c)
  for f in fmts:
    n = 1 << (f.op_field[1] if f.op_field else 5)
    row = []
    if f.name in EXPORT_FORMATS: tables.append(f"static const Handler HT_{f.name}[{n}] = {{h_export}};"); cnames += ["h_export"] * n; continue
    for i in range(n):
      if i not in f.valid: row.append("0"); continue
      member = f.enum(i)
      name, ename = member.name, f"{type(member).__name__}_{member.name}"
      base_name = re.sub(r"_E(32|64)$", "", name)
      fe = semantics_entry(member, ents)
      flows[hbase[f.name] + i] = FLOW[flow_of(base_name, ents[fe].text if fe in ents else None)]
      h = f"H_{f.name}_{name}"
      key = f"{f.name} {name}"
      if f.name == "VOPD":
        tgt = _vopd_target(arch.family, name, ents)
        if tgt and f"pc_{tgt}" in pcode_fns:
          t, xlat[f"VH_{name}"] = _vopd_half(f"VH_{name}", f"pc_{tgt}", _usage(arch.family, ents, tgt), _vopd_ops(ops_tab.get(ents[tgt].op, {})),
                                             base_name, FAST_MODES if f"pc_{tgt}" in moded else (), wide.get(f"pc_{tgt}", frozenset()),
                                             f"pc_{tgt}" in pure)
          handlers.append(t)
          if f"pc_{tgt}" in pure: fuse.add(f"VH_{name}")   # a half writes its rows only (no masks): lane-local when it cannot fault
          row.append(f"VH_{name}"); decls.append(f"void VH_{name}(Wave *w, const Inst *in, int y, uint32_t *out, uint64_t exec);")
        else: row.append("0"); missing[key] = f"VOPD target {tgt or base_name} has no compiled pseudocode"
        continue
      if base_name in UNMODELLED: row.append(f"hu_{base_name}"); missing[key] = UNMODELLED[base_name]; unmod.add(base_name); continue
      if base_name in mat_h: row.append(mat_h[base_name]); continue
      if base_name.startswith(("V_WMMA_", "V_SWMMAC_", "V_MFMA_", "V_SMFMAC_")) and base_name not in PROSE_C:
        row.append("h_unsupported"); missing[key] = f"matrix op {base_name} of {arch.name} is not modelled (mockgpu.emu.matrix)"; continue
      if f.name in bvh.BVH_FORMATS and name in bvh.BVH_OPS:   # ray tracing: emu/bvh.py, csrc/emu_bvh.h
        handlers.append(bvh.c_handler(h, name, f.name)); row.append(h); decls.append(f"void {h}(Wave *w, const Inst *in);"); continue
      if f.name in IMAGE_FORMATS:
        if (c := image(h, f"pc_{ename}" if f"pc_{ename}" in pcode_fns else None, name)) is None:
          row.append("h_image_unsupported"); missing[key] = "image op without a model (RDNA4 BVH_DUAL/BVH8, or an atomic without compiled pseudocode)"; continue
        handlers.append(c); row.append(h); decls.append(f"void {h}(Wave *w, const Inst *in);"); continue
      if base_name in PROSE_C or base_name in GFX_PROSE: row.append(PROSE_C.get(base_name) or GFX_PROSE[base_name]); continue
      if f.name in buffer.BUFFER_FORMATS and "FORMAT" in name and "LDS" not in name:   # format conversions: hand-written (buffer.py)
        handlers.append(buffer.c_format_handler(f, h, name, ops_tab.get(member, {}))); row.append(h); decls.append(f"void {h}(Wave *w, const Inst *in);"); continue
      if f.name in buffer.LDS_LOADS and "_LOAD_LDS_" in name and buffer.lds_load_op(name):   # loads into LDS: no pseudocode (buffer.py)
        handlers.append(buffer.c_lds_handler(f, h, name)); row.append(h); decls.append(f"void {h}(Wave *w, const Inst *in);"); continue
      ename = fe
      fn = f"pc_{ename}"
      if fn not in pcode_fns or ename not in ents:
        row.append("h_unsupported"); missing[key] = "no compiled pseudocode" if ename in ents else "no pseudocode in the wheel"; continue
      u, ops = _usage(arch.family, ents, ename), ops_tab.get(member, {})
      if f.name in _SALU: handlers.append(_salu(f, h, fn, u, ops))
      elif f.name in _VALU:
        t, x, fu = _valu(f, h, fn, u, ops, base_name, arch, ents[ename].text, FAST_MODES if fn in moded else (), wide.get(fn, frozenset()), fn in pure)
        handlers.append(t)
        if x: xlat[h] = x
        if fu: fuse.add(h)
      elif f.name == "VINTERP": handlers.append(vinterp(h, fn, u, ops, base_name))
      elif f.name in _VMEM or f.name in ("DS", "SMEM"):
        if "LDS" in name and f.name != "DS": row.append("h_unsupported"); missing[key] = "loads into LDS are not modelled"; continue
        handlers.append(_mem(f, h, fn, u, ops, name, ents[ename].text, groups))
      elif f.name in buffer.BUFFER_FORMATS:
        if "LDS" in name: row.append("h_unsupported"); missing[key] = "buffer loads into LDS are not modelled"; continue
        handlers.append(buffer.c_handler(f, h, fn, u, ops, name))
      else: row.append("h_unsupported"); missing[key] = f"format {f.name} is not modelled"; continue
      row.append(h); decls.append(f"void {h}(Wave *w, const Inst *in);")
    if f.name == "VOPD": tables.append(f"static const VHalf VOPD_HALF[{n}] = {{{', '.join(row)}}};"); row = ["h_vopd" if i in f.valid else "0" for i in range(n)]
    tables.append(f"static const Handler HT_{f.name}[{n}] = {{{', '.join(row)}}};")
    cnames += row
  reads, zeroed = pc_reads(pcode_c), {}
  for i, text in enumerate(handlers):
    handlers[i], z = zero_unset(text, reads)
    if z: zeroed[re.search(r"void (\w+)\(", text)[1]] = z
  xlat = {h: zero_unset(x, reads)[0] for h, x in xlat.items()}   # a variant's PcState starts as its handler's
  tables.append(f"static const Handler *const HANDLERS[{len(fmts)}] = {{{', '.join(f'HT_{f.name}' for f in fmts)}}};")
  tables.append(f"static const int32_t HBASE[{len(fmts)}] = {{{', '.join(str(hbase[f.name]) for f in fmts)}}};")
  tables.append(f"#define EMU_NHANDLERS {len(names)}")
  tables.append("enum { " + ", ".join(f"FLOW_{k} = {v}" for k, v in FLOW.items()) + " };")
  tables.append(f"static const uint8_t HFLOW[{len(names)}] = {{{', '.join(map(str, flows))}}};   /* gen_c.FLOW per hid */")
  head = [f"/* generated by mockgpu.emu.gen_c v{GEN_VERSION} for {arch.name} ({arch.family}) from the tinygrad wheel's tables and mockgpu.pcode */",
          f"#define NVREG {arch.nvregs}\n#define NAGPR {arch.num_agprs}\n#define ENC_M0 {arch.enc_m0}\n#define ENC_NULL {arch.enc_null}",
          f"#define EMU_FAST_LANES {_fast_lanes(arch)}\n#define EMU_FAST_MODE {FAST_MODES[0]:#x}   /* the translator's XFAST (_xvalu) */",
          facts.c_source(), _dpp16_table(arch), fields_def, *(f"#define EMU_HWREG_{r} {hwreg(arch.family, r)}" for r in HWREGS), f"#define EMU_HWREG_MODE {mode_hwreg(arch.family)}",
          f"#define EMU_OMOD(mode, omod) (((mode) >> {MODE_IEEE_BIT} & 1) ? 0 : (omod))   /* gen_c.omod_of */", f"#define EMU_DS_COUNTER_M0 {int(ds_counter_m0(ents))}",
          "#include \"emu_pre.h\"", "#include \"pcode_rt.h\"", "#include \"emu_core.h\"", "#include \"emu_ops.h\"", buffer.c_defines(arch),
          "#include \"emu_buffer.h\"",
          "typedef void (*VHalf)(Wave *w, const Inst *in, int y, uint32_t *out, uint64_t exec);", "#include \"emu_prose.h\"",
          *(("#include \"emu_gfx.h\"",) if any(f.name in EXPORT_FORMATS for f in fmts) else ()),   # graphics encodings: RDNA only
          *((image_defs(arch.family), "#include \"emu_image.h\"") if any(f.name in IMAGE_FORMATS for f in fmts) else ()),
          *((bvh.c_defs(), "#include \"emu_bvh.h\"") if any(f.name in bvh.BVH_FORMATS for f in fmts) else ())]
  vopd = any(f.name == "VOPD" for f in fmts)
  ds_tr = [f"static void {PROSE_C[n]}(Wave *w, const Inst *in) {{ ds_read_tr(w, in, {wd}, {nd}); }}" for n, (wd, nd) in DS_READ_TR.items()
           if any(f.name == "DS" and n in f.enum.__members__ for f in fmts)]
  stops = [f"static void {h}(Wave *w, const Inst *in) {{ (void)in; set_status(w, ST_{st}, MSG_{m}); }}" for h, (st, m) in PROSE_STOP.items()]
  hu = [f'static void hu_{n}(Wave *w, const Inst *in) {{ (void)in; set_status(w, ST_UNSUPPORTED, "{n}: {UNMODELLED[n]}"); }}' for n in sorted(unmod)]
  main = "\n".join([*head, *decls, *ds_tr, *stops, *hu, _layout(), mat_c, decoder, f"#define HAS_VOPD {int(vopd)}",
                    "static void h_vopd(Wave *w, const Inst *in);" if vopd else "", *tables, "#include \"emu_sched.c\""])
  parts = ["\n".join([*head, always_inline(pcode_c, moded), pcode_c, *handlers[k::chunks]]) for k in range(chunks)]
  return Generated((main, *parts), names, hbase, missing, zeroed, tuple(cnames), {re.search(r"^void (\w+)\(", t, re.M)[1]: t for t in handlers},
                   xlat, tuple(flows), tuple(sorted(fuse)), groups)
