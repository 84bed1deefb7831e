"""Kernel -> C: one thread function per kernel (registers are C locals holding raw bits, PTX labels are C labels) and an
exported launcher that loops over the grid (`run_grid` in ptx_rt.h). `bar.sync` saves the registers and returns to the
launcher; the next round resumes every thread after it. Semantics of each form are in `_OPS` below and docs/ptx.md."""
from __future__ import annotations
import re, struct
from mockgpu.mock.errors import PTXError
from mockgpu.mock.ptx.parse import Inst, Kernel, TYPES

__all__ = ["emit", "GEN_VERSION"]
GEN_VERSION = "1"

_SPECIAL = {f"%{s}.{d}": e for s, es in (("tid", ("tx", "ty", "tz")), ("ctaid", ("bx", "by", "bz")),
            ("ntid", ("c->block[0]", "c->block[1]", "c->block[2]")), ("nctaid", ("c->grid[0]", "c->grid[1]", "c->grid[2]")))
            for d, e in zip("xyz", es)}
_CACHE_OPS = {"ca", "cg", "cs", "lu", "cv", "nc", "volatile", "weak", "relaxed", "cta", "gpu", "sys"}
_FLOAT_ROUND = {"rn", "approx", "full"}            # rounding qualifiers that all mean "correctly rounded" here (docs/ptx.md)

def bits_of(t:str) -> int: return max(8, TYPES[t][1])
def utype(n:int) -> str: return f"uint{max(8, n)}_t"
def vtype(t:str) -> str:
  k, n = TYPES[t]
  return {"u": utype(n), "b": utype(n), "s": f"int{n}_t", "p": "int"}.get(k) or ("double" if n == 64 else "float")

