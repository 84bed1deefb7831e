"""RDNA4 (gfx1201) VIMAGE on linear images, both backends: one VGPR per address dword (vaddr0..4 anywhere in the file), rsrc
as an SGPR number, th[0] as the atomic return bit, and the 18 IMAGE_ATOMIC_* ops. The T# is built here from the field
positions docs/emu.md lists (the gfx11 ones); expected texels come from numpy and the linear layout docs/emu.md describes
(rows padded to whole 256-byte units unless the T# gives a pitch); atomics from the ISA's definition of each op."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna4.ins import *
from tinygrad.runtime.autogen.amd.rdna4.enum import VIMAGEOp
from tinygrad.runtime.autogen.amd.rdna4.operands import OPERANDS
from mockgpu.emu.api import run_code
from mockgpu.emu.errors import GPUFault, InvalidInstruction
from isa_harness import Bufs, tsharp

BACKENDS = ["c", "python"]

class Image:
  """A 256-byte aligned image of `nbytes` (registered as "image"), an output buffer (address in s[0:1]; 4 dwords per lane by
  default) and an input buffer (s[2:3]); the T# goes to s[R:R+7] (R = 40: rsrc is a plain SGPR number)."""
  R = 40
  def __init__(self, nbytes, inp=None, nout=32 * 4):
    self.raw = np.zeros(nbytes + 256, np.uint8)
    self.base = (self.raw.ctypes.data + 255) & ~255
    self.mem = self.raw[self.base - self.raw.ctypes.data:][:nbytes]
    self.out, self.inp = np.zeros(nout, np.uint32), np.zeros(32, np.uint32) if inp is None else inp
    self.bufs = Bufs(self.out, self.inp); self.bufs.mem.add(self.base, nbytes, "image")
  def run(self, T, insts, backend):
    prog = [*(s_mov_b32(s[self.R + i], T[i]) for i in range(8) if T is not None), *insts, s_endpgm()]
    return run_code(b"".join(i.to_bytes() for i in prog), self.bufs.mem, arch="gfx1201", user_sgprs=self.bufs.sgprs(), rsrc2=4 << 1,
                    backend=backend)

def store_out(first, n):   # out[lane * 4 + k] = v[first + k]
  return [s_wait_loadcnt(simm16=0), v_lshlrev_b32_e32(v[60], 4, v[0])] + \
         [global_store_b32(vaddr=v[60:61], vsrc=v[first + k], saddr=s[0:1], ioffset=4 * k) for k in range(n)]

def unorm(x, n): return x.astype(np.float32) / np.float32(2 ** n - 1)

@pytest.mark.parametrize("backend", BACKENDS)
def test_load_separate_address_vgprs_dst_sel_tfe_oob(backend):
  W, H, P = 8, 2, 12                     # 2D linear, pitch 12 texels (T# depth = pitch - 1)
  im = Image(4 * P * 4)
  texels = np.random.default_rng(1).integers(0, 256, (H, P, 4), dtype=np.uint8); im.mem[:texels.size] = texels.reshape(-1)
  T = tsharp(im.base, "8_8_8_8_UNORM", W, 4, depth=P - 1, sel=(6, 5, 1, 4))   # (Z, Y, 1, X); height 4, rows 2..3 zero
  # x in v9, y in v3 (not adjacent, y below x); lanes 24..31 use x + 8 (outside the image: zeros)
  im.run(T, [v_and_b32_e32(v[9], 7, v[0]), v_lshrrev_b32_e32(v[3], 3, v[0]), v_cmp_gt_u32_e32(24, v[0]),
                  v_add_nc_u32_e32(v[10], 8, v[9]), v_cndmask_b32_e32(v[9], v[10], v[9]), v_mov_b32_e32(v[7], 0x1234),
                  image_load(vdata=v[4:7], vaddr0=9, vaddr1=3, rsrc=Image.R, dmask=0b1101, dim=1, tfe=1)] + store_out(4, 4), backend)
  o = im.out.reshape(32, 4)
  lane = np.arange(32); x, y = lane % 8, lane // 8
  ok = (lane < 24) & (y < 2)
  tx = np.zeros((32, 4), np.uint8); tx[ok] = texels[y[ok], x[ok]]
  np.testing.assert_array_equal(o[:, :3].view(np.float32), np.stack([unorm(tx[:, 2], 8), np.ones(32, np.float32), unorm(tx[:, 0], 8)], 1))
  np.testing.assert_array_equal(o[:, 3], 0)                        # TFE: the status VGPR after the data is 0

