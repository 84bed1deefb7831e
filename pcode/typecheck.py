"""Semantic analysis: resolves names (locals, machine state, constants, lambdas, instruction calls), gives every expression a
type, decides every implicit conversion, and records per-op metadata (state read/written, memory/register-file access, hooks)."""
from __future__ import annotations
import copy
from dataclasses import dataclass, field
from mockgpu.pcode.nodes import (Ty, Expr, Num, Name, Typed, Field, Index, Slice, Cast, Call, Unary, Binary, Ternary, Concat, Stmt, Assign,
                                 If, For, While, Break, Return, Declare, ExprStmt, Lambda, Program)
from mockgpu.pcode import builtins as B
from mockgpu.pcode.state import WIDE, WIDE_BITS, SCALARS, FIELDS, MODE_VIEWS, ALIASES, CONSTANTS, CONST_ALIASES
from mockgpu.pcode.errors import PcodeTypeError
__all__ = ["Var", "OpInfo", "check", "unify", "const_eval"]

U1, I32, I64, INT = Ty("u", 1), Ty("i", 32), Ty("i", 64), Ty("int", 32)
_ARITH, _CMP = {"+", "-", "*", "/", "%", "&", "|", "^"}, {"==", "!=", "<>", "<", ">", "<=", ">="}
_MAX_INLINE_DEPTH = 4

@dataclass(eq=False)
class Var:
  """A variable: `kind` is 'local', 'loop', 'state'; `cname` is unique within the op (inlined lambdas rename)."""
  name: str
  cname: str
  ty: Ty
  kind: str
  count: int|None = None

@dataclass
class OpInfo:
  """Per-op metadata for the emulator. Sets of state names (PcState members) read and written, and flags."""
  reads: set = field(default_factory=set)
  writes: set = field(default_factory=set)
  mem_rd: bool = False
  mem_wr: bool = False
  vgpr_rd: bool = False
  vgpr_wr: bool = False
  sgpr_rd: bool = False
  sgpr_wr: bool = False
  hooks: set = field(default_factory=set)       # PC_EXT_ hooks used
  builtins: set = field(default_factory=set)
  calls: set = field(default_factory=set)       # instructions whose pseudocode was inlined
  locals: dict = field(default_factory=dict)    # cname -> Var
  def as_dict(self) -> dict:
    return {k: sorted(v) if isinstance(v, set) else v for k, v in vars(self).items() if k != "locals"}

def is_lit(e:Expr) -> bool: return getattr(e, "lit", False)

def _promote(t:Ty) -> Ty:
  """Integer promotion as in C: binary arithmetic and shifts on integers narrower than 32 bits compute in 32 bits
  (V_LERP_U8 adds three bytes and shifts the 9-bit sum); the kind is kept ('b' counts as unsigned)."""
  if t.kind in ("u", "i", "b") and t.bits < 32: return Ty("i" if t.kind == "i" else "u", 32)
  return t

def _dummy(ty:Ty, pos=(0, 0)) -> Expr:
  e = Expr(pos)
  e.ty = ty
  return e

def unify(a:Expr, b:Expr) -> Ty:
  """The common type two operands are converted to: floats win (literals adopt the other float format), then the wider
  integer; at equal width unsigned wins (as in C); an unsized literal adopts the other side's type."""
  ta, tb = a.ty, b.ty
  if ta.isfloat or tb.isfloat:
    if ta.isfloat and tb.isfloat:
      if is_lit(a) != is_lit(b): return tb if is_lit(a) else ta
      if ta == tb: return ta
      return max(ta, tb, key=lambda t: (t.bits, t.kind == "f"))
    return ta if ta.isfloat else tb
  if ta.kind == "int": return tb if tb.kind != "int" else INT
  if tb.kind == "int": return ta
  if ta.bits != tb.bits: w = max(ta, tb, key=lambda t: t.bits)
  else: w = ta if ta.kind == "u" or tb.kind not in ("u",) else tb
  if ta.bits == tb.bits and "i" in (ta.kind, tb.kind) and (ta.kind != "i" or tb.kind != "i"): return Ty("u", w.bits)
  return Ty("u", w.bits) if w.kind not in ("u", "i") else w