class _Emit:
  def __init__(self, k:Kernel, idx:int):
    self.idx, self.k, self.params = idx, k, {n: i for i, (n, _) in enumerate(k.params)}
    self.labels = {x: i for i, x in enumerate(k.body) if isinstance(x, str)}
    self.barriers: list[int] = []
    self.nsites = 0                                        # global access sites (each caches the range it hit last)

  def err(self, i:Inst, why:str) -> PTXError:
    return PTXError(f"kernel {self.k.name!r} line {i.line}: {why}: {i.text!r}. Next step: the modelled PTX subset is listed in docs/ptx.md")

  @staticmethod
  def reg(r:str) -> str: return "r_" + re.sub(r"\W", "_", r[1:])

  # ---- operands
  def bits(self, i:Inst, op:str, t:str) -> str:
    """C expression of the raw bits (width of `t`) of operand `op` read as type `t`."""
    n = bits_of(t)
    if op in self.k.regs:
      rn = bits_of(self.k.regs[op])
      if rn < n and TYPES[self.k.regs[op]][0] == "s": return f"(({utype(n)})(int{n}_t)(int{rn}_t){self.reg(op)})"
      return f"(({utype(n)}){self.reg(op)})"
    if op in _SPECIAL: return f"(({utype(n)}){_SPECIAL[op]})"
    if (m:=re.fullmatch(r"([\w$]+)(?:\[(\d+)\])?", op)) and m[1] in self.k.shared: return f"(({utype(n)}){self.k.shared[m[1]][0] + int(m[2] or 0)}ULL)"
    return f"(({utype(n)}){self.imm(i, op, t)}ULL)"

  def imm(self, i:Inst, op:str, t:str) -> int:
    n, k = bits_of(t), TYPES[t][0]
    try:
      if op[:2] in ("0f", "0F") and len(op) == 10: v = int(op[2:], 16); return v if n == 32 else self._fconv(struct.unpack("<f", v.to_bytes(4, "little"))[0], t)
      if op[:2] in ("0d", "0D") and len(op) == 18: v = int(op[2:], 16); return v if n == 64 else self._fconv(struct.unpack("<d", v.to_bytes(8, "little"))[0], t)
      if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)[uU]?", op): return int(op.rstrip("uU"), 0) & ((1 << n) - 1)
      if k == "f" and re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", op): return self._fconv(float(op), t)
    except (ValueError, struct.error, OverflowError): pass
    raise self.err(i, f"operand {op!r} is not a register, special register, shared symbol or immediate of type .{t}")

  @staticmethod
  def _fconv(v:float, t:str) -> int:
    if TYPES[t][0] != "f": return int(v) & ((1 << bits_of(t)) - 1)
    return int.from_bytes(struct.pack({16: "<e", 32: "<f", 64: "<d"}[bits_of(t)], v), "little")

  def rd(self, i:Inst, op:str, t:str) -> str:
    """C value of operand `op` as PTX type `t` (floats: f16 as float, f32 float, f64 double; ints as intN/uintN)."""
    b, (k, n) = self.bits(i, op, t), TYPES[t]
    if k == "p": return f"({b} != 0)"
    if k == "f": return {16: f"h2f((uint16_t){b})", 32: f"b2f((uint32_t){b})", 64: f"b2d((uint64_t){b})"}[n]
    return f"(({vtype(t)}){b})"

  def wr(self, i:Inst, d:str, t:str, v:str) -> str:
    if d not in self.k.regs: raise self.err(i, f"destination {d!r} is not a declared register")
    k, n = TYPES[t]
    rt = utype(bits_of(self.k.regs[d]))
    if k == "p": return f"{self.reg(d)} = ({rt})(({v}) != 0);"
    if k == "f": return f"{self.reg(d)} = ({rt}){ {16: 'TOH', 32: 'f2b', 64: 'd2b'}[n] }({v});"
    return f"{self.reg(d)} = ({rt})({vtype(t)})({v});"

  # ---- one instruction
  def inst(self, i:Inst) -> str:
    fn = _OPS.get(i.op[0])
    if fn is None: raise self.err(i, f"instruction {'.'.join(i.op)} is not modelled")
    code = fn(self, i)
    if i.pred is None: return code
    if i.pred[0] not in self.k.regs: raise self.err(i, f"guard predicate {i.pred[0]} is not declared")
    return f"if ({'!' if i.pred[1] else ''}{self.reg(i.pred[0])}) {{ {code} }}"

  def typ(self, i:Inst, t:str) -> str:
    if t not in TYPES: raise self.err(i, f"type .{t} is not modelled")
    return t

  def args(self, i:Inst, n:int) -> tuple[str, ...]:
    if len(i.args) != n: raise self.err(i, f"expected {n} operands, got {len(i.args)}")
    return i.args

  def addr(self, i:Inst, op:str, space:str) -> str:
    if not (m:=re.fullmatch(r"\[\s*([%\w$.]+)\s*(?:\+\s*(-?\d+))?\s*\]", op)): raise self.err(i, f"address {op!r} is not [reg+imm] or [symbol+imm]")
    off = int(m[2] or 0)
    if space == "param":
      if m[1] not in self.params or off: raise self.err(i, f"{op!r} does not name a kernel parameter at offset 0")
      return str(self.params[m[1]])
    base = f"({self.k.shared[m[1]][0]}ULL)" if m[1] in self.k.shared else self.bits(i, m[1], "u64")
    return f"((uint64_t){base} + (uint64_t)({off}LL))"

  def emit(self) -> str:
    body = []
    for x in self.k.body:
      if isinstance(x, str): body.append(f"L_{re.sub(r'[^A-Za-z0-9_]', '_', x)}:;")
      else: body.append(f"  {self.inst(x)}  /* {x.line}: {x.text.replace('*/', '* /')} */")
    regs = list(self.k.regs)
    decl = " ".join(f"{utype(bits_of(t))} {self.reg(r)} = 0;" for r, t in self.k.regs.items())
    save = " ".join(f"save[{j}] = {self.reg(r)};" for j, r in enumerate(regs))
    restore = " ".join(f"{self.reg(r)} = ({utype(bits_of(self.k.regs[r]))})save[{j}];" for j, r in enumerate(regs))
    cases = " ".join(f"case {ln}: {restore} goto B_{ln};" for ln in self.barriers)
    body = [b.replace("@SAVE@", save) for b in body]
    return "\n".join([
      f"static int th_{self.idx}(PtxCtx *c, uint32_t tx, uint32_t ty, uint32_t tz, uint32_t bx, uint32_t by, uint32_t bz, int *resume, uint64_t *save) {{",
      f"  uint64_t left = c->left; {decl}",
      "  (void)tx; (void)ty; (void)tz; (void)bx; (void)by; (void)bz; (void)save;",
      f"  switch (*resume) {{ case 0: break; {cases} default: break; }}",
      *body,
      "done: *resume = -1; c->left = left; return 0;",
      "}",
      f"int ptx_kernel_{self.idx}(PtxCtx *c) {{ return run_grid(c, th_{self.idx}, {len(regs)}, {int(bool(self.barriers))}, {self.nsites}); }}"])

