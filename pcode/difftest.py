"""Differential testing of the two backends: run an entry on the same random state through the C library and the Python
evaluator and list the PcState members that differ. Used by tests/pcode and by `python -m mockgpu.pcode diff`."""
import random, struct
from mockgpu.pcode.tables import entries
from mockgpu.pcode.compile import try_program
from mockgpu.pcode.prose import is_prose
from mockgpu.pcode.state import WIDE, SCALARS, FIELDS, WIDE_BITS
from mockgpu.pcode.cabi import PcState
from mockgpu.pcode import pyeval
__all__ = ["ALU_CLASSES", "alu_ops", "random_state", "diff_once"]

ALU_CLASSES = ("SOP1Op", "SOP2Op", "SOPCOp", "SOPKOp", "VOP1Op", "VOP2Op", "VOP3Op", "VOP3POp", "VOPCOp", "VOP3SDOp", "VOPDOp", "VINTERPOp")
_FIELD_NAMES = [f"{a}_{b}" for a, b in FIELDS]
_SPECIAL32 = [0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00000, 0x00000001, 0x807fffff, 0x3f800000, 0xbf800000, 0x7f7fffff]
_SPECIAL16 = [0, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0x0001, 0x3c00, 0xbc00, 0x7bff, 0x03ff]
_SPECIAL64 = [0, 1 << 63, 0x7ff0000000000000, 0x7ff8000000000000, 0x7ff4000000000000, 1, 0x3ff0000000000000, 0x7fefffffffffffff]

def alu_ops(arch:str) -> list[str]:
  """SALU/VALU entries of `arch` both backends can run standalone (no memory, register-file or machine hooks)."""
  out = []
  for name, e in entries(arch).items():
    if e.cls not in ALU_CLASSES or is_prose(arch, name): continue
    prog, err = try_program(arch, name)
    if err is not None: continue
    i = prog.info["op"]
    if i.mem_rd or i.mem_wr or i.vgpr_rd or i.vgpr_wr or i.sgpr_rd or i.sgpr_wr or i.hooks: continue
    if any("_sr" in b or "_SR" in b for b in i.builtins): continue
    out.append(name)
  return out

def _operand(rng:random.Random) -> int:
  k = rng.random()
  if k < 0.15: return rng.choice(_SPECIAL32) | (rng.choice(_SPECIAL32) << 32)
  if k < 0.3: return rng.choice(_SPECIAL16) | (rng.choice(_SPECIAL16) << 16) | (rng.getrandbits(32) << 32)
  if k < 0.4: return rng.choice(_SPECIAL64)
  if k < 0.55: return rng.getrandbits(rng.choice((1, 4, 8, 16)))
  return rng.getrandbits(64)

def random_state(rng:random.Random) -> dict:
  """A random assignment of every PcState member (wide registers get 128 random bits above a 64-bit operand)."""
  st = {n: _operand(rng) | (rng.getrandbits(WIDE_BITS - 64) << 64 if rng.random() < 0.5 else 0) for n in WIDE}
  st.update({n: rng.getrandbits(64) if rng.random() < 0.7 else rng.getrandbits(6) for n in SCALARS})
  st.update({n: rng.getrandbits(1) for n in _FIELD_NAMES})
  st["laneId"], st["WAVE64"], st["ROUND_MODE"] = rng.randrange(64), rng.getrandbits(1), rng.choice((0, 0, 0, 3))
  st["SCC"] &= 1
  return st

def _to_c(st:dict) -> PcState:
  s = PcState()
  for n, v in st.items():
    if n in WIDE:
      r = getattr(s, n)
      for i in range(16): r.q[i] = (v >> (64 * i)) & (2**64 - 1)
    else: setattr(s, n, v & (2**64 - 1))
  return s

def _from_c(s:PcState) -> dict:
  out = {n: sum(getattr(s, n).q[i] << (64 * i) for i in range(16)) for n in WIDE}
  out.update({n: getattr(s, n) for n in list(SCALARS) + _FIELD_NAMES})
  return out

def diff_once(lib, arch:str, name:str, st:dict) -> dict:
  """Run `name` on state `st` in both backends; returns {member: (c_value, py_value)} for members that differ."""
  cs = _to_c(st)
  fault = lib.run(name, cs)
  c = _from_c(cs)
  p = pyeval.run(arch, name, pyeval.State(**st))
  pv = {n: getattr(p, n) for n in c}
  d = {n: (c[n], pv[n]) for n in c if c[n] != pv[n]}
  if fault: d["fault"] = (fault, 0)
  return d
