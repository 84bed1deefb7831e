"""C emitter: typed AST -> one `static inline void pc_<EnumClass>_<MEMBER>(PcState *s)` per entry (see docs/pcode.md).

Values are raw bits: uint64_t up to 64 bits, unsigned __int128 up to 128, PcWideT above (moves only). Every expression is
kept masked to its width; signed values are sign-extended where an operation needs it."""
from __future__ import annotations
import functools, hashlib, pathlib
from fractions import Fraction
from mockgpu.pcode.nodes import (Ty, Expr, Num, Name, Typed, Field, Index, Slice, Cast, Call, Unary, Binary, Ternary, Concat, Stmt, Assign,
                                 If, For, While, Break, Return, ExprStmt, Program, walk)
from mockgpu import cbuild
from mockgpu.pcode import builtins as B
from mockgpu.pcode.softfloat import fmt_of, encode
from mockgpu.pcode.state import WIDE
from mockgpu.pcode.tables import entries, source_hash
from mockgpu.pcode.compile import try_program
from mockgpu.pcode.prose import is_prose
from mockgpu.pcode.typecheck import const_eval
from mockgpu.pcode.errors import PcodeUnsupported, PcodeError
__all__ = ["EMITTER_VERSION", "emit", "emit_op", "metadata", "c_name", "lane_bits"]

EMITTER_VERSION = "2"
_FID = {"f16": "PC_F16", "bf16": "PC_BF16", "f32": "PC_F32", "f64": "PC_F64", "fp8": "PC_FP8", "bf8": "PC_BF8", "fp6": "PC_FP6", "bf6": "PC_BF6",
        "fp4": "PC_FP4"}
# `<>` is "less than or greater than": ordered on floats (false if either is NaN, so V_CMP_NLG is true on NaN), != on integers
_CMP = {"==": 0, "!=": 1, "<": 2, ">": 3, "<=": 4, ">=": 5, "<>": 6}
_FOPS = {"+": "pc_fadd", "-": "pc_fsub", "*": "pc_fmul", "/": "pc_fdiv"}
_F1 = {"trunc": "pc_ftrunc", "floor": "pc_ffloor", "fract": "pc_ffract", "sqrt": "pc_fsqrt", "sin": "pc_fsin", "cos": "pc_fcos", "log2": "pc_flog2",
       "mantissa": "pc_fmant", "cvtToQuietNAN": "pc_fquiet", "abs": "pc_fabs"}
_BITWISE = {"cvtToQuietNAN", "abs"}     # bit operations: no rounding, no denormal flush, so no MODE argument
_PRED = {"isNAN": "pc_isnan", "isSignalNAN": "pc_issnan", "isQuietNAN": "pc_isqnan", "isEven": "pc_fiseven", "sign": "pc_signbit",
         "isDENORM": "pc_fisdenorm"}
MAX_WHILE = 1 << 20
WIDE_MAX = 1024

def L(v) -> str:
  """C name of a pseudocode local (prefixed so that `s`, `in` or C keywords never clash)."""
  return f"l_{v.cname}"

def c_name(name:str) -> str:
  """C function name for entry `name` ('<EnumClass>_<MEMBER>')."""
  return f"pc_{name}"

def fid(t:Ty) -> str: return _FID[fmt_of(t.kind, t.bits).name]
def ctype(t:Ty) -> str: return "uint64_t" if t.bits <= 64 else ("pc_u128" if t.bits <= 128 else "PcWideT")
def isig(t:Ty) -> int: return 1 if t.kind in ("i", "int") else 0

