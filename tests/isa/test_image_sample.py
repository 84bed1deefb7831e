"""RDNA3 MIMG sampling on linear images, both backends: IMAGE_SAMPLE* (LZ/L/B/CL/D/G16/C/O), IMAGE_GATHER4* and GATHER4H,
IMAGE_GET_LOD. The sampler S# and the T# are built here from the field positions docs/emu.md lists, the address VGPRs in
the ISA's order (offset, bias, z-compare, derivatives, coordinates, lod | clamp; A16/G16 packing). Expected values come
from `Ref`, this file's numpy float32 implementation of the sampling model docs/emu.md ("Sampling") states, applied to
the image's texels as numpy arrays, never from the emulator."""
import math
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as R
from tinygrad.runtime.autogen.amd.rdna3.ins import v, s, s_mov_b32, s_waitcnt, v_mov_b32_e32, v_mul_u32_u24_e32, global_load_b32, global_store_b32
from tinygrad.runtime.autogen.amd.rdna3.enum import MIMGOp
from tinygrad.runtime.autogen.amd.rdna3.operands import OPERANDS
from mockgpu.emu.errors import InvalidInstruction
from isa_harness import run, Bufs, tsharp as img_tsharp

BACKENDS = ["c", "python"]
f32 = np.float32
FMT = {"RGBA32F": (63, 16), "R32F": (22, 4), "RGBA8": (42, 4), "R32U": (20, 4), "RGBA16F": (57, 8)}   # code, bytes per texel
DIMS = {"1D": 0, "2D": 1, "3D": 2, "CUBE": 3, "1D_ARRAY": 4, "2D_ARRAY": 5}
NCOORD, NGRAD = {0: 1, 1: 2, 2: 3, 3: 3, 4: 2, 5: 3}, {0: 1, 1: 2, 2: 3, 3: 2, 4: 1, 5: 2}
SENT = 0xdeadbeef

def tsharp(base, fmt, *args, **kw): return img_tsharp(base, FMT[fmt][0], *args, **kw)

def ssharp(mx=2, my=2, mz=2, cmp=0, unnorm=0, mag=1, mn=1, zf=0, mip=0, border=0, min_lod=0, max_lod=15 * 256, bias=0, filter_mode=0, aniso=0):
  """S#: CLAMP_X/Y/Z [8:0], MAX_ANISO_RATIO [11:9], DEPTH_COMPARE_FUNC [14:12], FORCE_UNNORMALIZED [15], FILTER_MODE [30:29],
  MIN_LOD [43:32], MAX_LOD [55:44] (u4.8), LOD_BIAS [77:64] (s5.8), XY_MAG/XY_MIN/Z/MIP_FILTER [91:84], BORDER_COLOR_TYPE [127:126]"""
  d = (mx | my << 3 | mz << 6 | aniso << 9 | cmp << 12 | unnorm << 15 | filter_mode << 29 | min_lod << 32 | max_lod << 44 |
       (bias & 0x3fff) << 64 | mag << 84 | mn << 86 | zf << 88 | mip << 90 | border << 126)
  return [(d >> (32 * i)) & 0xffffffff for i in range(4)]

def pack(levels, bpp):
  """bytes of the levels ([slices][h][w] texels of `bpp` bytes each, as uint8 [..., bpp]) in the documented linear layout:
  rows padded to a whole number of 256-byte units, slices after each other, then the next level"""
  out = []
  for lv in levels:
    d, h, w = lv.shape[:3]
    step = 256 // math.gcd(256, bpp); pitch = -(-w // step) * step
    buf = np.zeros((d, h, pitch, bpp), np.uint8); buf[:, :, :w] = lv
    out.append(buf.reshape(-1))
  return np.concatenate(out)

def levels_of(rng, w, h, d, n, lo=-4, hi=4, layers=False):
  """n RGBA32F levels of random values (3D: depth halves per level; arrays: d layers each)"""
  return [rng.uniform(lo, hi, (d if layers else max(1, d >> i), max(1, h >> i), max(1, w >> i), 4)).astype(f32) for i in range(n)]

