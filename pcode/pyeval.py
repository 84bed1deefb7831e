"""Backend 1: reference evaluator. Walks the typed AST with Python ints (bit patterns) and exact rational float arithmetic
(pyfloat/softfloat). It follows the same typing decisions as the C emitter, independently implemented, so the two can be
diffed bit for bit. Memory and register files are dicts in the State."""
from __future__ import annotations
from fractions import Fraction
from mockgpu.pcode.nodes import (Ty, Expr, Num, Name, Typed, Field, Index, Slice, Cast, Call, Unary, Binary, Ternary, Concat, Stmt, Assign,
                                 If, For, While, Break, Return, ExprStmt, Program)
from mockgpu.pcode import builtins as B
from mockgpu.pcode import pyfloat as PF
from mockgpu.pcode.softfloat import fmt_of, encode, decode, cvt, is_nan, is_snan, sign_bit
from mockgpu.pcode.state import WIDE, SCALARS, FIELDS, WIDE_BITS, MODE_DEFAULT
from mockgpu.pcode.compile import program
from mockgpu.pcode.constants import two_over_pi_segment
from mockgpu.pcode.errors import PcodeRuntimeError, PcodeUnsupported
__all__ = ["State", "run", "evaluate", "unsupported"]

MAX_WHILE = 1 << 20
def M(n:int) -> int: return (1 << n) - 1
def sext(x:int, n:int) -> int: return x - (1 << n) if n and (x >> (n - 1)) & 1 else x
def isig(t:Ty) -> bool: return t.kind in ("i", "int")
def F(t:Ty): return fmt_of(t.kind, t.bits)

class State:
  """Machine state for one call: every PcState member as an int attribute (wide registers are 1024-bit ints; MODE starts
  at MODE_DEFAULT, everything else at 0), plus
  `mem` (byte address -> byte), `vgpr` ((lane, reg) -> u32), `sgpr` (reg -> u32) and `hooks` (name -> callable)."""
  def __init__(self, **kw):
    for n in WIDE: setattr(self, n, 0)
    for n in SCALARS: setattr(self, n, 0)
    for a, b in FIELDS: setattr(self, f"{a}_{b}", 0)
    self.MODE = MODE_DEFAULT
    self.mem: dict[int, int] = {}
    self.vgpr: dict[tuple[int, int], int] = {}
    self.sgpr: dict[int, int] = {}
    self.hooks: dict = {}
    for k, v in kw.items(): setattr(self, k, v)

class _Break(Exception): pass
class _Ret(Exception):
  def __init__(self, v): self.v = v

def resize(v:int, src:Ty, dst:Ty) -> int:
  if src.kind == "int": src = Ty("i", 64)
  if dst.bits > src.bits and isig(src): v = sext(v & M(src.bits), src.bits)
  return v & M(dst.bits)

def convert(v:int, src:Ty, dst:Ty, mode:str, m:int) -> int:
  """Value conversion or bit resize (as the type checker decided) under MODE register value `m`."""
  if src == dst: return v
  if mode == "value" and src.isfloat and dst.isfloat: return cvt(v, F(src), F(dst), m)
  if mode == "value" and dst.isfloat and src.kind in ("u", "i", "int", "b"):
    return PF.i2f(sext(v, 64 if src.kind == "int" else src.bits) if isig(src) else v, F(dst), m)
  if mode == "value" and src.isfloat and dst.kind in ("u", "i"): return PF.f2i(v, F(src), dst.bits, isig(dst))
  return resize(v, src, dst)

def fconst(v, t:Ty) -> int:
  return encode(v if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))) else Fraction(v), F(t))

