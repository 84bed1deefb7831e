"""PTX text -> kernels: the subset tinygrad's PTXRenderer emits (docs/contracts/pci-usb-nv-cuda.md section 6), kept general where
it costs nothing (any number of entries, labels anywhere, vector operands, predicates). Only structure is checked here;
whether an instruction form is executable is decided by `mockgpu.mock.ptx.cgen`, which names the line that it cannot run."""
from __future__ import annotations
import re
from dataclasses import dataclass, field
from mockgpu.mock.errors import PTXError

__all__ = ["Inst", "Kernel", "parse", "TYPES"]

# PTX type -> (kind, bits); kind: u unsigned, s signed, b untyped bits, f float, p predicate
TYPES: dict[str, tuple[str, int]] = {**{f"{k}{n}": (k, n) for k in "usb" for n in (8, 16, 32, 64)},
                                     "f16": ("f", 16), "f32": ("f", 32), "f64": ("f", 64), "pred": ("p", 1)}

@dataclass(frozen=True)
class Inst:
  """One PTX instruction: `op` is the dotted opcode split at the dots (`("ld", "global", "v4", "f32")`), `pred` the guard
  (`("%p", negated)` or None), `args` the operand strings (vectors stay `{...}`), `line` the 1-based line in the source."""
  op: tuple[str, ...]
  args: tuple[str, ...]
  pred: tuple[str, bool] | None
  line: int
  text: str

@dataclass
class Kernel:
  """An `.entry`: parameters in order as (name, type), registers name -> type, shared symbols name -> (offset, bytes), and the
  body as instructions and labels (`str` items are label names)."""
  name: str
  params: list[tuple[str, str]]
  regs: dict[str, str] = field(default_factory=dict)
  shared: dict[str, tuple[int, int]] = field(default_factory=dict)
  shared_bytes: int = 0
  body: list[Inst | str] = field(default_factory=list)

_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

def split_args(s:str) -> list[str]:
  """Operands split at top-level commas (commas inside `{}`/`[]` stay)."""
  out, depth, cur = [], 0, ""
  for ch in s:
    if ch in "{[": depth += 1
    elif ch in "}]": depth -= 1
    if ch == "," and depth == 0: out.append(cur.strip()); cur = ""
    else: cur += ch
  return out + ([cur.strip()] if cur.strip() else [])

def _body_span(text:str, start:int, name:str) -> tuple[int, int]:
  i = text.find("{", start)
  if i < 0: raise PTXError(f"kernel {name!r}: no body '{{' after the parameter list")
  depth = 0
  for j in range(i, len(text)):
    depth += {"{": 1, "}": -1}.get(text[j], 0)
    if depth == 0: return i + 1, j
  raise PTXError(f"kernel {name!r}: body '{{' at line {text.count(chr(10), 0, i)+1} is never closed")

def _declare(k:Kernel, stmt:str, line:int):
  if (m:=re.fullmatch(r"\.reg\s+\.(\w+)\s+(.+)", stmt)):
    if m[1] not in TYPES: raise PTXError(f"kernel {k.name!r} line {line}: register type .{m[1]} is not supported ({stmt!r})")
    for name in split_args(m[2]):
      if not (rm:=re.fullmatch(r"(%[\w$]+?)(?:<(\d+)>)?", name)): raise PTXError(f"kernel {k.name!r} line {line}: bad register name {name!r}")
      for r in ([f"{rm[1]}{i}" for i in range(int(rm[2]))] if rm[2] else [rm[1]]): k.regs[r] = m[1]
  elif (m:=re.fullmatch(r"\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)\[(\d+)\]", stmt)):
    align, nbytes = int(m[1] or 1), TYPES[m[2]][1] // 8 * int(m[4])
    off = (k.shared_bytes + align - 1) // align * align
    k.shared[m[3]], k.shared_bytes = (off, nbytes), off + nbytes
  else: raise PTXError(f"kernel {k.name!r} line {line}: unsupported declaration {stmt!r} (only .reg and .shared arrays are modelled)")

def parse(src:str|bytes) -> dict[str, Kernel]:
  """Parse a PTX module.

  Args: src: PTX text (bytes may carry trailing NULs, as tinygrad's NV path pads them).
  Returns: kernel name -> Kernel, in source order.
  Raises: PTXError naming the kernel, line and statement for anything malformed."""
  text = _COMMENT.sub(lambda m: "\n" * m[0].count("\n"), src.decode(errors="replace").rstrip("\0") if isinstance(src, bytes) else src)
  kernels: dict[str, Kernel] = {}
  for em in _ENTRY.finditer(text):
    params = []
    for p in split_args(em[2]):
      if not (pm:=re.fullmatch(r"\.param\s+\.(\w+)\s+([\w$]+)", p)) or pm[1] not in TYPES:
        raise PTXError(f"kernel {em[1]!r}: unsupported parameter {p!r} (expected '.param .<type> <name>')")
      params.append((pm[2], pm[1]))
    k = kernels[em[1]] = Kernel(em[1], params)
    b0, b1 = _body_span(text, em.end(), em[1])
    line = text.count("\n", 0, b0) + 1
    for chunk in text[b0:b1].split(";"):
      lead = len(chunk) - len(chunk.lstrip())
      stmt_line = line + chunk.count("\n", 0, lead)
      line += chunk.count("\n")
      stmt = chunk.strip()
      while (lm:=re.match(r"([\w$]+)\s*:\s*", stmt)):
        k.body.append(lm[1]); stmt_line += stmt[:lm.end()].count("\n"); stmt = stmt[lm.end():]
      if not stmt: continue
      stmt = " ".join(stmt.split())
      if stmt.startswith("."): _declare(k, stmt, stmt_line); continue
      pred = None
      if (pm:=re.match(r"@(!?)(%[\w$]+)\s+", stmt)): pred, stmt = (pm[2], pm[1] == "!"), stmt[pm.end():]
      opname, _, rest = stmt.partition(" ")
      k.body.append(Inst(tuple(opname.split(".")), tuple(split_args(rest)), pred, stmt_line, stmt))
  if not kernels: raise PTXError("no '.entry' kernel in the PTX module (is this PTX text? tinygrad's PTXCompiler output starts with .version)")
  return kernels