def encode(flags, dim, a, a16=0, g16=0):
  """the address dwords of one lane in the ISA's order from named values"""
  h = lambda x: int(np.array(x, np.float16).view(np.uint16))
  pk = lambda xs: [h(xs[i]) | (h(xs[i + 1]) << 16 if i + 1 < len(xs) else 0) for i in range(0, len(xs), 2)]
  f = lambda x: int(np.array(x, f32).view(np.uint32))
  out = []
  if "O" in flags: out.append(sum((o & 63) << (8 * k) for k, o in enumerate(a["off"])))
  if "B" in flags: out.append(h(a["bias"]) if a16 else f(a["bias"]))
  if "C" in flags: out.append(f(a["z"]))
  if "D" in flags:
    for d in range(2): out += pk(a["g"][d]) if a16 or g16 else [f(x) for x in a["g"][d]]
  cs = list(a["c"]) + ([a["lod"]] if "L" in flags else [a["cl"]] if "CL" in flags else [])
  return out + (pk(cs) if a16 else [f(x) for x in cs])

class Image:
  def __init__(self, data: np.ndarray):
    self.raw = np.zeros(data.size + 512, np.uint8)
    self.base = (self.raw.ctypes.data + 255) & ~255
    self.mem = self.raw[self.base - self.raw.ctypes.data:][:max(data.size, 256)]
    self.mem[:data.size] = data

def run_op(backend, img, T, S, op, addrs, dim, nout=4, **kw):
  """run MIMG `op` with the T# in s[8:15], the S# in s[16:19] and lane L's address dwords addrs[L] in v[10:]; returns the
  nout VGPRs from v[40] per lane (preset to SENT)"""
  na = max(len(x) for x in addrs)
  inp = np.zeros((32, na), np.uint32)
  for L, x in enumerate(addrs): inp[L, :len(x)] = x
  out = np.zeros(32 * nout, np.uint32)
  bufs = Bufs(out, inp.reshape(-1)); bufs.mem.add(img.base, img.mem.size, "image")
  nreg = OPERANDS[MIMGOp[op]]["vaddr"][1] // 32
  ins = [*(s_mov_b32(s[8 + i], T[i]) for i in range(8)), *(s_mov_b32(s[16 + i], S[i]) for i in range(4)),
         v_mul_u32_u24_e32(v[1], na * 4, v[0]), *(global_load_b32(vdst=v[10 + k], addr=v[1], saddr=s[2:3], offset=4 * k) for k in range(na)),
         *(v_mov_b32_e32(v[40 + k], SENT) for k in range(nout)), s_waitcnt(simm16=0),
         getattr(R, op.lower())(v[40:43], v[10:10 + nreg - 1], s[8:15], s[16:19], dim=dim, **kw),
         s_waitcnt(simm16=0), v_mul_u32_u24_e32(v[1], nout * 4, v[0]),
         *(global_store_b32(addr=v[1], data=v[40 + k], saddr=s[0:1], offset=4 * k) for k in range(nout))]
  run(ins, bufs, backend=backend)
  return out.reshape(32, nout)