def _mov(e:_Emit, i:Inst) -> str:
  t = e.typ(i, i.op[-1]); d, a = e.args(i, 2)
  n = bits_of(t)
  if a.startswith("{"):                                   # pack {lo, ..., hi} into one register
    parts = [p.strip() for p in a[1:-1].split(",")]; w = n // len(parts); pt = f"b{w}"
    return e.wr(i, d, f"b{n}", " | ".join(f"(({utype(n)}){e.bits(i, p, pt)} << {j*w})" for j, p in enumerate(parts)))
  if d.startswith("{"):                                   # unpack
    parts = [p.strip() for p in d[1:-1].split(",")]; w = n // len(parts)
    return " ".join(e.wr(i, p, f"b{w}", f"({e.bits(i, a, t)} >> {j*w})") for j, p in enumerate(parts))
  return e.wr(i, d, t, e.rd(i, a, t))

def _mem(e:_Emit, i:Inst) -> str:
  is_ld = i.op[0] == "ld"
  mods = [m for m in i.op[1:-1] if m not in _CACHE_OPS]
  space, vec = (mods[0] if mods else "generic"), 1
  if len(mods) > 1 and (vm:=re.fullmatch(r"v(\d)", mods[1])): vec = int(vm[1])
  if space not in ("param", "global", "shared") or len(mods) > 1 + (vec > 1): raise e.err(i, "only ld/st on .param, .global and .shared (optionally .v2/.v4) are modelled")
  t = e.typ(i, i.op[-1]); n = bits_of(t) // 8
  regs, ad = (e.args(i, 2) if is_ld else e.args(i, 2)[::-1])
  regs = [r.strip() for r in regs[1:-1].split(",")] if regs.startswith("{") else [regs]
  if len(regs) != vec: raise e.err(i, f".v{vec} needs {vec} registers, got {len(regs)}")
  if space == "param":
    if not is_ld: raise e.err(i, "st.param is not modelled")
    return e.wr(i, regs[0], t, _frombits(t, f"c->args[{e.addr(i, ad, 'param')}]"))
  a, size, ut = e.addr(i, ad, space), n * vec, utype(n * 8)
  if space == "global": chk, e.nsites = f"GCHK(a_, {size}, {1 if is_ld else 2}, {i.line}, {e.nsites});", e.nsites + 1
  else: chk = f"SCHK(a_, {size}, {1 if is_ld else 2}, {i.line});"
  ptr = "(void*)(uintptr_t)a_" if space == "global" else "(void*)(c->smem + a_)"
  if is_ld:
    return (f"{{ uint64_t a_ = {a}; {chk} {ut} v_[{vec}]; memcpy(v_, {ptr}, {size}); " +
            " ".join(e.wr(i, r, t, _frombits(t, f"v_[{j}]")) for j, r in enumerate(regs)) + " }")
  vals = ", ".join(f"({ut}){e.bits(i, r, t)}" for r in regs)
  return f"{{ uint64_t a_ = {a}; {chk} {ut} v_[{vec}] = {{{vals}}}; memcpy({ptr}, v_, {size}); }}"

def _frombits(t:str, b:str) -> str:
  k, n = TYPES[t]
  if k == "p": return f"({b} != 0)"
  if k == "f": return {16: f"h2f((uint16_t){b})", 32: f"b2f((uint32_t){b})", 64: f"b2d((uint64_t){b})"}[n]
  return f"(({vtype(t)})({utype(bits_of(t))}){b})"

def _mods(e:_Emit, i:Inst, allowed:set[str], ntypes:int=1) -> list[str]:
  if (bad:=[m for m in i.op[1:-ntypes] if m not in allowed]): raise e.err(i, f"qualifier(s) .{', .'.join(bad)} not modelled")
  return list(i.op[1:-ntypes])

