"""FIXES: the one table of corrections to AMD's pseudocode. `FIXES[(arch, op)]` is a tuple of `Fix`, applied in order; each
replaces one exact substring of the op's text (as the fixes before it left it) and says what, why and on what authority
(`source`: ISA_TEXT for repairs of the text itself, HW_ISSUE10 for behaviour recorded on hardware). `tables.entries` applies
them for both backends and fails loudly if a substring is no longer there (a new tinygrad changed it)."""
from dataclasses import dataclass
__all__ = ["Fix", "FIXES", "ISA_TEXT", "HW_ISSUE10", "HW_FDIV"]

ISA_TEXT = "ISA text: the published pseudocode is incomplete or inconsistent with its own operand table, comments or dialect"
HW_ISSUE10 = "hardware: instruction results recorded on RDNA3/CDNA GPUs (issue 10)"
HW_FDIV = ("hardware, derived: LLVM's fdiv expansion (V_DIV_SCALE, V_RCP, V_FMA, V_DIV_FMAS, V_DIV_FIXUP) returns the IEEE "
           "quotient on the GPUs (it is HIP's default division); V_DIV_SCALE's scaling must be what V_DIV_FMAS undoes for that")

@dataclass(frozen=True)
class Fix:
  """Replace `old` (an exact substring of the entry's text) by `new`; `reason` says what changes and why, `source` on what
  authority (ISA_TEXT or a hardware record such as HW_ISSUE10)."""
  old: str
  new: str
  reason: str
  source: str

_TRIG_OLD = "result = 64'F((1201'B(2.0 / PI)[1200 : 0] << shift.u32) & 1201'0x1fffffffffffff)"
_TRIG = Fix(_TRIG_OLD, "result = 64'F(two_over_pi_segment(shift.u32))",
            "taken literally, `(X << shift) & (2^53-1)` keeps the low 53 bits of the 1201-bit expansion X of 2/PI; the comment "
            "above it (and the instruction's purpose, Payne-Hanek range reduction) says the 53 bits after `shift` fraction bits "
            "are brought into the whole part: floor(2/PI * 2^(53+shift)) mod 2^53. two_over_pi_segment computes exactly that.", ISA_TEXT)

def _scale_default(t:str) -> Fix:
  cond = "((64'F(S2.f32) == 0.0) || (64'F(S1.f32) == 0.0))" if t == "f32" else "((S2.f64 == 0.0) || (S1.f64 == 0.0))"
  return Fix(f"VCC = 0x0LL;\nif {cond} then", f"VCC = 0x0LL;\nD0.{t} = S0.{t};\nif {cond} then",
             "no branch assigns D0 when no scaling is needed, which would leave the destination's old value; the instruction "
             "returns S0 unchanged then (the division expansion relies on it), so D0 starts as S0", ISA_TEXT)

_MIX = Fix("declare S : 32'B[3];\n", "declare S : 32'B[3];\nS[0] = S0.b32;\nS[1] = S1.b32;\nS[2] = S2.b32;\n",
           "the mixed-precision FMA reads its operands through an array S[i] that is declared but never filled; it stands for "
           "S0, S1, S2 (OPSEL/OPSEL_HI pick an f16 half or the f32 of each), so S[i] is loaded from them first", ISA_TEXT)
_MIX_OPS = {"rdna3": ("V_FMA_MIX_F32", "V_FMA_MIXLO_F16", "V_FMA_MIXHI_F16"), "rdna4": ("V_FMA_MIX_F32", "V_FMA_MIXLO_F16", "V_FMA_MIXHI_F16"),
            "cdna": ("V_MAD_MIX_F32", "V_MAD_MIXLO_F16", "V_MAD_MIXHI_F16")}