class Ref:
  """the documented sampling model in numpy float32 over `levels` (all levels of the image, [slices][h][w][4] float32)"""
  def __init__(self, levels, S: dict, dim, base_level=0, last_level=0, base_array=0, nslices=None):
    self.lv, self.S, self.dim, self.bl, self.q, self.ba = levels, S, dim, base_level, last_level - base_level, base_array
    self.ns = nslices or levels[0].shape[0]
  @staticmethod
  def wrap(i, n, m):
    if m == 0: return i % n
    if m == 1: i %= 2 * n; return i if i < n else 2 * n - 1 - i
    if m in (2, 3): return min(max(i, 0), n - 1)
    return i if 0 <= i < n else None
  def taps(self, x, n, m, lin, nt):
    x = f32(x)
    if m in (3, 5, 7): x = abs(x)
    if m in (4, 5): x = f32(min(max(x, f32(0)), f32(n)))
    u = x - f32(0.5) if lin else x
    fl = np.floor(u); fr = u - fl
    return [self.wrap(int(fl) + k, n, m) for k in range(nt)], [f32(1) - fr, fr] if lin else [f32(1)]
  def texel(self, l, x, y, z):
    b = self.S.get("border", 0)
    if x is None or y is None or z is None: return np.array([1 if b == 2 or (b == 1 and i == 3) else 0 for i in range(4)], f32)
    return self.lv[self.bl + l][z, y, x]
  def setup(self, l, a, fl, lin):
    lvl, S, dim = self.lv[self.bl + l], self.S, self.dim
    n = [lvl.shape[2], lvl.shape[1], lvl.shape[0]]
    nax, cube = {0: 1, 4: 1, 2: 3}.get(dim, 2), dim == 3
    layer = 0
    if dim >= 3:
      li = max(int(np.rint(f32(a["c"][1 if dim == 4 else 2]))), 0)
      if cube: li = (li >> 3) * 6 + min(li & 7, 5)
      layer = self.ba + min(li, self.ns - self.ba - 1)
    ax = []
    for k in range(3):
      if k >= nax: ax.append(([0], [f32(1)])); continue
      x = f32(a["c"][k])
      if cube: x = x - f32(1)
      if not S.get("unnorm"): x = x * f32(n[k])
      if "O" in fl: x = x + f32(a["off"][k])
      kl = lin if k < 2 or not S.get("zf") else S["zf"] == 2
      if "GATHER4H" in fl: ax.append(self.taps(x, n[k], S["m"][k], 0, 4 if k == 0 else 1))
      else: ax.append(self.taps(x, n[k], 2 if cube else S["m"][k], kl, 2 if kl else 1))
    return ax, layer
  def cmpv(self, ref, t):
    return f32([False, ref < t, ref == t, ref <= t, ref > t, ref != t, ref >= t, True][self.S.get("cmp", 0)])
  def level(self, l, a, fl, lin, comp):
    ax, layer = self.setup(l, a, fl, lin)
    z = (lambda k: ax[2][0][k]) if self.dim == 2 else (lambda k: layer)
    if "GATHER" in fl:
      order = [(k, 0) for k in range(4)] if "GATHER4H" in fl else [(0, 1), (1, 1), (1, 0), (0, 0)]
      out = []
      for kx, ky in order:
        t = self.texel(l, ax[0][0][kx], ax[1][0][min(ky, len(ax[1][0]) - 1)], z(0))
        out.append(self.cmpv(f32(a["z"]), t[0]) if "C" in fl else t[comp])
      return np.array(out, f32)
    acc = None
    for kz in range(len(ax[2][0])):
      for ky in range(len(ax[1][0])):
        for kx in range(len(ax[0][0])):
          wt = ax[0][1][kx] * ax[1][1][ky] * ax[2][1][kz]
          if wt == 0: continue
          t = self.texel(l, ax[0][0][kx], ax[1][0][ky], z(kz))
          if "C" in fl: t = np.full(4, self.cmpv(f32(a["z"]), t[0]), f32)
          p = wt * t
          acc = p if acc is None else acc + p
    return acc
  def lod(self, fl, A, L):
    a, S, ng = A[L], self.S, NGRAD[self.dim]
    if "L" in fl: return float(f32(a["lod"]))
    if "LZ" in fl: return 0.0
    if "D" in fl: g = a["g"]
    else: q = L & ~3; g = [[f32(A[q + 1 + d]["c"][i]) - f32(A[q]["c"][i]) for i in range(ng)] for d in range(2)]
    lv = self.lv[self.bl]
    sz = [1.0] * 3 if S.get("unnorm") else [lv.shape[2], lv.shape[1], lv.shape[0] if self.dim == 2 else 1]
    p = [0.0, 0.0]
    for d in range(2):
      for i in range(ng): x = float(f32(g[d][i])) * sz[i]; p[d] += x * x
    r2 = max(p)
    return (-math.inf if r2 == 0 else 0.5 * math.log2(r2)) + S.get("bias", 0) / 256 + (float(f32(a["bias"])) if "B" in fl else 0.0)
  def clamp(self, fl, a, lod):
    lo = max(self.S.get("min_lod", 0) / 256, float(f32(a["cl"]))) if "CL" in fl else self.S.get("min_lod", 0) / 256
    return min(max(lod, lo), self.S.get("max_lod", 15 * 256) / 256)
  def sample(self, fl, A, L, comp=0):
    """register values (float32 x4) lane L gets"""
    a, S = A[L], self.S
    lod = self.lod(fl, A, L); lodc = self.clamp(fl, a, lod)
    lm = min(max(lodc, 0.0), float(self.q))
    if "GET_LOD" in fl: return np.array([lm, lod, 0, 0], f32)
    gather = "GATHER" in fl
    mip = (1 if S.get("mip") else 0) if gather else S.get("mip", 0)
    lin = gather or (S.get("mag", 1) if lodc <= 0 else S.get("mn", 1)) & 1
    if mip == 0: return self.level(0, a, fl, lin, comp)
    if mip in (1, 3): return self.level(min(0 if lm <= 0.5 else math.ceil(lm + 0.5) - 1, self.q), a, fl, lin, comp)
    l0 = math.floor(lm); fr = f32(lm - l0)
    r0 = self.level(l0, a, fl, lin, comp)
    if fr == 0 or l0 >= self.q: return r0
    return (f32(1) - fr) * r0 + fr * self.level(l0 + 1, a, fl, lin, comp)