def _arith(e:_Emit, i:Inst) -> str:
  t = e.typ(i, i.op[-1]); k, n = TYPES[t]; op = i.op[0]
  _mods(e, i, ({"lo", "hi"} if k in "us" else _FLOAT_ROUND) | ({"approx", "full"} if op == "div" else set()))
  nin = {"mad": 3, "fma": 3, "neg": 1, "abs": 1, "not": 1}.get(op, 2)
  d, *src = e.args(i, nin + 1)
  a, b, c = ([e.rd(i, s, t) for s in src] + ["", ""])[:3]
  ut = utype(n)
  if k == "f":
    x = {"add": f"{a} + {b}", "sub": f"{a} - {b}", "mul": f"{a} * {b}", "div": f"{a} / {b}", "neg": f"-{a}", "abs": f"fabs({a})",
         "max": f"pmax({a}, {b})", "min": f"pmin({a}, {b})",
         "fma": f"fma((double){a}, (double){b}, (double){c})" if n != 32 else f"fmaf({a}, {b}, {c})",
         "mad": f"fmaf({a}, {b}, {c})" if n == 32 else f"fma((double){a}, (double){b}, (double){c})"}.get(op)
    if n == 32 and op in ("max", "min"): x = f"p{op}f({a}, {b})"
    if n == 16 and op in ("add", "sub", "mul", "div"): x = f"(double)({a}) {'+-*/'['add sub mul div'.split().index(op)]} (double)({b})"
  else:
    sg = k == "s"
    hi = "hi" in i.op
    x = {"add": f"{a} + {b}", "sub": f"{a} - {b}", "mul": f"({ut})(({ut}){a} * ({ut}){b})", "mad": f"({ut})(({ut}){a} * ({ut}){b} + ({ut}){c})",
         "max": f"({a} > {b} ? {a} : {b})", "min": f"({a} < {b} ? {a} : {b})", "neg": f"({ut})(0 - ({ut}){a})",
         "abs": f"({a} < 0 ? ({ut})(0 - ({ut}){a}) : ({ut}){a})",
         "div": f"({b} == 0 ? ({vtype(t)})-1 : " + (f"({b} == -1 ? ({vtype(t)})(0 - ({ut}){a}) : {a} / {b}))" if sg else f"{a} / {b})"),
         "rem": f"({b} == 0 ? {a} : " + (f"({b} == -1 ? 0 : {a} % {b}))" if sg else f"{a} % {b})")}.get(op)
    if hi and op == "mul" and n in (16, 32): x = f"(({'int64_t' if sg else 'uint64_t'}){a} * {b}) >> {n}"
    elif hi and op == "mul": x = f"(({'__int128' if sg else 'unsigned __int128'}){a} * {b}) >> 64"
  if x is None: raise e.err(i, f"{op} on .{t} is not modelled")
  return e.wr(i, d, t, x)

def _bit(e:_Emit, i:Inst) -> str:
  t = e.typ(i, i.op[-1]); op = i.op[0]
  if op == "not": d, a = e.args(i, 2); return e.wr(i, d, t, f"!{e.rd(i, a, t)}" if t == "pred" else f"~{e.rd(i, a, t)}")
  d, a, b = e.args(i, 3)
  return e.wr(i, d, t, f"{e.rd(i, a, t)} {'&|^'['and or xor'.split().index(op)]} {e.rd(i, b, t)}")

def _shift(e:_Emit, i:Inst) -> str:
  t = e.typ(i, i.op[-1]); d, a, b = e.args(i, 3); (k, n), ut = TYPES[t], utype(TYPES[t][1])
  x, s = e.rd(i, a, t), e.rd(i, b, "u32")
  if i.op[0] == "shl": v = f"({s} >= {n} ? 0 : ({ut})(({ut}){x} << {s}))"
  elif k == "s": v = f"({s} >= {n} ? ({x} < 0 ? -1 : 0) : {x} >> {s})"
  else: v = f"({s} >= {n} ? 0 : {x} >> {s})"
  return e.wr(i, d, t, v)

_CMP = {"eq": "{a} == {b}", "ne": "({a} == {a} && {b} == {b} && {a} != {b})", "lt": "{a} < {b}", "le": "{a} <= {b}", "gt": "{a} > {b}",
        "ge": "{a} >= {b}", "equ": "!({a} < {b} || {a} > {b})", "neu": "!({a} == {b})", "ltu": "!({a} >= {b})", "leu": "!({a} > {b})",
        "gtu": "!({a} <= {b})", "geu": "!({a} < {b})", "num": "({a} == {a} && {b} == {b})", "nan": "({a} != {a} || {b} != {b})"}