_OFF_TABLE = "".join(f"CVT_OFF_TABLE[{i}] = {(i if i < 8 else i - 16) / 16}F;\n" for i in range(16))
_CVT_OFF = Fix("declare CVT_OFF_TABLE : 32'F[16];\n", "declare CVT_OFF_TABLE : 32'F[16];\n" + _OFF_TABLE,
               "the lookup table is declared but its contents are not given; V_CVT_OFF_F32_I4 maps the signed 4-bit value n to "
               "n / 16 (0, 0.0625, ..., 0.4375, -0.5, ..., -0.0625)", ISA_TEXT)
_BITOP3 = {t: Fix(f"D.{t} = tmp.{t}", f"D0.{t} = tmp.{t}", "the result is assigned to `D`, a name the rest of the ISA (and the "
              "instruction's operand table) calls D0, the destination VGPR; taken literally it would be a local that is dropped", ISA_TEXT)
           for t in ("b16", "b32")}
_P2_BODY = "fma(32'F(VGPR[(laneId.u32 & 0xfffffffcU) + 2U][SRC0.u32].f16), S1.f32, S2.f32)"
_P2_RTZ = Fix(f"D0.f32 = {_P2_BODY}", f"D0.f16 = 16'F({_P2_BODY})",
               "V_INTERP_P2_RTZ_F16_F32 carries the f32 text of V_INTERP_P2_F32 although its operand table and name give an f16 "
               "result; like V_INTERP_P2_F16_F32 the f32 FMA is converted to f16 (RTZ: the emulator sets round-toward-zero for it)", ISA_TEXT)
_BVH_STACK_OLD = ("(stack_base, stack_index) = DECODE_ADDR(ADDR, OFFSET1);\nlast_node_ptr = DATA0;\n// First 3 passes: push data onto stack\n"
                  "for i = 0..2 do\nif DATA_VALID(DATA1[i])\nMEM[stack_base + stack_index] = DATA1[i];\nIncrement stack_index\n"
                  "elsif DATA1[i] == last_node_ptr\n// Treat all further data as invalid as well.\nbreak\nendif\nendfor\n"
                  "// Fourth pass: return data or pop\nif DATA_VALID(DATA1[3])\nVGPR_RTN = DATA1[3]\nelse\n"
                  "VGPR_RTN = MEM[stack_base + stack_index];\nMEM[stack_base + stack_index] = INVALID_NODE;\nDecrement stack_index\nendif\n"
                  "ADDR = ENCODE_ADDR(stack_base, stack_index).\nfunction DATA_VALID(data):\nif data == INVALID_NODE\nreturn false\n"
                  "elsif last_node_ptr != INVALID_NODE && data == last_node_ptr\n// Match last_node_ptr\nreturn false\nelse\nreturn true\n"
                  "endif\nendfunction.")
_BVH_SLOT = "MEM[stack_base + (stack_index & stack_mask) * 4U].b32"
_BVH_STACK = Fix(_BVH_STACK_OLD, "\n".join([
  "declare stack_base : 32'U;", "declare stack_index : 32'U;", "declare stack_mask : 32'U;", "declare last_node_ptr : 32'B;",
  "declare INVALID_NODE : 32'B;", "INVALID_NODE = 32'B(0xffffffffU);",
  "DATA_VALID = lambda(data) (\nif data == INVALID_NODE then\nreturn 1'0U\nelsif ((last_node_ptr != INVALID_NODE) && (data == last_node_ptr)) then\n"
  "return 1'0U\nelse\nreturn 1'1U\nendif);",
  "// DECODE_ADDR: a ring of 8 << OFFSET1[5:4] dwords at LDS dword address ADDR[31:18], ring position ADDR[17:0]",
  "stack_mask = (8U << OFFSET1.u32[5 : 4]) - 1U;", "stack_base = ADDR.u32[31 : 18] * 4U;", "stack_index = ADDR.u32[17 : 0];",
  "last_node_ptr = DATA0.b32;",
  "for i in 0 : 2 do\nif DATA_VALID(DATA1[i * 32 + 31 : i * 32]) then", f"{_BVH_SLOT} = DATA1[i * 32 + 31 : i * 32];", "stack_index += 1U",
  "elsif DATA1[i * 32 + 31 : i * 32] == last_node_ptr then\nbreak\nendif\nendfor;",
  "if DATA_VALID(DATA1[127 : 96]) then\nRETURN_DATA[31 : 0] = DATA1[127 : 96]\nelse\nstack_index -= 1U;",
  f"RETURN_DATA[31 : 0] = {_BVH_SLOT};", f"{_BVH_SLOT} = INVALID_NODE\nendif;",
  "// ENCODE_ADDR: the base stays, the ring position is stored",
  "ADDR = 64'U((ADDR.u32[31 : 18] << 18U) | (stack_index & stack_mask))"]),
  "the RDNA3 text is a sketch (tuple assignment, `Increment stack_index`, a `function` defined after its use, INVALID_NODE "
  "and DECODE_ADDR/ENCODE_ADDR left undefined, `DATA1[i]` meaning dword i); rewritten in the dialect of RDNA4's "
  "DS_BVH_STACK_PUSH4_POP1_RTN_B32 (the same operation) with INVALID_NODE = 0xffffffff, the address encoding and ring "
  "size spelled out (prose in the ISA; the model of docs/emu.md \"Ray tracing\"), and the pop reading the last pushed entry: "
  "taken literally, the pop would read the slot after it (push writes at the index, then increments)", ISA_TEXT)