class Emitter:
  def __init__(self, prog:Program, name:str, arch:str):
    self.prog, self.name, self.arch = prog, name, arch
    self.info = prog.info["op"]
    self.uid = 0
    self.hooks: set[str] = set()
    self.split = split_sums(prog)
  def err(self, msg:str, node) -> PcodeUnsupported:
    return PcodeUnsupported(msg, op=self.name, arch=self.arch, line=node.pos[0] if node else None, col=node.pos[1] if node else None)
  def tmp(self) -> str:
    self.uid += 1
    return f"_t{self.uid}"

  # ---- conversions between value types
  def resize(self, c:str, src:Ty, dst:Ty) -> str:
    """Bits of a value of type `src` as type `dst`: extension by the source's signedness, then truncation."""
    if src.kind == "int": src = Ty("i", 64)
    if src.bits == dst.bits: return c
    if dst.bits > 128 or src.bits > 128:
      if src.bits > 128 and dst.bits > 128: return c
      if src.bits > 128: return f"((pc_u128)pc_rd_bits(({c}).d, 0, {min(dst.bits, 128)}))" if dst.bits > 64 else f"((uint64_t)pc_rd_bits(({c}).d, 0, {dst.bits}))"
      return f"pc_wide_from({self.resize(c, src, Ty('u', 128))})"
    if src.bits <= 64 and dst.bits <= 64:
      if dst.bits > src.bits and isig(src): return f"pc_ext({c}, {src.bits}, 1, {dst.bits})"
      return f"(({c}) & PC_MASK({dst.bits}))" if dst.bits < src.bits else c
    if dst.bits <= 64: return f"((uint64_t)({c}) & PC_MASK({dst.bits}))"
    if src.bits <= 64: return f"pc_ext128((pc_u128)({c}), {src.bits}, {isig(src)}, {dst.bits})"
    return f"pc_ext128({c}, {src.bits}, {isig(src)}, {dst.bits})"

  def convert(self, c:str, src:Ty, dst:Ty, mode:str="value") -> str:
    """Value conversion (float<->float, int<->float) or bit resize, as decided by the type checker."""
    if src == dst: return c
    if mode == "value" and src.isfloat and dst.isfloat: return f"pc_cvt({c}, {fid(src)}, {fid(dst)}, s->MODE)"
    if mode == "value" and dst.isfloat and src.kind in ("u", "i", "int", "b"):
      return f"pc_i2f(pc_sext({c}, {64 if src.kind == 'int' else src.bits}), {fid(dst)}, s->MODE)" if isig(src) else f"pc_u2f({c}, {fid(dst)}, s->MODE)"
    if mode == "value" and src.isfloat and dst.kind in ("u", "i"): return f"pc_f2i({c}, {fid(src)}, {dst.bits}, {isig(dst)})"
    return self.resize(c, src, dst)

  def conv_to(self, e:Expr, dst:Ty) -> str:
    """Operand `e` converted to the operation type `dst` (literals are encoded directly)."""
    if isinstance(e, Num) or (isinstance(e, Name) and hasattr(e, "const") and e.const is not None and isinstance(e.const, float)):
      v = e.val if isinstance(e, Num) else e.const
      if dst.isfloat and (isinstance(v, float) or not e.ty.isfloat): return self.fconst(v, dst)
      if not dst.isfloat and isinstance(v, int) and not e.ty.isfloat: return self.iconst(v, dst)
    return self.convert(self.ex(e), e.ty, dst)

  def fconst(self, v, t:Ty) -> str:
    f = fmt_of(t.kind, t.bits)
    b = encode(v if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))) else Fraction(v), f)
    return f"0x{b:x}ULL"
  def iconst(self, v:int, t:Ty) -> str:
    if t.bits > 64: return f"((pc_u128)0x{v & ((1 << 64) - 1):x}ULL | ((pc_u128)0x{(v >> 64) & ((1 << 64) - 1):x}ULL << 64))" if t.bits <= 128 else self.err("wide literal", None)
    return f"0x{v & ((1 << t.bits) - 1):x}ULL"

  # ---- storage access
  def var_c(self, v) -> str:
    return f"s->{v.name}" if v.kind == "state" else L(v)
  def storage_read(self, x:Expr, lo:str, n:int) -> str:
    """Read `n` bits at bit `lo` of the storage named by `x` (a variable, a typed variable, a VGPR element, an array element)."""
    if isinstance(x, Typed) and isinstance(x.x, Name): x = x.x
    if isinstance(x, Name) and hasattr(x, "var"):
      v = x.var
      if v.kind == "state" and v.name in WIDE:
        if n > 128: return f"pc_rd_wide(s->{v.name}.d, {lo}, {n})"
        if lo.isdigit() and n <= 64 and int(lo) // 64 == (int(lo) + n - 1) // 64:     # inside one 64-bit word: a shift and a mask
          w, sh = divmod(int(lo), 64)
          if n == 32 and sh % 32 == 0: return f"((uint64_t)s->{v.name}.d[{int(lo) // 32}])"
          return f"((s->{v.name}.q[{w}]{f' >> {sh}' if sh else ''}){'' if n == 64 else f' & PC_MASK({n})'})"
        if n == 1: return f"pc_getbit(s->{v.name}.q, {lo})"
        return f"((uint64_t)pc_rd_bits(s->{v.name}.d, {lo}, {n}))" if n <= 64 else f"pc_rd_bits(s->{v.name}.d, {lo}, {n})"
      base, bits = self.var_c(v), v.ty.bits
      if bits > 128: return f"pc_rd_wide({base}.d, {lo}, {n})" if n > 128 else f"(({ctype(Ty('u', n))})pc_rd_bits({base}.d, {lo}, {n}))"
      if bits > 64: return f"((pc_u128)pc_shr128({base}, {lo}) & PC_MASK128({n}))" if n > 64 else f"((uint64_t)pc_shr128({base}, {lo}) & PC_MASK({n}))"
      return f"(pc_shr({base} & PC_MASK({bits}), {lo}) & PC_MASK({n}))"
    if isinstance(x, Field): return f"(pc_shr(s->{x.sname}, ({lo}) + {x.slo}) & PC_MASK({min(n, x.ty.bits)}))"
    c = self.ex(x)
    if x.ty.bits > 128: return f"pc_rd_wide(({c}).d, {lo}, {n})" if n > 128 else f"(({ctype(Ty('u', n))})pc_rd_bits(({c}).d, {lo}, {n}))"
    if x.ty.bits > 64: return f"((pc_u128)pc_shr128({c}, {lo}) & PC_MASK128({n}))" if n > 64 else f"((uint64_t)pc_shr128({c}, {lo}) & PC_MASK({n}))"
    return f"(pc_shr({c}, {lo}) & PC_MASK({n}))"

  def storage_write(self, x:Expr, lo:str, n:int, val:str) -> list[str]:
    """Statements that write `n` bits of `val` at bit `lo` of the storage `x`."""
    if isinstance(x, Typed) and isinstance(x.x, Name): x = x.x
    if isinstance(x, Name):
      v = x.var
      if v.kind == "state" and v.name in WIDE:
        if n > 128: return [f"pc_wr_wide(s->{v.name}.d, {lo}, {n}, {val});"]
        if lo.isdigit() and ((n == 32 and int(lo) % 32 == 0) or (n == 64 and int(lo) % 64 == 0)):
          return [f"s->{v.name}.{'d' if n == 32 else 'q'}[{int(lo) // n}] = {val};"]
        if n == 1: return [f"pc_setbit(s->{v.name}.q, {lo}, {val});"]
        return [f"pc_wr_bits(s->{v.name}.d, {lo}, {n}, {val});"]
      base, bits = self.var_c(v), v.ty.bits
      if bits > 128: return [f"pc_wr_wide({base}.d, {lo}, {n}, {val});" if n > 128 else f"pc_wr_bits({base}.d, {lo}, {n}, {val});"]
      if bits > 64:
        t = self.tmp()
        return [f"{{ uint64_t {t} = {lo}; if ({t} < 128) {base} = ({base} & ~(PC_MASK128({n}) << {t})) | (((pc_u128)({val}) & PC_MASK128({n})) << {t}); }}"]
      t = self.tmp()
      return [f"{{ uint64_t {t} = {lo}; if ({t} < 64) {base} = (({base} & ~(PC_MASK({n}) << {t})) | ((((uint64_t){val}) & PC_MASK({n})) << {t})) & PC_MASK({bits}); }}"]
    if isinstance(x, Field): return self.field_write(x, f"({lo})", n, val)
    if isinstance(x, Index) and x.kind in ("vgpr", "array"):
      t, o = self.tmp(), self.ex(x)
      return [f"{{ uint64_t {t} = {o}; {{ uint64_t _lo = {lo}; if (_lo < 64) {t} = ({t} & ~(PC_MASK({n}) << _lo)) | ((((uint64_t){val}) & PC_MASK({n})) << _lo); }}",
              *self.store(x, t), "}"]
    raise self.err(f"cannot write part of {type(x).__name__}", x)

  # ---- expressions
  def ex(self, e:Expr) -> str:
    return getattr(self, "x_" + type(e).__name__)(e)

  def x_Num(self, e:Num) -> str:
    if e.ty.isfloat: return self.fconst(e.val, e.ty)
    if isinstance(e.val, float): raise self.err("float literal in an integer context", e)
    return self.iconst(e.val, e.ty if e.ty.kind != "int" else Ty("i", 64))

  def x_Name(self, e:Name) -> str:
    if hasattr(e, "const") and e.name != "WAVE32":
      if e.ty.isfloat: return self.fconst(e.const, e.ty) if isinstance(e.const, float) else f"0x{e.const:x}ULL"
      return self.iconst(e.const, e.ty)
    if e.name == "WAVE32": return "((uint64_t)!(s->WAVE64 & 1))"
    v = e.var
    if v.kind == "state":
      if v.name in WIDE: return self.storage_read(e, "0", e.ty.bits) if e.ty.bits != 32 else "(uint64_t)s->" + v.name + ".d[0]"
      return f"(s->{v.name} & PC_MASK({v.ty.bits}))"
    if e.ty != v.ty: return self.resize(L(v), v.ty, e.ty)
    return L(v)

  def x_Typed(self, e:Typed) -> str:
    x = e.x
    if getattr(x, "var", None) in self.split: return f"((uint64_t){L(x.var)}_lo)"   # split_sums: `tmp.u32`
    if getattr(x, "kind", None) in ("mem", "vgpr", "sgpr"): return self.ex(x)
    if isinstance(x, Name) and hasattr(x, "var"):
      v = x.var
      if v.kind == "state" and v.name in WIDE: return self.storage_read(x, "0", e.to.bits)
      src = v.ty
      return self.resize(self.var_c(v) if v.kind != "state" else f"(s->{v.name} & PC_MASK({src.bits}))", src, e.to)
    return self.resize(self.ex(x), x.ty, e.to)

  def x_Field(self, e:Field) -> str: return f"((s->{e.sname} >> {e.slo}) & PC_MASK({e.ty.bits}))"
  def field_write(self, x:Field, lo:str, n:int, val:str) -> list[str]:
    """Write `n` bits of `val` at bit `lo` of state field `x` (a PcState member, or a view of MODE bits)."""
    sh = f"({lo} + {x.slo})" if x.slo else lo
    return [f"s->{x.sname} = (s->{x.sname} & ~(PC_MASK({n}) << {sh})) | ((((uint64_t){val}) & PC_MASK({n})) << {sh});"]

  def x_Index(self, e:Index) -> str:
    if e.kind == "mem": return f"((uint64_t)PC_MEM_RD(s, {self.ex(e.idx)}, {e.nbits // 8}))"
    if e.kind == "vgpr":
      lane, reg = self.ex(e.x.idx), self.ex(e.idx)
      if e.nbits <= 32: return f"((uint64_t)PC_VGPR_RD(s, {lane}, {reg}) & PC_MASK({e.nbits}))"
      return f"((uint64_t)PC_VGPR_RD(s, {lane}, {reg}) | ((uint64_t)PC_VGPR_RD(s, {lane}, ({reg}) + 1) << 32))"
    if e.kind == "sgpr":
      reg = self.ex(e.idx)
      if e.nbits <= 32: return f"((uint64_t)PC_SGPR_RD(s, {reg}) & PC_MASK({e.nbits}))"
      return f"((uint64_t)PC_SGPR_RD(s, {reg}) | ((uint64_t)PC_SGPR_RD(s, ({reg}) + 1) << 32))"
    if e.kind == "array":
      v = e.x.var
      return f"{L(v)}[({self.ex(e.idx)}) % {v.count}]"
    return self.storage_read(e.x, self.lo(e.idx), 1)

  def lo(self, e:Expr) -> str:
    """A bit position: a decimal literal when constant (enables the word-access fast paths), else an expression."""
    c = const_eval(e)
    return str(c) if c is not None and 0 <= c < 1 << 20 else self.ex(e)

  def x_Slice(self, e:Slice) -> str:
    r = self.storage_read(e.x, self.lo(e.lo), e.width)
    if e.rev:
      if e.width > 64: raise self.err("reversed slice wider than 64 bits", e)
      return f"pc_rev({r}, {e.width})"
    return r

  def x_Cast(self, e:Cast) -> str:
    if e.to.bits > 128 and e.x.ty.isfloat: raise self.err(f"{e.to.bits}-bit fixed-point expansion of a float is not supported", e)
    if isinstance(e.x, Num) and e.mode == "value" and e.to.isfloat: return self.fconst(e.x.val, e.to)
    if isinstance(e.x, Binary) and getattr(e.x, "lit", False) and e.to.isfloat: return self.fconst(self.fold(e.x), e.to)
    return self.convert(self.ex(e.x), e.x.ty, e.to, e.mode if e.mode != "resize" else "bits")

  def fold(self, e:Expr) -> float:
    if isinstance(e, Num): return e.val
    if isinstance(e, Name): return e.const
    if isinstance(e, Unary) and e.op == "-": return -self.fold(e.x)
    if isinstance(e, Binary): return {"+": float.__add__, "-": float.__sub__, "*": float.__mul__, "/": float.__truediv__}[e.op](float(self.fold(e.a)), float(self.fold(e.b)))
    raise self.err("not a constant", e)

  def x_Unary(self, e:Unary) -> str:
    if e.op == "!": return f"((uint64_t)!({self.ex(e.x)}))"
    t = e.ty if e.ty.kind != "int" else Ty("i", 64)
    x = self.conv_to(e.x, t)
    if t.isfloat: return f"pc_fneg({x}, {fid(t)})"
    if t.bits > 64: return f"((~({x})) & PC_MASK128({t.bits}))" if e.op == "~" else f"((-({x})) & PC_MASK128({t.bits}))"
    return f"((~({x})) & PC_MASK({t.bits}))" if e.op == "~" else f"((0ULL - ({x})) & PC_MASK({t.bits}))"

  def x_Binary(self, e:Binary) -> str:
    op = e.op
    if getattr(e.a, "var", None) in self.split: return f"((uint64_t)({L(e.a.var)}_hi != 0))"   # split_sums: `tmp >= 0x100000000ULL`
    if op in ("&&", "||"): return f"((uint64_t)(({self.ex(e.a)}) != 0 {op} ({self.ex(e.b)}) != 0))"
    if op in ("<<", ">>"):
      t = e.ty if e.ty.kind != "int" else Ty("i", 64)
      a, b = self.conv_to(e.a, t), self.ex(e.b)
      if e.b.ty.bits > 64: b = f"(uint64_t)({b})"
      if isig(e.b.ty): b = f"(pc_sext({b}, {e.b.ty.bits if e.b.ty.kind != 'int' else 64}) < 0 ? 1000 : (uint64_t)({b}))"
      if t.bits > 64: return f"pc_shl128({a}, {b}, {t.bits})" if op == "<<" else f"pc_shr128({a}, {b})"
      if op == "<<": return f"pc_shl({a}, {b}, {t.bits})"
      return f"pc_sar({a}, {b}, {t.bits})" if isig(t) else f"pc_shr({a}, {b})"
    t = e.opty if e.opty.kind != "int" else Ty("i", 64)
    a, b = self.conv_to(e.a, t), self.conv_to(e.b, t)
    if t.isfloat:
      if op in _CMP: return f"((uint64_t)pc_fcmp({a}, {b}, {fid(t)}, {_CMP[op]}, s->MODE))"
      if op not in _FOPS: raise self.err(f"operator {op} on floats", e)
      return f"{_FOPS[op]}({a}, {b}, {fid(t)}, s->MODE)"
    if t.bits > 128: raise self.err("arithmetic on values wider than 128 bits", e)
    if op in _CMP:
      if op == "<>": op = "!="
      if isig(t): return f"((uint64_t)(pc_sext({a}, {t.bits}) {op} pc_sext({b}, {t.bits})))" if t.bits <= 64 else f"((uint64_t)((__int128)({a}) {op} (__int128)({b})))"
      return f"((uint64_t)(({a}) {op} ({b})))"
    m = f"PC_MASK({t.bits})" if t.bits <= 64 else f"PC_MASK128({t.bits})"
    if op in ("/", "%"):
      if t.bits > 64: raise self.err("128-bit division", e)
      if isig(t): return f"({'pc_sdiv' if op == '/' else 'pc_smod'}(pc_sext({a}, {t.bits}), pc_sext({b}, {t.bits})) & {m})"
      return f"{'pc_udiv' if op == '/' else 'pc_umod'}({a}, {b})"
    return f"((({a}) {op} ({b})) & {m})"

  def x_Ternary(self, e:Ternary) -> str:
    return f"(({self.ex(e.c)}) ? ({self.conv_to(e.a, e.ty)}) : ({self.conv_to(e.b, e.ty)}))"

  def x_Concat(self, e:Concat) -> str:
    if e.ty.bits > 128:
      t = self.tmp()
      parts, off = [], e.ty.bits
      for p in e.parts:
        off -= p.ty.bits
        parts.append(f"pc_wr_wide({t}.d, {off}, {p.ty.bits}, {self.resize(self.ex(p), p.ty, Ty('b', WIDE_MAX))});" if p.ty.bits > 128 else
                     f"pc_wr_bits({t}.d, {off}, {p.ty.bits}, {self.ex(p)});")
      return f"({{ PcWideT {t}; memset(&{t}, 0, sizeof {t}); {' '.join(parts)} {t}; }})"
    cast = "uint64_t" if e.ty.bits <= 64 else "pc_u128"
    out, off = [], e.ty.bits
    for p in e.parts:
      off -= p.ty.bits
      out.append(f"(({cast})({self.resize(self.ex(p), p.ty, Ty('u', p.ty.bits))}) << {off})")
    return "(" + " | ".join(out) + ")"

  def x_Call(self, e:Call) -> str:
    if getattr(e, "inline", None): return self.inline(e)
    n, args = e.name, e.args
    if n in B.EXTERNAL:
      self.hooks.add(n)
      return f"((uint64_t)PC_EXT_{n}(s{''.join(', ' + self.ex(a) for a in args)}))"
    if (m := B.CONV_RE.fullmatch(n)):
      src, dst, sr, scale = e.src, e.ty, m.group(3), m.group(4)
      x = self.convert(self.ex(args[0]), args[0].ty, src, "bits" if not (args[0].ty.isfloat and src.isfloat) else "value")
      if sr: return f"pc_sr_to({x}, {fid(src)}, {self.ex(args[1])}, {self.ex(args[2]) if scale else '127'}, {fid(dst)})"
      if scale:
        sc = self.ex(args[1])
        if src.isfloat and m.group(1) in ("f32", "f16", "bf16"): return f"pc_scale_to({x}, {fid(src)}, {sc}, {fid(dst)})"
        return f"pc_scale_from({x}, {fid(src)}, {sc}, {fid(dst)})"
      if src.isfloat and dst.isfloat: return f"pc_cvt({x}, {fid(src)}, {fid(dst)}, s->MODE)"
      if src.isfloat and m.group(2) in ("snorm", "unorm"): return f"pc_f2norm({x}, {fid(src)}, {1 if m.group(2) == 'snorm' else 0})"
      if src.isfloat: return f"pc_f2i({x}, {fid(src)}, {dst.bits}, {isig(dst)})"
      if dst.isfloat: return f"pc_i2f(pc_sext({x}, {src.bits}), {fid(dst)}, s->MODE)" if isig(src) else f"pc_u2f({x}, {fid(dst)}, s->MODE)"
      if dst.bits < src.bits: return f"pc_isat({x}, {src.bits}, {isig(src)}, {dst.bits}, {isig(dst)})"
      return self.resize(x, src, dst)
    if n in B.FLOAT_SAME or n in _PRED or n == "exponent":
      ft = e.fty
      a = [self.conv_to(x, ft) for x in args[:1]]
      if n in _F1: return f"{_F1[n]}({a[0]}, {fid(ft)}{'' if n in _BITWISE else ', s->MODE'})"
      if n in _PRED: return f"((uint64_t){_PRED[n]}({a[0]}, {fid(ft)}))"
      if n == "exponent": return f"pc_fexpfield({a[0]}, {fid(ft)})"
      if n == "fma": return f"pc_ffma({a[0]}, {self.conv_to(args[1], ft)}, {self.conv_to(args[2], ft)}, {fid(ft)}, s->MODE)"
      if n == "ldexp": return f"pc_fldexp({a[0]}, pc_sext({self.ex(args[1])}, {args[1].ty.bits if args[1].ty.kind != 'int' else 64}), {fid(ft)}, s->MODE)"
      if n == "pow": return f"pc_fexp2({self.conv_to(args[1], ft)}, {fid(ft)}, s->MODE)"
    if n in ("countbits", "bitCount", "count_ones"): return f"pc_popcount({self.ex(args[0])})"
    if n == "s_ff1_i32_b32" or n == "s_ff1_i32_b64": return f"(pc_ff1({self.ex(args[0])}) & 0xffffffffULL)"
    if n == "reverse_bits": return f"pc_rev({self.ex(args[0])}, {e.ty.bits})"
    if n == "signext": return f"(uint64_t)pc_sext({self.ex(args[0])}, {args[0].ty.bits})"
    if n == "signext_from_bit":
      t = e.ty
      return f"({{ uint64_t _n = {self.ex(args[1])}; _n == 0 ? 0 : pc_ext({self.ex(args[0])} & PC_MASK(_n > 64 ? 64 : _n), _n > 64 ? 64 : (int)_n, 1, {t.bits}); }})"
    if n == "MIN":
      t = e.ty
      a, b = self.conv_to(args[0], t), self.conv_to(args[1], t)
      return f"(({a}) < ({b}) ? ({a}) : ({b}))"
    if n == "two_over_pi_segment": return f"pc_two_over_pi_segment({self.ex(args[0])})"
    if n == "float32": return f"pc_float32({self.ex(args[0])}, {self.ex(args[1])}, {self.ex(args[2])})"
    raise self.err(f"built-in {n} has no C implementation", e)

  def inline(self, e:Call) -> str:
    lbl = f"_ret{self.tmp()}"
    parts = [f"{L(p)} = {self.resize(self.ex(a), a.ty, p.ty)};" for p, a in zip(e.params, e.args)]
    saved, self.ret_label = getattr(self, "ret_label", None), lbl
    body = self.block(e.body, 0)
    self.ret_label = saved
    res = L(e.ret) if e.inline == "lambda" else self.resize(L(e.ret), e.ret.ty, e.ty)
    return f"({{ {' '.join(parts)} {' '.join(body)} {lbl}: ; {res}; }})"

  # ---- statements
  def store(self, t:Expr, val:str) -> list[str]:
    """Statements storing `val` (already of type t.ty) into target `t`."""
    if isinstance(t, Name):
      v = t.var
      if v.kind == "state":
        if v.name in WIDE: return self.storage_write(t, "0", t.ty.bits, val)
        return [f"s->{v.name} = ({val}) & PC_MASK({v.ty.bits});"]
      return [f"{L(v)} = {val};"]
    if isinstance(t, Field): return self.field_write(t, "0", t.ty.bits, val)
    if isinstance(t, Typed):
      x = t.x
      if getattr(x, "kind", None) == "mem": return [f"PC_MEM_WR(s, {self.ex(x.idx)}, {x.nbits // 8}, {val});"]
      if getattr(x, "kind", None) in ("vgpr", "sgpr"):
        return self.store_reg(x, val, t.to.bits)
      if isinstance(x, (Slice, Index)): return self.store(x, self.resize(val, t.ty, x.ty))
      return self.storage_write(x, "0", t.to.bits, val)
    if isinstance(t, Index):
      if t.kind == "mem": return [f"PC_MEM_WR(s, {self.ex(t.idx)}, {t.nbits // 8}, {val});"]
      if t.kind in ("vgpr", "sgpr"): return self.store_reg(t, val, t.nbits)
      if t.kind == "array":
        v = t.x.var
        return [f"{L(v)}[({self.ex(t.idx)}) % {v.count}] = {val};"]
      return self.storage_write(t.x, self.lo(t.idx), 1, val)
    if isinstance(t, Slice):
      if t.rev: val = f"pc_rev({val}, {t.width})"
      return self.storage_write(t.x, self.lo(t.lo), t.width, val)
    if isinstance(t, Concat):
      tv, out, off = self.tmp(), [], t.ty.bits
      out.append(f"{{ {ctype(t.ty)} {tv} = {val};")
      for p in t.parts:
        off -= p.ty.bits
        part = (f"(uint64_t)pc_rd_bits({tv}.d, {off}, {p.ty.bits})" if t.ty.bits > 128 else
                f"(({ctype(p.ty)})({tv} >> {off}) & {'PC_MASK' if p.ty.bits <= 64 else 'PC_MASK128'}({p.ty.bits}))")
        out += self.store(p, part)
      return out + ["}"]
    raise self.err(f"cannot assign to {type(t).__name__}", t)

  def store_reg(self, x:Index, val:str, nbits:int) -> list[str]:
    if x.kind == "vgpr":
      lane, reg = self.ex(x.x.idx), self.ex(x.idx)
      if nbits <= 32: return [f"PC_VGPR_WR(s, {lane}, {reg}, (uint32_t)({val}));"]
      t = self.tmp()
      return [f"{{ uint64_t {t} = {val}; PC_VGPR_WR(s, {lane}, {reg}, (uint32_t){t}); PC_VGPR_WR(s, {lane}, ({reg}) + 1, (uint32_t)({t} >> 32)); }}"]
    reg = self.ex(x.idx)
    if nbits <= 32: return [f"PC_SGPR_WR(s, {reg}, (uint32_t)({val}));"]
    t = self.tmp()
    return [f"{{ uint64_t {t} = {val}; PC_SGPR_WR(s, {reg}, (uint32_t){t}); PC_SGPR_WR(s, ({reg}) + 1, (uint32_t)({t} >> 32)); }}"]

  def assign_value(self, s:Assign) -> str:
    src, dst = s.rhs.ty, s.lhs.ty
    if src.kind == "int": src = Ty("i", 64)
    if isinstance(s.rhs, Num) or (isinstance(s.rhs, Unary) and isinstance(s.rhs.x, Num)): return self.conv_to(s.rhs, dst) if isinstance(s.rhs, Num) else self.convert(self.ex(s.rhs), src, dst)
    if src.isfloat and dst.isfloat: return self.convert(self.ex(s.rhs), src, dst, "value")
    return self.resize(self.ex(s.rhs), src, dst)

  def block(self, body:list[Stmt], ind:int) -> list[str]:
    out = []
    for s in body: out += self.stmt(s, ind)
    return out

  def stmt(self, s:Stmt, ind:int) -> list[str]:
    p = "  " * ind
    if isinstance(s, Assign) and getattr(s.lhs, "var", None) in self.split:   # split_sums: the halves, term by term, carries counted
      v, (t0, *ts) = L(s.lhs.var), _terms(s.rhs)
      return [p + f"{v}_lo = (uint32_t)({self.ex(t0)}); {v}_hi = 0;",
              *(p + f"{{ uint32_t _n = {v}_lo + (uint32_t)({self.ex(t)}); {v}_hi += _n < {v}_lo; {v}_lo = _n; }}" for t in ts)]
    if isinstance(s, Assign): return [p + x for x in self.store(s.lhs, self.assign_value(s))]
    if isinstance(s, If):
      out = []
      for i, (c, b) in enumerate(s.arms):
        out.append(p + ("if" if i == 0 else "} else if") + f" ({self.ex(c)}) {{")
        out += self.block(b, ind + 1)
      if s.orelse is not None:
        out.append(p + "} else {")
        out += self.block(s.orelse, ind + 1)
      return out + [p + "}"]
    if isinstance(s, For):
      it = self.tmp()
      lo, hi = f"pc_sext({self.ex(s.lo)}, {self._sbits(s.lo.ty)})", f"pc_sext({self.ex(s.hi)}, {self._sbits(s.hi.ty)})"
      return [p + f"for (int64_t {it} = {lo}; {it} <= {hi}; {it}++) {{", p + f"  {L(s.v)} = (uint64_t){it} & PC_MASK({s.v.ty.bits});",
              *self.block(s.body, ind + 1), p + "}"]
    if isinstance(s, While):
      it = self.tmp()
      return [p + f"for (uint64_t {it} = 0; ({self.ex(s.cond)}); {it}++) {{",
              p + f"  if ({it} >= {MAX_WHILE}ULL) {{ s->fault = 3; s->fault_msg = \"while loop did not terminate\"; break; }}",
              *self.block(s.body, ind + 1), p + "}"]
    if isinstance(s, Break): return [p + "break;"]
    if isinstance(s, Return): return [p + f"{{ {L(s.var)} = {self.convert(self.ex(s.x), s.x.ty if s.x.ty.kind != 'int' else Ty('i', 64), s.var.ty)}; goto {self.ret_label}; }}"]
    if isinstance(s, ExprStmt): return [p + f"(void)({self.ex(s.x)});"]
    raise self.err(f"statement {type(s).__name__}", s)

  def _sbits(self, t:Ty) -> int: return 64 if t.kind == "int" else t.bits

  def function(self) -> str:
    body = self.block(self.prog.body, 1)
    decls = []
    for v in self.info.locals.values():
      if v in self.split:
        decls.append(f"  uint32_t {L(v)}_lo = 0, {L(v)}_hi = 0;")
        continue
      ct = ctype(v.ty)
      decls.append(f"  {ct} {L(v)}[{v.count}]; memset({L(v)}, 0, sizeof {L(v)});" if v.count is not None else
                   (f"  {ct} {L(v)}; memset(&{L(v)}, 0, sizeof {L(v)});" if ct == "PcWideT" else f"  {ct} {L(v)} = 0;"))
    return "\n".join([f"static inline void {c_name(self.name)}(PcState *s) {{", *decls, *body, "}"])