def sflags(op): return set(op[6:].split("_")) | ({"GET_LOD"} if op == "IMAGE_GET_LOD" else set()) | ({"GATHER"} if op.startswith("IMAGE_GATHER4") else set()) | ({"GATHER4H"} if op == "IMAGE_GATHER4H" else set())

def check(backend, img, T, S, ref, op, A, dim, dmask=15, comp=0, **kw):
  fl = sflags(op)
  got = run_op(backend, img, T, ssharp(**S_args(S)), op, [encode(fl, dim, a, kw.get("a16", 0), "G16" in fl) for a in A], dim,
               dmask=dmask, **kw)
  want = np.stack([ref.sample(fl, A, L, comp) for L in range(32)])
  sel = list(range(4)) if "GATHER" in fl else [i for i in range(4) if dmask >> i & 1]
  np.testing.assert_array_equal(got[:, :len(sel)].view(f32), want[:, sel], err_msg=op)
  assert (got[:, len(sel):] == SENT).all(), f"{op} wrote past its data"
  return got

def S_args(S):
  return dict(mx=S["m"][0], my=S["m"][1], mz=S["m"][2], **{k: v for k, v in S.items() if k != "m"})

def lanes(rng, n=32, **fields):
  return [{k: (f(rng, L) if callable(f) else f) for k, f in fields.items()} for L in range(n)]

@pytest.mark.parametrize("backend", BACKENDS)
def test_address_modes_point_bilinear_border(backend):
  rng = np.random.default_rng(1)
  lv = levels_of(rng, 5, 3, 1, 1)
  img = Image(pack([x.view(np.uint8).reshape(*x.shape[:3], 16) for x in lv], 16))
  T = tsharp(img.base, "RGBA32F", 5, 3)
  A = lanes(rng, c=lambda r, L: r.uniform(-1.6, 2.6, 2).astype(f32))
  A[0]["c"] = np.array([0.1, 1 / 3], f32); A[1]["c"] = np.array([-1.0, 2.0], f32)   # texel centres / exact edges
  for m in range(8):
    for mag in (0, 1):
      S = dict(m=(m, (m + 3) % 8, 0), mag=mag, border=m % 3)
      check(backend, img, T, S, Ref(lv, S, 1), "IMAGE_SAMPLE_LZ", A, 1)
  S = dict(m=(0, 6, 0), mag=1, unnorm=1, border=2)                # FORCE_UNNORMALIZED: coordinates in texels
  check(backend, img, T, S, Ref(lv, S, 1), "IMAGE_SAMPLE_LZ", lanes(rng, c=lambda r, L: r.uniform(-2, 7, 2).astype(f32)), 1)
  S = dict(m=(1, 2, 0), mag=1)                                   # the instruction's UNRM bit does the same
  Su = dict(S, unnorm=1)
  Au = lanes(rng, c=lambda r, L: r.uniform(-2, 7, 2).astype(f32))
  got = run_op(backend, img, T, ssharp(**S_args(S)), "IMAGE_SAMPLE_LZ", [encode({"LZ"}, 1, a) for a in Au], 1, dmask=15, unrm=1)
  np.testing.assert_array_equal(got.view(f32), np.stack([Ref(lv, Su, 1).sample({"LZ"}, Au, L) for L in range(32)]))