_CONDXCHG_OLD = ("declare OFFSET0 : 8'U;\ndeclare OFFSET1 : 8'U;\ndeclare RETURN_DATA : 32'U[2];\nADDR = S0.u32;\nDATA = S1.u64;\n"
                 "offset = { OFFSET1, OFFSET0 };\nADDR0 = ((ADDR + offset.u32) & 0xfff8U);\nADDR1 = ADDR0 + 4U;\nRETURN_DATA[0] = LDS[ADDR0].u32;\n"
                 "if DATA[31] then\nLDS[ADDR0] = { 1'0, DATA[30 : 0] }\nendif;\nRETURN_DATA[1] = LDS[ADDR1].u32;\nif DATA[63] then\n"
                 "LDS[ADDR1] = { 1'0, DATA[62 : 32] }\nendif")
_CONDXCHG = Fix(_CONDXCHG_OLD,
                "ADDR0 = ((ADDR.u32 + OFFSET.u32) & 0xfff8U);\nADDR1 = ADDR0 + 4U;\nRETURN_DATA[31 : 0] = MEM[ADDR0].u32;\n"
                "if DATA[31] then\nMEM[ADDR0].u32 = { 1'0, DATA[30 : 0] }\nendif;\nRETURN_DATA[63 : 32] = MEM[ADDR1].u32;\nif DATA[63] then\n"
                "MEM[ADDR1].u32 = { 1'0, DATA[62 : 32] }\nendif",
                "the text names the DS operands the way no other DS entry does: the address and data as S0/S1 (which would "
                "overwrite ADDR and DATA, the VGPR address and 64-bit data every DS entry reads), LDS memory as LDS[...] (MEM in "
                "a DS entry is LDS), the two return dwords as a declared 2-element array, and re-declares OFFSET0/OFFSET1 as "
                "locals; in the DS names the same steps are: both dwords at (ADDR + offset) & 0xfff8 and +4 return their old "
                "value, each is replaced by the low 31 bits of its half of DATA when that half's bit 31 is set ({OFFSET1, OFFSET0} is OFFSET)", ISA_TEXT)
_DX9 = {acc: Fix("// DX9 rules, 0.0 * x = 0.0\nD0.f32 = S2.f32", f"// DX9 rules, 0.0 * x = 0.0\nD0.f32 = 0.0F + {acc}.f32",
                 "with a zero multiplicand the product is +0 (even times INF or NaN) and the accumulator is added to it: "
                 + ("the FMAC form has no S2 (its accumulator is D0, as its `fma(S0.f32, S1.f32, D0.f32)` branch says), so "
                    "taken literally it would read an operand the instruction does not have; " if acc == "D0" else "")
                 + "+0 + acc differs from returning acc for acc = -0 (RNE gives +0) and a signaling NaN (quieted), which is why "
                 "LLVM folds llvm.amdgcn.fma.legacy(0, x, c) to fadd(+0, c) rather than c", ISA_TEXT)
        for acc in ("D0", "S2")}