def emit_op(arch:str, name:str) -> tuple[str, set[str]]:
  """C source of one entry and the PC_EXT_ hooks it uses.

  Args:
    arch: 'rdna3', 'rdna4' or 'cdna'.
    name: entry name ('VOP2Op_V_ADD_F32_E32').
  Returns:
    (the function's C text, set of hook names it calls as PC_EXT_<name>).
  Raises:
    PcodeError: the entry does not parse/type-check (prose entries included) or uses something the C backend lacks.
  """
  prog, err = try_program(arch, name)
  if err is not None: raise err
  em = Emitter(prog, name, arch)
  return em.function(), em.hooks

@functools.cache
def _emit_all(arch:str) -> tuple[dict[str, str], dict[str, set], dict[str, PcodeError]]:
  funcs, hooks, errs = {}, {}, {}
  for name in entries(arch):
    if is_prose(arch, name): continue
    try: funcs[name], hooks[name] = emit_op(arch, name)
    except PcodeError as ex: errs[name] = ex
  return funcs, hooks, errs

def emit(arch:str, ops:list[str]|None=None) -> str:
  """C source for `arch`: all compilable entries, or only `ops` (entry names). Deterministic; starts with a provenance
  comment carrying a hash of the pseudocode, the runtime headers and EMITTER_VERSION. Include after defining the macros.

  Args:
    arch: 'rdna3', 'rdna4' or 'cdna'.
    ops: entry names ('VOP2Op_V_ADD_F32_E32'); None for every entry the C backend supports.
  Returns:
    C source text (it #includes "pcode_rt.h"; compile with -I <directory of this module>).
  Raises:
    PcodeError: an entry in `ops` is prose or cannot be compiled.
  """
  funcs, hooks, errs = _emit_all(arch)
  names = list(funcs) if ops is None else list(ops)
  for n in names:
    if n not in funcs: raise errs.get(n) or PcodeUnsupported(f"no such compilable entry (prose: {is_prose(arch, n)})", op=n, arch=arch)
  used = sorted(set().union(*[hooks[n] for n in names])) if names else []
  out = [f"/* generated by mockgpu.pcode.cemit v{EMITTER_VERSION} for {arch}; key {cache_key(arch)} */", '#include "pcode_rt.h"']
  out += [f"#ifndef PC_EXT_{h}\n#define PC_EXT_{h}(s, ...) pc_ext_missing((s), \"{h}\")\n#endif" for h in used]
  out += [funcs[n] for n in names]
  return "\n".join(out) + "\n"

