"""The pseudocode's free variables: machine state (fields of the C `PcState`), named constants and aliases. Data, not code."""
import math
from mockgpu.pcode.nodes import Ty
__all__ = ["WIDE", "WIDE_BITS", "SCALARS", "FIELDS", "MODE_VIEWS", "MODE_DEFAULT", "ALIASES", "CONST_ALIASES", "CONSTANTS", "state_type", "c_field"]

WIDE_BITS = 1024
# operand/result registers and memory data: raw bits, up to 1024 (MFMA-size conversions on CDNA, B512 scalar loads)
WIDE = ("S0", "S1", "S2", "D0", "D1", "DATA", "DATA0", "DATA1", "DATA2", "VDATA", "SDATA", "RETURN_DATA")
_U64, _U32, _U1, _I64 = Ty("u", 64), Ty("u", 32), Ty("u", 1), Ty("i", 64)
# name -> type of an untyped read. Stored as uint64_t in PcState.
SCALARS: dict[str, Ty] = {
  "SCC": _U1, "VCC": _U64, "EXEC": _U64, "EXEC_LO": _U32, "VCCZ": _U1, "EXECZ": _U1, "M0": _U32, "PC": _U64, "laneId": _U32,
  "WAVE64": _U1, "SIMM16": Ty("i", 16), "SIMM32": _U32, "ADDR": _U64, "ADDR0": _U64, "ADDR1": _U64, "ADDR_BASE": _U64,
  "OFFSET": _U32, "OFFSET0": _U32, "OFFSET1": _U32, "IOFFSET": _U32, "INST_OFFSET": _U32,
  "SRC0": _U32, "SRC1": _U32, "SRC2": _U32, "DST": _U32, "VDST": _U32,
  "SBASE": _U64, "SOFFSET": _U32, "VADDR": _U64, "SRSRC": Ty("b", 128), "SADDR": _U64, "SGPR_ADDR": _U64,
  "vgpr_a": _U64, "sgpr_o": _U64, "v_addr": _U64, "v_addr_off": _U64, "s_saddr": _U64, "s_saddr_off": _U64, "flat_scratch": _U64,
  "offset": _U32, "sgpr_base": _U64, "mem_addr": _U64,
  "OPSEL": _U32, "OPSEL_HI": _U32, "NEG": _U32, "SDWA_SRC0_SEL": _U32, "NUM_VGPRS": _U32, "MODE": _U32,
}
# The MODE register (hwreg 1), the one place the float behaviour lives: FP_ROUND [3:0] = f32 [1:0], f16/f64 [3:2] (0 nearest
# even, 1 +inf, 2 -inf, 3 toward zero); FP_DENORM [7:4] = f32 [5:4], f16/f64 [7:6] (bit 0 of a group: keep input denormals,
# bit 1: keep output denormals; 3 keeps both, 0 flushes both); DX10_CLAMP [8]; IEEE [9]. Reset/default: 0xf0.
MODE_DEFAULT = 0xf0
# pseudocode names that are views of MODE bits: name -> (lo, bits). ROUND_MODE is all of FP_ROUND, so the pseudocode's
# `prev_mode = ROUND_MODE; ROUND_MODE = ROUND_TOWARD_ZERO; ...; ROUND_MODE = prev_mode` sets and restores both groups.
MODE_VIEWS: dict = {"ROUND_MODE": (0, 4), ("WAVE_MODE", "IEEE"): (9, 1)}
# dotted state fields: `WAVE_MODE.IEEE` is the PcState field `WAVE_MODE_IEEE`
FIELDS: dict[tuple[str, str], Ty] = {
  ("WAVE_MODE", "CSP"): _U32, ("WAVE_MODE", "GPR_IDX_EN"): _U1, ("TRAPSTS", "INVALID"): _U1,
  ("WAVE_STATUS", "PRIV"): _U1, ("WAVE_STATUS", "COND_DBG_SYS"): _U1, ("WAVE_STATUS", "COND_DBG_USER"): _U1,
  ("MODE", "SCALAR_PREFETCH_EN"): _U1, ("INST", "OMOD"): _U32, ("INST", "ABS"): _U32, ("INST", "NEG"): _U32,
  ("TADDR", "X"): _U64, ("TADDR", "Y"): _U64, ("TADDR", "Z"): _U64, ("TADDR", "W"): _U64,
}
ALIASES = {"laneID": "laneId"}
CONST_ALIASES = {"wave32": "WAVE32"}
# named constants: (type, value). Float values are Python floats; the literal adopts the other operand's float format.
CONSTANTS: dict[str, tuple[Ty, object]] = {
  "INF": (Ty("f", 64), math.inf), "NAN": (Ty("f", 64), math.nan), "PI": (Ty("f", 64), math.pi),
  "ROUND_NEAREST_EVEN": (_U32, 0), "ROUND_TOWARD_ZERO": (_U32, 0xf),      # FP_ROUND values: both groups
  "OVERFLOW_F32": (Ty("f", 32), 0x7f800000), "OVERFLOW_F64": (Ty("f", 64), 0x7ff0000000000000),      # bit patterns (+inf)
  "UNDERFLOW_F32": (Ty("f", 32), 0), "UNDERFLOW_F64": (Ty("f", 64), 0),
  "MAX_FLOAT_F32": (Ty("f", 32), 0x7f7fffff), "MAX_FLOAT_F64": (Ty("f", 64), 0x7fefffffffffffff),
  "WAVE32": (_U1, None), "BYTE1": (Ty("b", 3), 1), "BYTE2": (Ty("b", 3), 2), "BYTE3": (Ty("b", 3), 3), "WORD1": (Ty("b", 2), 1),
}

def state_type(name:str) -> Ty|None:
  """Type of an untyped read of state variable `name` (wide registers read as b32), None if `name` is not state."""
  if name in WIDE: return Ty("b", 32)
  return SCALARS.get(name)

def c_field(name:str, field:str|None=None) -> str:
  """The PcState member for a state variable or a dotted field."""
  return f"{name}_{field}" if field else name
