"""FIXES: the one table of corrections to AMD's pseudocode. Each entry replaces one exact substring of one (arch, op)'s text
and says why; `tables.entries` applies them and fails loudly if a substring is no longer there (a new tinygrad changed it)."""
from dataclasses import dataclass
__all__ = ["Fix", "FIXES"]

@dataclass(frozen=True)
class Fix:
  old: str
  new: str
  reason: str

_TRIG_OLD = "result = 64'F((1201'B(2.0 / PI)[1200 : 0] << shift.u32) & 1201'0x1fffffffffffff)"
_TRIG = Fix(_TRIG_OLD, "result = 64'F(two_over_pi_segment(shift.u32))",
            "taken literally, `(X << shift) & (2^53-1)` keeps the low 53 bits of the 1201-bit expansion X of 2/PI; the comment "
            "above it (and the instruction's purpose, Payne-Hanek range reduction) says the 53 bits after `shift` fraction bits "
            "are brought into the whole part: floor(2/PI * 2^(53+shift)) mod 2^53. two_over_pi_segment computes exactly that.")

def _scale_default(t:str) -> Fix:
  cond = "((64'F(S2.f32) == 0.0) || (64'F(S1.f32) == 0.0))" if t == "f32" else "((S2.f64 == 0.0) || (S1.f64 == 0.0))"
  return Fix(f"VCC = 0x0LL;\nif {cond} then", f"VCC = 0x0LL;\nD0.{t} = S0.{t};\nif {cond} then",
             "no branch assigns D0 when no scaling is needed, which would leave the destination's old value; the instruction "
             "returns S0 unchanged then (the division expansion relies on it), so D0 starts as S0")

_MIX = Fix("declare S : 32'B[3];\n", "declare S : 32'B[3];\nS[0] = S0.b32;\nS[1] = S1.b32;\nS[2] = S2.b32;\n",
           "the mixed-precision FMA reads its operands through an array S[i] that is declared but never filled; it stands for "
           "S0, S1, S2 (OPSEL/OPSEL_HI pick an f16 half or the f32 of each), so S[i] is loaded from them first")
_MIX_OPS = {"rdna3": ("V_FMA_MIX_F32", "V_FMA_MIXLO_F16", "V_FMA_MIXHI_F16"), "rdna4": ("V_FMA_MIX_F32", "V_FMA_MIXLO_F16", "V_FMA_MIXHI_F16"),
            "cdna": ("V_MAD_MIX_F32", "V_MAD_MIXLO_F16", "V_MAD_MIXHI_F16")}
_OFF_TABLE = "".join(f"CVT_OFF_TABLE[{i}] = {(i if i < 8 else i - 16) / 16}F;\n" for i in range(16))
_CVT_OFF = Fix("declare CVT_OFF_TABLE : 32'F[16];\n", "declare CVT_OFF_TABLE : 32'F[16];\n" + _OFF_TABLE,
               "the lookup table is declared but its contents are not given; V_CVT_OFF_F32_I4 maps the signed 4-bit value n to "
               "n / 16 (0, 0.0625, ..., 0.4375, -0.5, ..., -0.0625)")
_BITOP3 = {t: Fix(f"D.{t} = tmp.{t}", f"D0.{t} = tmp.{t}", "the result is assigned to `D`, a name the rest of the ISA (and the "
              "instruction's operand table) calls D0, the destination VGPR; taken literally it would be a local that is dropped")
           for t in ("b16", "b32")}
_P2_BODY = "fma(32'F(VGPR[(laneId.u32 & 0xfffffffcU) + 2U][SRC0.u32].f16), S1.f32, S2.f32)"
_P2_RTZ = Fix(f"D0.f32 = {_P2_BODY}", f"D0.f16 = 16'F({_P2_BODY})",
               "V_INTERP_P2_RTZ_F16_F32 carries the f32 text of V_INTERP_P2_F32 although its operand table and name give an f16 "
               "result; like V_INTERP_P2_F16_F32 the f32 FMA is converted to f16 (RTZ: the emulator sets round-toward-zero for it)")
_ARCHS = ("rdna3", "rdna4", "cdna")
FIXES: dict[tuple[str, str], Fix] = {**{(a, "VOP3Op_V_TRIG_PREOP_F64"): _TRIG for a in _ARCHS},
                                     **{(a, f"VOP3SDOp_V_DIV_SCALE_{t.upper()}"): _scale_default(t) for a in _ARCHS for t in ("f32", "f64")},
                                     **{(a, f"VOP3POp_{op}"): _MIX for a, ops in _MIX_OPS.items() for op in ops},
                                     **{("cdna", f"VOP3Op_V_BITOP3_{t.upper()}"): f for t, f in _BITOP3.items()},
                                     **{(a, n): _CVT_OFF for a in _ARCHS for n in ("VOP1Op_V_CVT_OFF_F32_I4_E32", "VOP3Op_V_CVT_OFF_F32_I4_E64")
                                        if a != "cdna" or n.endswith("E32")},
                                     **{(a, "VINTERPOp_V_INTERP_P2_RTZ_F16_F32"): _P2_RTZ for a in ("rdna3", "rdna4")}}
