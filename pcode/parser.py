"""Recursive-descent parser: pseudocode text -> `ast.Program`. Precedence follows C, with `**` binding tighter than `*`."""
import re
from mockgpu.pcode.nodes import (Ty, Expr, Num, Name, Typed, Field, Index, Slice, Cast, Call, Unary, Binary, Ternary, Concat, Stmt, Assign, If,
                               For, While, Break, Return, Declare, ExprStmt, Lambda, Program)
from mockgpu.pcode.lexer import Tok, tokenize
from mockgpu.pcode.errors import PcodeSyntaxError
__all__ = ["parse", "type_suffix", "prefix_type"]

_BINOPS = [["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!=", "<>"], ["<", ">", "<=", ">="], ["<<", ">>"], ["+", "-"], ["*", "/", "%"]]
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "|=", "&=", "^=", "<<=", ">>="}
_BLOCK_END = {"elsif", "else", "endif", "endfor", "endwhile"}
_SUFFIX_RE = re.compile(r"(u|i|b|f)(\d+)|bf16|fp8|bf8|fp6|bf6|fp4")
_SMALLF = {"fp8": 8, "bf8": 8, "fp6": 6, "bf6": 6, "fp4": 4}

def type_suffix(s:str) -> Ty|None:
  """The type a `.suffix` names (`u32` -> Ty('u',32), `bf16` -> Ty('bf',16)), or None if `s` is a field name."""
  if not _SUFFIX_RE.fullmatch(s): return None
  if s == "bf16": return Ty("bf", 16)
  if s in _SMALLF: return Ty(s, _SMALLF[s])
  return Ty(s[0], int(s[1:]))

def prefix_type(width:int, letter:str) -> Ty:
  """The type of a `32'U` style prefix."""
  return Ty({"U": "u", "I": "i", "F": "f", "B": "b", "BF": "bf"}[letter], width)

