"""Tokenizer for AMD ISA pseudocode. Newlines are not tokens; each token records whether a newline preceded it."""
import re
from dataclasses import dataclass
from mockgpu.pcode.errors import PcodeSyntaxError
__all__ = ["Tok", "tokenize", "KEYWORDS"]

KEYWORDS = {"if", "then", "elsif", "else", "endif", "for", "do", "endfor", "while", "endwhile", "break", "return", "declare", "lambda"}

@dataclass(frozen=True)
class Tok:
  kind: str   # 'num' 'float' 'sized' 'cast' 'type' 'name' 'kw' 'op' 'str'
  val: object
  line: int
  col: int
  nl: bool    # a newline separates this token from the previous one

_SPEC = [
  ("ws", r"[ \t\r]+"), ("nl", r"\n"), ("comment", r"//[^\n]*"), ("str", r'"[^"\n]*"'),
  # N'U( N'I( N'F( N'B( N'BF(  -> width cast;  N'U N'F ... (type in declare);  N'123U N'0x1f -> sized literal
  ("sized", r"(\d+)'(-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?))(U|I|F|LL|ULL)?"),
  ("cast", r"(\d+)'(BF|U|I|F|B)(?=\s*\()"),
  ("type", r"(\d+)'(BF|U|I|F|B)"),
  ("float", r"(\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(F)?"),
  ("num", r"(0x[0-9a-fA-F]+|\d+)(ULL|LL|U)?"),
  ("name", r"[A-Za-z_][A-Za-z_0-9]*"),
  ("op", r"\+:|\*\*|<<=|>>=|<<|>>|<>|<=|>=|==|!=|&&|\|\||\+=|-=|\*=|/=|\|=|&=|\^=|[-+*/%<>=!~&|^?:;,.()\[\]{}]"),
]
_RE = re.compile("|".join(f"(?P<{k}>{v})" for k,v in _SPEC))
_PAT = dict(_SPEC)
_SUFFIX = {None: None, "U": "u32", "LL": "i64", "ULL": "u64", "F": "f32", "I": "i32"}

def tokenize(src:str) -> list[Tok]:
  """Split pseudocode into tokens.

  Args:
    src: pseudocode text of one entry.
  Returns:
    The token list; numbers carry (value, type-name or None[, width]) tuples.
  Raises:
    PcodeSyntaxError: on a character no token starts with (line and column set).
  """
  toks: list[Tok] = []
  pos, line, lstart, nl = 0, 1, 0, True
  while pos < len(src):
    m = _RE.match(src, pos)
    if m is None: raise PcodeSyntaxError(f"unexpected character {src[pos]!r}", line=line, col=pos-lstart+1)
    k, text, col = m.lastgroup, m.group(), pos-lstart+1
    pos = m.end()
    if k == "nl": line, lstart, nl = line+1, pos, True
    if k in ("ws", "nl", "comment"): continue
    if k == "sized":
      w, v, suf = re.fullmatch(_PAT["sized"], text).groups()
      val: object = float(v) if "." in v else int(v, 0)
      kind = {"U": "u", "I": "i", "F": "f", "LL": "i", "ULL": "u", None: None}[suf]
      if isinstance(val, float): kind = "f"
      toks.append(Tok("sized", (val, int(w), kind), line, col, nl))
    elif k in ("cast", "type"):
      w, t = re.fullmatch(r"(\d+)'(BF|U|I|F|B)", text).groups()
      toks.append(Tok(k, (int(w), t), line, col, nl))
    elif k == "float":
      v, suf = re.fullmatch(_PAT["float"], text).groups()
      toks.append(Tok("float", (float(v), "f32" if suf else "f64"), line, col, nl))
    elif k == "num":
      v, suf = re.fullmatch(_PAT["num"], text).groups()
      toks.append(Tok("num", (int(v, 0), _SUFFIX[suf]), line, col, nl))
    elif k == "name": toks.append(Tok("kw" if text in KEYWORDS else "name", text, line, col, nl))
    else: toks.append(Tok(k, text, line, col, nl))
    nl = False
  toks.append(Tok("eof", None, line, pos-lstart+1, True))
  return toks
