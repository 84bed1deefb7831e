"""Python-backend mirror of csrc/emu_image.h: RDNA3 MIMG loads, stores, atomics and GET_RESINFO on linear images, with the
same T# decoding (mockgpu.emu.image), format table and conversions (mockgpu.emu.buffer), memory checks, faults and messages."""
from __future__ import annotations
import ctypes
import functools
from types import SimpleNamespace
from mockgpu.emu.buffer import format_table, from_format, to_format
from mockgpu.emu.gen_gfx import image_kind
from mockgpu.emu.image import DIM_COORDS, DIM_NAMES, SW_MODES, field, linear_pitch
from mockgpu.emu.report import ST_FAULT, ST_INVALID, ST_UNSUPPORTED
from mockgpu.pcode.softfloat import cvt, fmt_of

__all__ = ["exec_mimg"]

M32, F16, F32 = 0xffffffff, fmt_of("f", 16), fmt_of("f", 32)
@functools.cache
def _fmt(arch, code: int):
  """bits (X..W), number format name and bytes per texel of T# FORMAT `code` (buffer.py's unified table), or None"""
  from tinygrad.runtime.autogen import hsa
  ent = format_table(arch).get(code)
  if ent is None: return None
  nf = {getattr(hsa, f"BUF_NUM_FORMAT_{n}"): n for n in ("UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "FLOAT")}[ent[1]]
  return SimpleNamespace(bits=ent[0], numfmt=nf, bpp=sum(ent[0]) // 8)
def to_reg(fo, c: int, raw: int) -> int: return from_format(raw, fo.bits[c], fo.numfmt)
def from_reg(fo, c: int, v: int) -> int: return to_format(v, fo.bits[c], fo.numfmt)

UNSUPPORTED = "MIMG sampling, gather, GET_LOD and MSAA_LOAD are not modelled (docs/emu.md Images)"

def _setup(w, f: dict) -> dict:
  if f["nsa"]: raise _Stop(ST_UNSUPPORTED, msg="MIMG with NSA (non-sequential address VGPRs) is not modelled")
  r, nd = f["srsrc"], 4 if f["r128"] else 8
  d = sum((w.s[r + i] if r + i < 128 else 0) << (32 * i) for i in range(nd))
  sw, fm, ty = field(d, "sw_mode"), field(d, "format"), field(d, "type")
  if sw: raise _Stop(ST_UNSUPPORTED, msg=f"image T# in s[{r}:{r + nd - 1}] uses swizzle mode {sw} (SW_{SW_MODES[sw]}): only linear images (SW_LINEAR) are modelled")
  if ty < 8: raise _Stop(ST_INVALID, msg=f"T# in s[{r}:{r + nd - 1}] has TYPE={ty}, not an image type (8..15)")
  fo = _fmt(w.c.arch, fm)
  if fo is None: raise _Stop(ST_UNSUPPORTED, msg=f"image T# in s[{r}:{r + nd - 1}]: FORMAT={fm} is not modelled (docs/emu.md Images)")
  depth, arr = field(d, "depth"), ty in (11, 12, 13)
  return dict(base=field(d, "base") << 8, f=fo, fmt=fm, type=ty, w=field(d, "width") + 1, h=1 if ty in (8, 12) else field(d, "height") + 1,
              d=depth + 1 if ty == 10 else 1, nslices=depth + 1 if arr else 1, base_array=field(d, "base_array") if arr else 0,
              base_level=field(d, "base_level"), last_level=field(d, "last_level"), pitch2d=depth + 1 if ty == 9 and depth else 0,
              sel=[field(d, k) for k in ("sel_x", "sel_y", "sel_z", "sel_w")])

def _dim_ok(f: dict):
  if f["dim"] >= 6: raise _Stop(ST_UNSUPPORTED, msg=f"MIMG dim={DIM_NAMES[f['dim']]}: multisampled image layouts are not modelled")

def _coords(w, f: dict, L: int, n: int) -> list[int]:
  r = f["vaddr"] - 256
  return [(w.v[(r + i // 2) & 255][L] >> (i % 2 * 16)) & 0xffff if f["a16"] else w.v[(r + i) & 255][L] for i in range(n)]

def _texel(t: dict, dim: int, c: list[int], lvl: int) -> int | None:
  x, y = c[0], 0 if dim in (0, 4) else c[1]
  s = c[1] if dim == 4 else c[2] if dim in (2, 3, 5) else 0
  if t["last_level"] < t["base_level"] or lvl > t["last_level"] - t["base_level"]: return None
  L, bpp, off = t["base_level"] + lvl, t["f"].bpp, 0
  for i in range(L + 1):
    wl, hl = max(1, t["w"] >> i), max(1, t["h"] >> i)
    dl = max(1, t["d"] >> i) if t["type"] == 10 else t["nslices"]
    pitch = t["pitch2d"] if i == 0 and t["pitch2d"] else linear_pitch(wl, bpp)
    if i < L: off += pitch * hl * dl * bpp
  sl = s if t["type"] == 10 else t["base_array"] + s
  if x >= wl or y >= hl or sl >= dl: return None
  return t["base"] + off + ((sl * hl + y) * pitch + x) * bpp

def _Stop(status: int, **kw):
  from mockgpu.emu.pybackend import Stop   # the backend's control-flow exception (pybackend imports this module)
  return Stop(status, **kw)

def _mem(w, addr: int, n: int, kind: int, lane: int) -> int:
  if not any(r.start <= addr and addr + n <= r.end for r in w.ranges): raise _Stop(ST_FAULT, kind=kind, space=1, addr=addr, size=n, lane=lane)
  return addr

def _isfloat(fo) -> bool: return fo.numfmt not in ("UINT", "SINT")
def _comp(raw: int, fo, c: int) -> int:
  if c >= len(fo.bits): return 0
  return (raw >> sum(fo.bits[:c])) & ((1 << fo.bits[c]) - 1)
def _ndata(f: dict, pw: int) -> int:
  n = bin(f["dmask"] & 15).count("1")
  return (n + 1) // 2 if f["d16"] or (pw and pw <= 16) else n
def _pckw(fo) -> int: return 16 if fo.bits[0] <= 16 else 32

def _load(c, w, f, mip, pck):
  t = _setup(w, f); _dim_ok(f)
  fo = t["f"]; nc, bpp = DIM_COORDS[f["dim"]] + mip, fo.bpp
  pw = _pckw(fo) if pck else 0
  nd, exe = _ndata(f, pw), w.exec
  for L in range(c.wave_size):
    if not exe >> L & 1: continue
    co = _coords(w, f, L, nc)
    a, raw = _texel(t, f["dim"], co, co[nc - 1] if mip else 0), 0
    if a is not None: raw = int.from_bytes(ctypes.string_at(_mem(w, a, bpp, 1, L), bpp), "little")
    comp, dv, k = [_comp(raw, fo, i) for i in range(4)], [0] * 5, 0
    for i in range(4):
      if not f["dmask"] >> i & 1: continue
      if pck:
        v = comp[i]
        if pw == 16 and i < len(fo.bits) and fo.bits[i] < 16 and pck == 2 and v >> (fo.bits[i] - 1): v = (v - (1 << fo.bits[i])) & 0xffff
      else:
        sel = t["sel"][i]
        v = (to_reg(fo, sel - 4, comp[sel - 4]) if sel - 4 < len(fo.bits) else 0) if sel >= 4 else (0x3f800000 if _isfloat(fo) else 1) if sel == 1 else 0
        if f["d16"]: v = cvt(v, F32, F16) & 0xffff if _isfloat(fo) else v & 0xffff
      if f["d16"] or pw == 16: dv[k // 2] |= (v & 0xffff) << (k % 2 * 16)
      else: dv[k] = v
      k += 1
    for i in range(nd): w.v[(f["data0"] - 256 + i) & 255][L] = dv[i] & M32
    if f["tfe"] or f["lwe"]: w.v[(f["data0"] - 256 + nd) & 255][L] = 0

def _store(c, w, f, mip, pck):
  t = _setup(w, f); _dim_ok(f)
  fo = t["f"]; nc, bpp = DIM_COORDS[f["dim"]] + mip, fo.bpp
  pw, exe = _pckw(fo) if pck else 0, w.exec
  for L in range(c.wave_size):
    if not exe >> L & 1: continue
    co, comp, k = _coords(w, f, L, nc), [0] * 4, 0
    for i in range(4):
      if not f["dmask"] >> i & 1: continue
      half = f["d16"] or pw == 16
      v = w.v[(f["data0"] - 256 + (k // 2 if half else k)) & 255][L]
      if half:
        v = v >> (k % 2 * 16) & 0xffff
        if not pck: v = cvt(v, F16, F32) if _isfloat(fo) else (v - (1 << 16)) & M32 if fo.numfmt == "SINT" and v >> 15 else v
      comp[i], k = v, k + 1
    a = _texel(t, f["dim"], co, co[nc - 1] if mip else 0)
    if a is None: continue
    raw, o = 0, 0
    for i, b in enumerate(fo.bits):
      raw |= (comp[i] & ((1 << b) - 1) if pck else from_reg(fo, i, comp[i])) << o; o += b
    ctypes.memmove(_mem(w, a, bpp, 2, L), raw.to_bytes(bpp, "little"), bpp)

def _atomic(c, w, f, ename, pyrun):
  t = _setup(w, f); _dim_ok(f)
  if t["f"].bpp != 4: raise _Stop(ST_UNSUPPORTED, msg=f"image atomics need a 32-bit format; the T# has FORMAT={t['fmt']}")
  nc, nd, exe = DIM_COORDS[f["dim"]], bin(f["dmask"] & 15).count("1"), w.exec
  w.atomic = True
  try:
    for L in range(c.wave_size):
      if not exe >> L & 1: continue
      co, ret = _coords(w, f, L, nc), 0
      a = _texel(t, f["dim"], co, 0)
      if a is not None:
        w.cur_size = 4
        data = sum(w.v[(f["data0"] - 256 + i) & 255][L] << (32 * i) for i in range(min(nd, 2)))
        ret = pyrun(c, w, ename, laneId=L, ADDR=a, DATA=data).RETURN_DATA & M32
      if f["glc"]: w.v[f["data0"] - 256][L] = ret
  finally: w.atomic = False

def _resinfo(c, w, f):
  t = _setup(w, f)
  nl = t["last_level"] - t["base_level"] + 1 if t["last_level"] >= t["base_level"] else 0
  layers, exe = t["nslices"] - t["base_array"], w.exec
  for L in range(c.wave_size):
    if not exe >> L & 1: continue
    lvl, r = w.v[f["vaddr"] - 256][L], [0, 0, 0, nl]
    if lvl < nl:
      l = t["base_level"] + lvl
      r[0] = max(1, t["w"] >> l)
      r[1] = layers if t["type"] == 12 else 0 if t["type"] == 8 else max(1, t["h"] >> l)
      r[2] = max(1, t["d"] >> l) if t["type"] == 10 else layers if t["type"] == 13 else layers // 6 if t["type"] == 11 else 0
    k = 0
    for i in range(4):
      if f["dmask"] >> i & 1: w.v[(f["data0"] - 256 + k) & 255][L] = r[i] & M32; k += 1

def exec_mimg(c, w, f: dict, name: str, ename: str, pyrun):
  """Execute one MIMG instruction (as csrc/emu_image.h); faults and unsupported cases raise the backend's Stop."""
  k = image_kind(name)
  if k is None or (k[0] == "atomic" and ename not in c.ents): raise _Stop(ST_UNSUPPORTED, msg=UNSUPPORTED)
  if k[0] == "load": return _load(c, w, f, k[1], k[2])
  if k[0] == "store": return _store(c, w, f, k[1], k[2])
  if k[0] == "atomic": return _atomic(c, w, f, ename, pyrun)
  return _resinfo(c, w, f)