_ICMP = {**{k: "{a} " + o + " {b}" for k, o in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="))},
         **{k: "{a} " + o + " {b}" for k, o in (("lo", "<"), ("ls", "<="), ("hi", ">"), ("hs", ">="))}}
def _setp(e:_Emit, i:Inst) -> str:
  if len(i.op) != 3 or i.op[1] not in _CMP: raise e.err(i, "only setp.<cmp>.<type> without a boolean combiner is modelled")
  t = e.typ(i, i.op[2]); d, a, b = e.args(i, 3)
  if "|" in d: raise e.err(i, "setp with a second destination (p|q) is not modelled")
  if TYPES[t][0] == "f": cmp = _CMP[i.op[1]]
  elif (cmp:=_ICMP.get(i.op[1])) is None: raise e.err(i, f"setp.{i.op[1]} is a float-only comparison")
  return e.wr(i, d, "pred", cmp.format(a=f"({e.rd(i, a, t)})", b=f"({e.rd(i, b, t)})"))

def _selp(e:_Emit, i:Inst) -> str:
  t = e.typ(i, i.op[-1]); d, a, b, p = e.args(i, 4)
  return e.wr(i, d, t, f"({e.rd(i, p, 'pred')} ? {e.rd(i, a, t)} : {e.rd(i, b, t)})")

_RI = {"rzi": "trunc", "rni": "rint", "rmi": "floor", "rpi": "ceil"}
def _cvt(e:_Emit, i:Inst) -> str:
  dt, st = e.typ(i, i.op[-2]), e.typ(i, i.op[-1]); mods = _mods(e, i, {*_RI, "rn", "ftz"}, 2)
  d, a = e.args(i, 2); (dk, dn), (sk, sn) = TYPES[dt], TYPES[st]
  rnd = [m for m in mods if m in _RI or m == "rn"]
  v = e.rd(i, a, st)
  if sk == "f" and dk in "usb":
    if not rnd or rnd[0] not in _RI: raise e.err(i, "float -> integer cvt needs .rzi/.rni/.rmi/.rpi")
    r = f"{_RI[rnd[0]]}((double){v})"
    return e.wr(i, d, dt, f"f2s({r}, {dn})" if dk == "s" else f"f2u({r}, {dn})")
  if sk == "f" and dk == "f":
    if rnd and rnd[0] in _RI: v = f"{_RI[rnd[0]]}((double){v})"
    elif dn < sn and rnd != ["rn"]: raise e.err(i, "narrowing float cvt needs .rn")
    return e.wr(i, d, dt, f"(double){v}" if dn != 32 else f"(float)(double){v}")
  if dk == "f":
    if rnd != ["rn"]: raise e.err(i, "integer -> float cvt needs .rn")
    return e.wr(i, d, dt, f"(double){v}" if dn != 32 else f"(float){v}")
  if rnd: raise e.err(i, "rounding qualifier on an integer -> integer cvt")
  return e.wr(i, d, dt, v)

_TRANS = {"rcp": "1.0 / {a}", "ex2": "exp2({a})", "lg2": "log2({a})", "sin": "sin({a})", "cos": "cos({a})", "sqrt": "sqrt({a})",
          "rsqrt": "1.0 / sqrt({a})"}
def _trans(e:_Emit, i:Inst) -> str:
  t = e.typ(i, i.op[-1]); _mods(e, i, _FLOAT_ROUND | {"ftz"}); d, a = e.args(i, 2)
  if TYPES[t][0] != "f": raise e.err(i, f"{i.op[0]} on .{t} is not modelled")
  x = _TRANS[i.op[0]].format(a=f"(double){e.rd(i, a, t)}")
  if i.op[0] == "rcp" and TYPES[t][1] == 32: x = f"1.0f / {e.rd(i, a, t)}"     # correctly rounded in f32 directly
  return e.wr(i, d, t, x if TYPES[t][1] != 32 else f"(float)({x})")

def _bra(e:_Emit, i:Inst) -> str:
  (lab,) = e.args(i, 1)
  if lab not in e.labels: raise e.err(i, f"branch target {lab!r} is not a label of this kernel")
  me = next(j for j, x in enumerate(e.k.body) if x is i)
  back = f"BACK({i.line}); " if e.labels[lab] <= me else ""
  return f"{{ {back}goto L_{re.sub(r'[^A-Za-z0-9_]', '_', lab)}; }}"

def _bar(e:_Emit, i:Inst) -> str:
  if i.pred is not None: raise e.err(i, "a predicated barrier is not modelled")
  if i.op[1:] not in (("sync",), ("sync", "aligned")) or i.args not in ((), ("0",)): raise e.err(i, "only bar.sync 0 / barrier.sync 0 is modelled")
  e.barriers.append(i.line)
  return f"@SAVE@ *resume = {i.line}; c->left = left; return 0; B_{i.line}:;"

def _ret(e:_Emit, i:Inst) -> str: return "goto done;"

_OPS = {"mov": _mov, "ld": _mem, "st": _mem, "cvt": _cvt, "setp": _setp, "selp": _selp, "bra": _bra, "bar": _bar, "barrier": _bar,
        "ret": _ret, "exit": _ret, **{o: _arith for o in ("add", "sub", "mul", "mad", "fma", "div", "rem", "max", "min", "neg", "abs")},
        **{o: _bit for o in ("and", "or", "xor", "not")}, "shl": _shift, "shr": _shift, **{o: _trans for o in _TRANS}}

def emit(k:Kernel, idx:int) -> str:
  """C source of one kernel (compiled after ptx_rt.h); the exported launcher is `int ptx_kernel_<idx>(PtxCtx*)`.

  Raises: PTXError naming the line of the first instruction form that is not modelled."""
  return _Emit(k, idx).emit()
