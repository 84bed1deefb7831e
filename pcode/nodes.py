"""Typed AST of the pseudocode. The parser builds it; `typecheck` fills `Expr.ty`; the backends walk it."""
from __future__ import annotations
from dataclasses import dataclass, field
__all__ = ["Ty", "Expr", "Num", "Name", "Typed", "Field", "Index", "Slice", "Cast", "Call", "Unary", "Binary", "Ternary", "Concat",
           "Stmt", "Assign", "If", "For", "While", "Break", "Return", "Declare", "ExprStmt", "Lambda", "Program", "walk"]

@dataclass(frozen=True)
class Ty:
  """A value type: kind 'u' 'i' 'b' (raw bits) 'f' (IEEE float, 16/32/64) 'bf' (bfloat16) or a small float format
  ('fp8' 'bf8' 'fp6' 'bf6' 'fp4': raw bits passed to conversion built-ins); 'int' is an unsized literal."""
  kind: str
  bits: int
  @property
  def isfloat(self) -> bool: return self.kind in ("f", "bf", "fp8", "bf8", "fp6", "bf6", "fp4")
  @property
  def signed(self) -> bool: return self.kind in ("i", "int")
  def __repr__(self): return "int" if self.kind == "int" else f"{self.kind}{self.bits}"

@dataclass(eq=False)
class Expr:
  pos: tuple[int, int]
  def __post_init__(self): self.ty: Ty|None = None

@dataclass(eq=False)
class Num(Expr):
  val: int|float
  ty0: Ty|None        # type from a suffix or size prefix, None for a plain integer literal

@dataclass(eq=False)
class Name(Expr):
  name: str

@dataclass(eq=False)
class Typed(Expr):     # x.u32, x.f16, MEM[a].b64: reinterpret (or truncate/extend) the bits of x
  x: Expr
  to: Ty

@dataclass(eq=False)
class Field(Expr):     # WAVE_MODE.IEEE, TADDR.X: a named field of a state record
  x: Expr
  name: str

@dataclass(eq=False)
class Index(Expr):     # x[i]: a bit of a value, an element of an array, MEM[addr], VGPR[lane], SGPR[i]
  x: Expr
  idx: Expr

@dataclass(eq=False)
class Slice(Expr):     # x[hi : lo] (hi < lo reverses the bits), x[lo +: width] (width given, `hi` is None)
  x: Expr
  hi: Expr|None
  lo: Expr
  width: Expr|None = None

@dataclass(eq=False)
class Cast(Expr):      # 32'U(x) 64'F(x): value conversion to a width/kind
  to: Ty
  x: Expr

@dataclass(eq=False)
class Call(Expr):
  name: str
  args: list[Expr]

@dataclass(eq=False)
class Unary(Expr):
  op: str
  x: Expr

@dataclass(eq=False)
class Binary(Expr):
  op: str
  a: Expr
  b: Expr

@dataclass(eq=False)
class Ternary(Expr):
  c: Expr
  a: Expr
  b: Expr

@dataclass(eq=False)
class Concat(Expr):    # { hi, ..., lo }
  parts: list[Expr]

@dataclass(eq=False)
class Stmt:
  pos: tuple[int, int]

@dataclass(eq=False)
class Assign(Stmt):
  lhs: Expr
  op: str             # '=' or a compound operator ('+=' ...)
  rhs: Expr

@dataclass(eq=False)
class If(Stmt):
  arms: list[tuple[Expr, list[Stmt]]]
  orelse: list[Stmt]|None

@dataclass(eq=False)
class For(Stmt):
  var: str
  lo: Expr
  hi: Expr
  body: list[Stmt]

@dataclass(eq=False)
class While(Stmt):
  cond: Expr
  body: list[Stmt]

@dataclass(eq=False)
class Break(Stmt): pass

@dataclass(eq=False)
class Return(Stmt):
  x: Expr

@dataclass(eq=False)
class Declare(Stmt):
  name: str
  ty: Ty
  count: int|None     # array length, None for a scalar

@dataclass(eq=False)
class ExprStmt(Stmt):
  x: Expr

@dataclass(eq=False)
class Lambda(Stmt):   # NAME = lambda(a, b) ( expr | statements )
  name: str
  params: list[str]
  body: list[Stmt]    # an expression body is a single Return

@dataclass(eq=False)
class Program:
  body: list[Stmt]
  info: dict = field(default_factory=dict)   # filled by typecheck: variables, reads/writes

def walk(node):
  """Yield every Expr and Stmt under `node` (a Stmt, Expr or list of them), parents before children."""
  if isinstance(node, list):
    for n in node: yield from walk(n)
    return
  if node is None: return
  yield node
  if isinstance(node, (Expr, Stmt)):
    for k, v in vars(node).items():
      if k in ("pos", "ty", "ty0", "to"): continue
      if isinstance(v, (Expr, Stmt, list)):
        if isinstance(v, list) and v and isinstance(v[0], tuple):
          for c, b in v: yield from walk(c); yield from walk(b)
        else: yield from walk(v)