def const_eval(e:Expr, env:dict|None=None) -> int|None:
  """Value of an integer expression made of literals (and names bound in `env`), else None."""
  env = env or {}
  if isinstance(e, Num) and isinstance(e.val, int): return e.val
  if isinstance(e, Name): return env.get(e.name)
  if isinstance(e, Typed) and e.to.kind in ("u", "i", "b"): return const_eval(e.x, env)
  if isinstance(e, Unary) and e.op == "-" and (v := const_eval(e.x, env)) is not None: return -v
  if isinstance(e, Binary) and e.op in ("+", "-", "*", "<<", "&"):
    a, b = const_eval(e.a, env), const_eval(e.b, env)
    if a is None or b is None: return None
    return {"+": a+b, "-": a-b, "*": a*b, "<<": a << b if 0 <= b < 64 else None, "&": a & b}[e.op]
  return None

def _same(a:Expr, b:Expr) -> bool:
  if type(a) is not type(b): return False
  if isinstance(a, Num): return a.val == b.val
  if isinstance(a, Name): return a.name == b.name
  if isinstance(a, Binary): return a.op == b.op and _same(a.a, b.a) and _same(a.b, b.b)
  if isinstance(a, Typed): return a.to == b.to and _same(a.x, b.x)
  if isinstance(a, Index): return _same(a.x, b.x) and _same(a.idx, b.idx)
  return False

def slice_width(hi:Expr, lo:Expr) -> int|None:
  """Width of x[hi : lo] when both bounds are constant or differ by a constant (`i * 8 + 7 : i * 8`)."""
  if (h := const_eval(hi)) is not None and (l := const_eval(lo)) is not None: return abs(h - l) + 1
  if isinstance(hi, Binary) and hi.op in ("+", "-") and _same(hi.a, lo) and (c := const_eval(hi.b)) is not None: return (c if hi.op == "+" else -c) + 1
  if isinstance(hi, Binary) and isinstance(lo, Binary) and hi.op == lo.op == "+" and _same(hi.a, lo.a):
    if (c1 := const_eval(hi.b)) is not None and (c2 := const_eval(lo.b)) is not None: return c1 - c2 + 1
  return None