@pytest.mark.parametrize("backend", BACKENDS)
def test_lod_selection(backend):
  """mip chain 16x8 .. 2x1 (4 levels): implicit LOD from the quads, bias (S# and per lane), explicit LOD, derivatives, the
  LOD clamps (S# MIN/MAX_LOD, per-lane clamp), mip point / linear, mag vs min filter, a view from BASE_LEVEL 1"""
  rng = np.random.default_rng(2)
  lv = levels_of(rng, 16, 8, 1, 4)
  img = Image(pack([x.view(np.uint8).reshape(*x.shape[:3], 16) for x in lv], 16))
  T = tsharp(img.base, "RGBA32F", 16, 8, last_level=3)
  # quads: lane 4k+0 at (s, t), +1 one step dx to the right, +2 one step dy down, +3 both; steps in texels 0.25 .. 11
  steps = [0.25, 0.5, 1, 1.5, 2, 3, 4, 11]
  def quad(r, L):
    q, k = L // 4, L % 4
    base = np.array([0.1 + 0.09 * q, 0.2 + 0.07 * q], f32)
    return base + np.array([(k & 1) * steps[q] / 16, (k >> 1) * steps[7 - q] / 8], f32)
  Aq = lanes(rng, c=quad, bias=lambda r, L: f32(r.uniform(-1.5, 2)), cl=lambda r, L: f32(r.choice([0, 0.5, 1.25, 2.75])))
  for S in (dict(m=(0, 1, 0), mag=0, mn=1, mip=2), dict(m=(2, 0, 0), mag=1, mn=0, mip=1, bias=-96),
            dict(m=(2, 2, 0), mag=1, mn=1, mip=2, bias=200, min_lod=64, max_lod=600)):
    for op in ("IMAGE_SAMPLE", "IMAGE_SAMPLE_B", "IMAGE_SAMPLE_CL", "IMAGE_SAMPLE_B_CL"):
      check(backend, img, T, S, Ref(lv, S, 1, last_level=3), op, Aq, 1)
  A = lanes(rng, c=lambda r, L: r.uniform(-0.2, 1.2, 2).astype(f32), lod=lambda r, L: f32(r.choice([-1, 0, 0.25, 0.5, 1.5, 2.75, 3, 7])),
            g=lambda r, L: r.uniform(-0.3, 0.3, (2, 2)).astype(f32), cl=lambda r, L: f32(r.uniform(0, 3)))
  for S in (dict(m=(1, 3, 0), mag=1, mn=1, mip=2), dict(m=(0, 0, 0), mag=0, mn=1, mip=3, min_lod=128)):
    for op in ("IMAGE_SAMPLE_L", "IMAGE_SAMPLE_D", "IMAGE_SAMPLE_D_CL", "IMAGE_SAMPLE_LZ"):
      check(backend, img, T, S, Ref(lv, S, 1, last_level=3), op, A, 1)
    Tb = tsharp(img.base, "RGBA32F", 16, 8, base_level=1, last_level=3)         # levels 1..3 seen as 0..2
    check(backend, img, Tb, S, Ref(lv, S, 1, base_level=1, last_level=3), "IMAGE_SAMPLE_D", A, 1)

