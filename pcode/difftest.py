"""Differential testing of the two backends: run an entry on the same random state through the C library and the Python
evaluator and list the PcState members that differ. Used by tests/pcode and by `python -m mockgpu.pcode diff`."""
import random
from mockgpu.pcode.tables import entries
from mockgpu.pcode.compile import try_program
from mockgpu.pcode.prose import is_prose
from mockgpu.pcode.state import WIDE, SCALARS, FIELDS, WIDE_BITS, MODE_DEFAULT
from mockgpu.pcode.cabi import PcState
from mockgpu.pcode import pyeval
__all__ = ["ALU_CLASSES", "alu_ops", "random_state", "uses_vgpr", "diff_once"]

ALU_CLASSES: tuple[str, ...] = ("SOP1Op", "SOP2Op", "SOPCOp", "SOPKOp", "VOP1Op", "VOP2Op", "VOP3Op", "VOP3POp", "VOPCOp", "VOP3SDOp", "VOPDOp", "VINTERPOp")
_FIELD_NAMES = [f"{a}_{b}" for a, b in FIELDS]
_SPECIAL32 = [0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7fa00000, 0x00000001, 0x807fffff, 0x3f800000, 0xbf800000, 0x7f7fffff]
_SPECIAL16 = [0, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0x0001, 0x3c00, 0xbc00, 0x7bff, 0x03ff]
_SPECIAL64 = [0, 1 << 63, 0x7ff0000000000000, 0x7ff8000000000000, 0x7ff4000000000000, 1, 0x3ff0000000000000, 0x7fefffffffffffff]

def alu_ops(arch:str, classes:tuple[str, ...]|None=ALU_CLASSES) -> list[str]:
  """Entries of `arch` (of `classes`, None for all) both backends can run standalone: no machine hooks other than the
  harness's address hooks (cabi.harness_hooks). They may use MEM, VGPR and SGPR."""
  out = []
  for name, e in entries(arch).items():
    if (classes is not None and e.cls not in classes) or is_prose(arch, name): continue
    prog, err = try_program(arch, name)
    if err is not None: continue
    i = prog.info["op"]
    if any(not (h.startswith("Calc") and h.endswith("Addr")) for h in i.hooks): continue
    out.append(name)
  return out

# harness contents: a fixed pseudo-random pattern (the same bytes on both sides)
_MEM = bytes((i * 2654435761 >> 13) & 0xff for i in range(65536))
_VGPR = [(i * 0x9e3779b1 + 0x7f4a7c15) & 0xffffffff for i in range(64 * 256)]
_SGPR = [(i * 0x85ebca6b + 0xc2b2ae35) & 0xffffffff for i in range(128)]

class _Pattern(dict):
  def __init__(self, fn): super().__init__(); self.fn = fn
  def get(self, k, default=None): return super().get(k, self.fn(k))

def _mem_fn(a): return _MEM[a] if 0 <= a < 65536 else 0
def _vgpr_fn(k): return _VGPR[k[0] * 256 + k[1]] if 0 <= k[0] < 64 and 0 <= k[1] < 256 else 0
def _sgpr_fn(r): return _SGPR[r] if 0 <= r < 128 else 0
# inputs that are register numbers or addresses: kept inside the harness's register files and memory
_SMALL = {"v_addr": 8192, "s_saddr": 8192, "vgpr_a": 8192, "sgpr_o": 8192, "v_addr_off": 8192, "s_saddr_off": 8192, "flat_scratch": 8192,
          "SBASE": 8192, "sgpr_base": 8192, "SOFFSET": 4096, "VADDR": 8192, "SRSRC": 8192, "SADDR": 8192, "offset": 256, "mem_addr": 8192, "ADDR": 16384, "ADDR0": 16384, "ADDR1": 16384, "ADDR_BASE": 16384, "OFFSET": 256, "OFFSET0": 64, "OFFSET1": 64,
          "SRC0": 100, "SRC1": 100, "SRC2": 100, "DST": 100, "VDST": 100, "M0": 16, "SGPR_ADDR": 16384, "INST_OFFSET": 256}

def _operand(rng:random.Random) -> int:
  k = rng.random()
  if k < 0.15: return rng.choice(_SPECIAL32) | (rng.choice(_SPECIAL32) << 32)
  if k < 0.3: return rng.choice(_SPECIAL16) | (rng.choice(_SPECIAL16) << 16) | (rng.getrandbits(32) << 32)
  if k < 0.4: return rng.choice(_SPECIAL64)
  if k < 0.55: return rng.getrandbits(rng.choice((1, 4, 8, 16)))
  return rng.getrandbits(64)