@functools.cache
def cache_key(arch:str) -> str:
  """sha256 (16 hex) over the arch's corrected pseudocode, EMITTER_VERSION, pcode's C headers and every mockgpu module this
  emitter imports (cbuild.module_files)."""
  h = hashlib.sha256(f"{EMITTER_VERSION}\0{source_hash(arch)}\0".encode())
  d = pathlib.Path(__file__).parent
  for f in [*sorted(d.glob("*.h")), *cbuild.module_files([__name__])]: h.update(f.read_bytes())
  return h.hexdigest()[:16]

def _terms(e:Expr) -> list[Expr]:   # the operands of a tree of 64-bit unsigned additions
  if isinstance(e, Binary) and e.op == "+" and e.ty == Ty("u", 64) and e.opty == Ty("u", 64): return _terms(e.a) + _terms(e.b)
  return [e]

def _below_2_32(e:Expr) -> bool:   # an unsigned 64-bit value below 2^32 by its type: a zero-extended value of at most 32 bits
  return isinstance(e, (Cast, Typed)) and e.ty == Ty("u", 64) and e.x.ty is not None and e.x.ty.kind in ("u", "b") and e.x.ty.bits <= 32

def split_sums(prog:Program) -> set:
  """The locals the C holds as two 32-bit halves, `<name>_lo` and `<name>_hi`: assigned once, at the top level before any use,
  a sum of two or three unsigned values below 2^32 (the carry ops' `tmp = 64'U(S0.u32) + 64'U(S1.u32) + VCC.u64[laneId].u64`),
  and read only as `tmp.u32` and in `tmp >= 0x100000000ULL`. The same values: the low half, and whether the sum carried out
  of it. As one 64-bit value gcc vectorised the emulator's lane loops over them in 64-bit lanes with shuffles back to 32
  bits (tinygrad's translated elementwise kernel, six carry steps: 46.7 -> 52.8 M/s with the halves, one-off A/B)."""
  nodes = list(walk(prog.body))
  assigns: dict = {}
  for n in nodes:
    if isinstance(n, Assign) and isinstance(n.lhs, Name) and getattr(n.lhs, "var", None) is not None: assigns.setdefault(n.lhs.var, []).append(n)
  out = set()
  for v, (a, *more) in assigns.items():
    ts = _terms(a.rhs)
    if (more or v.kind != "local" or v.count is not None or v.ty != Ty("u", 64) or a not in prog.body or not 2 <= len(ts) <= 3
        or not all(_below_2_32(t) for t in ts) or any(getattr(n, "var", None) is v for n in walk(a.rhs))): continue
    uses = [n for n in nodes if isinstance(n, Name) and getattr(n, "var", None) is v and n is not a.lhs]
    ok = {id(n.x) for n in nodes if isinstance(n, Typed) and n.to.bits == 32 and n.to.kind in ("u", "b") and getattr(n.x, "var", None) is v}
    ok |= {id(n.a) for n in nodes if isinstance(n, Binary) and n.op == ">=" and getattr(n.a, "var", None) is v and isinstance(n.b, Num)
           and n.b.val == 1 << 32}
    first = prog.body.index(a)
    if all(id(n) in ok for n in uses) and not any(getattr(n, "var", None) is v for s in prog.body[:first] for n in walk(s)): out.add(v)
  return out