@pytest.mark.parametrize("backend", BACKENDS)
def test_compare_offsets_gather(backend):
  rng = np.random.default_rng(3)
  lv = levels_of(rng, 8, 8, 1, 2, lo=0, hi=1)
  lv[0][0, :, :, 0] = np.round(lv[0][0, :, :, 0] * 4) / 4                # equal values for EQUAL / NOTEQUAL
  img = Image(pack([x.view(np.uint8).reshape(*x.shape[:3], 16) for x in lv], 16))
  T = tsharp(img.base, "RGBA32F", 8, 8, last_level=1)
  A = lanes(rng, c=lambda r, L: r.uniform(-0.3, 1.3, 2).astype(f32), z=lambda r, L: f32(r.choice([0.25, 0.5, r.uniform(0, 1)])),
            off=lambda r, L: tuple(int(x) for x in r.integers(-8, 8, 3)), lod=lambda r, L: f32(r.uniform(0, 1.5)), bias=0.0)
  for cmp in (1, 2, 5, 6):
    S = dict(m=(0, 6, 0), mag=1, mn=1, cmp=cmp, border=2)
    for op in ("IMAGE_SAMPLE_C_LZ_O", "IMAGE_SAMPLE_C_LZ"):
      check(backend, img, T, S, Ref(lv, S, 1, last_level=1), op, A, 1, dmask=1)
    check(backend, img, T, S, Ref(lv, S, 1, last_level=1), "IMAGE_GATHER4_C_LZ_O", A, 1, dmask=1)
  S = dict(m=(1, 4, 0), mag=0, mn=0, mip=1, border=1)
  for op, comp in (("IMAGE_GATHER4_LZ", 1), ("IMAGE_GATHER4_L", 3), ("IMAGE_GATHER4_O", 0), ("IMAGE_GATHER4H", 2), ("IMAGE_SAMPLE_L_O", 0)):
    check(backend, img, T, S, Ref(lv, S, 1, last_level=1), op, A, 1, dmask=1 << comp if "GATHER" in op else 15, comp=comp)