def random_state(rng:random.Random, reg_addr:bool=False) -> dict:
  """A random assignment of every PcState member (wide registers get random bits above a 64-bit operand). Register numbers
  and addresses stay inside the harness; `reg_addr` keeps ADDR a valid VGPR number too (DS_PERMUTE indexes VGPRs by it)."""
  st = {n: _operand(rng) | (rng.getrandbits(WIDE_BITS - 64) << 64 if rng.random() < 0.5 else 0) for n in WIDE}
  st.update({n: rng.getrandbits(64) if rng.random() < 0.7 else rng.getrandbits(6) for n in SCALARS})
  st.update({n: rng.getrandbits(1) for n in _FIELD_NAMES})
  # MODE: the default half the time, else random rounding/denormal fields (plus random DX10_CLAMP, IEEE and upper bits)
  st["laneId"], st["WAVE64"] = rng.randrange(64), rng.getrandbits(1)
  st["MODE"] = MODE_DEFAULT | (rng.getrandbits(2) << 8) if rng.random() < 0.5 else rng.getrandbits(32)
  st["SCC"] &= 1
  for n, lim in _SMALL.items(): st[n] = rng.randrange(256 if reg_addr and n == "ADDR" else lim)
  if reg_addr: st["DATA0"] = rng.randrange(256)
  return st

def uses_vgpr(arch:str, name:str) -> bool:
  """True if entry `name` reads or writes VGPR[...] (random states should then use `reg_addr=True`)."""
  i = try_program(arch, name)[0].info["op"]
  return i.vgpr_rd or i.vgpr_wr

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

def diff_once(lib, arch:str, name:str, st:dict) -> dict|None:
  """Run `name` on state `st` in both backends (harness memory/registers reset to a fixed pattern first); returns
  {member: (c_value, py_value)} for PcState members, MEM bytes and registers that differ, or None when the sample left the
  harness (an address or register number outside its 64 KiB / 64x256 / 128, which the C side reports as a fault)."""
  import ctypes
  info = try_program(arch, name)[0].info["op"]
  mem, vg, sg = info.mem_rd or info.mem_wr, info.vgpr_rd or info.vgpr_wr, info.sgpr_rd or info.sgpr_wr
  if mem: ctypes.memmove(lib.mem, _MEM, len(_MEM))
  if vg: lib.vgpr[:] = _VGPR
  if sg: lib.sgpr[:] = _SGPR
  cs = _to_c(st)
  fault = lib.run(name, cs)
  if fault and cs.fault_msg in (b"MEM read", b"MEM write", b"VGPR read", b"VGPR write", b"SGPR read", b"SGPR write"): return None
  c = _from_c(cs)
  from mockgpu.pcode.cabi import python_hooks
  p = pyeval.run(arch, name, pyeval.State(mem=_Pattern(_mem_fn), vgpr=_Pattern(_vgpr_fn), sgpr=_Pattern(_sgpr_fn), hooks=python_hooks(arch), **st))
  pv = {n: getattr(p, n) for n in c}
  d = {n: (c[n], pv[n]) for n in c if c[n] != pv[n]}
  if fault: d["fault"] = (fault, 0)
  if not (mem or vg or sg): return d
  want_mem = bytearray(_MEM)
  for a, v in dict.items(p.mem):
    if 0 <= a < 65536: want_mem[a] = v
  if mem and bytes(lib.mem) != bytes(want_mem):
    a = next(i for i, (x, y) in enumerate(zip(bytes(lib.mem), want_mem)) if x != y)
    d[f"MEM[{a}]"] = (lib.mem[a], want_mem[a])
  want_v = list(_VGPR)
  for (l, r), v in dict.items(p.vgpr):
    if 0 <= l < 64 and 0 <= r < 256: want_v[l * 256 + r] = v
  if vg and list(lib.vgpr) != want_v:
    i = next(i for i, (x, y) in enumerate(zip(lib.vgpr, want_v)) if x != y)
    d[f"VGPR[{i // 256}][{i % 256}]"] = (lib.vgpr[i], want_v[i])
  want_s = list(_SGPR)
  for r, v in dict.items(p.sgpr):
    if 0 <= r < 128: want_s[r] = v
  if sg and list(lib.sgpr) != want_s:
    i = next(i for i, (x, y) in enumerate(zip(lib.sgpr, want_s)) if x != y)
    d[f"SGPR[{i}]"] = (lib.sgpr[i], want_s[i])
  return d