class Checker:
  def __init__(self, arch:str, op:str, resolve, depth:int=0):
    self.arch, self.op, self.resolve, self.depth = arch, op, resolve, depth
    self.info = OpInfo()
    self.frames: list[dict] = [{}]
    self.isolated: set[int] = set()
    self.lambdas: list[dict] = [{}]
    self.rets: list[list[Ty]] = []
    self.loop_max: dict[str, int] = {}
    self.uid = 0

  def err(self, msg:str, node) -> PcodeTypeError:
    line, col = node.pos if node is not None else (None, None)
    return PcodeTypeError(msg, op=self.op, arch=self.arch, line=line, col=col)

  # ---- names
  def lookup(self, name:str) -> Var|None:
    for i in range(len(self.frames) - 1, -1, -1):
      if name in self.frames[i]: return self.frames[i][name]
      if i in self.isolated:                       # an inlined instruction sees only its own names and machine state
        v = self.frames[0].get(name)
        return v if v is not None and v.kind == "state" else None
    return None
  def new_local(self, name:str, ty:Ty, kind="local", count=None) -> Var:
    cname = name if len(self.frames) == 1 and name not in self.info.locals else f"{name}__{self._uid()}"
    v = Var(name, cname, ty, kind, count)
    self.frames[-1][name] = v
    self.info.locals[cname] = v
    return v
  def _uid(self) -> int:
    self.uid += 1
    return self.uid
  def state_var(self, name:str, node) -> Var|None:
    name = ALIASES.get(name, name)
    if name in WIDE: ty = Ty("b", WIDE_BITS)
    elif name in SCALARS: ty = SCALARS[name]
    else: return None
    v = self.frames[0].get(name)
    if v is None or v.kind != "state": v = self.frames[0][name] = Var(name, name, ty, "state")
    return v

  # ---- expressions
  def expr(self, e:Expr) -> Expr:
    fn = getattr(self, "e_" + type(e).__name__)
    r = fn(e)
    if r.ty is None: raise self.err(f"internal: no type for {type(e).__name__}", e)
    return r

  def e_Num(self, e:Num) -> Expr:
    e.lit = True
    e.ty = e.ty0 if e.ty0 is not None else (Ty("f", 64) if isinstance(e.val, float) else INT)
    if e.ty.kind == "b" and isinstance(e.val, int): e.ty = Ty("u", e.ty.bits) if e.ty.bits else INT
    return e

  def e_Name(self, e:Name) -> Expr:
    if e.name in MODE_VIEWS: return self.e_Field(Field(e.pos, None, e.name))     # ROUND_MODE: bits of MODE
    if (v := self.lookup(e.name)) is not None:
      if v.count is not None: raise self.err(f"array {e.name} used without an index", e)
      e.var, e.ty = v, (Ty("b", 32) if v.kind == "state" and v.name in WIDE else v.ty)
      if v.kind == "state": self.info.reads.add(v.name)
      return e
    if e.name in CONSTANTS or e.name in CONST_ALIASES:
      e.name = CONST_ALIASES.get(e.name, e.name)
      ty, val = CONSTANTS[e.name]
      e.const, e.ty = val, ty
      if e.name == "WAVE32":
        e.var = self.state_var("WAVE64", e)
        self.info.reads.add("WAVE64")
      e.lit = ty.isfloat and isinstance(val, float)
      return e
    if (v := self.state_var(e.name, e)) is not None:
      e.var, e.ty = v, (Ty("b", 32) if v.name in WIDE else v.ty)
      self.info.reads.add(v.name)
      return e
    if e.name in ("MEM", "VGPR", "SGPR"): raise self.err(f"{e.name} must be indexed", e)
    raise self.err(f"unknown name {e.name!r}: not a local, machine state, or constant (add it to state.py if it is state)", e)

  def e_Typed(self, e:Typed) -> Expr:
    if e.x is not None and isinstance(e.x, Name) and e.x.name == "DENORM": raise self.err("DENORM is only valid as `x == DENORM.fNN`", e)
    if isinstance(e.x, Name) and e.to.isfloat and isinstance(CONSTANTS.get(e.x.name, (None, None))[1], float):   # NAN.f32: the constant in f32
      return self.expr(Num(e.pos, CONSTANTS[e.x.name][1], e.to))
    e.x = self.expr(e.x)
    if getattr(e.x, "kind", None) in ("mem", "sgpr", "vgpr"):
      e.x.nbits = e.to.bits
      if e.x.kind == "mem" and e.to.bits not in (8, 16, 32, 64): raise self.err(f"MEM access of {e.to.bits} bits is not supported", e)
      e.x.ty = Ty("b", e.to.bits)
    elif isinstance(e.x, Name) and getattr(e.x, "var", None) is not None and e.x.var.kind == "state": e.x.ty = e.x.var.ty
    e.ty = e.to
    return e

  def e_Field(self, e:Field) -> Expr:
    key = e.name if e.x is None else (getattr(e.x, "name", None), e.name)
    if key in MODE_VIEWS: (e.slo, bits), e.sname = MODE_VIEWS[key], "MODE"; e.ty = Ty("u", bits)
    elif key in FIELDS: e.sname, e.slo, e.ty = f"{e.x.name}_{e.name}", 0, FIELDS[key]
    else: raise self.err(f"unknown state field {getattr(e.x, 'name', '?')}.{e.name}", e)
    self.info.reads.add(e.sname)
    return e

  def e_Index(self, e:Index) -> Expr:
    x = e.x
    if isinstance(x, Name) and x.name == "MEM":
      e.idx = self.expr(e.idx)
      e.kind, e.nbits, e.ty = "mem", 32, Ty("b", 32)
      self.info.mem_rd = True
      return e
    if isinstance(x, Index) and isinstance(x.x, Name) and x.x.name == "VGPR":
      x.idx, e.idx = self.expr(x.idx), self.expr(e.idx)
      e.kind, e.nbits, e.ty = "vgpr", 32, Ty("b", 32)
      self.info.vgpr_rd = True
      return e
    if isinstance(x, Name) and x.name == "SGPR":
      e.idx = self.expr(e.idx)
      e.kind, e.nbits, e.ty = "sgpr", 32, Ty("b", 32)
      self.info.sgpr_rd = True
      return e
    if isinstance(x, Name) and (v := self.lookup(x.name)) is not None and v.count is not None:
      x.var, x.ty = v, v.ty
      e.idx = self.expr(e.idx)
      e.kind, e.ty = "array", v.ty
      return e
    e.x = self.storage(x)
    e.idx = self.expr(e.idx)
    e.kind, e.ty = "bit", U1
    return e

  def storage(self, x:Expr) -> Expr:
    """Check `x` as the base of a bit index or slice: a bare variable name means its whole storage."""
    x = self.expr(x)
    if isinstance(x, Name) and getattr(x, "var", None) is not None: x.ty = x.var.ty
    return x

  def e_Slice(self, e:Slice) -> Expr:
    e.x = self.storage(e.x)
    self.e_Slice_bounds(e)
    return e

  def e_Cast(self, e:Cast) -> Expr:
    e.x = self.expr(e.x)
    src = e.x.ty
    if e.to.isfloat:
      e.mode = "value" if src.isfloat else ("bits" if isinstance(e.x, Num) or src.kind == "b" else "value")
    elif src.isfloat: e.mode = "bits" if e.to.kind == "b" else "value"
    else: e.mode = "resize"
    e.ty = e.to
    return e

  def e_Unary(self, e:Unary) -> Expr:
    e.x = self.expr(e.x)
    if e.op == "!": e.ty = U1
    else: e.ty = I32 if e.x.ty.kind == "int" and e.op == "~" else e.x.ty
    e.lit = is_lit(e.x) and e.op == "-"
    return e

  def e_Binary(self, e:Binary) -> Expr:
    if e.op == "*" and isinstance(e.b, Binary) and e.b.op == "**":          # x * 2.0 ** n  ==  ldexp(x, n), exactly
      return self.expr(Call(e.pos, "ldexp", [e.a, e.b.b]) if self._is_two(e.b.a) else e)
    if e.op == "**":
      if not self._is_two(e.a): raise self.err("only 2.0 ** n is supported", e)
      return self.expr(Call(e.pos, "pow", [e.a, e.b]))
    if e.op in ("==", "!=") and isinstance(e.b, Typed) and isinstance(e.b.x, Name) and e.b.x.name == "DENORM":
      c = self.expr(Call(e.pos, "isDENORM", [e.a]))
      return c if e.op == "==" else self.expr(Unary(e.pos, "!", c))
    e.a, e.b = self.expr(e.a), self.expr(e.b)
    if e.op in ("&&", "||"): e.ty = U1
    elif e.op in ("<<", ">>"):
      e.ty = I32 if e.a.ty.kind == "int" else _promote(Ty("u", e.a.ty.bits) if e.a.ty.kind == "b" else e.a.ty)
      if e.ty.isfloat: raise self.err("shift of a float", e)
    elif e.op in _CMP:
      e.opty = unify(e.a, e.b)
      if e.opty.kind == "int": e.opty = I64
      e.ty = U1
    elif e.op in _ARITH:
      e.ty = e.opty = _promote(unify(e.a, e.b))
      if e.ty.isfloat and e.op in ("%", "&", "|", "^"): raise self.err(f"operator {e.op} on a float", e)
      if e.ty.kind == "int": e.ty = e.opty = INT
      e.lit = is_lit(e.a) and is_lit(e.b)
    else: raise self.err(f"unknown operator {e.op}", e)
    return e

  def _is_two(self, e:Expr) -> bool:
    return isinstance(e, Num) and e.val == 2.0

  def e_Ternary(self, e:Ternary) -> Expr:
    e.c, e.a, e.b = self.expr(e.c), self.expr(e.a), self.expr(e.b)
    e.ty = unify(e.a, e.b)
    if e.ty.kind == "int": e.ty = I32
    return e

  def e_Concat(self, e:Concat) -> Expr:
    e.parts = [self.expr(p) for p in e.parts]
    for p in e.parts:
      if p.ty.kind == "int": raise self.err("an unsized literal inside { } has no width; write e.g. 16'0U", p)
    e.ty = Ty("b", sum(p.ty.bits for p in e.parts))
    return e

  def e_Call(self, e:Call) -> Expr:
    for lam in reversed(self.lambdas):
      if e.name in lam: return self.inline(e, lam[e.name])
    if e.name in B.ALIAS: e.name = B.ALIAS[e.name]
    if B.is_builtin(e.name):
      e.args = [self.expr(a) for a in e.args]
      if e.name in B.EXTERNAL: self.info.hooks.add(e.name)
      else: self.info.builtins.add(e.name)
      return self.builtin(e)
    if (body := self.resolve(e.name)) is not None: return self.inline_op(e, body)
    raise self.err(f"unknown function {e.name!r}: add it to builtins.py (see docs/pcode.md)", e)

  def builtin(self, e:Call) -> Expr:
    n, args = e.name, e.args
    tys = [a.ty for a in args]
    want = {"fma": 3, "ldexp": 2, "pow": 2, "signext_from_bit": 2, "MIN": 2, "float32": 3}.get(n, 1)
    if n not in B.EXTERNAL and not B.CONV_RE.fullmatch(n) and len(args) != want: raise self.err(f"{n} takes {want} argument(s), got {len(args)}", e)
    if n in B.FLOAT_SAME or n in ("isNAN", "isSignalNAN", "isQuietNAN", "isEven", "sign", "isDENORM", "exponent"):
      if n in ("fma",):
        ft = unify(_dummy(unify(args[0], args[1])), args[2])
        e.fty = ft
      elif n == "pow": e.fty = tys[1] if tys[1].isfloat else tys[0]
      else: e.fty = tys[0]
      if not e.fty.isfloat: raise self.err(f"{n} expects a float argument, got {e.fty}", e)
      e.ty = e.fty if n in B.FLOAT_SAME else B.result_type(n, [e.fty])
      return e
    if (m := B.CONV_RE.fullmatch(n)):
      if len(args) != (k := 1 + bool(m.group(3)) + bool(m.group(4))): raise self.err(f"{n} takes {k} argument(s), got {len(args)}", e)
      e.src = B.FMT_TY[m.group(1)]
      e.ty = B.FMT_TY[m.group(2)]
      return e
    e.ty = B.result_type(n, tys)
    if e.ty.kind == "int": e.ty = I32
    return e

  def inline(self, e:Call, lam:Lambda) -> Expr:
    if len(e.args) != len(lam.params): raise self.err(f"{lam.name} takes {len(lam.params)} argument(s), got {len(e.args)}", e)
    e.args = [self.expr(a) for a in e.args]
    body = copy.deepcopy(lam.body)
    self.frames.append({})
    e.params = [self.new_local(p, a.ty if a.ty.kind != "int" else I32, "param") for p, a in zip(lam.params, e.args)]
    self.rets.append([])
    e.body = self.block(body)
    rets = self.rets.pop()
    self.frames.pop()
    if not rets: raise self.err(f"lambda {lam.name} returns nothing", e)
    ty = rets[0]
    for r in rets[1:]:
      if r != ty and r.kind != "int": ty = unify(_dummy(ty), _dummy(r)) if ty.kind != "int" else r
    e.ty = I32 if ty.kind == "int" else ty
    e.ret = self.new_local(f"{lam.name}_ret", e.ty)
    for st in walk_returns(e.body): st.var = e.ret
    e.inline = "lambda"
    return e

  def inline_op(self, e:Call, body:list[Stmt]) -> Expr:
    if self.depth + len(self.rets) >= _MAX_INLINE_DEPTH: raise self.err(f"instruction call {e.name} nested too deep", e)
    e.args = [self.expr(a) for a in e.args]
    self.info.calls.add(e.name)
    self.frames.append({})
    self.isolated.add(len(self.frames) - 1)
    e.params = [self.new_local(f"S{i}", Ty("b", 64), "param") for i in range(len(e.args))]
    e.ret = self.new_local("D0", Ty("b", 64))
    self.rets.append([])
    saved_lambdas, self.lambdas = self.lambdas, [{}]
    e.body = self.block(copy.deepcopy(body))
    self.lambdas = saved_lambdas
    self.rets.pop()
    self.isolated.discard(len(self.frames) - 1)
    self.frames.pop()
    dst = None
    for s in walk_stmts(e.body):
      if isinstance(s, Assign) and isinstance(s.lhs, Typed) and isinstance(s.lhs.x, Name) and s.lhs.x.var is e.ret: dst = s.lhs.to
    if dst is None: raise self.err(f"instruction call {e.name}: its pseudocode does not write D0.<type>", e)
    e.ty, e.inline = dst, "op"
    return e

  # ---- statements
  def block(self, body:list[Stmt]) -> list[Stmt]:
    out = []
    for s in body:
      r = self.stmt(s)
      if r is not None: out.append(r)
    return out

  def stmt(self, s:Stmt) -> Stmt|None:
    if isinstance(s, Assign): return self.assign(s)
    if isinstance(s, If):
      s.arms = [(self.expr(c), self.block(b)) for c, b in s.arms]
      if s.orelse is not None: s.orelse = self.block(s.orelse)
      return s
    if isinstance(s, For):
      v = self.lookup(s.var)
      if v is None or v.kind not in ("loop", "local"): v = self.new_local(s.var, I32, "loop")
      s.v = v
      s.lo, s.hi = self.expr(s.lo), self.expr(s.hi)
      hi = const_eval(s.hi)
      if hi is not None: self.loop_max[s.var] = hi
      s.body = self.block(s.body)
      return s
    if isinstance(s, While):
      s.cond, s.body = self.expr(s.cond), self.block(s.body)
      return s
    if isinstance(s, Break): return s
    if isinstance(s, Return):
      if not self.rets: raise self.err("return outside a lambda", s)
      s.x = self.expr(s.x)
      self.rets[-1].append(s.x.ty)
      return s
    if isinstance(s, Declare):
      if s.name in WIDE or s.name in SCALARS:
        self.state_var(s.name, s)
        return None
      v = self.lookup(s.name)
      if v is not None and v.ty == s.ty and v.count == s.count: return None
      self.new_local(s.name, s.ty, count=s.count)
      return None
    if isinstance(s, Lambda):
      self.lambdas[-1][s.name] = s
      return None
    if isinstance(s, ExprStmt):
      s.x = self.expr(s.x)
      return s
    raise self.err(f"unknown statement {type(s).__name__}", s)

  def assign(self, s:Assign) -> Stmt:
    if s.op != "=":
      s.rhs = Binary(s.pos, s.op[:-1], copy.deepcopy(s.lhs), s.rhs)
      s.op = "="
    s.rhs = self.expr(s.rhs)
    s.lhs = self.target(s.lhs, s.rhs)
    return s

  def target(self, t:Expr, rhs:Expr) -> Expr:
    """Check an assignment target; sets t.ty to the type the value is converted to before the store."""
    rt = rhs.ty if rhs.ty.kind != "int" else I32
    if isinstance(t, Name) and t.name in MODE_VIEWS: t = Field(t.pos, None, t.name)
    if isinstance(t, Name):
      v = self.lookup(t.name) or self.state_var(t.name, t)
      if v is None: v = self.new_local(t.name, rt)
      if v.count is not None: raise self.err(f"cannot assign a whole array {t.name}", t)
      t.var = v
      if v.kind == "state":
        self.info.writes.add(v.name)
        t.ty = (rt if rt.bits <= WIDE_BITS else v.ty) if v.name in WIDE else v.ty
      else: t.ty = v.ty
      return t
    if isinstance(t, Field):
      self.e_Field(t)
      self.info.reads.discard(t.sname)
      self.info.writes.add(t.sname)
      return t
    if isinstance(t, Typed):
      base = t.x
      if isinstance(base, Index) and isinstance(base.x, Name) and base.x.name == "MEM":
        base.idx = self.expr(base.idx)
        base.kind, base.nbits = "mem", t.to.bits
        self.info.mem_wr = True
      elif isinstance(base, Index) and isinstance(base.x, Index) and isinstance(base.x.x, Name) and base.x.x.name == "VGPR":
        base.x.idx, base.idx = self.expr(base.x.idx), self.expr(base.idx)
        base.kind, base.nbits = "vgpr", t.to.bits
        self.info.vgpr_wr = True
      elif isinstance(base, Index) and isinstance(base.x, Name) and base.x.name == "SGPR":
        base.idx = self.expr(base.idx)
        base.kind, base.nbits = "sgpr", t.to.bits
        self.info.sgpr_wr = True
      elif isinstance(base, (Slice, Index)): t.x = self.target(base, _dummy(t.to))
      else: t.x = self.target_storage(base, t.to.bits)
      t.ty = t.to
      return t
    if isinstance(t, Index):
      if isinstance(t.x, Name) and t.x.name == "MEM":
        if rt.bits not in (8, 16, 32, 64) or (isinstance(rhs, Call) and rhs.name in B.EXTERNAL):
          raise self.err("MEM[...] store needs a type, e.g. MEM[addr].b32 = ...", t)
        t.idx = self.expr(t.idx)
        t.kind, t.nbits, t.ty = "mem", rt.bits, Ty("b", rt.bits)
        self.info.mem_wr = True
        return t
      if isinstance(t.x, Index) and isinstance(t.x.x, Name) and t.x.x.name == "VGPR":
        t.x.idx, t.idx = self.expr(t.x.idx), self.expr(t.idx)
        t.kind, t.nbits, t.ty = "vgpr", 32, Ty("b", 32)
        self.info.vgpr_wr = True
        return t
      if isinstance(t.x, Name) and t.x.name == "SGPR":
        t.idx = self.expr(t.idx)
        t.kind, t.nbits, t.ty = "sgpr", 32, Ty("b", 32)
        self.info.sgpr_wr = True
        return t
      if isinstance(t.x, Name) and (v := self.lookup(t.x.name)) is not None and v.count is not None:
        t.x.var, t.x.ty = v, v.ty
        t.idx = self.expr(t.idx)
        t.kind, t.ty = "array", v.ty
        return t
      mx = const_eval(t.idx, self.loop_max)
      t.x = self.target_storage(t.x, (mx + 1) if mx is not None else 64)
      t.idx = self.expr(t.idx)
      t.kind, t.ty = "bit", U1
      return t
    if isinstance(t, Slice):
      hi = const_eval(t.hi if t.width is None else t.lo, self.loop_max)
      need = (hi + (const_eval(t.width) or 1) if t.width is not None else (hi or 0) + 1) if hi is not None else 64
      t.x = self.target_storage(t.x, need)
      self.e_Slice_bounds(t)
      return t
    if isinstance(t, Concat):
      widths = [p.to.bits if isinstance(p, Typed) else (v.ty.bits if isinstance(p, Name) and (v := self.lookup(p.name)) else None) for p in t.parts]
      if None in widths:
        known, unknown = sum(w for w in widths if w), widths.count(None)
        if (rt.bits - known) % unknown or rt.bits <= known: raise self.err("cannot infer the widths of the { } parts; declare them", t)
        widths = [w or (rt.bits - known) // unknown for w in widths]
      t.parts = [self.target(p, _dummy(Ty("b", w))) for p, w in zip(t.parts, widths)]
      t.ty = Ty("b", sum(p.ty.bits for p in t.parts))
      return t
    raise self.err(f"cannot assign to {type(t).__name__}", t)

  def target_storage(self, x:Expr, need:int) -> Expr:
    """The variable whose bits a slice/bit/typed store updates; an unknown name becomes a local wide enough for `need` bits."""
    if isinstance(x, Name):
      v = self.lookup(x.name) or self.state_var(x.name, x)
      if v is None: v = self.new_local(x.name, Ty("b", _round(need)))
      elif v.kind != "state" and v.ty.bits < need and not v.ty.isfloat: v.ty = Ty(v.ty.kind, _round(need))
      x.var, x.ty = v, v.ty
      if v.kind == "state": self.info.writes.add(v.name)
      return x
    if isinstance(x, Typed) and isinstance(x.x, Name):
      x.x = self.target_storage(x.x, x.to.bits)
      x.ty = x.to
      return x
    if isinstance(x, Field):
      self.e_Field(x)
      self.info.writes.add(x.sname)
      return x
    if isinstance(x, Index) and isinstance(x.x, Index) and isinstance(x.x.x, Name) and x.x.x.name == "VGPR":
      x.x.idx, x.idx = self.expr(x.x.idx), self.expr(x.idx)
      x.kind, x.nbits, x.ty = "vgpr", 32, Ty("b", 32)
      self.info.vgpr_rd = self.info.vgpr_wr = True
      return x
    if isinstance(x, Index) and isinstance(x.x, Name) and (v := self.lookup(x.x.name)) is not None and v.count is not None:
      x.x.var, x.x.ty = v, v.ty
      x.idx = self.expr(x.idx)
      x.kind, x.ty = "array", v.ty
      return x
    raise self.err(f"cannot store into part of {type(x).__name__}", x)

  def e_Slice_bounds(self, t:Slice):
    if t.width is not None:
      w = const_eval(t.width)
      if w is None: raise self.err("part-select width must be constant", t)
      t.lo, t.width, t.hi, t.rev = self.expr(t.lo), w, None, False
    else:
      w = slice_width(t.hi, t.lo)
      if w is None: raise self.err("slice width must be constant (bounds must be constants or differ by one)", t)
      h, l = const_eval(t.hi), const_eval(t.lo)
      t.rev = h is not None and l is not None and h < l
      if t.rev: t.hi, t.lo = t.lo, t.hi
      t.hi, t.lo, t.width = self.expr(t.hi), self.expr(t.lo), w
    t.ty = Ty("b", w)

def _round(n:int) -> int:
  for w in (32, 64, 128, 256, 512, 1024):
    if n <= w: return w
  return n

def walk_stmts(body:list[Stmt]):
  for s in body:
    yield s
    if isinstance(s, If):
      for _, b in s.arms: yield from walk_stmts(b)
      if s.orelse: yield from walk_stmts(s.orelse)
    elif isinstance(s, (For, While)): yield from walk_stmts(s.body)

def walk_returns(body:list[Stmt]):
  return [s for s in walk_stmts(body) if isinstance(s, Return)]

def check(prog:Program, arch:str, op:str, resolve=lambda name: None, depth:int=0) -> Program:
  """Type-check `prog` in place.

  Args:
    prog: the parsed entry.
    arch, op: used in error messages.
    resolve: callable mapping an instruction-call name (`v_max_f32`) to that instruction's parsed body, or None.
  Returns:
    The same Program with typed nodes; `prog.info['op']` is the OpInfo.
  Raises:
    PcodeTypeError: unknown names/functions, bad widths, unsupported constructs (op, arch, line, col set).
  """
  c = Checker(arch, op, resolve, depth)
  prog.body = c.block(prog.body)
  prog.info["op"] = c.info
  prog.info["state"] = {n: v for n, v in c.frames[0].items() if v.kind == "state"}
  return prog
