"""The built-in function library: name -> result-type rule. Backends implement every name listed here (see docs/pcode.md,
"Adding a built-in"). Calls named like an instruction (`v_max_f32`) are not here: `typecheck` inlines that instruction's
pseudocode. Names in EXTERNAL are machine services the emulator provides as `PC_EXT_<name>` hooks."""
import re
from mockgpu.pcode.nodes import Ty
__all__ = ["ALIAS", "FMT_TY", "CONV_RE", "result_type", "EXTERNAL", "FLOAT_SAME", "PREDICATES", "INT_FUNCS", "is_builtin"]

FMT_TY = {"f16": Ty("f", 16), "f32": Ty("f", 32), "f64": Ty("f", 64), "bf16": Ty("bf", 16), "fp8": Ty("fp8", 8), "bf8": Ty("bf8", 8),
          "fp6": Ty("fp6", 6), "bf6": Ty("bf6", 6), "fp4": Ty("fp4", 4), "i32": Ty("i", 32), "u32": Ty("u", 32), "i16": Ty("i", 16),
          "u16": Ty("u", 16), "i8": Ty("i", 8), "u8": Ty("u", 8), "i4": Ty("i", 4), "u4": Ty("u", 4), "snorm": Ty("i", 16), "unorm": Ty("u", 16)}
# src_to_dst[_sr|_SR][_scale]: value conversions (float<->float with rounding, float->int saturating, int->float, int resize)
CONV_RE = re.compile(r"(f16|f32|f64|bf16|fp8|bf8|fp6|bf6|fp4|i32|u32|i16|u16|i8|u8|i4|u4)_to_(f16|f32|f64|bf16|fp8|bf8|fp6|bf6|fp4|i32|u32|i16|u16|u8|"
                     r"snorm|unorm)(_sr|_SR)?(_scale)?")
# instruction-named helpers that have no entry of their own: name -> equivalent conversion built-in
ALIAS = {"v_cvt_i16_f32": "f32_to_i16", "v_cvt_u16_f32": "f32_to_u16"}
FLOAT_SAME = {"abs", "trunc", "floor", "fract", "sqrt", "sin", "cos", "log2", "mantissa", "cvtToQuietNAN", "ldexp", "fma", "pow"}
PREDICATES = {"isNAN", "isSignalNAN", "isQuietNAN", "isEven", "sign", "isDENORM"}
INT_FUNCS = {"two_over_pi_segment": Ty("u", 64), "float32": Ty("f", 32), "exponent": Ty("i", 32), "signext": Ty("i", 64), "countbits": Ty("u", 32), "bitCount": Ty("u", 32), "count_ones": Ty("u", 32),
             "s_ff1_i32_b32": Ty("i", 32), "s_ff1_i32_b64": Ty("i", 32), "reverse_bits": None, "signext_from_bit": None, "MIN": None}
EXTERNAL = {"CalcBufferAddr", "CalcDsAddr", "CalcFlatAddr", "CalcGlobalAddr", "CalcImageAddr", "CalcScalarBufferAddr", "CalcScalarGlobalAddr",
            "CalcScalarScratchAddr", "CalcScratchAddr", "ChannelOffsetX", "ChannelOffsetY", "ChannelOffsetZ", "ChannelOffsetW", "ConvertFromFormat",
            "ConvertToFormat", "LDS", "GS_REGS", "s_nop", "nop", "HwRegWriteMask", "PrefetchScalarData", "PrefetchScalarInst", "InWorkgroup",
            "CheckBarrierComplete", "WaitIdleExceptStoreCnt", "ReallocVgprs", "IsM0", "writeableBitMask", "DECODE_ADDR", "ENCODE_ADDR"}

def is_builtin(name:str) -> bool:
  """True if `name` is a built-in (not a lambda, not an instruction call)."""
  return name in FLOAT_SAME or name in PREDICATES or name in INT_FUNCS or name in EXTERNAL or CONV_RE.fullmatch(name) is not None

def result_type(name:str, args:list[Ty]) -> Ty:
  """Result type of built-in `name` applied to arguments of types `args` (the caller checks arity and kinds)."""
  if (m := CONV_RE.fullmatch(name)): return FMT_TY[m.group(2)]
  if name in PREDICATES: return Ty("u", 1)
  if name in FLOAT_SAME: return args[0] if name != "pow" else (args[0] if args[0].isfloat else args[1])
  if name in EXTERNAL: return Ty("u", 64)
  if INT_FUNCS[name] is not None: return INT_FUNCS[name]
  return args[0] if args[0].kind != "int" else Ty("i", 32)
