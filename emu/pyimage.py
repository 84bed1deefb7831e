"""Python-backend mirror of csrc/emu_image.h: RDNA3 MIMG and RDNA4 VIMAGE loads, stores, atomics, GET_RESINFO and RDNA3
sampling (SAMPLE, GATHER4, GET_LOD) on linear images, with the same T# / S# decoding (mockgpu.emu.image), format table and
conversions (mockgpu.emu.buffer), memory checks, faults and messages. Sampling rounds every f32 operation like the C (f64
result -> f32)."""
from __future__ import annotations
import ctypes, math, struct
import functools
from types import SimpleNamespace
from mockgpu.emu.buffer import format_table, from_format, to_format
from mockgpu.emu.gen_gfx import image_kind
from mockgpu.emu.image import DIM_COORDS, DIM_GRADS, DIM_NAMES, SAMPLE_FLAGS as SF, SW_MODES, field, linear_pitch, sfield
from mockgpu.emu.facts import ST_INVALID, ST_UNSUPPORTED
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

UNSUPPORTED = "this image op is not modelled (docs/emu.md Images, Ray tracing, What is missing)"

def _setup(w, f: dict) -> dict:
  if f["nsa"]: raise _Stop(ST_UNSUPPORTED, msg="MIMG with NSA (non-sequential address VGPRs) is not modelled")
  r, nd = f["srsrc"], 4 if f["r128"] else 8
  d = sum((w.s[r + i] if r + i < 128 else 0) << (32 * i) for i in range(nd))
  sw, fm, ty = field(d, "sw_mode"), field(d, "format"), field(d, "type")
  if sw: raise _Stop(ST_UNSUPPORTED, msg=f"image T# in s[{r}:{r + nd - 1}] uses swizzle mode {sw} (SW_{SW_MODES[w.c.arch.family][sw]}): only linear images (SW_LINEAR) are modelled")
  if ty < 8: raise _Stop(ST_INVALID, msg=f"T# in s[{r}:{r + nd - 1}] has TYPE={ty}, not an image type (8..15)")
  fo = _fmt(w.c.arch, fm)
  if fo is None: raise _Stop(ST_UNSUPPORTED, msg=f"image T# in s[{r}:{r + nd - 1}]: FORMAT={fm} is not modelled (docs/emu.md Images)")
  depth, arr = field(d, "depth"), ty in (11, 12, 13, 15)
  return dict(base=field(d, "base") << 8, f=fo, fmt=fm, type=ty, w=field(d, "width") + 1, h=1 if ty in (8, 12) else field(d, "height") + 1,
              d=depth + 1 if ty == 10 else 1, nslices=depth + 1 if arr else 1, base_array=field(d, "base_array") if arr else 0,
              base_level=field(d, "base_level"), last_level=field(d, "last_level"), pitch2d=depth + 1 if ty == 9 and depth else 0,
              sel=[field(d, k) for k in ("sel_x", "sel_y", "sel_z", "sel_w")])

def _areg(f: dict, j: int) -> int:   # the VGPR of address dword j (as csrc/emu_image.h img_areg)
  nv = f["nva"]
  return (f[f"va{j}"] if j < nv else f[f"va{nv - 1}"] + j - (nv - 1)) & 255