class Evaluator:
  def __init__(self, st:State):
    self.s, self.loc = st, {}

  # ---- helpers mirroring the emitter
  def conv_to(self, e:Expr, dst:Ty) -> int:
    if isinstance(e, Num) or (isinstance(e, Name) and getattr(e, "const", None) is not None and isinstance(e.const, float)):
      v = e.val if isinstance(e, Num) else e.const
      if dst.isfloat and (isinstance(v, float) or not e.ty.isfloat): return fconst(v, dst)
      if not dst.isfloat and isinstance(v, int) and not e.ty.isfloat: return v & M(dst.bits)
    return convert(self.ex(e), e.ty, dst, "value", self.s.MODE)
  def var_get(self, v) -> int:
    if v.kind == "state": return getattr(self.s, v.name)
    return self.loc.get(v.cname, 0)
  def var_set(self, v, val:int):
    if v.kind == "state": setattr(self.s, v.name, val & M(WIDE_BITS if v.name in WIDE else 64))
    else: self.loc[v.cname] = val
  def storage_read(self, x:Expr, lo:int, n:int) -> int:
    if isinstance(x, Typed) and isinstance(x.x, Name): x = x.x
    if isinstance(x, Name) and hasattr(x, "var"):
      v = x.var
      raw = self.var_get(v)
      bits = WIDE_BITS if v.kind == "state" and v.name in WIDE else v.ty.bits
      if lo >= max(bits, 64 if bits <= 64 else bits): return 0
      return ((raw & M(bits)) >> lo) & M(n)
    if isinstance(x, Field): return (getattr(self.s, x.sname) >> (lo + x.slo)) & M(min(n, x.ty.bits)) if lo < 64 else 0
    return (self.ex(x) >> lo) & M(n) if lo < max(x.ty.bits, 64) else 0
  def storage_write(self, x:Expr, lo:int, n:int, val:int):
    if isinstance(x, Typed) and isinstance(x.x, Name): x = x.x
    if isinstance(x, Name):
      v = x.var
      bits = WIDE_BITS if v.kind == "state" and v.name in WIDE else v.ty.bits
      if bits <= 128 and lo >= (64 if bits <= 64 else 128): return
      m = M(n) << lo
      self.var_set(v, ((self.var_get(v) & ~m) | ((val & M(n)) << lo)) & M(bits))
      return
    if isinstance(x, Field):
      if lo < 64: self.field_write(x, lo, n, val)
      return
    if isinstance(x, Index) and x.kind in ("vgpr", "array"):
      cur = self.ex(x)
      if lo < 64: cur = ((cur & ~(M(n) << lo)) | ((val & M(n)) << lo)) & M(64)
      self.store(x, cur)
      return
    raise PcodeUnsupported(f"cannot write part of {type(x).__name__}")

  # ---- memory and register files
  def mem_rd(self, addr:int, nbytes:int) -> int:
    addr &= M(64)
    mem = self.s.mem
    if hasattr(mem, "read"): return mem.read(addr, nbytes)   # whole-access memory (the emulator's buffer range check)
    return sum(mem.get(addr + i, 0) << (8 * i) for i in range(nbytes))
  def mem_wr(self, addr:int, nbytes:int, val:int):
    addr &= M(64)
    if hasattr(self.s.mem, "write"): return self.s.mem.write(addr, nbytes, val)
    for i in range(nbytes): self.s.mem[addr + i] = (val >> (8 * i)) & 0xff
  def reg_rd(self, x:Index, nbits:int) -> int:
    if x.kind == "vgpr":
      lane, reg = self.ex(x.x.idx), self.ex(x.idx)
      v = self.s.vgpr.get((lane, reg), 0)
      return v & M(nbits) if nbits <= 32 else v | (self.s.vgpr.get((lane, (reg + 1) & M(64)), 0) << 32)
    reg = self.ex(x.idx)
    v = self.s.sgpr.get(reg, 0)
    return v & M(nbits) if nbits <= 32 else v | (self.s.sgpr.get((reg + 1) & M(64), 0) << 32)
  def reg_wr(self, x:Index, val:int, nbits:int):
    if x.kind == "vgpr":
      lane, reg = self.ex(x.x.idx), self.ex(x.idx)
      self.s.vgpr[(lane, reg)] = val & M(32)
      if nbits > 32: self.s.vgpr[(lane, (reg + 1) & M(64))] = (val >> 32) & M(32)
      return
    reg = self.ex(x.idx)
    self.s.sgpr[reg] = val & M(32)
    if nbits > 32: self.s.sgpr[(reg + 1) & M(64)] = (val >> 32) & M(32)

  # ---- expressions
  def ex(self, e:Expr) -> int:
    return getattr(self, "x_" + type(e).__name__)(e)
  def x_Num(self, e:Num) -> int:
    if e.ty.isfloat: return fconst(e.val, e.ty)
    return e.val & M(e.ty.bits if e.ty.kind != "int" else 64)
  def x_Name(self, e:Name) -> int:
    if hasattr(e, "const") and e.name != "WAVE32":
      if e.ty.isfloat: return fconst(e.const, e.ty) if isinstance(e.const, float) else e.const
      return e.const & M(e.ty.bits)
    if e.name == "WAVE32": return int(not self.s.WAVE64 & 1)
    v = e.var
    if v.kind == "state":
      if v.name in WIDE: return self.storage_read(e, 0, e.ty.bits)
      return getattr(self.s, v.name) & M(v.ty.bits)
    val = self.loc.get(v.cname, 0)
    return resize(val, v.ty, e.ty) if e.ty != v.ty else val
  def x_Typed(self, e:Typed) -> int:
    x = e.x
    if getattr(x, "kind", None) in ("mem", "vgpr", "sgpr"): return self.ex(x)
    if isinstance(x, Name) and hasattr(x, "var"):
      v = x.var
      if v.kind == "state" and v.name in WIDE: return self.storage_read(x, 0, e.to.bits)
      raw = getattr(self.s, v.name) & M(v.ty.bits) if v.kind == "state" else self.loc.get(v.cname, 0)
      return resize(raw, v.ty, e.to)
    return resize(self.ex(x), x.ty, e.to)
  def x_Field(self, e:Field) -> int: return (getattr(self.s, e.sname) >> e.slo) & M(e.ty.bits)
  def field_write(self, x:Field, lo:int, n:int, val:int):
    sh = lo + x.slo
    setattr(self.s, x.sname, ((getattr(self.s, x.sname) & ~(M(n) << sh)) | ((val & M(n)) << sh)) & M(64))
  def x_Index(self, e:Index) -> int:
    if e.kind == "mem": return self.mem_rd(self.ex(e.idx), e.nbits // 8)
    if e.kind in ("vgpr", "sgpr"): return self.reg_rd(e, e.nbits)
    if e.kind == "array":
      v = e.x.var
      return self.loc.setdefault(v.cname, [0] * v.count)[self.ex(e.idx) % v.count]
    return self.storage_read(e.x, self.ex(e.idx), 1)
  def x_Slice(self, e:Slice) -> int:
    r = self.storage_read(e.x, self.ex(e.lo), e.width)
    if e.rev: r = int(f"{r:0{e.width}b}"[::-1], 2)
    return r
  def x_Cast(self, e:Cast) -> int:
    if e.to.bits > 128 and e.x.ty.isfloat: raise PcodeUnsupported(f"{e.to.bits}-bit fixed-point expansion of a float is not supported")
    if isinstance(e.x, Num) and e.mode == "value" and e.to.isfloat: return fconst(e.x.val, e.to)
    if isinstance(e.x, Binary) and getattr(e.x, "lit", False) and e.to.isfloat: return fconst(self.fold(e.x), e.to)
    return convert(self.ex(e.x), e.x.ty, e.to, e.mode if e.mode != "resize" else "bits", self.s.MODE)
  def fold(self, e:Expr) -> float:
    if isinstance(e, Num): return e.val
    if isinstance(e, Name): return e.const
    if isinstance(e, Unary) and e.op == "-": return -self.fold(e.x)
    return {"+": float.__add__, "-": float.__sub__, "*": float.__mul__, "/": float.__truediv__}[e.op](float(self.fold(e.a)), float(self.fold(e.b)))
  def x_Unary(self, e:Unary) -> int:
    if e.op == "!": return int(not self.ex(e.x))
    t = e.ty if e.ty.kind != "int" else Ty("i", 64)
    x = self.conv_to(e.x, t)
    if t.isfloat: return x ^ (1 << (t.bits - 1))
    return (~x if e.op == "~" else -x) & M(t.bits)
  def x_Binary(self, e:Binary) -> int:
    op = e.op
    if op == "&&": return int(self.ex(e.a) != 0 and self.ex(e.b) != 0)
    if op == "||": return int(self.ex(e.a) != 0 or self.ex(e.b) != 0)
    if op in ("<<", ">>"):
      t = e.ty if e.ty.kind != "int" else Ty("i", 64)
      a, b = self.conv_to(e.a, t), self.ex(e.b)
      if isig(e.b.ty) and sext(b, e.b.ty.bits if e.b.ty.kind != "int" else 64) < 0: b = 1000
      if op == "<<": return 0 if b >= t.bits else (a << b) & M(t.bits)
      if isig(t): return (sext(a, t.bits) >> min(b, 127)) & M(t.bits)
      return a >> b if b < max(t.bits, 64) else 0
    t = e.opty if e.opty.kind != "int" else Ty("i", 64)
    a, b = self.conv_to(e.a, t), self.conv_to(e.b, t)
    if t.isfloat:
      if op in ("==", "!=", "<>", "<", ">", "<=", ">="): return int(PF.fcmp(op, a, b, F(t), self.s.MODE))
      return PF.fbin(op, a, b, F(t), self.s.MODE)
    if op in ("==", "!=", "<>", "<", ">", "<=", ">="):
      if isig(t): a, b = sext(a, t.bits), sext(b, t.bits)
      return int({"==": a == b, "!=": a != b, "<>": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])
    if op in ("/", "%"):
      if isig(t):
        x, y = sext(a, t.bits), sext(b, t.bits)
        if y == 0: return 0
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return (q if op == "/" else (x - q * y if y != -1 else 0)) & M(t.bits)
      return (a // b if op == "/" else a % b) if b else 0
    return {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op] & M(t.bits)
  def x_Ternary(self, e:Ternary) -> int:
    return self.conv_to(e.a, e.ty) if self.ex(e.c) else self.conv_to(e.b, e.ty)
  def x_Concat(self, e:Concat) -> int:
    out, off = 0, e.ty.bits
    for p in e.parts:
      off -= p.ty.bits
      out |= (self.ex(p) & M(p.ty.bits)) << off
    return out
  def x_Call(self, e:Call) -> int:
    if getattr(e, "inline", None): return self.inline(e)
    n, args, md = e.name, e.args, self.s.MODE
    if n in B.EXTERNAL:
      fn = self.s.hooks.get(n)
      if fn is None: raise PcodeRuntimeError(f"machine hook {n} is not provided (State.hooks[{n!r}])", hook=n)
      return fn(*[self.ex(a) for a in args]) & M(64)
    if (m := B.CONV_RE.fullmatch(n)):
      src, dst, sr, scale = e.src, e.ty, m.group(3), m.group(4)
      x = convert(self.ex(args[0]), args[0].ty, src, "bits" if not (args[0].ty.isfloat and src.isfloat) else "value", md)
      if sr: return PF.sr_to(x, F(src), self.ex(args[1]), self.ex(args[2]) if scale else 127, F(dst))
      if scale:
        sc = self.ex(args[1])
        if src.isfloat and m.group(1) in ("f32", "f16", "bf16"): return PF.scale_to(x, F(src), sc, F(dst))
        return PF.scale_from(x, F(src), sc, F(dst))
      if src.isfloat and dst.isfloat: return cvt(x, F(src), F(dst), md)
      if src.isfloat and m.group(2) in ("snorm", "unorm"): return PF.f2norm(x, F(src), m.group(2) == "snorm")
      if src.isfloat: return PF.f2i(x, F(src), dst.bits, isig(dst))
      if dst.isfloat: return PF.i2f(sext(x, src.bits) if isig(src) else x, F(dst), md)
      if dst.bits < src.bits:
        v, lo, hi = sext(x, src.bits) if isig(src) else x, -(1 << (dst.bits - 1)) if isig(dst) else 0, (1 << (dst.bits - (1 if isig(dst) else 0))) - 1
        return max(lo, min(hi, v)) & M(dst.bits)
      return resize(x, src, dst)
    if n in B.FLOAT_SAME or n in B.PREDICATES or n == "exponent":
      ft = e.fty
      f = F(ft)
      a = self.conv_to(args[0], ft)
      if n in ("trunc", "floor", "fract", "sin", "cos", "log2"): return PF.fun1(n, a, f, md)
      if n == "sqrt": return PF.fsqrt(a, f, md)
      if n == "mantissa": return PF.fmant(a, f, md)
      if n == "cvtToQuietNAN": return PF.fquiet(a, f)
      if n == "abs": return a & M(f.bits - 1)
      if n == "isNAN": return int(is_nan(a, f))
      if n == "isSignalNAN": return int(is_snan(a, f))
      if n == "isQuietNAN": return int(is_nan(a, f) and not is_snan(a, f))
      if n == "isEven":
        x = decode(a, f)
        return int(not isinstance(x, float) and x % 2 == 0)
      if n == "sign": return sign_bit(a, f)
      if n == "isDENORM": return int((a >> f.mb) & M(f.eb) == 0 and a & M(f.mb) != 0)
      if n == "exponent": return (a >> f.mb) & M(f.eb)
      if n == "fma": return PF.ffma(a, self.conv_to(args[1], ft), self.conv_to(args[2], ft), f, md)
      if n == "ldexp": return PF.fldexp(a, sext(self.ex(args[1]), args[1].ty.bits if args[1].ty.kind != "int" else 64), f, md)
      if n == "pow": return PF.fexp2(self.conv_to(args[1], ft), f, md)
    if n in ("countbits", "bitCount", "count_ones"): return bin(self.ex(args[0]) & M(64)).count("1")
    if n in ("s_ff1_i32_b32", "s_ff1_i32_b64"):
      x = self.ex(args[0]) & M(64)
      return ((x & -x).bit_length() - 1) if x else 0xffffffff
    if n == "reverse_bits": return int(f"{self.ex(args[0]) & M(e.ty.bits):0{e.ty.bits}b}"[::-1], 2)
    if n == "signext": return sext(self.ex(args[0]), args[0].ty.bits) & M(64)
    if n == "signext_from_bit":
      nb = min(self.ex(args[1]), 64)
      return 0 if nb == 0 else sext(self.ex(args[0]) & M(nb), nb) & M(e.ty.bits)
    if n == "MIN":
      a, b = self.conv_to(args[0], e.ty), self.conv_to(args[1], e.ty)
      return a if a < b else b
    if n == "two_over_pi_segment": return two_over_pi_segment(self.ex(args[0]))
    if n == "float32":
      s_, ex_, m_ = (self.ex(a) for a in args)
      return ((s_ & 1) << 31) | ((ex_ & 0xff) << 23) | (m_ & 0x7fffff)
    raise PcodeUnsupported(f"built-in {n} has no Python implementation")
  def inline(self, e:Call) -> int:
    for p, a in zip(e.params, e.args): self.loc[p.cname] = resize(self.ex(a), a.ty, p.ty)
    try: self.block(e.body)
    except _Ret as r: self.loc[e.ret.cname] = r.v
    val = self.loc.get(e.ret.cname, 0)
    return val if e.inline == "lambda" else resize(val, e.ret.ty, e.ty)

  # ---- statements
  def store(self, t:Expr, val:int):
    if isinstance(t, Name):
      v = t.var
      if v.kind == "state":
        if v.name in WIDE: return self.storage_write(t, 0, t.ty.bits, val)
        return setattr(self.s, v.name, val & M(v.ty.bits))
      self.loc[v.cname] = val
      return
    if isinstance(t, Field): return self.field_write(t, 0, t.ty.bits, val)
    if isinstance(t, Typed):
      x = t.x
      if getattr(x, "kind", None) == "mem": return self.mem_wr(self.ex(x.idx), x.nbits // 8, val)
      if getattr(x, "kind", None) in ("vgpr", "sgpr"): return self.reg_wr(x, val, t.to.bits)
      if isinstance(x, (Slice, Index)): return self.store(x, resize(val, t.ty, x.ty))
      return self.storage_write(x, 0, t.to.bits, val)
    if isinstance(t, Index):
      if t.kind == "mem": return self.mem_wr(self.ex(t.idx), t.nbits // 8, val)
      if t.kind in ("vgpr", "sgpr"): return self.reg_wr(t, val, t.nbits)
      if t.kind == "array":
        v = t.x.var
        arr = self.loc.setdefault(v.cname, [0] * v.count)
        arr[self.ex(t.idx) % v.count] = val
        return
      return self.storage_write(t.x, self.ex(t.idx), 1, val)
    if isinstance(t, Slice):
      if t.rev: val = int(f"{val & M(t.width):0{t.width}b}"[::-1], 2)
      return self.storage_write(t.x, self.ex(t.lo), t.width, val)
    if isinstance(t, Concat):
      off = t.ty.bits
      for p in t.parts:
        off -= p.ty.bits
        self.store(p, (val >> off) & M(p.ty.bits))
      return
    raise PcodeUnsupported(f"cannot assign to {type(t).__name__}")
  def assign_value(self, s:Assign) -> int:
    src, dst = s.rhs.ty, s.lhs.ty
    if src.kind == "int": src = Ty("i", 64)
    if isinstance(s.rhs, Num): return self.conv_to(s.rhs, dst)
    if isinstance(s.rhs, Unary) and isinstance(s.rhs.x, Num): return convert(self.ex(s.rhs), src, dst, "value", self.s.MODE)
    if src.isfloat and dst.isfloat: return convert(self.ex(s.rhs), src, dst, "value", self.s.MODE)
    return resize(self.ex(s.rhs), src, dst)
  def block(self, body:list[Stmt]):
    for s in body: self.stmt(s)
  def stmt(self, s:Stmt):
    if isinstance(s, Assign): return self.store(s.lhs, self.assign_value(s))
    if isinstance(s, If):
      for c, b in s.arms:
        if self.ex(c): return self.block(b)
      if s.orelse is not None: self.block(s.orelse)
      return
    if isinstance(s, For):
      lo = sext(self.ex(s.lo), 64 if s.lo.ty.kind == "int" else s.lo.ty.bits)
      hi = sext(self.ex(s.hi), 64 if s.hi.ty.kind == "int" else s.hi.ty.bits)
      it = lo
      while it <= hi:
        self.loc[s.v.cname] = it & M(s.v.ty.bits)
        try: self.block(s.body)
        except _Break: break
        it += 1
      return
    if isinstance(s, While):
      n = 0
      while self.ex(s.cond):
        if n >= MAX_WHILE: raise PcodeRuntimeError("while loop did not terminate")
        n += 1
        try: self.block(s.body)
        except _Break: break
      return
    if isinstance(s, Break): raise _Break()
    if isinstance(s, Return):
      src = s.x.ty if s.x.ty.kind != "int" else Ty("i", 64)
      raise _Ret(convert(self.ex(s.x), src, s.var.ty, "value", self.s.MODE))
    if isinstance(s, ExprStmt): return self.ex(s.x)
    raise PcodeUnsupported(f"statement {type(s).__name__}")

def evaluate(prog:Program, st:State) -> State:
  """Run a type-checked program on `st` in place and return it."""
  Evaluator(st).block(prog.body)
  return st

def run(arch:str, name:str, st:State|None=None, **kw) -> State:
  """Evaluate entry `name` of `arch`.

  Args:
    arch: 'rdna3' 'rdna4' 'cdna'.
    name: entry name ('VOP2Op_V_ADD_F32_E32').
    st: initial state (default: a zero State updated with `kw`).
  Returns:
    The state after the entry ran.
  Raises:
    PcodeError: the entry does not compile (prose, unsupported) or a runtime problem (missing hook, endless loop).
  """
  st = st or State()
  for k, v in kw.items(): setattr(st, k, v)
  return evaluate(program(arch, name), st)

def unsupported(prog:Program) -> str|None:
  """Why the evaluator cannot run a type-checked program (a construct it lacks), or None."""
  from mockgpu.pcode.nodes import walk
  for n in walk(prog.body):
    if isinstance(n, Cast) and n.to.bits > 128 and n.x.ty is not None and n.x.ty.isfloat: return f"{n.to.bits}-bit fixed-point expansion of a float"
    if isinstance(n, Call) and getattr(n, "inline", None) and (r := unsupported(Program(n.body))): return r
  return None