class _Parser:
  def __init__(self, toks:list[Tok]): self.toks, self.i = toks, 0
  @property
  def t(self) -> Tok: return self.toks[self.i]
  def err(self, msg:str, tok:Tok|None=None):
    tok = tok or self.t
    return PcodeSyntaxError(f"{msg} (found {tok.val if tok.kind != 'eof' else 'end of text'!r})", line=tok.line, col=tok.col)
  def at(self, val, kind=None) -> bool: return self.t.val == val and self.t.kind in ((kind,) if kind else ("op", "kw"))
  def next(self) -> Tok:
    tok = self.t
    self.i += 1
    return tok
  def expect(self, val, kind=None) -> Tok:
    if not self.at(val, kind): raise self.err(f"expected {val!r}")
    return self.next()
  def accept(self, val) -> bool:
    if self.at(val):
      self.next()
      return True
    return False

  # statements
  def block(self) -> list[Stmt]:
    out: list[Stmt] = []
    while True:
      while self.accept(";"): pass
      if self.t.kind == "eof" or (self.t.kind == "kw" and self.t.val in _BLOCK_END) or self.at(")"): return out
      st = self.stmt()
      out.extend(st) if isinstance(st, list) else out.append(st)
  def stmt(self) -> Stmt|list[Stmt]:
    tok = self.t
    pos = (tok.line, tok.col)
    if tok.kind == "kw":
      if tok.val == "if": return self.if_stmt()
      if tok.val == "for":
        self.next()
        var = self.next()
        if var.kind != "name": raise self.err("expected a loop variable", var)
        if self.t.val != "in": raise self.err("expected 'in'")
        self.next()
        lo = self.expr()
        self.expect(":")
        hi = self.expr()
        self.expect("do")
        body = self.block()
        self.expect("endfor")
        return For(pos, var.val, lo, hi, body)
      if tok.val == "while":
        self.next()
        cond = self.expr()
        self.expect("do")
        body = self.block()
        self.expect("endwhile")
        return While(pos, cond, body)
      if tok.val == "break": return Break((self.next().line, tok.col))
      if tok.val == "return":
        self.next()
        return Return(pos, self.expr())
      if tok.val == "declare":
        self.next()
        name = self.next()
        if name.kind != "name": raise self.err("expected a name after declare", name)
        self.expect(":")
        ty = self.next()
        if ty.kind != "type": raise self.err("expected a type like 32'U after declare NAME :", ty)
        count = None
        if self.accept("["):
          n = self.next()
          if n.kind != "num": raise self.err("expected an array length", n)
          count = n.val[0]
          self.expect("]")
        return Declare(pos, name.val, prefix_type(*ty.val), count)
      raise self.err("unexpected keyword")
    if tok.kind == "name" and self.toks[self.i+1].val == "=" and self.toks[self.i+2].val == "lambda": return self.lambda_def()
    lhs = self.expr()
    if self.t.kind == "op" and self.t.val in _ASSIGN and not self.t.nl:
      op = self.next().val
      rhs = self.expr()
      if op == "=" and self.at("=") and not self.t.nl:   # chained `a = b = x`: assign b, then a from b
        self.next()
        return [Assign(pos, rhs, "=", self.expr()), Assign(pos, lhs, "=", rhs)]
      return Assign(pos, lhs, op, rhs)
    if isinstance(lhs, Call): return ExprStmt(pos, lhs)
    raise self.err("expected an assignment or a call")
  def if_stmt(self) -> If:
    pos = (self.t.line, self.t.col)
    self.expect("if")
    arms, orelse = [], None
    while True:
      cond = self.expr()
      self.expect("then")
      arms.append((cond, self.block()))
      if self.accept("elsif"): continue
      if self.accept("else"): orelse = self.block()
      self.expect("endif")
      return If(pos, arms, orelse)
  def lambda_def(self) -> Lambda:
    name = self.next()
    self.expect("=")
    self.expect("lambda")
    self.expect("(")
    params = []
    while not self.at(")"):
      p = self.next()
      if p.kind != "name": raise self.err("expected a parameter name", p)
      params.append(p.val)
      if not self.accept(","): break
    self.expect(")")
    self.expect("(")
    if self.t.kind == "kw": body = self.block()
    else:
      e = self.expr()
      body = [Return(e.pos, e)]
    self.expect(")")
    return Lambda((name.line, name.col), name.val, params, body)

  # expressions
  def expr(self) -> Expr:
    c = self.binary(0)
    if self.at("?"):
      self.next()
      a = self.expr()
      self.expect(":")
      return Ternary(c.pos, c, a, self.expr())
    return c
  def binary(self, lvl:int) -> Expr:
    if lvl == len(_BINOPS): return self.power()
    a = self.binary(lvl+1)
    while self.t.kind == "op" and self.t.val in _BINOPS[lvl]:
      op = self.next().val
      a = Binary(a.pos, op, a, self.binary(lvl+1))
    return a
  def power(self) -> Expr:
    a = self.unary()
    if self.at("**"):
      self.next()
      return Binary(a.pos, "**", a, self.power())
    return a
  def unary(self) -> Expr:
    if self.t.kind == "op" and self.t.val in ("-", "!", "~", "+"):
      tok = self.next()
      x = self.unary()
      return x if tok.val == "+" else Unary((tok.line, tok.col), tok.val, x)
    return self.postfix(self.primary())
  def primary(self) -> Expr:
    tok = self.next()
    pos = (tok.line, tok.col)
    if tok.kind == "num":
      v, suf = tok.val
      return Num(pos, v, type_suffix(suf) if suf else None)
    if tok.kind == "float": return Num(pos, tok.val[0], type_suffix(tok.val[1]))
    if tok.kind == "sized":
      v, w, k = tok.val
      return Num(pos, v, Ty(k or "b", w) if k != "f" else Ty("f", w))
    if tok.kind == "cast":
      self.expect("(")
      x = self.expr()
      self.expect(")")
      return Cast(pos, prefix_type(*tok.val), x)
    if tok.kind == "name":
      if self.at("(") and not self.t.nl:
        self.next()
        args = []
        while not self.at(")"):
          args.append(self.expr())
          if not self.accept(","): break
        self.expect(")")
        return Call(pos, tok.val, args)
      return Name(pos, tok.val)
    if tok.kind == "op" and tok.val == "(":
      x = self.expr()
      self.expect(")")
      return x
    if tok.kind == "op" and tok.val == "{":
      parts = [self.expr()]
      while self.accept(","): parts.append(self.expr())
      self.expect("}")
      return Concat(pos, parts)
    raise self.err("expected an expression", tok)
  def postfix(self, x:Expr) -> Expr:
    while not self.t.nl:
      if self.at("."):
        self.next()
        f = self.next()
        if f.kind != "name": raise self.err("expected a type suffix or field name after '.'", f)
        ty = type_suffix(f.val)
        x = Typed(x.pos, x, ty) if ty is not None else Field(x.pos, x, f.val)
      elif self.at("["):
        self.next()
        a = self.expr()
        if self.accept(":"): x = Slice(x.pos, x, a, self.expr())
        elif self.accept("+:"): x = Slice(x.pos, x, None, a, self.expr())
        else: x = Index(x.pos, x, a)
        self.expect("]")
      else: return x
    return x

def parse(src:str) -> Program:
  """Parse one pseudocode entry.

  Args:
    src: the pseudocode text.
  Returns:
    The untyped Program (run `typecheck.check` to type it).
  Raises:
    PcodeSyntaxError: with line and column of the first token that does not fit the grammar.
  """
  p = _Parser(tokenize(src))
  body = p.block()
  if p.t.kind != "eof": raise p.err("unexpected token at statement start")
  return Program(body)