def _coords(w, f: dict, L: int, n: int) -> list[int]:
  return [(w.v[_areg(f, i // 2)][L] >> (i % 2 * 16)) & 0xffff if f["a16"] else w.v[_areg(f, i)][L] for i in range(n)]

def _texel(t: dict, dim: int, c: list[int], lvl: int) -> int | None:
  x, y = c[0], 0 if dim in (0, 4) else c[1]
  s = c[1] if dim == 4 else c[2] if dim in (2, 3, 5, 7) else 0
  if t["type"] >= 14:
    fr, ns, sl, bpp = c[2] if dim == 6 else c[3] if dim == 7 else 0, 1 << t["last_level"], t["base_array"] + s, t["f"].bpp
    if lvl or x >= t["w"] or y >= t["h"] or sl >= t["nslices"] or fr >= ns: return None
    return t["base"] + ((sl * t["h"] + y) * linear_pitch(t["w"] * ns, bpp) + x * ns + fr) * bpp
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
  from mockgpu.emu.pybackend import global_check
  return global_check(w, addr, n, kind, lane)

def _isfloat(fo) -> bool: return fo.numfmt not in ("UINT", "SINT")
def _comp(raw: int, fo, c: int) -> int:
  if c >= len(fo.bits): return 0
  return (raw >> sum(fo.bits[:c])) & ((1 << fo.bits[c]) - 1)
def _ndata(f: dict, pw: int) -> int:
  n = bin(f["dmask"] & 15).count("1")
  return (n + 1) // 2 if f["d16"] or (pw and pw <= 16) else n
def _pckw(fo) -> int: return 16 if fo.bits[0] <= 16 else 32

def _load(c, w, f, mip, pck):
  t = _setup(w, f)
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
  t = _setup(w, f)
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
    from mockgpu.emu.pybackend import watch_note
    watch_note(w, a, bpp, L)

def _atomic(c, w, f, ename, pyrun):
  t = _setup(w, f)
  if t["f"].bpp != 4: raise _Stop(ST_UNSUPPORTED, msg=f"image atomics need a 32-bit format; the T# has FORMAT={t['fmt']}")
  nc, nd, exe = DIM_COORDS[f["dim"]], bin(f["dmask"] & 15).count("1"), w.exec
  w.atomic = True
  try:
    for L in range(c.wave_size):
      if not exe >> L & 1: continue
      co, ret = _coords(w, f, L, nc), 0
      a = _texel(t, f["dim"], co, 0)
      if a is not None:
        data = sum(w.v[(f["data0"] - 256 + i) & 255][L] << (32 * i) for i in range(min(nd, 2)))
        ret = pyrun(c, w, ename, laneId=L, ADDR=a, DATA=data).RETURN_DATA & M32
      if f["glc"]: w.v[f["data0"] - 256][L] = ret
  finally: w.atomic = False

def _resinfo(c, w, f):
  t = _setup(w, f)
  nl = 1 if t["type"] >= 14 else t["last_level"] - t["base_level"] + 1 if t["last_level"] >= t["base_level"] else 0
  layers, exe = t["nslices"] - t["base_array"], w.exec
  for L in range(c.wave_size):
    if not exe >> L & 1: continue
    lvl, r = w.v[_areg(f, 0)][L], [0, 0, 0, nl]
    if lvl < nl:
      l = 0 if t["type"] >= 14 else t["base_level"] + lvl
      r[0] = max(1, t["w"] >> l)
      r[1] = layers if t["type"] == 12 else 0 if t["type"] == 8 else max(1, t["h"] >> l)
      r[2] = max(1, t["d"] >> l) if t["type"] == 10 else layers if t["type"] in (13, 15) else layers // 6 if t["type"] == 11 else 0
    k = 0
    for i in range(4):
      if f["dmask"] >> i & 1: w.v[(f["data0"] - 256 + k) & 255][L] = r[i] & M32; k += 1

# ---- sampling (csrc/emu_image.h img_sample and its helpers, operation by operation)
def F(x: float) -> float: return ctypes.c_float(x).value
def _asf(b: int) -> float: return struct.unpack("<f", (b & M32).to_bytes(4, "little"))[0]
def _fb(x: float) -> int: return struct.unpack("<I", struct.pack("<f", x))[0]
def _h2f(v: int) -> float: return _asf(cvt(v & 0xffff, F16, F32))
def _sext(v: int, b: int) -> int: return v - (1 << b) if v >> (b - 1) & 1 else v
LIM = 1073741824.0

def _samp(w, f: dict) -> dict:
  r = f["ssamp"]
  d = sum((w.s[r + i] if r + i < 128 else 0) << (32 * i) for i in range(4))
  g = lambda n: sfield(d, n)
  s = dict(mode=[g("clamp_x"), g("clamp_y"), g("clamp_z")], cmp=g("depth_compare_func"), unnorm=g("force_unnormalized") | f["unrm"],
           mag=g("xy_mag_filter"), min=g("xy_min_filter"), zf=g("z_filter"), mip=g("mip_filter"), border=g("border_color_type"),
           minl=g("min_lod") / 256.0, maxl=g("max_lod") / 256.0, bias=_sext(g("lod_bias"), 14) / 256.0)
  fm, an = g("filter_mode"), g("max_aniso_ratio")
  if fm: raise _Stop(ST_UNSUPPORTED, msg=f"sampler S# in s[{r}:{r + 3}] has FILTER_MODE={fm} (min/max reduction): only blending (0) is modelled")
  if an and (s["mag"] | s["min"]) & 2: raise _Stop(ST_UNSUPPORTED, msg=f"sampler S# in s[{r}:{r + 3}]: anisotropic filtering (MAX_ANISO_RATIO={an}) is not modelled")
  if s["border"] == 3 and max(s["mode"]) >= 4:
    raise _Stop(ST_UNSUPPORTED, msg=f"sampler S# in s[{r}:{r + 3}]: BORDER_COLOR_TYPE=3 (the border color table) is not modelled")
  return s

def _saddr(w, f: dict, fl: int, L: int) -> dict:
  r, k, a16 = f["vaddr"] - 256, 0, f["a16"]
  g16, ng, nc = a16 or fl & SF["G16"], DIM_GRADS[f["dim"]], DIM_COORDS[f["dim"]] + bool(fl & (SF["L"] | SF["CL"]))
  V = lambda i: w.v[(r + i) & 255][L]
  a = dict(off=0, bias=0.0, zref=0.0, g=[[0.0] * 3 for _ in range(2)], c=[0.0] * 4)
  if fl & SF["O"]: a["off"] = V(k); k += 1
  if fl & SF["B"]: a["bias"] = _h2f(V(k)) if a16 else _asf(V(k)); k += 1
  if fl & SF["C"]: a["zref"] = _asf(V(k)); k += 1
  if fl & SF["D"]:
    for d in range(2):
      for i in range(ng): a["g"][d][i] = _h2f(V(k + i // 2) >> (i % 2 * 16)) if g16 else _asf(V(k + i))
      k += (ng + 1) // 2 if g16 else ng
  for i in range(nc): a["c"][i] = _h2f(V(k + i // 2) >> (i % 2 * 16)) if a16 else _asf(V(k + i))
  return a

def _wrap(i: int, n: int, m: int) -> int:
  if m == 0: return i % n
  if m == 1: i %= 2 * n; return i if i < n else 2 * n - 1 - i
  if m in (2, 3): return min(max(i, 0), n - 1)
  return -1 if i < 0 or i >= n else i

def _axis(x: float, n: int, m: int, lin: int, nt: int):
  if x != x: x = 0.0
  if m in (3, 5, 7): x = abs(x)
  if m in (4, 5): x = min(max(x, 0.0), float(n))
  x = min(max(x, -LIM), LIM)
  u = F(x - 0.5) if lin else x
  fl = float(math.floor(u)); fr = F(u - fl)
  return [_wrap(int(fl) + k, n, m) for k in range(nt)], [F(1.0 - fr) if lin else 1.0, fr]

def _cmp(fn: int, r: float, t: float) -> bool: return (False, r < t, r == t, r <= t, r > t, r != t, r >= t, True)[fn]

def _stexel(w, t, s, lvl, x, y, z, L) -> list[int]:
  fo = t["f"]; isf = _isfloat(fo); one = 0x3f800000 if isf else 1
  if x < 0 or y < 0 or z < 0: return [one if s["border"] == 2 or (s["border"] == 1 and i == 3) else 0 for i in range(4)]
  a, raw = _texel(t, 2, [x, y, z], lvl), 0
  if a is not None: raw = int.from_bytes(ctypes.string_at(_mem(w, a, fo.bpp, 1, L), fo.bpp), "little")
  comp = [_comp(raw, fo, i) for i in range(4)]
  return [(to_reg(fo, sl - 4, comp[sl - 4]) if sl - 4 < len(fo.bits) else 0) if sl >= 4 else one if sl == 1 else 0 for sl in t["sel"]]

def _lsz(v: int, l: int) -> int: return max(1, v >> l)

def _taps(t, s, a, dim, fl, lvl, lin):
  la, cube = t["base_level"] + lvl, dim == 3
  nax, n = 1 if dim in (0, 4) else 3 if dim == 2 else 2, [_lsz(t["w"], la), _lsz(t["h"], la), _lsz(t["d"], la) if dim == 2 else 1]
  layer = 0
  if dim >= 3:
    sc, nl = a["c"][1 if dim == 4 else 2], t["nslices"] - t["base_array"]
    sc = 0.0 if sc != sc else min(max(sc, -LIM), LIM)
    l = max(round(sc), 0)
    if cube: l = (l >> 3) * 6 + min(l & 7, 5)
    layer = (nl - 1 if nl > 0 else 0) if l >= nl else l
  ax = []
  for k in range(3):
    if k >= nax: ax.append(([0], [1.0, 0.0])); continue
    x = a["c"][k]
    if cube: x = F(x - 1.0)
    if not s["unnorm"]: x = F(x * n[k])
    if fl & SF["O"]: x = F(x + _sext(a["off"] >> (8 * k) & 63, 6))
    kl = lin if k < 2 else 0 if fl & (SF["GATHER"] | SF["GATHER4H"]) or not _isfloat(t["f"]) else s["zf"] == 2 if s["zf"] else lin
    ax.append(_axis(x, n[k], s["mode"][k], 0, 4 if k == 0 else 1) if fl & SF["GATHER4H"] else _axis(x, n[k], 2 if cube else s["mode"][k], kl, 2 if kl else 1))
  return ax, layer

def _slevel(w, t, s, a, f, fl, lvl, lin, L) -> list[int]:
  ax, layer = _taps(t, s, a, f["dim"], fl, lvl, lin)
  isf, z3 = _isfloat(t["f"]), f["dim"] == 2
  cmpv = lambda v: 0x3f800000 if _cmp(s["cmp"], a["zref"], _asf(v[0])) else 0
  if fl & (SF["GATHER"] | SF["GATHER4H"]):
    comp, out = (f["dmask"] & 15 & -(f["dmask"] & 15)).bit_length() - 1 if f["dmask"] & 15 else 0, []
    for k in range(4):
      kx = k if fl & SF["GATHER4H"] else (0, 1, 1, 0)[k]
      ky = 0 if fl & SF["GATHER4H"] or len(ax[1][0]) == 1 else (1, 1, 0, 0)[k]
      v = _stexel(w, t, s, lvl, ax[0][0][kx], ax[1][0][ky], ax[2][0][0] if z3 else layer, L)
      out.append(cmpv(v) if fl & SF["C"] else v[comp])
    return out
  acc = None
  for kz in range(len(ax[2][0])):
    for ky in range(len(ax[1][0])):
      for kx in range(len(ax[0][0])):
        wt = F(F(ax[0][1][kx] * ax[1][1][ky]) * ax[2][1][kz])
        if wt == 0.0: continue
        v = _stexel(w, t, s, lvl, ax[0][0][kx], ax[1][0][ky], ax[2][0][kz] if z3 else layer, L)
        if fl & SF["C"]: v = [cmpv(v)] * 4
        if not isf: return v
        p = [F(wt * _asf(x)) for x in v]
        acc = p if acc is None else [F(q + r) for q, r in zip(acc, p)]
  return [_fb(x) for x in acc]

def _sample(c, w, f, fl):
  t, s = _setup(w, f), _samp(w, f)
  if f["dim"] >= 6: raise _Stop(ST_INVALID, msg=f"MIMG sampling with dim={DIM_NAMES[f['dim']]}: multisampled images cannot be sampled")
  fo, dim = t["f"], f["dim"]
  isf, ng, nc = _isfloat(fo), DIM_GRADS[dim], DIM_COORDS[dim] + bool(fl & (SF["L"] | SF["CL"]))
  if fl & SF["C"] and not isf: raise _Stop(ST_UNSUPPORTED, msg=f"depth-compare sampling of an integer format (T# FORMAT={t['fmt']}) is not modelled")
  implicit, gather = not fl & (SF["L"] | SF["LZ"] | SF["D"]), bool(fl & (SF["GATHER"] | SF["GATHER4H"]))
  nd = bin(f["dmask"] & 15).count("1") if fl & SF["GET_LOD"] or not gather else 4
  ndv, q, exe = (nd + 1) // 2 if f["d16"] else nd, max(t["last_level"] - t["base_level"], 0), w.exec
  A = {L: _saddr(w, f, fl, L) for L in range(c.wave_size) if implicit or exe >> L & 1}
  sz = [1.0] * 3 if s["unnorm"] else [float(_lsz(t[k], t["base_level"])) for k in ("w", "h", "d")]
  for L in range(c.wave_size):
    if not exe >> L & 1: continue
    a, p = A[L], [0.0, 0.0]
    for d in range(2):
      for i in range(ng):
        qb = L & ~3
        gv = F(A[qb + 1 + d]["c"][i] - A[qb]["c"][i]) if implicit else a["g"][d][i]
        gi = gv * sz[i]; p[d] = p[d] + gi * gi
    if fl & SF["L"]: lod = a["c"][nc - 1]
    elif fl & SF["LZ"]: lod = 0.0
    else:
      r2 = p[1] if p[1] > p[0] else p[0]
      lod = -math.inf if r2 == 0.0 else 0.5 * math.log2(r2)
      lod = lod + s["bias"]; lod = lod + a["bias"]
    lo = s["minl"]
    if fl & SF["CL"] and a["c"][nc - 1] > lo: lo = a["c"][nc - 1]
    lodc = lod if lod >= lo else lo
    if lodc > s["maxl"]: lodc = s["maxl"]
    lm = 0.0 if lodc < 0.0 else float(q) if lodc > q else lodc
    if fl & SF["GET_LOD"]: res = [_fb(F(lm)), _fb(F(lod)), 0, 0]
    else:
      mip = (1 if s["mip"] else 0) if gather or not isf else s["mip"]
      lin, l0, two, fr = gather or (isf and (s["mag"] if lodc <= 0.0 else s["min"]) & 1), 0, False, 0.0
      if mip in (1, 3): l0 = min(0 if lm <= 0.5 else math.ceil(lm + 0.5) - 1, q)
      elif mip == 2: l0 = math.floor(lm); fr = F(lm - l0); two = fr > 0.0 and l0 < q
      res = _slevel(w, t, s, a, f, fl, l0, lin, L)
      if two:
        r1, wa = _slevel(w, t, s, a, f, fl, l0 + 1, lin, L), F(1.0 - fr)
        res = [_fb(F(F(wa * _asf(x)) + F(fr * _asf(y)))) for x, y in zip(res, r1)]
    fout, dv, k = isf or fl & (SF["GET_LOD"] | SF["C"]), [0] * 5, 0
    for i in range(4):
      if not gather and not f["dmask"] >> i & 1: continue
      v = res[i]
      if f["d16"]: dv[k // 2] |= (cvt(v, F32, F16) & 0xffff if fout else v & 0xffff) << (k % 2 * 16)
      else: dv[k] = v
      k += 1
    for i in range(ndv): w.v[(f["data0"] - 256 + i) & 255][L] = dv[i] & M32
    if f["tfe"] or f["lwe"]: w.v[(f["data0"] - 256 + ndv) & 255][L] = 0

def _msaa_load(c, w, f):
  t = _setup(w, f)
  if f["dim"] < 6: raise _Stop(ST_INVALID, msg=f"IMAGE_MSAA_LOAD with dim={DIM_NAMES[f['dim']]}: it needs 2D_MSAA or 2D_MSAA_ARRAY")
  fo, nc, exe = t["f"], DIM_COORDS[f["dim"]], w.exec
  comp, nd = (f["dmask"] & 15 & -(f["dmask"] & 15)).bit_length() - 1 if f["dmask"] & 15 else 0, 2 if f["d16"] else 4
  for L in range(c.wave_size):
    if not exe >> L & 1: continue
    co, dv = _coords(w, f, L, nc), [0] * 4
    for k in range(4):
      cc = co[:nc - 1] + [co[nc - 1] + k]
      a, raw = _texel(t, f["dim"], cc, 0) if cc[nc - 1] <= M32 else None, 0
      if a is not None: raw = int.from_bytes(ctypes.string_at(_mem(w, a, fo.bpp, 1, L), fo.bpp), "little")
      sel = t["sel"][comp]
      v = (to_reg(fo, sel - 4, _comp(raw, fo, sel - 4)) if sel - 4 < len(fo.bits) else 0) if sel >= 4 else (0x3f800000 if _isfloat(fo) else 1) if sel == 1 else 0
      if f["d16"]: dv[k // 2] |= (cvt(v, F32, F16) & 0xffff if _isfloat(fo) else v & 0xffff) << (k % 2 * 16)
      else: dv[k] = v
    for i in range(nd): w.v[(f["data0"] - 256 + i) & 255][L] = dv[i] & M32
    if f["tfe"] or f["lwe"]: w.v[(f["data0"] - 256 + nd) & 255][L] = 0

def exec_mimg(c, w, f: dict, name: str, ename: str, pyrun):
  """Execute one MIMG instruction (as csrc/emu_image.h); faults and unsupported cases raise the backend's Stop."""
  k = image_kind(name)
  if k is None or (k[0] == "atomic" and ename not in c.ents): raise _Stop(ST_UNSUPPORTED, msg=UNSUPPORTED)
  if k[0] == "load": return _load(c, w, f, k[1], k[2])
  if k[0] == "store": return _store(c, w, f, k[1], k[2])
  if k[0] == "atomic": return _atomic(c, w, f, ename, pyrun)
  if k[0] == "sample": return _sample(c, w, f, k[1])
  if k[0] == "msaa": return _msaa_load(c, w, f)
  return _resinfo(c, w, f)