@pytest.mark.parametrize("backend", BACKENDS)
def test_get_lod_and_fields(backend):
  """GET_LOD (clamped, unclamped); A16 coordinates, G16 derivatives, D16 results, TFE, a format with DST_SEL, an integer format"""
  rng = np.random.default_rng(4)
  lv = levels_of(rng, 16, 8, 1, 4)
  img = Image(pack([x.view(np.uint8).reshape(*x.shape[:3], 16) for x in lv], 16))
  T = tsharp(img.base, "RGBA32F", 16, 8, last_level=3)
  quad = lambda r, L: np.array([0.3, 0.4], f32) + np.array([(L & 1) * (L // 4 + 0.5) / 16, (L >> 1 & 1) * 0.5 / 8], f32)
  A = lanes(rng, c=quad)
  S = dict(m=(0, 0, 0), mip=2, bias=-40, min_lod=96, max_lod=512)
  check(backend, img, T, S, Ref(lv, S, 1, last_level=3), "IMAGE_GET_LOD", A, 1, dmask=3)
  # A16 (f16 coordinates and lod) + D16 + TFE; G16 derivatives with 32-bit coordinates
  h = lambda x: np.array(x, np.float16).astype(f32)
  A = lanes(rng, c=lambda r, L: h(r.uniform(-0.2, 1.2, 2)), lod=lambda r, L: h(r.uniform(-0.5, 3.5)), g=lambda r, L: h(r.uniform(-0.2, 0.2, (2, 2))))
  S = dict(m=(0, 1, 0), mag=1, mn=1, mip=2)
  ref = Ref(lv, S, 1, last_level=3)
  got = run_op(backend, img, T, ssharp(**S_args(S)), "IMAGE_SAMPLE_L", [encode({"L"}, 1, a, a16=1) for a in A], 1, nout=3, dmask=0b1011, a16=1, d16=1, tfe=1)
  want = np.stack([ref.sample({"L"}, A, L) for L in range(32)])[:, [0, 1, 3]].astype(np.float16).view(np.uint16).astype(np.uint32)
  np.testing.assert_array_equal(got[:, 0], want[:, 0] | want[:, 1] << 16)
  np.testing.assert_array_equal(got[:, 1], want[:, 2])
  np.testing.assert_array_equal(got[:, 2], 0)                                  # TFE status
  check(backend, img, T, S, ref, "IMAGE_SAMPLE_D_G16", A, 1)
  Ag = lanes(rng, c=lambda r, L: A[L]["c"], g=lambda r, L: A[L]["g"], z=lambda r, L: f32(r.uniform(0, 1)), cl=lambda r, L: f32(r.uniform(0, 2)),
             off=lambda r, L: tuple(int(x) for x in r.integers(-4, 4, 3)))
  Sc = dict(S, cmp=3)
  check(backend, img, T, Sc, Ref(lv, Sc, 1, last_level=3), "IMAGE_SAMPLE_C_D_CL_O_G16", Ag, 1, dmask=1)
  # RGBA8 UNORM with DST_SEL (Z, 1, X, 0): texels convert to f32 before filtering; R32 UINT: point sampling of integers
  raw = rng.integers(0, 256, (1, 4, 4, 4), dtype=np.uint8)
  img8 = Image(pack([raw], 4))
  vals = [(raw.astype(f32) / f32(255))[..., [2, 0, 0, 0]]]
  vals[0][..., 1] = 1; vals[0][..., 3] = 0
  A = lanes(rng, c=lambda r, L: r.uniform(-0.2, 1.2, 2).astype(f32))
  S = dict(m=(0, 2, 0), mag=1)
  check(backend, img8, tsharp(img8.base, "RGBA8", 4, 4, sel=(6, 1, 4, 0)), S, Ref(vals, S, 1), "IMAGE_SAMPLE_LZ", A, 1)
  ints = rng.integers(0, 2 ** 32, (1, 4, 4), dtype=np.uint32)
  imgi = Image(pack([ints.view(np.uint8).reshape(1, 4, 4, 4)], 4))
  got = run_op(backend, imgi, tsharp(imgi.base, "R32U", 4, 4), ssharp(mx=0, my=0, mag=1), "IMAGE_SAMPLE_LZ", [encode({"LZ"}, 1, a) for a in A], 1, dmask=1)
  x, y = [np.floor(np.array([a["c"][k] for a in A], f32) * f32(4)).astype(int) % 4 for k in range(2)]
  np.testing.assert_array_equal(got[:, 0], ints[0, y, x])

@pytest.mark.parametrize("backend", BACKENDS)
def test_dims_1d_3d_arrays_cube(backend):
  rng = np.random.default_rng(5)
  # 3D 8x4x4, 2 levels, trilinear in z (Z_FILTER linear) with point xy; and z point with bilinear xy
  lv = levels_of(rng, 8, 4, 4, 2)
  img = Image(pack([x.view(np.uint8).reshape(*x.shape[:3], 16) for x in lv], 16))
  T = tsharp(img.base, "RGBA32F", 8, 4, typ="3D", depth=3, last_level=1)
  A = lanes(rng, c=lambda r, L: r.uniform(-0.2, 1.2, 3).astype(f32), lod=lambda r, L: f32(r.uniform(0, 1.2)),
            g=lambda r, L: r.uniform(-0.3, 0.3, (2, 3)).astype(f32))
  for S in (dict(m=(0, 1, 2), mag=0, mn=0, zf=2, mip=2), dict(m=(2, 0, 6), mag=1, mn=1, zf=1, border=2)):
    for op in ("IMAGE_SAMPLE_L", "IMAGE_SAMPLE_D"):
      check(backend, img, T, S, Ref(lv, S, 2, last_level=1), op, A, 2)
  # integer formats are point sampled on every axis, also with Z_FILTER linear
  ints = rng.integers(0, 2 ** 32, (4, 2, 2), dtype=np.uint32)
  imgi = Image(pack([ints.view(np.uint8).reshape(4, 2, 2, 4)], 4))
  Ai = lanes(rng, c=lambda r, L: r.uniform(-0.2, 1.2, 3).astype(f32))
  got = run_op(backend, imgi, tsharp(imgi.base, "R32U", 2, 2, typ="3D", depth=3), ssharp(mag=1, zf=2), "IMAGE_SAMPLE_LZ",
               [encode({"LZ"}, 2, a) for a in Ai], 2, dmask=1)
  x, y, z = [np.clip(np.floor(np.array([a["c"][k] for a in Ai], f32) * f32(n)).astype(int), 0, n - 1) for k, n in enumerate((2, 2, 4))]
  np.testing.assert_array_equal(got[:, 0], ints[z, y, x])
  # 2D array of 5 layers seen from BASE_ARRAY 1 (layers 1..4), layer = rint(r) clamped; 1D array; cube array (2 cubes)
  lv = levels_of(rng, 4, 4, 12, 1, layers=True)
  img = Image(pack([x.view(np.uint8).reshape(*x.shape[:3], 16) for x in lv], 16))
  A = lanes(rng, c=lambda r, L: np.array([*r.uniform(-0.2, 1.2, 2), r.choice([-1, 0.5, 1.5, 2.5, 1.49, 7])], f32))
  S = dict(m=(0, 2, 0), mag=1)
  check(backend, img, tsharp(img.base, "RGBA32F", 4, 4, typ="2D_ARRAY", depth=4, base_array=1), S, Ref(lv, S, 5, base_array=1, nslices=5), "IMAGE_SAMPLE_LZ", A, 5)
  lv1 = [x[:, :1] for x in lv]
  img1 = Image(pack([x.view(np.uint8).reshape(*x.shape[:3], 16) for x in lv1], 16))
  A1 = lanes(rng, c=lambda r, L: np.array([r.uniform(-0.2, 1.2), r.choice([0, 1.5, 2.5, 9])], f32))
  check(backend, img1, tsharp(img1.base, "RGBA32F", 4, 1, typ="1D_ARRAY", depth=11), S, Ref(lv1, S, 4), "IMAGE_SAMPLE_LZ", A1, 4)
  check(backend, img1, tsharp(img1.base, "RGBA32F", 4, 1, typ="1D"), S, Ref(lv1, S, 0), "IMAGE_SAMPLE_LZ", A1, 0)
  # cube faces: coordinates in [1, 2] per face, face = cube * 8 + face id (layer cube * 6 + face), clamped at the face edges
  Ac = lanes(rng, c=lambda r, L: np.array([*r.uniform(0.9, 2.1, 2), r.choice([0, 3, 5, 8, 13, 6])], f32))
  S = dict(m=(0, 0, 0), mag=1)
  check(backend, img, tsharp(img.base, "RGBA32F", 4, 4, typ="CUBE", depth=11), S, Ref(lv, S, 3), "IMAGE_SAMPLE_LZ", Ac, 3)

@pytest.mark.parametrize("backend", BACKENDS)
def test_sampler_errors(backend):
  img = Image(np.zeros(256, np.uint8))
  T = tsharp(img.base, "R32F", 4, 4)
  A = [encode({"LZ"}, 1, {"c": [0.5, 0.5]})] * 32
  for S, msg in ((ssharp(filter_mode=1), r"FILTER_MODE=1 \(min/max reduction\)"), (ssharp(mag=3, aniso=2), r"anisotropic filtering \(MAX_ANISO_RATIO=2\)"),
                 (ssharp(mx=6, border=3), r"BORDER_COLOR_TYPE=3")):
    with pytest.raises(InvalidInstruction, match=msg): run_op(backend, img, T, S, "IMAGE_SAMPLE_LZ", A, 1)
  with pytest.raises(InvalidInstruction, match=r"depth-compare sampling of an integer format \(T# FORMAT=20\)"):
    run_op(backend, img, tsharp(img.base, "R32U", 4, 4), ssharp(), "IMAGE_SAMPLE_C_LZ", [[0, 0, 0]] * 32, 1)
  with pytest.raises(InvalidInstruction, match=r"dim=2D_MSAA: multisampled images cannot be sampled"):
    run_op(backend, img, T, ssharp(), "IMAGE_SAMPLE_LZ", A, 6)