@pytest.mark.parametrize("backend", BACKENDS)
def test_a16_d16_pck_and_mip_array(backend):
  im = Image(16 * 16 * 4)
  t = np.random.default_rng(3).integers(0, 256, (16, 16, 4), dtype=np.uint8); im.mem[:] = t.reshape(-1)
  lane = np.arange(32); x, y = lane % 16, lane // 16 * 5
  pre = [v_and_b32_e32(v[11], 15, v[0]), v_lshrrev_b32_e32(v[12], 4, v[0]), v_mul_u32_u24_e32(v[12], 5, v[12]),
         v_lshl_or_b32(v[13], v[12], 16, v[11])]                          # a16: (x, y) packed in v13 = vaddr0
  T = tsharp(im.base, "8_8_8_8_UNORM", 16, 16, depth=15)
  im.run(T, pre + [image_load(vdata=v[4:7], vaddr0=13, rsrc=Image.R, dmask=0b0111, dim=1, a16=1, d16=1),
                   image_load_pck(vdata=v[6:9], vaddr0=11, vaddr1=12, rsrc=Image.R, dmask=0b1111, dim=1)] + store_out(4, 4), backend)
  o = im.out.reshape(32, 4)
  tx = t[y, x]
  h = unorm(tx[:, :3], 8).astype(np.float16).view(np.uint16).astype(np.uint32)
  np.testing.assert_array_equal(o[:, 0], h[:, 0] | h[:, 1] << 16)
  np.testing.assert_array_equal(o[:, 1] & 0xffff, h[:, 2])
  np.testing.assert_array_equal(o[:, 2], tx[:, 0].astype(np.uint32) | tx[:, 1].astype(np.uint32) << 16)
  np.testing.assert_array_equal(o[:, 3], tx[:, 2].astype(np.uint32) | tx[:, 3].astype(np.uint32) << 16)
  im.run(tsharp(im.base, "8_8_8_8_SINT", 16, 16, depth=15), pre + [
    image_load_pck_sgn(vdata=v[6:9], vaddr0=11, vaddr1=12, rsrc=Image.R, dmask=0b0011, dim=1)] + store_out(6, 1), backend)
  sx = tx.astype(np.int8).astype(np.int16).view(np.uint16).astype(np.uint32)
  np.testing.assert_array_equal(im.out.reshape(32, 4)[:, 0], sx[:, 0] | sx[:, 1] << 16)
  # IMAGE_LOAD_MIP on a 2D array: x, y, slice, level in four scattered VGPRs; levels 0..1 of 8x4 (3 slices), view from slice 1
  lv = [(0, 64, 4), (64 * 4 * 3 * 4, 64, 2)]     # (byte offset, pitch in texels (256-byte rows), height) per level
  im2 = Image(lv[1][0] + 64 * 2 * 3 * 4); im2.mem.view(np.uint32)[:] = np.arange(im2.mem.size // 4, dtype=np.uint32)
  T = tsharp(im2.base, "32_UINT", 8, 4, typ="2D_ARRAY", depth=2, last_level=1, base_array=1)
  xs, ys, sl, mip = lane % 8, lane // 8 % 4, lane // 16 % 2, lane // 8 % 2
  im2.run(T, [v_and_b32_e32(v[30], 7, v[0]), v_bfe_u32(v[2], v[0], 3, 2), v_bfe_u32(v[21], v[0], 4, 1), v_bfe_u32(v[15], v[0], 3, 1),
              image_load_mip(vdata=v[4:7], vaddr0=30, vaddr1=2, vaddr2=21, vaddr3=15, rsrc=Image.R, dmask=1, dim=5)] + store_out(4, 1), backend)
  want = np.zeros(32, np.uint32)
  for L in range(32):
    off, pitch, hl = lv[mip[L]]
    if xs[L] < max(1, 8 >> mip[L]) and ys[L] < hl: want[L] = (off + (((1 + sl[L]) * hl + ys[L]) * pitch + xs[L]) * 4) // 4
  np.testing.assert_array_equal(im2.out.reshape(32, 4)[:, 0], want)

@pytest.mark.parametrize("backend", BACKENDS)
def test_store_store_pck_and_resinfo(backend):
  W = 16
  im = Image(W * 2 * 8)
  vals = np.array([-0.25, 0.3, 1.7], np.float32)
  T = tsharp(im.base, "16_16_16_16_FLOAT", W, 2, depth=W - 1)
  pre = [v_and_b32_e32(v[20], 15, v[0]), v_lshrrev_b32_e32(v[1], 4, v[0]), v_add_nc_u32_e32(v[1], v[1], v[1])]   # rows 0, 2 (2 is out)
  movs = [v_cvt_f32_u32_e32(v[4], v[0])] + [v_mov_b32_e32(v[5 + i], int(vals[i].view(np.uint32))) for i in range(2)]
  im.run(T, pre + movs + [image_store(vdata=v[4:7], vaddr0=20, vaddr1=1, rsrc=Image.R, dmask=0b1011, dim=1)], backend)
  got = im.mem.view(np.float16).reshape(2, W, 4)
  np.testing.assert_array_equal(got[0], np.stack([np.arange(16, dtype=np.float16), np.full(16, vals[0], np.float16),
                                                  np.zeros(16, np.float16), np.full(16, vals[1], np.float16)], 1))
  assert not got[1].any()                                          # row 2 is outside the 2-row image: nothing written
  im2 = Image(32 * 4)
  T = tsharp(im2.base, "8_8_8_8_UNORM", 32, typ="1D")
  im2.run(T, [v_lshl_or_b32(v[4], v[0], 16, 0x7f), v_mov_b32_e32(v[5], 0xab00cd), v_mov_b32_e32(v[9], v[0]),   # PCK: 16-bit halves, their low 8 bits
              image_store_pck(vdata=v[4:7], vaddr0=9, rsrc=Image.R, dmask=15, dim=0, d16=0)], backend)
  lane = np.arange(32, dtype=np.uint32)
  np.testing.assert_array_equal(im2.mem.reshape(32, 4), np.stack([np.full(32, 0x7f), lane, np.full(32, 0xcd), np.full(32, 0xab)], 1))
  # IMAGE_GET_RESINFO of a 3-level 16x8 2D array of 3 slices viewed from level 1, slice 1; level index = lane
  T = tsharp(im2.base, "32_UINT", 16, 8, typ="2D_ARRAY", depth=2, base_level=1, last_level=2, base_array=1)
  im2.run(T, [v_mov_b32_e32(v[33], v[0]), image_get_resinfo(vdata=v[6:9], vaddr0=33, rsrc=Image.R, dmask=0b1011, dim=5)] + store_out(6, 3), backend)
  o = im2.out.reshape(32, 4)
  np.testing.assert_array_equal(o[:, 0], np.where(lane < 2, 16 >> (1 + np.minimum(lane, 1)), 0))
  np.testing.assert_array_equal(o[:, 1], np.where(lane < 2, 8 >> (1 + np.minimum(lane, 1)), 0))
  np.testing.assert_array_equal(o[:, 2], 2)                        # W: the level count (dmask skips Z)

def _bf16(x):   # round f64 values to bf16 bits, nearest even: to f32 rounding to odd (toward zero, sticky bit), then to bf16
  x = np.asarray(x, np.float64); f = x.astype(np.float32)
  f = np.where(np.abs(f.astype(np.float64)) > np.abs(x), np.nextafter(f, np.float32(0)), f)
  b = (f.view(np.uint32) | (f.astype(np.float64) != x)).astype(np.uint64)
  return ((b + 0x7fff + (b >> 16 & 1)) >> 16).astype(np.uint32)

def _fminmax(o, d, is_min):   # the ISA's IMAGE_ATOMIC_MIN/MAX_FLT: NaN loses unless both are NaN (then quiet src); -0 < +0
  r = []
  for a, b in zip(o.view(np.float32), d.view(np.float32)):
    if np.isnan(a) and np.isnan(b): r.append(np.float32(b).view(np.uint32) | 0x400000)
    elif np.isnan(b) or np.isnan(a): r.append((a if np.isnan(b) else b).view(np.uint32))
    elif a == b == 0: r.append((b if np.signbit(b) == is_min and np.signbit(a) != is_min else a).view(np.uint32))
    else: r.append((b if (b < a if is_min else b > a) else a).view(np.uint32))
  return np.array(r, np.uint32)

def _halves(x, to):   # apply `to` (f64 pairs -> 16-bit results) to both 16-bit halves
  return lambda o, d: to(x(o & 0xffff) + x(d & 0xffff)).astype(np.uint32) | to(x(o >> 16) + x(d >> 16)).astype(np.uint32) << 16
_h = lambda u: u.astype(np.uint16).view(np.float16).astype(np.float64)
_b = lambda u: (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
U, I = np.uint32, np.int32
# op -> new texel from (old, data) as u32 arrays, by each op's definition in the ISA; CMPSWAP separately (data = src, cmp)
ATOMICS = {
  "swap": lambda o, d: d, "add_uint": lambda o, d: o + d, "sub_uint": lambda o, d: o - d,
  "min_int": lambda o, d: np.minimum(o.view(I), d.view(I)).view(U), "max_int": lambda o, d: np.maximum(o.view(I), d.view(I)).view(U),
  "min_uint": np.minimum, "max_uint": np.maximum, "and": lambda o, d: o & d, "or": lambda o, d: o | d, "xor": lambda o, d: o ^ d,
  "inc_uint": lambda o, d: np.where(o >= d, 0, o + 1).astype(U), "dec_uint": lambda o, d: np.where((o == 0) | (o > d), d, o - 1).astype(U),
  "add_flt": lambda o, d: (o.view(np.float32) + d.view(np.float32)).view(U), "min_flt": lambda o, d: _fminmax(o, d, True),
  "max_flt": lambda o, d: _fminmax(o, d, False), "pk_add_f16": _halves(_h, lambda x: x.astype(np.float16).view(np.uint16)),
  "pk_add_bf16": _halves(_b, _bf16), "cmpswap": None,
}

@pytest.mark.parametrize("backend", BACKENDS)
def test_atomics(backend):
  """Each of the 18 ops on its own 32-texel R32 row (texel = lane) with th=1 (return the old value); XOR with th=0 leaves
  the data VGPR; then 32 lanes ADD_UINT into 4 texels (every old value returned once)."""
  rng = np.random.default_rng(7)
  names = list(ATOMICS); n = len(names)
  old = rng.integers(0, 1 << 32, (n, 32), dtype=np.uint64).astype(U)
  data = rng.integers(0, 1 << 32, (n + 1, 32), dtype=np.uint64).astype(U)   # row n: CMPSWAP's compare values
  for r, nm in enumerate(names):
    if nm in ("inc_uint", "dec_uint"): old[r], data[r] = rng.integers(0, 6, 32), rng.integers(0, 6, 32)
    if nm in ("add_flt", "min_flt", "max_flt"):
      old[r], data[r] = rng.uniform(-4, 4, 32).astype(np.float32).view(U), rng.uniform(-4, 4, 32).astype(np.float32).view(U)
    if nm == "pk_add_f16": old[r], data[r] = rng.uniform(-4, 4, (2, 32, 2)).astype(np.float16).view(U).reshape(2, 32)
    if nm == "pk_add_bf16":
      old[r], data[r] = (rng.uniform(-4, 4, (2, 32, 2)).astype(np.float32).view(U) >> 16).astype(np.uint16).view(U).reshape(2, 32)
  for nm in ("min_flt", "max_flt"):
    r = names.index(nm)
    old[r, :6] = np.array([np.nan, 1.0, np.nan, 0.0, -0.0, 2.0], np.float32).view(U)
    data[r, :6] = np.array([np.nan, np.nan, 3.0, -0.0, 0.0, 2.0], np.float32).view(U)
  cs = names.index("cmpswap")
  data[n] = old[cs] ^ (np.arange(32) % 2).astype(U)      # even lanes compare equal (swap), odd lanes do not
  im = Image(n * 256, inp=data.reshape(-1), nout=(n + 1) * 32)     # op r: texels 0..31 of the 256-byte row r (T# base: 256 B units)
  im.mem.view(U).reshape(n, 64)[:, :32] = old
  prog = [v_mov_b32_e32(v[9], v[0]), v_lshlrev_b32_e32(v[60], 2, v[0])]
  for r, nm in enumerate(names):   # v5 = data, v6 = compare value
    T = tsharp(im.base + r * 256, "32_UINT", 32, typ="1D")
    op, nreg = globals()[f"image_atomic_{nm}"], OPERANDS[VIMAGEOp[f"IMAGE_ATOMIC_{nm.upper()}"]]["vdata"][1] // 32   # the DSL's vdata size
    prog += [*(s_mov_b32(s[Image.R + i], T[i]) for i in range(8)),
             global_load_b32(vdst=v[5], vaddr=v[60:61], saddr=s[2:3], ioffset=r * 128),
             global_load_b32(vdst=v[6], vaddr=v[60:61], saddr=s[2:3], ioffset=n * 128), s_wait_loadcnt(simm16=0),
             op(vdata=v[5:4 + nreg], vaddr0=9, rsrc=Image.R, dmask=3 if nm == "cmpswap" else 1, dim=0, th=0 if nm == "xor" else 1),
             s_wait_loadcnt(simm16=0), global_store_b32(vaddr=v[60:61], vsrc=v[5], saddr=s[0:1], ioffset=r * 128)]
  T = tsharp(im.base, "32_UINT", 32, typ="1D")
  prog += [*(s_mov_b32(s[Image.R + i], T[i]) for i in range(8)), v_and_b32_e32(v[11], 3, v[0]), v_mov_b32_e32(v[12], 1),
           image_atomic_add_uint(vdata=v[12:15], vaddr0=11, rsrc=Image.R, dmask=1, dim=0, th=1), s_wait_loadcnt(simm16=0),
           global_store_b32(vaddr=v[60:61], vsrc=v[12], saddr=s[0:1], ioffset=n * 128)]
  im.run(None, prog, backend)
  got, ret = im.mem.view(U).reshape(n, 64)[:, :32], im.out.reshape(n + 1, 32)
  for r, nm in enumerate(names):
    new = np.where(old[r] == data[n], data[r], old[r]) if nm == "cmpswap" else ATOMICS[nm](old[r], data[r]).astype(U)
    if r == 0: new[:4] += 8                                     # the contended ADD_UINT below hits row 0's texels 0..3
    np.testing.assert_array_equal(got[r], new, err_msg=nm)
    np.testing.assert_array_equal(ret[r], data[r] if nm == "xor" else old[r], err_msg=f"{nm} return")
  w0 = ATOMICS["swap"](old[0], data[0])[:4]
  assert sorted(ret[n].tolist()) == sorted(int(w0[k]) + i for k in range(4) for i in range(8))

@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_and_faults(backend):
  im = Image(256)
  load = [image_load(vdata=v[4:7], vaddr0=0, vaddr1=1, rsrc=Image.R, dmask=1, dim=1)]
  with pytest.raises(InvalidInstruction, match=r"swizzle mode 2 \(SW_4KB_2D\): only linear"):
    im.run(tsharp(im.base, "32_UINT", 8, 8, sw=2), load, backend)
  with pytest.raises(InvalidInstruction, match=r"not modelled") as ei:
    im.run(tsharp(im.base, "32_UINT", 8, 8), [image_bvh8_intersect_ray(vdata=v[4:13], vaddr0=0, vaddr1=2, vaddr2=4, vaddr3=8, vaddr4=12,
                                                                       rsrc=Image.R)], backend)
  assert "IMAGE_BVH8_INTERSECT_RAY" in ei.value.report.disasm
  # a 64x64 R32 image of which 256 bytes (row 0) are registered: lane 16 stores to (0, 1), a global write fault
  with pytest.raises(GPUFault) as ei:
    im.run(tsharp(im.base, "32_UINT", 64, 64), [v_and_b32_e32(v[1], 15, v[0]), v_lshrrev_b32_e32(v[2], 4, v[0]),
                                                image_store(vdata=v[4:7], vaddr0=1, vaddr1=2, rsrc=Image.R, dmask=1, dim=1)], backend)
  r = ei.value.report
  assert (r.kind, r.space, r.size, r.lane, r.address) == ("write", "global", 4, 16, im.base + 256) and r.nearest[0] == "image"
