"""RDNA3 MIMG on linear images, both backends: T# decoding (base, size, pitch, format, dst_sel, type, levels, slices),
format conversions, DMASK/D16/A16/TFE/PCK, out-of-range texels, stores, atomics, GET_RESINFO, and the errors/faults.
Descriptors are built here from the ISA's T# field positions; expected texels come from numpy (UNORM v/(2^n-1), SNORM
max(v/(2^(n-1)-1), -1) in f32, f16 widening; stores: norm round to nearest even, integers keep the low bits) and from the
linear layout docs/emu.md describes."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from mockgpu.emu.errors import GPUFault, InvalidInstruction
from isa_harness import run, Bufs, tsharp

BACKENDS = ["c", "python"]

class Image:
  """A 256-byte aligned image of `nbytes` (registered exactly as "image") + an output buffer; s[8:15] holds the T#, s[0:1]
  the output address."""
  def __init__(self, nbytes, nout=32 * 4):
    self.raw = np.zeros(nbytes + 256, np.uint8)
    self.base = (self.raw.ctypes.data + 255) & ~255
    self.mem = self.raw[self.base - self.raw.ctypes.data:][:nbytes]
    self.out = np.zeros(nout, np.uint32)
    self.bufs = Bufs(self.out); self.bufs.mem.add(self.base, nbytes, "image")
  def run(self, T, insts, backend, **kw):
    return run([*(s_mov_b32(s[8 + i], T[i]) for i in range(8)), *insts], self.bufs, backend=backend, **kw)

def _xy(w):   # v1 = lane % w, v2 = lane // w (w a power of two)
  return [v_and_b32_e32(v[1], w - 1, v[0]), v_lshrrev_b32_e32(v[2], w.bit_length() - 1, v[0])]
def _store_out(first, n):   # out[lane * 4 + k] = v[first + k]
  return [s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[20], 4, v[0]), global_store_b128(addr=v[20], data=v[first:first + 3], saddr=s[0:1])] if n == 4 else \
         [s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[20], 4, v[0])] + [global_store_b32(addr=v[20], data=v[first + k], saddr=s[0:1], offset=4 * k) for k in range(n)]

def unorm(x, n): return x.astype(np.float32) / np.float32(2 ** n - 1)
def snorm(x, n): return np.maximum(x.astype(np.float32) / np.float32(2 ** (n - 1) - 1), np.float32(-1))

@pytest.mark.parametrize("backend", BACKENDS)
def test_load_2d_pitch_dst_sel_dmask_oob(backend):
  W, H, P = 8, 2, 12                     # 2D linear with a custom pitch of 12 texels (T# depth = pitch - 1)
  im = Image(4 * P * 4)
  texels = np.random.default_rng(1).integers(0, 256, (H, P, 4), dtype=np.uint8); im.mem[:texels.size] = texels.reshape(-1)
  T = tsharp(im.base, "8_8_8_8_UNORM", W, 4, depth=P - 1, sel=(6, 5, 1, 4))   # (Z, Y, 1, X); height 4 but only 2 rows written
  # lanes 0..15: rows 0..1; lanes 16..31: x = lane % 8, y = lane // 8 (rows 2, 3 are in range but hold zeros; x + 8 is out)
  im.run(T, _xy(8) + [v_cmp_gt_u32_e32(24, v[0]), v_add_nc_u32_e32(v[3], 8, v[1]),
                          v_cndmask_b32_e32(v[1], v[3], v[1]), v_mov_b32_e32(v[7], 0x1234),
                          image_load(v[4:7], v[1:4], s[8:15], dmask=0b1101, dim=1, tfe=1)] + _store_out(4, 4), backend)
  o = im.out.reshape(32, 4)
  lane = np.arange(32); x, y = lane % 8, lane // 8
  inr = lane < 24
  tx = np.zeros((32, 4), np.uint8); tx[inr & (y < 2)] = texels[y[inr & (y < 2)], x[inr & (y < 2)]]
  want = np.stack([unorm(tx[:, 2], 8), np.ones(32, np.float32), unorm(tx[:, 0], 8)], 1)   # dmask X, Z, W -> (Z, 1, X)
  np.testing.assert_array_equal(o[:, :3].view(np.float32), want)
  np.testing.assert_array_equal(o[:, 3], 0)                        # TFE: the status VGPR after the data is 0

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt", ["8_SINT", "16_SNORM", "32_UINT", "16_16_SNORM", "8_8_8_8_SINT", "2_10_10_10_UNORM", "16_16_16_16_FLOAT"])
def test_load_formats_1d(fmt, backend):
  bits = {"8_SINT": (8,), "16_SNORM": (16,), "32_UINT": (32,), "16_16_SNORM": (16, 16), "8_8_8_8_SINT": (8,) * 4,
          "2_10_10_10_UNORM": (10, 10, 10, 2), "16_16_16_16_FLOAT": (16,) * 4}[fmt]
  bpp = sum(bits) // 8
  im = Image(32 * bpp)
  rng = np.random.default_rng(len(fmt))
  im.mem[:] = rng.integers(0, 256, 32 * bpp, dtype=np.uint8)
  if fmt == "16_16_16_16_FLOAT": im.mem[:] = rng.uniform(-9, 9, 32 * 4).astype(np.float16).view(np.uint8)
  im.run(tsharp(im.base, fmt, 32, typ="1D"), [v_mov_b32_e32(v[5], 0), v_mov_b32_e32(v[6], 0), v_mov_b32_e32(v[7], 0),
              image_load(v[4:7], v[0:3], s[8:15], dmask=(1 << len(bits)) - 1, dim=0)] + _store_out(4, 4), backend)
  word = np.zeros(32, object)
  for i in range(bpp): word += im.mem.reshape(32, bpp)[:, i].astype(object) << (8 * i)
  o = im.out.reshape(32, 4)
  for c, n in enumerate(bits):
    raw = np.array([(int(v) >> sum(bits[:c])) & ((1 << n) - 1) for v in word], np.int64)
    sgn = np.where(raw >> (n - 1) & 1, raw - (1 << n), raw)
    if fmt.endswith("UNORM"): want = unorm(raw, n).view(np.uint32)
    elif fmt.endswith("SNORM"): want = snorm(sgn, n).view(np.uint32)
    elif fmt.endswith("SINT"): want = sgn.astype(np.int32).view(np.uint32)
    elif fmt.endswith("FLOAT"): want = raw.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    else: want = raw.astype(np.uint32)
    np.testing.assert_array_equal(o[:, c], want, err_msg=f"component {c}")

@pytest.mark.parametrize("backend", BACKENDS)
def test_d16_a16_and_pck(backend):
  im = Image(16 * 16 * 4, nout=32 * 4)
  t = np.random.default_rng(3).integers(0, 256, (16, 16, 4), dtype=np.uint8); im.mem[:] = t.reshape(-1)
  lane = np.arange(32); x, y = lane % 16, lane // 16 * 5
  pre = [v_and_b32_e32(v[1], 15, v[0]), v_lshrrev_b32_e32(v[2], 4, v[0]), v_mul_u32_u24_e32(v[2], 5, v[2]),
         v_lshl_or_b32(v[3], v[2], 16, v[1])]                           # a16: (x, y) packed in v3
  T = tsharp(im.base, "8_8_8_8_UNORM", 16, 16, depth=15)
  im.run(T, pre + [image_load(v[4:7], v[3:6], s[8:15], dmask=0b0111, dim=1, a16=1, d16=1),
                        image_load_pck(v[6:9], v[1:4], s[8:15], dmask=0b1111, dim=1)] + _store_out(4, 4), backend)
  o = im.out.reshape(32, 4)
  tx = t[y, x]
  h = unorm(tx[:, :3], 8).astype(np.float16).view(np.uint16).astype(np.uint32)
  np.testing.assert_array_equal(o[:, 0], h[:, 0] | h[:, 1] << 16)
  np.testing.assert_array_equal(o[:, 1] & 0xffff, h[:, 2])
  np.testing.assert_array_equal(o[:, 2], tx[:, 0].astype(np.uint32) | tx[:, 1].astype(np.uint32) << 16)   # PCK: raw 8-bit in 16-bit halves
  np.testing.assert_array_equal(o[:, 3], tx[:, 2].astype(np.uint32) | tx[:, 3].astype(np.uint32) << 16)
  T = tsharp(im.base, "8_8_8_8_SINT", 16, 16, depth=15)
  im.run(T, pre + [image_load_pck_sgn(v[6:9], v[1:4], s[8:15], dmask=0b0011, dim=1)] + _store_out(6, 1), backend)
  sx = tx.astype(np.int8).astype(np.int16).view(np.uint16).astype(np.uint32)
  np.testing.assert_array_equal(im.out.reshape(32, 4)[:, 0], sx[:, 0] | sx[:, 1] << 16)

@pytest.mark.parametrize("backend", BACKENDS)
def test_store_conversions_dmask_and_oob(backend):
  W = 16
  im = Image(W * 2 * 8)
  vals = np.array([-0.25, 0.3, 1.7, 0.5], np.float32)
  T = tsharp(im.base, "16_16_16_16_FLOAT", W, 2, depth=W - 1)
  pre = [v_and_b32_e32(v[1], 15, v[0]), v_lshrrev_b32_e32(v[2], 4, v[0]), v_add_nc_u32_e32(v[2], v[2], v[2])]   # rows 0, 2 (2 is out)
  movs = [v_cvt_f32_u32_e32(v[4], v[0])] + [v_mov_b32_e32(v[5 + i], int(vals[i].view(np.uint32))) for i in range(3)]
  im.run(T, pre + movs + [image_store(v[4:7], v[1:4], s[8:15], dmask=0b1011, dim=1)], backend)
  got = im.mem.view(np.float16).reshape(2, W, 4)
  np.testing.assert_array_equal(got[0], np.stack([np.arange(16, dtype=np.float16), np.full(16, vals[0], np.float16),
                                                  np.zeros(16, np.float16), np.full(16, vals[1], np.float16)], 1))
  assert not got[1].any()                                     # row 2 is outside the 2-row image: nothing written
  im2 = Image(32 * 4)
  T = tsharp(im2.base, "8_8_8_8_UNORM", 32, typ="1D")
  f = np.array([-1.0, 0.5, 1 / 255 * 2.5, 3.0], np.float32)      # clamp, 127.5 -> 128 (even), 2.5 -> 2 (even), clamp
  im2.run(T, [v_mov_b32_e32(v[4 + i], int(f[i].view(np.uint32))) for i in range(4)] + [image_store(v[4:7], v[0:3], s[8:15], dmask=15, dim=0)], backend)
  np.testing.assert_array_equal(im2.mem.reshape(32, 4), np.tile(np.rint(np.clip(f, 0, 1) * np.float32(255)).astype(np.uint8), (32, 1)))
  im3 = Image(32 * 4)
  T = tsharp(im3.base, "8_8_8_8_SINT", 32, typ="1D")
  iv = [300, -200, -5, 127]
  im3.run(T, [v_mov_b32_e32(v[4 + i], iv[i] & 0xffffffff) for i in range(4)] + [image_store(v[4:7], v[0:3], s[8:15], dmask=15, dim=0)], backend)
  np.testing.assert_array_equal(im3.mem.reshape(32, 4), np.tile(np.array(iv).astype(np.uint8), (32, 1)))   # the low 8 bits

def _level_offsets(w, h, d, bpp, n):   # docs/emu.md: levels follow each other, rows padded to whole 256-byte units
  offs, off = [], 0
  for i in range(n):
    wl, hl = max(1, w >> i), max(1, h >> i)
    step = 256 // np.gcd(256, bpp); pitch = -(-wl // step) * step
    offs.append((off, pitch, hl)); off += pitch * hl * d * bpp
  return offs, off

@pytest.mark.parametrize("backend", BACKENDS)
def test_mips_arrays_3d_and_resinfo(backend):
  offs, total = _level_offsets(16, 8, 3, 4, 3)
  im = Image(total, nout=32 * 4)
  im.mem.view(np.uint32)[:] = np.arange(total // 4, dtype=np.uint32)
  # 2D array of 3 slices, levels 0..2, view from base_level 1 and base_array 1 (depth = last slice = 2)
  T = tsharp(im.base, "32_UINT", 16, 8, typ="2D_ARRAY", depth=2, base_level=1, last_level=2, base_array=1)
  lane = np.arange(32); x, y, sl, mip = lane % 8, lane // 8 % 4, lane // 16 % 2, lane // 8 % 2
  pre = [v_and_b32_e32(v[1], 7, v[0]), v_bfe_u32(v[2], v[0], 3, 2), v_bfe_u32(v[3], v[0], 4, 1), v_bfe_u32(v[4], v[0], 3, 1)]
  im.run(T, pre + [image_load_mip(v[5:8], v[1:4], s[8:15], dmask=1, dim=5), v_mov_b32_e32(v[10], v[0]),
                        image_get_resinfo(v[6:9], v[10], s[8:15], dmask=15, dim=5)] + _store_out(5, 4), backend)
  o = im.out.reshape(32, 4)
  want = np.zeros(32, np.uint32)
  for L in range(32):
    off, pitch, hl = offs[1 + mip[L]]
    wl = max(1, 16 >> (1 + mip[L]))
    if x[L] < wl and y[L] < hl: want[L] = (off + (((1 + sl[L]) * hl + y[L]) * pitch + x[L]) * 4) // 4
  np.testing.assert_array_equal(o[:, 0], want)
  # resinfo for level = lane (from base level 1): (w, h, layers, 2 levels); levels >= 2 give 0 sizes
  rl = lane
  np.testing.assert_array_equal(o[:, 1], np.where(rl < 2, np.maximum(16 >> (1 + np.minimum(rl, 1)), 1), 0))
  np.testing.assert_array_equal(o[:, 2], np.where(rl < 2, np.maximum(8 >> (1 + np.minimum(rl, 1)), 1), 0))
  np.testing.assert_array_equal(o[:, 3], np.where(rl < 2, 2, 0))
  # 3D: z slices of a 4x4x4 R32_FLOAT volume
  im3 = Image(4 * 4 * 64 * 4)
  T = tsharp(im3.base, "32_FLOAT", 4, 4, typ="3D", depth=3)
  im3.mem.view(np.float32)[:] = np.arange(im3.mem.size // 4, dtype=np.float32)
  im3.run(T, [v_and_b32_e32(v[1], 3, v[0]), v_bfe_u32(v[2], v[0], 2, 2), v_lshrrev_b32_e32(v[3], 4, v[0]),
                   image_load(v[5:8], v[1:4], s[8:15], dmask=1, dim=2)] + _store_out(5, 1), backend)
  pitch = 64   # 4 texels of 4 bytes -> a 256-byte row
  np.testing.assert_array_equal(im3.out.reshape(32, 4)[:, 0].view(np.float32), (((lane >> 4) * 4 + (lane >> 2 & 3)) * pitch + (lane & 3)).astype(np.float32))

@pytest.mark.parametrize("backend", BACKENDS)
def test_atomics(backend):
  im = Image(256)
  T = tsharp(im.base, "32_UINT", 8, 2, depth=63)
  im.mem.view(np.uint32)[:] = 0
  im.mem.view(np.uint32)[5] = 7
  im.run(T, [v_and_b32_e32(v[1], 3, v[0]), v_mov_b32_e32(v[2], 0), v_mov_b32_e32(v[4], 1),
                  image_atomic_add(v[4:7], v[1:4], s[8:15], dmask=1, dim=1, glc=1), v_mov_b32_e32(v[6], 99), v_mov_b32_e32(v[7], 7),
                  v_mov_b32_e32(v[8], 5), v_mov_b32_e32(v[9], 0),
                  image_atomic_cmpswap(v[6:9], v[8:11], s[8:15], dmask=3, dim=1, glc=1), v_mov_b32_e32(v[5], 1234), v_mov_b32_e32(v[9], 9),
                  image_atomic_umax(v[5:8], v[8:11], s[8:15], dmask=1, dim=1, glc=1)] + _store_out(4, 3), backend)
  o = im.out.reshape(32, 4)
  assert sorted(o[:, 0].tolist()) == sorted(list(range(8)) * 4)       # 8 adds per texel x = 0..3, old values returned
  np.testing.assert_array_equal(im.mem.view(np.uint32)[:4], 8)
  # lane 0 swaps 7 -> 99 at (5, 0); the rest see 99 (no swap); umax at (5, 9) is outside the image: returns 0, no access
  assert o[0, 2] == 7 and (o[1:, 2] == 99).all() and im.mem.view(np.uint32)[5] == 99
  assert (o[:, 1] == 0).all() and im.mem.view(np.uint32)[6:].sum() == 0

@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_and_faults(backend):
  im = Image(256)
  load = [image_load(v[4:7], v[0:3], s[8:15], dmask=1, dim=1)]
  with pytest.raises(InvalidInstruction, match=r"swizzle mode 25 \(SW_64KB_S_X\): only linear"):
    im.run(tsharp(im.base, "32_UINT", 8, 8, sw=25), load, backend)
  with pytest.raises(InvalidInstruction, match=r"FORMAT=100 is not modelled"):
    im.run(tsharp(im.base, "IMAGE_ONLY_100", 8, 8), load, backend)
  # a 64x64 R32 image of which 256 bytes (row 0) are registered: lane 16 stores to (0, 1), a global write fault
  with pytest.raises(GPUFault) as ei:
    im.run(tsharp(im.base, "32_UINT", 64, 64), [v_and_b32_e32(v[1], 15, v[0]), v_lshrrev_b32_e32(v[2], 4, v[0]),
                                                image_store(v[4:7], v[1:4], s[8:15], dmask=1, dim=1)], backend)
  r = ei.value.report
  assert (r.kind, r.space, r.size, r.lane, r.address) == ("write", "global", 4, 16, im.base + 256) and r.nearest[0] == "image"

@pytest.mark.parametrize("backend", BACKENDS)
def test_msaa_load_store_resinfo(backend):
  """2D_MSAA_ARRAY, 4 samples (LAST_LEVEL = log2 4), 3 layers seen from BASE_ARRAY 1, R32_UINT. docs/emu.md: one level, the
  samples of a texel follow each other, a row holds width * samples elements padded to whole 256-byte units."""
  W, H, NS, NL, pitch = 4, 2, 4, 3, 64
  im = Image(NL * H * pitch * 4, nout=32 * 8)
  im.mem.view(np.uint32)[:] = np.arange(im.mem.size // 4, dtype=np.uint32) * 7 + 1
  T = tsharp(im.base, "32_UINT", W, H, typ="2D_MSAA_ARRAY", depth=NL - 1, last_level=2, base_array=1)
  lane = np.arange(32); x, y, sl, fr = lane & 3, lane >> 2 & 1, lane >> 3 & 1, (lane >> 4) * 3     # fragments 0 and 3
  pre = [v_and_b32_e32(v[1], 3, v[0]), v_bfe_u32(v[2], v[0], 2, 1), v_bfe_u32(v[3], v[0], 3, 1), v_lshrrev_b32_e32(v[4], 4, v[0]),
         v_mul_u32_u24_e32(v[4], 3, v[4])]
  ops = [image_load(v[5:8], v[1:4], s[8:15], dmask=1, dim=7), image_msaa_load(v[6:9], v[1:4], s[8:15], dmask=1, dim=7),
         v_mov_b32_e32(v[11], 0), image_get_resinfo(v[10:13], v[11], s[8:15], dmask=15, dim=7)]
  post = [s_waitcnt(simm16=0), v_lshlrev_b32_e32(v[20], 5, v[0])] + [global_store_b32(addr=v[20], data=v[5 + k], saddr=s[0:1], offset=4 * k) for k in range(8)]
  im.run(T, pre + ops + post, backend)
  o, mem = im.out.reshape(32, 8), im.mem.view(np.uint32)
  elem = lambda f: np.where(f < NS, mem[np.minimum(((1 + sl) * H + y) * pitch + x * NS + f, mem.size - 1)], 0)
  np.testing.assert_array_equal(o[:, 0], elem(fr))
  for k in range(4): np.testing.assert_array_equal(o[:, 1 + k], elem(fr + k), err_msg=f"MSAA_LOAD sample {k}")
  np.testing.assert_array_equal(o[:, 5:8], np.tile([W, H, NL - 1], (32, 1)))             # width, height, layers from BASE_ARRAY
  # 2D_MSAA (8 samples) store: lane -> (x = lane & 3, y = lane >> 2 & 1, fragment = lane >> 3)
  im2 = Image(2 * 64 * 4)
  T = tsharp(im2.base, "32_UINT", W, H, typ="2D_MSAA", last_level=3)
  im2.run(T, [v_and_b32_e32(v[1], 3, v[0]), v_bfe_u32(v[2], v[0], 2, 1), v_lshrrev_b32_e32(v[3], 3, v[0]), v_add_nc_u32_e32(v[5], 100, v[0]),
              image_store(v[5:8], v[1:4], s[8:15], dmask=1, dim=6)], backend)
  want = np.zeros(2 * 64, np.uint32)
  want[(lane >> 2 & 1) * 64 + (lane & 3) * 8 + (lane >> 3)] = lane + 100
  np.testing.assert_array_equal(im2.mem.view(np.uint32), want)
  with pytest.raises(InvalidInstruction, match=r"IMAGE_MSAA_LOAD with dim=2D: it needs 2D_MSAA"):
    im2.run(T, [image_msaa_load(v[6:9], v[1:4], s[8:15], dmask=1, dim=1)], backend)

@pytest.mark.parametrize("backend", BACKENDS)
def test_d16_keeps_f16_denormals(backend):
  """D16 loads round f32 -> f16 to nearest even keeping f16 denormals (numpy's conversion); D16 stores widen them exactly"""
  im = Image(32 * 4)
  vals = np.float32([1e-6, 3e-5, -2e-7, 6.1e-5] * 8)
  im.mem.view(np.float32)[:] = vals
  T = tsharp(im.base, "32_FLOAT", 32, typ="1D")
  im.run(T, [image_load(v[4:7], v[0:3], s[8:15], dmask=1, dim=0, d16=1)] + _store_out(4, 1), backend)
  np.testing.assert_array_equal(im.out.reshape(32, 4)[:, 0], vals.astype(np.float16).view(np.uint16))
  im.run(T, [v_mov_b32_e32(v[4], 0x8011), image_store(v[4:7], v[0:3], s[8:15], dmask=1, dim=0, d16=1)], backend)
  np.testing.assert_array_equal(im.mem.view(np.float32), np.full(32, np.uint16(0x8011).view(np.float16), np.float32))