# ---- hardware corrections (issue 10): the published text is well-formed but the GPUs do something else ----
_LANE_VCC = "VOP3SD writes one bit per lane of its carry mask (SDST / VCC); the text assigns the whole mask, which would make the " \
            "last active lane's flag the mask of every lane"
def _scale_hw(t:str) -> tuple[Fix, ...]:
  lane = (Fix("VCC = 0x0LL;", "VCC.u64[laneId] = 1'0U;", _LANE_VCC, HW_ISSUE10), Fix("VCC = 0x1LL", "VCC.u64[laneId] = 1'1U", _LANE_VCC, HW_ISSUE10),
          Fix(f"D0.{t} = NAN.{t}\n", f"D0.{t} = NAN.{t};\nVCC.u64[laneId] = 1'1U\n", "a zero numerator or denominator gives NaN with "
              "the lane's VCC bit set (the text leaves it clear); a denormal S1 with f32 denormals flushed reads as zero", HW_ISSUE10))
  if t == "f32": return lane
  huge = ("elsif ((1.0 / S1.f64 == DENORM.f64) && (S2.f64 / S1.f64 == DENORM.f64)) then\nVCC.u64[laneId] = 1'1U;\n"
          "if S0.f64 == S1.f64 then\n// Only scale the denominator\nD0.f64 = ldexp(S0.f64, ")
  return lane + (Fix("exponent(S2.f64) <= 53 then", "exponent(S2.f64) <= 52 then", "the tiny-numerator case starts at exponent "
                     "52 (the mantissa width, as 23 for f32), not 53", HW_ISSUE10),
                 Fix(huge + "128)", huge + "-128)", "a huge denominator (1/S1 denormal) with a denormal quotient is scaled down by "
                     "2^-128, not up (2^128 * S1 overflows to infinity and 1.0 / 2^1023 would give inf): V_DIV_FMAS then sees a quotient "
                     "below 2 with VCC set and scales it back by 2^-128", HW_FDIV))

def _fmas_hw(t:str) -> Fix:
  k, lit, e, sc = ("f64", "2.0 ** 64", 1023, 128) if t == "f64" else ("f32", "2.0F ** 32", 127, 64)
  fma = f"fma(S0.{k}, S1.{k}, S2.{k})"
  return Fix(f"if VCC.u64[laneId] then\nD0.{k} = {lit} * {fma}\n",
             f"if VCC.u64[laneId] then\nif exponent(S2.{k}) > {e} then\nD0.{k} = ldexp({fma}, {sc})\nelse\nD0.{k} = ldexp({fma}, -{sc})\nendif\n",
             f"with the lane's VCC bit set the fused result is scaled by 2^+{sc} when exp(S2) > {e} (|S2| >= 2: V_DIV_SCALE scaled the "
             f"denominator up) and by 2^-{sc} otherwise (it scaled the numerator up), undoing V_DIV_SCALE's scaling; the text "
             f"always multiplies by 2^{32 if k == 'f32' else 64}", HW_ISSUE10)

def _fixup_hw(t:str) -> Fix:
  k, under, nan, inf = ("f64", -1075, "isNAN(S0.f64)", "-INF : +INF") if t == "f64" else ("f32", -150, "isNAN(64'F(S0.f32))", "-INF.f32 : +INF.f32")
  old = f"elsif exponent(S2.{k}) - exponent(S1.{k}) < {under} then"
  return Fix(old, f"elsif {nan} then\nD0.{k} = sign_out ? {inf}\n{old}", "with S1 and S2 ordinary numbers (no NaN, zero or infinity) "
             "and a NaN quotient S0 (V_DIV_FMAS gave inf - inf: the quotient overflowed) the result is infinity with the sign "
             "sign(S1) ^ sign(S2); the text returns +-|S0|, a NaN", HW_ISSUE10)