def _state(n, name:str|None = None) -> bool:
  v = getattr(n, "var", None) if isinstance(n, Name) else None
  return v is not None and v.kind == "state" and (name is None or v.name == name)

def lane_bits(prog:Program) -> tuple[frozenset[str], bool]:
  """(the state members the entry reads and assigns only as its own lane's bit, `X.u64[laneId]` (VCC of V_ADD_CO_CI_U32 and
  the other carry ops, a compare's D0), nowhere else (no whole read, no other bit, no hook that sees the state); whether
  laneId is read only as the index of those bits). Lanes are independent through such a member: a lane loop may give every
  lane the incoming value and gather each lane's bit after it, which is what running the lanes one after another leaves; when
  laneId is only such an index, a lane may also run as lane 0 with its own bit moved to bit 0 (emu/gen_c.py `_lane_loop`)."""
  if prog.info["op"].hooks or prog.info["op"].calls or "laneId" in prog.info["op"].writes: return frozenset(), False
  own, seen, idx = {}, {}, []
  for n in walk(prog.body):   # parents before children: an Index is seen before the names under it
    if isinstance(n, Index) and n.ty is not None and n.ty.bits == 1 and _state(n.idx, "laneId"):
      x = n.x.x if isinstance(n.x, Typed) else n.x
      if _state(x): own[id(x)] = own[id(n.idx)] = x.var.name
    if _state(n, "laneId"): idx.append(own.get(id(n)))
    elif _state(n): seen.setdefault(n.var.name, set()).add(id(n) in own)
  bits = frozenset(k for k, v in seen.items() if v == {True})
  return bits, bool(bits) and all(m in bits for m in idx)

def metadata(arch:str, name:str) -> dict:
  """What entry `name` touches, for the emulator: {'reads', 'writes' (PcState names), 'mem_rd', 'mem_wr', 'vgpr_rd', 'vgpr_wr',
  'sgpr_rd', 'sgpr_wr' (bools), 'hooks' (PC_EXT_ names), 'builtins', 'calls', 'lane_bits' (members touched only as the lane's
  own bit), 'lane_index_only' (laneId is only their bit index: `lane_bits`), 'prose' (bool), 'c_name', 'compiled' (bool)}.

  Raises:
    KeyError: unknown entry name.
  """
  if name not in entries(arch): raise KeyError(f"{arch} has no pseudocode entry {name!r}")
  if is_prose(arch, name): return {"prose": True, "compiled": False, "c_name": None}
  prog, err = try_program(arch, name)
  funcs, _, errs = _emit_all(arch)
  d = prog.info["op"].as_dict() if prog is not None else {}
  bits, only = lane_bits(prog) if prog is not None else (frozenset(), False)
  return {**d, "lane_bits": sorted(bits), "lane_index_only": only, "prose": False, "compiled": name in funcs, "c_name": c_name(name) if name in funcs else None,
          "error": str(errs[name]) if name in errs else None}