_TRIG_F32 = {fn: Fix(f"D0.f32 = {fn}(S0.f32 * 32'F(PI * 2.0))", f"D0.f32 = 32'F({fn}(64'F(S0.f32 - trunc(S0.f32)) * (PI * 2.0)))",
                     "the input is in turns and reduced exactly, fractional part first (S0 - trunc(S0) is exact), then scaled by 2PI: "
                     f"{fn}(132000.0) is {0 if fn == 'sin' else 1}; the text rounds S0 * 2PI to f32 first (sin(132000.0) would be 0.039)",
                     HW_ISSUE10) for fn in ("sin", "cos")}

_ARCHS = ("rdna3", "rdna4", "cdna")
_E64 = {"rdna3": "", "rdna4": "", "cdna": "_E64"}   # CDNA names the VOP3-only division helpers with their encoding suffix
# (entries, fixes) in the order they apply; an entry may get several (V_DIV_SCALE: a text repair, then the hardware's cases)
_TABLE: list[tuple[list[tuple[str, str]], tuple[Fix, ...]]] = [
  ([(a, "VOP3Op_V_TRIG_PREOP_F64") for a in _ARCHS], (_TRIG,)),
  *[([(a, f"VOP3SDOp_V_DIV_SCALE_{t.upper()}") for a in _ARCHS], (_scale_default(t), *_scale_hw(t))) for t in ("f32", "f64")],
  *[([(a, f"VOP3Op_V_DIV_FMAS_{t.upper()}{_E64[a]}") for a in _ARCHS], (_fmas_hw(t),)) for t in ("f32", "f64")],
  *[([(a, f"VOP3Op_V_DIV_FIXUP_{t.upper()}{_E64[a]}") for a in _ARCHS], (_fixup_hw(t),)) for t in ("f32", "f64")],
  *[([(a, f"{e}_V_{fn.upper()}_F32_{enc}") for a in _ARCHS for e, enc in (("VOP1Op", "E32"), ("VOP3Op", "E64")) if a != "cdna" or enc == "E32"],
     (f,)) for fn, f in _TRIG_F32.items()],
  ([(a, f"VOP3POp_{op}") for a, ops in _MIX_OPS.items() for op in ops], (_MIX,)),
  *[([("cdna", f"VOP3Op_V_BITOP3_{t.upper()}")], (f,)) for t, f in _BITOP3.items()],
  ([(a, n) for a in _ARCHS for n in ("VOP1Op_V_CVT_OFF_F32_I4_E32", "VOP3Op_V_CVT_OFF_F32_I4_E64") if a != "cdna" or n.endswith("E32")], (_CVT_OFF,)),
  ([(a, "VINTERPOp_V_INTERP_P2_RTZ_F16_F32") for a in ("rdna3", "rdna4")], (_P2_RTZ,)),
  ([("rdna3", n) for n in ("VOP2Op_V_FMAC_DX9_ZERO_F32_E32", "VOP3Op_V_FMAC_DX9_ZERO_F32_E64")], (_DX9["D0"],)),
  ([(a, "VOP3Op_V_FMA_DX9_ZERO_F32") for a in ("rdna3", "rdna4")], (_DX9["S2"],)),
  ([("rdna3", "DSOp_DS_BVH_STACK_RTN_B32")], (_BVH_STACK,)),
  ([(a, "DSOp_DS_CONDXCHG32_RTN_B64") for a in _ARCHS], (_CONDXCHG,))]
FIXES: dict[tuple[str, str], tuple[Fix, ...]] = {}
for _keys, _fixes in _TABLE:
  for _k in _keys: FIXES[_k] = FIXES.get(_k, ()) + _fixes
