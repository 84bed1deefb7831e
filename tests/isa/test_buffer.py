"""Buffer instructions through a resource descriptor: RDNA3 MUBUF/MTBUF and RDNA4 VBUFFER on both backends. The V# is
built with tinygrad's own SQ_BUF_RSRC_WORD* register structs (what its runtime writes); expected values follow the ISA's
buffer addressing (base + SGPR offset + index * stride + instruction offset + VGPR offset, swizzled interleave) and range
check per OOB_SELECT (out of range: loads read 0, stores and atomics are dropped), computed here in plain Python/numpy."""
import numpy as np
import pytest
from tinygrad.runtime.autogen import hsa
from tinygrad.runtime.autogen.amd.rdna3 import ins as R3
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from mockgpu.emu.api import run_code
from mockgpu.emu.errors import GPUFault, InvalidInstruction
from isa_harness import Bufs

BACKENDS = ["c", "python"]
ARCHS = {"gfx1100": (R3, "_GFX11"), "gfx1201": (R4, "_GFX12")}

def vsharp(arch, base, nrec, stride=0, swizzle=0, index_stride=0, add_tid=0, oob=3, fmt=20) -> list[int]:
  w1 = hsa.union_SQ_BUF_RSRC_WORD1_GFX11_bitfields(BASE_ADDRESS_HI=base >> 32, STRIDE=stride, SWIZZLE_ENABLE=swizzle)
  w3 = getattr(hsa, f"union_SQ_BUF_RSRC_WORD3{ARCHS[arch][1]}_bitfields")(FORMAT=fmt, INDEX_STRIDE=index_stride, ADD_TID_ENABLE=add_tid,
                                                                          OOB_SELECT=oob, DST_SEL_X=4, DST_SEL_Y=5, DST_SEL_Z=6, DST_SEL_W=7)
  return [base & 0xffffffff, int.from_bytes(bytes(w1), "little"), nrec, int.from_bytes(bytes(w3), "little")]

def buf(arch, op, vdata, vaddr, rsrc, soffset, ioffset=0, **kw):
  """One buffer instruction of `arch` (V# in s[rsrc:rsrc+3]); RDNA4 encodes the descriptor's SGPR number directly."""
  I = ARCHS[arch][0]
  f = getattr(I, op)
  if arch == "gfx1100": return f(vdata=vdata, vaddr=vaddr, srsrc=I.s[rsrc:rsrc + 3], soffset=soffset, offset=ioffset, **kw)
  kw = {("th" if k == "glc" else k): v for k, v in kw.items()}
  return f(vdata=vdata, vaddr=vaddr, rsrc=rsrc, soffset=soffset, ioffset=ioffset, **kw)

def store_v(arch, vsrc: int, vaddr: int, sbase: int):
  """global store of v[vsrc] per lane to the address in s[sbase:sbase+1] + v[vaddr]"""
  I = ARCHS[arch][0]
  if arch == "gfx1100": return I.global_store_b32(addr=I.v[vaddr], data=I.v[vsrc], saddr=I.s[sbase:sbase + 1])
  return I.global_store_b32(vaddr=I.v[vaddr:vaddr + 1], vsrc=I.v[vsrc], saddr=I.s[sbase:sbase + 1], ioffset=0)

def go(arch, insts, bufs, sgprs, backend, n=32, **kw):
  I = ARCHS[arch][0]
  code = b"".join(i.to_bytes() for i in insts) + I.s_endpgm().to_bytes()
  return run_code(code, bufs.mem, arch=arch, block=(n, 1, 1), user_sgprs=tuple(sgprs), rsrc2=len(sgprs) << 1, backend=backend,
                  capture=True, **kw)

def raw_expect(src: np.ndarray, offs, nrec, soff, nbytes=4):
  """dword loads of a raw buffer (OOB_SELECT 3, linear): in range iff offset < NUM_RECORDS; the SGPR offset moves the base
  and is not part of the check"""
  b = src.view(np.uint8)
  return np.array([int.from_bytes(b[soff + o:soff + o + nbytes].tobytes(), "little") if o < nrec else 0 for o in offs], np.uint32)

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_raw_load_store_offsets_and_range(arch, backend):
  I = ARCHS[arch][0]
  src, out, dst = np.arange(64, dtype=np.uint32) * 7 + 1, np.zeros(32, np.uint32), np.full(64, 0xdead, np.uint32)
  bf = Bufs(src, out, dst)
  nrec, soff, ioff = 100, 8, 12
  d0, d1 = vsharp(arch, bf.addr(0), nrec), vsharp(arch, bf.addr(2), 64)
  go(arch, [I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0]),
            buf(arch, "buffer_load_b32", I.v[2], I.v[1], 0, I.s[8], ioff, offen=1),
            buf(arch, "buffer_store_b32", I.v[2], I.v[1], 4, I.s[9], 0, offen=1),
            store_v(arch, 2, 1, 10)],
     bf, [*d0, *d1, soff, 4, bf.addr(1) & 0xffffffff, bf.addr(1) >> 32], backend)
  offs = [ioff + 4 * l for l in range(32)]
  exp = raw_expect(src, offs, nrec, soff)
  np.testing.assert_array_equal(out, exp)
  # stores through the second V# (NUM_RECORDS 64 bytes, SGPR offset 4): lanes 0..15 land at byte 4 + 4 * lane, the rest are dropped
  want = np.full(64, 0xdead, np.uint32); want[1:17] = exp[:16]
  np.testing.assert_array_equal(dst, want)

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("oob", [0, 1, 2, 3])
def test_structured_index_and_offset(arch, backend, oob):
  """idxen + offen: v[vaddr] = index, v[vaddr+1] = offset; b64 loads are range-checked per dword"""
  I = ARCHS[arch][0]
  src, out = np.arange(256, dtype=np.uint32) | 0x1000, np.zeros(64, np.uint32)
  bf = Bufs(src, out)
  stride, nrec = 16, 10 if oob != 2 else 0
  idx = [(l * 3) & 15 for l in range(32)]
  off = [(l % 4) * 4 for l in range(32)]          # offsets 0, 4, 8, 12: the second dword of offset 12 is past the stride
  d0 = vsharp(arch, bf.addr(0), nrec, stride=stride, oob=oob)
  go(arch, [I.v_mul_u32_u24_e32(I.v[2], 3, I.v[0]), I.v_and_b32_e32(I.v[2], 15, I.v[2]), I.v_and_b32_e32(I.v[3], 3, I.v[0]), I.v_lshlrev_b32_e32(I.v[3], 2, I.v[3]),
            buf(arch, "buffer_load_b64", I.v[6:7], I.v[2:3], 0, I.NULL, 0, idxen=1, offen=1),
            I.v_lshlrev_b32_e32(I.v[1], 3, I.v[0]), store_v(arch, 6, 1, 4), I.v_add_nc_u32_e32(I.v[1], 4, I.v[1]),
            store_v(arch, 7, 1, 4)],
     bf, [*d0, bf.addr(1) & 0xffffffff, bf.addr(1) >> 32], backend)
  exp = np.zeros(64, np.uint32)
  for l in range(32):
    for k in range(2):
      o = off[l] + 4 * k
      ok = {0: idx[l] < nrec and o < stride, 1: idx[l] < nrec, 2: nrec != 0, 3: idx[l] * stride + o < nrec}[oob]
      exp[2 * l + k] = src[(idx[l] * stride + o) // 4] if ok else 0
  np.testing.assert_array_equal(out, exp)


def swz_offset(idx, off, stride, elem, istride):
  """the ISA's swizzled buffer offset: records interleaved in groups of `istride` lanes, `elem` bytes at a time"""
  return ((idx // istride) * stride + (off // elem) * elem) * istride + (idx % istride) * elem + off % elem

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("swizzle,index_stride", [(1, 0), (2, 1), (3, 2)])
def test_swizzled_add_tid_store(arch, backend, swizzle, index_stride):
  """ADD_TID_ENABLE: the lane is the record index; SWIZZLE_ENABLE s interleaves 2 << s byte elements over 8 << INDEX_STRIDE
  lanes; b128 stores go element by element, and with OOB_SELECT 3 the swizzled offset is range-checked"""
  I = ARCHS[arch][0]
  dst = np.zeros(1024, np.uint32)
  bf = Bufs(dst)
  stride, nrec, soff = 16, 1536, 64
  d = vsharp(arch, bf.addr(0), nrec, stride=stride, swizzle=swizzle, index_stride=index_stride, add_tid=1)
  go(arch, [I.v_add_nc_u32_e32(I.v[4], 100, I.v[0]), I.v_add_nc_u32_e32(I.v[5], 200, I.v[0]), I.v_add_nc_u32_e32(I.v[6], 300, I.v[0]),
            I.v_add_nc_u32_e32(I.v[7], 400, I.v[0]), buf(arch, "buffer_store_b128", I.v[4:7], I.v[0], 0, I.s[4], 0)], bf, [*d, soff], backend)
  want = np.zeros(1024, np.uint32)
  for l in range(32):
    for k in range(4):
      rel = swz_offset(l, 4 * k, stride, 2 << swizzle, 8 << index_stride)
      if rel < nrec: want[(soff + rel) // 4] = 100 * (k + 1) + l
  np.testing.assert_array_equal(dst, want)

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_widths_sign_extension_and_d16(arch, backend):
  I = ARCHS[arch][0]
  src = (np.arange(32 * 4, dtype=np.uint32) * 0x01030507 + 0x80f08090).astype(np.uint32)
  out = np.zeros(32 * 16, np.uint32)
  bf = Bufs(src, out)
  d0, d1 = vsharp(arch, bf.addr(0), src.nbytes), vsharp(arch, bf.addr(1), out.nbytes)
  loads = ["buffer_load_u8", "buffer_load_i8", "buffer_load_u16", "buffer_load_i16", "buffer_load_d16_u8", "buffer_load_d16_i8",
           "buffer_load_d16_b16", "buffer_load_d16_hi_u8", "buffer_load_d16_hi_i8", "buffer_load_d16_hi_b16"]
  prog = [I.v_lshlrev_b32_e32(I.v[1], 4, I.v[0]), I.v_lshlrev_b32_e32(I.v[2], 6, I.v[0])]
  for i, op in enumerate(loads):
    prog += [I.v_mov_b32_e32(I.v[10 + i], 0x5555aaaa), buf(arch, op, I.v[10 + i], I.v[1], 0, I.NULL, 1 + i % 3, offen=1)]
  prog += [buf(arch, "buffer_load_b96", I.v[20:22], I.v[1], 0, I.NULL, 4, offen=1)]
  prog += [buf(arch, "buffer_store_b32", I.v[10 + i], I.v[2], 4, I.NULL, 4 * i, offen=1) for i in range(len(loads))]
  prog += [buf(arch, "buffer_store_b96", I.v[20:22], I.v[2], 4, I.NULL, 40, offen=1)]
  # narrow stores into the last word of the row: byte 0 <- v0 low byte, byte 1 <- bits 23:16 of v14, half 1 <- high half of v12
  prog += [buf(arch, "buffer_store_b8", I.v[0], I.v[2], 4, I.NULL, 56, offen=1), buf(arch, "buffer_store_d16_hi_b8", I.v[14], I.v[2], 4, I.NULL, 57, offen=1),
           buf(arch, "buffer_store_d16_hi_b16", I.v[12], I.v[2], 4, I.NULL, 58, offen=1)]
  go(arch, prog, bf, [*d0, *d1], backend)
  b, o = src.view(np.uint8).reshape(32, 16), out.reshape(32, 16)
  u8 = lambda k: b[:, k].astype(np.uint32)
  i8 = lambda k: b[:, k].astype(np.int8).astype(np.int32).view(np.uint32)
  u16 = lambda k: b[:, k:k + 2].copy().view(np.uint16)[:, 0].astype(np.uint32)
  i16 = lambda k: b[:, k:k + 2].copy().view(np.int16)[:, 0].astype(np.int32).view(np.uint32)
  lo, hi = np.uint32(0x5555aaaa) & 0xffff0000, np.uint32(0x5555aaaa) & 0xffff
  want = [u8(1), i8(2), u16(3), i16(1), lo | u8(2), lo | (i8(3) & 0xffff), lo | u16(1), hi | u8(2) << 16, hi | (i8(3) & 0xffff) << 16, hi | u16(1) << 16]
  for i, w in enumerate(want): np.testing.assert_array_equal(o[:, i], w, err_msg=loads[i])
  np.testing.assert_array_equal(o[:, 10:13], src.reshape(32, 4)[:, 1:4])
  np.testing.assert_array_equal(o[:, 14], (np.arange(32) & 0xff) | ((want[4] >> 16) & 0xff) << 8 | (want[2] & 0xffff0000))

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_atomics_return_and_range(arch, backend):
  """glc (RDNA3) / th[0] (RDNA4) returns the old value into vdata; without it vdata keeps its value; out-of-range atomics
  leave memory untouched"""
  I = ARCHS[arch][0]
  mem = np.zeros(16, np.uint32); mem[2] = 10; mem[3] = np.float32(1.5).view(np.uint32); mem[4] = np.float32(-2.0).view(np.uint32)
  out = np.zeros(32 * 4, np.uint32)
  bf = Bufs(mem, out)
  d0, d1 = vsharp(arch, bf.addr(0), 24), vsharp(arch, bf.addr(1), out.nbytes)
  fmax = "buffer_atomic_max_f32" if arch == "gfx1100" else "buffer_atomic_max_num_f32"
  prog = [I.v_mov_b32_e32(I.v[1], 1), I.v_mov_b32_e32(I.v[2], 0), buf(arch, "buffer_atomic_add_u32", I.v[1], I.v[2], 0, I.NULL, 0, glc=1),
          I.v_mov_b32_e32(I.v[3], 7), buf(arch, "buffer_atomic_add_u32", I.v[3], I.v[2], 0, I.NULL, 4),            # no return: v3 stays 7
          I.v_add_nc_u32_e32(I.v[4], 100, I.v[0]), I.v_add_nc_u32_e32(I.v[5], 9, I.v[0]),                          # cmpswap: succeeds for lane 1 only
          buf(arch, "buffer_atomic_cmpswap_b32", I.v[4:5], I.v[2], 0, I.NULL, 8, glc=1),
          I.v_cvt_f32_u32_e32(I.v[6], I.v[0]), buf(arch, "buffer_atomic_add_f32", I.v[6], I.v[2], 0, I.NULL, 12),
          I.v_mov_b32_e32(I.v[7], I.v[6]), buf(arch, fmax, I.v[7], I.v[2], 0, I.NULL, 16, glc=1),
          I.v_mov_b32_e32(I.v[8], 1), buf(arch, "buffer_atomic_add_u32", I.v[8], I.v[2], 0, I.NULL, 24)]          # past NUM_RECORDS: dropped
  prog += [I.v_lshlrev_b32_e32(I.v[9], 4, I.v[0])] + [buf(arch, "buffer_store_b32", I.v[r], I.v[9], 4, I.NULL, 4 * k, offen=1) for k, r in enumerate((1, 3, 4, 7))]
  go(arch, prog, bf, [*d0, *d1], backend)
  o = out.reshape(32, 4)
  assert mem[0] == 32 and sorted(o[:, 0].tolist()) == list(range(32)) and mem[1] == 7 * 32 and (o[:, 1] == 7).all()
  assert mem[2] == 101 and o[1, 2] == 10                        # lane 1 compared 10 == 10 and swapped in 101
  assert mem[3].view(np.float32) == np.float32(1.5 + sum(range(32))) and mem[4].view(np.float32) == 31.0 and mem[6] == 0
  assert sorted(o[:, 3].view(np.float32).tolist())[-1] == 30.0 and o[0, 3].view(np.float32) in (-2.0, *range(32))

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_in_range_unmapped_faults(arch, backend):
  """An access the descriptor allows but no MemoryMap range holds is a global fault with the full report"""
  I = ARCHS[arch][0]
  small = np.zeros(16, np.uint32)
  bf = Bufs(small)
  d = vsharp(arch, bf.addr(0), 1 << 20)
  for op, kind in (("buffer_load_b32", "read"), ("buffer_store_b32", "write"), ("buffer_atomic_add_u32", "atomic")):
    with pytest.raises(GPUFault) as ei:
      go(arch, [I.v_lshlrev_b32_e32(I.v[1], 3, I.v[0]), buf(arch, op, I.v[2], I.v[1], 0, I.s[4], 0, offen=1)], bf, [*d, 4], backend)
    r = ei.value.report
    # lane 7 is the first whose byte offset 4 + 8 * lane reaches past the 64 registered bytes
    assert (r.kind, r.space, r.size, r.lane, r.address, r.nearest, r.offset) == (kind, "global", 4, 8, bf.addr(0) + 68, ("buf0", bf.addr(0), 64), 68)
    assert r.pc == 4 and op.upper() in r.disasm and r.arch == arch

# ---------------- *_FORMAT_* ops: unified FORMAT codes (as LLVM's disassembler names them for gfx1100/gfx1201) ----------
FMT = {"8_SINT": 6, "16_SSCALED": 10, "8_8_USCALED": 16, "16_16_SNORM": 24, "10_11_11_FLOAT": 30, "2_10_10_10_UINT": 40,
       "8_8_8_8_UNORM": 42, "32_32_FLOAT": 50, "16_16_16_16_FLOAT": 57}

def ufloat(x, mb):
  """the unsigned 10/11-bit float of the format definition: 5 exponent bits (bias 15), mb mantissa bits (Inf/NaN keep the
  mantissa as the top bits of the f32 one, as widening IEEE formats do)"""
  e, m = x >> mb, x & ((1 << mb) - 1)
  if e == 31: return np.uint32(0x7f800000 | m << (23 - mb)).view(np.float32)
  return np.float32(m * 2.0 ** (-14 - mb) if e == 0 else (1 + m / 2 ** mb) * 2.0 ** (e - 15))

def decode(name, elem: int) -> list[np.float32 | int]:
  """channels X..W of one element: widths from the name (most significant first), then the number format"""
  *lay, nf = name.split("_")
  bits = [int(b) for b in reversed(lay)]
  out, pos = [], 0
  for b in bits:
    x = (elem >> pos) & ((1 << b) - 1); pos += b
    sx = x - (1 << b) if x >> (b - 1) else x
    out.append({"UINT": x, "SINT": sx & 0xffffffff, "USCALED": np.float32(x), "SSCALED": np.float32(sx),
                "UNORM": np.float32(x) / np.float32((1 << b) - 1), "SNORM": max(np.float32(sx) / np.float32((1 << (b - 1)) - 1), np.float32(-1)),
                "FLOAT": np.uint32(x).view(np.float32) if b == 32 else None}[nf])
    if nf == "FLOAT" and b != 32: out[-1] = np.float16(np.uint16(x).view(np.float16)).astype(np.float32) if b == 16 else ufloat(x, b - 5)
  isint = nf in ("UINT", "SINT")
  return out + [0] * (3 - len(out)) + [1 if isint else np.float32(1)] * (len(out) < 4)

def bits32(v) -> int: return int(np.float32(v).view(np.uint32)) if isinstance(v, np.floating) else int(v) & 0xffffffff
def half(v) -> int:
  """f32 -> f16 bits rounding to nearest even; a NaN becomes a quiet NaN keeping the payload's top bits (IEEE 754)"""
  if not np.isnan(v):
    with np.errstate(over="ignore"): return int(np.float32(v).astype(np.float16).view(np.uint16))
  b = bits32(v)
  return (b >> 16) & 0x8000 | 0x7e00 | (b >> 13) & 0x3ff

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FMT))
def test_load_format_conversions(arch, backend, name):
  """BUFFER_LOAD_FORMAT_XYZW takes the format from the V#, TBUFFER_LOAD_FORMAT_XYZW from the instruction; D16 packs f16 /
  16-bit halves; an element past NUM_RECORDS reads 0 in every channel"""
  I = ARCHS[arch][0]
  size = sum(int(b) for b in name.split("_")[:-1]) // 8
  rng = np.random.default_rng(FMT[name])
  src = rng.integers(0, 256, 32 * 16, dtype=np.uint8)
  if name == "16_16_16_16_FLOAT": src = np.abs(rng.standard_normal(32 * 8).astype(np.float16) * 100).view(np.uint8)
  out = np.zeros(32 * 12, np.uint32)
  bf = Bufs(src, out)
  nrec = 30 * size
  d0, d1 = vsharp(arch, bf.addr(0), nrec, fmt=FMT[name]), vsharp(arch, bf.addr(1), out.nbytes)
  tb = (dict(format=FMT[name]))
  prog = [I.v_mul_u32_u24_e32(I.v[1], size, I.v[0]), I.v_mul_u32_u24_e32(I.v[2], 48, I.v[0]),
          buf(arch, "buffer_load_format_xyzw", I.v[4:7], I.v[1], 0, I.NULL, 0, offen=1),
          buf(arch, "tbuffer_load_format_xyzw", I.v[8:11], I.v[1], 8, I.NULL, 0, offen=1, **tb),
          buf(arch, "buffer_load_d16_format_xyzw", I.v[12:13], I.v[1], 0, I.NULL, 0, offen=1)]
  prog += [buf(arch, "buffer_store_b128", I.v[4 * k + 4:4 * k + 7], I.v[2], 4, I.NULL, 16 * k, offen=1) for k in range(2)]
  prog += [buf(arch, "buffer_store_b64", I.v[12:13], I.v[2], 4, I.NULL, 32, offen=1)]
  go(arch, prog, bf, [*d0, *d1, *vsharp(arch, bf.addr(0), nrec, fmt=1)], backend)
  o = out.reshape(32, 12)
  for l in range(32):
    elem = int.from_bytes(src[l * size:(l + 1) * size].tobytes(), "little")
    ch = decode(name, elem) if l < 30 else [0, 0, 0, 0]
    want = [bits32(v) for v in ch]
    h = [half(v) if isinstance(v, np.floating) else int(v) & 0xffff for v in ch]
    assert o[l, 0:4].tolist() == want and o[l, 4:8].tolist() == want, (l, name)
    assert o[l, 8:10].tolist() == [h[0] | h[1] << 16, h[2] | h[3] << 16], (l, name)

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_store_format_conversions(arch, backend):
  """UNORM stores clamp and round to nearest even, SINT keeps the low bits, packed 10/11-bit floats are written into
  their dword, D16_HI stores the high half, and channels the format lacks are not written"""
  I = ARCHS[arch][0]
  dst = np.full(16, 0xcccccccc, np.uint32)
  bf = Bufs(dst)
  vals = [np.float32(0.5), np.float32(1.2), np.float32(-0.3), np.float32(0.25)]
  prog = [I.v_mov_b32_e32(I.v[4 + k], bits32(v)) for k, v in enumerate(vals)]
  prog += [I.v_mov_b32_e32(I.v[8], 0x12345), I.v_mov_b32_e32(I.v[9], 0xfffffffe),
           I.v_mov_b32_e32(I.v[10], bits32(np.float32(1.5))), I.v_mov_b32_e32(I.v[11], bits32(np.float32(0.25))), I.v_mov_b32_e32(I.v[12], bits32(np.float32(3.0))),
           I.v_mov_b32_e32(I.v[13], int(np.float16(-2.5).view(np.uint16)) << 16 | 0x1234), I.v_mov_b32_e32(I.v[1], 0)]
  prog += [buf(arch, "buffer_store_format_xyzw", I.v[4:7], I.v[1], 0, I.NULL, 0, offen=1),
           buf(arch, "tbuffer_store_format_xy", I.v[8:9], I.v[1], 0, I.NULL, 4, offen=1, format=FMT["16_16_SNORM"] + 4),   # 16_16_SINT
           buf(arch, "tbuffer_store_format_xyz", I.v[10:12], I.v[1], 0, I.NULL, 8, offen=1, format=FMT["10_11_11_FLOAT"]),
           buf(arch, "tbuffer_store_format_xyzw", I.v[8:11], I.v[1], 0, I.NULL, 12, offen=1, format=FMT["8_SINT"]),
           buf(arch, "buffer_store_d16_hi_format_x", I.v[13], I.v[1], 4, I.NULL, 16, offen=1)]
  go(arch, prog, bf, [*vsharp(arch, bf.addr(0), 64, fmt=FMT["8_8_8_8_UNORM"]), *vsharp(arch, bf.addr(0), 64, fmt=FMT["16_16_16_16_FLOAT"])],
     backend, n=1)
  # 0.5 * 255 = 127.5 -> 128 (even), 1.2 -> 255 (clamped), -0.3 -> 0, 0.25 * 255 = 63.75 -> 64
  assert dst[0] == 128 | 255 << 8 | 0 << 16 | 64 << 24
  assert dst[1] == 0x2345 | 0xfffe << 16
  # 1.5 = 2^0 * (1 + 32/64): exponent 15, mantissa 32; 0.25: exponent 13; 3.0 = 2^1 * (1 + 16/32) in the 10-bit Z
  assert dst[2] == (15 << 6 | 32) | (13 << 6) << 11 | (16 << 5 | 16) << 22
  assert dst[3] == 0xcccccc45                     # 8_SINT has one channel: only byte 0 is written
  assert dst[4] == 0xcccc0000 | int(np.float16(-2.5).view(np.uint16))   # X of 16_16_16_16_FLOAT from the high half

# ---------------- loads into LDS (RDNA3): the dword goes to LDS at M0 + instruction offset + lane * 4 ----------------
def lds_dump(nwords: int):
  """read LDS words 0..nwords-1 back through DS loads (lane l: words l, l + 32, ...) into buffer s[0:1]"""
  I = R3
  out = [I.v_lshlrev_b32_e32(I.v[20], 2, I.v[0])]
  for k in range(nwords // 32):
    out += [I.ds_load_b32(vdst=I.v[21], addr=I.v[20], offset0=(128 * k) & 0xff, offset1=(128 * k) >> 8),
            I.global_store_b32(addr=I.v[20], data=I.v[21], saddr=I.s[0:1], offset=128 * k)]
  return out

@pytest.mark.parametrize("backend", BACKENDS)
def test_global_and_scratch_loads_into_lds(backend):
  I = R3
  src = (np.arange(64, dtype=np.uint32) * 0x01020304 + 0x8070f0e0).astype(np.uint32)
  out = np.zeros(128, np.uint32)
  bf = Bufs(out, src)
  prog = [I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0]), I.s_mov_b32(I.M0, 0),
          I.global_load_lds_b32(addr=I.v[1], saddr=I.s[2:3], offset=0),                        # LDS words 0..31 <- src[0..31]
          I.s_mov_b32(I.M0, 124), I.global_load_lds_i8(addr=I.v[1], saddr=I.s[2:3], offset=4),  # words 32..63 <- sext(byte 0 of src[l + 1])
          I.v_add_nc_u32_e32(I.v[2], 1000, I.v[0]), I.scratch_store_b32(addr=I.v[1], data=I.v[2], saddr=I.NULL, sve=1),
          I.s_movk_i32(I.M0, 256), I.scratch_load_lds_u16(addr=I.v[1], saddr=I.NULL, offset=0, sve=1),  # words 64..95 <- 1000 + lane
          I.s_movk_i32(I.M0, 384), I.global_load_lds_addtid_b32(addr=I.v[0], saddr=I.s[2:3], offset=0)]   # words 96..127 <- src[lane]
  go("gfx1100", prog + lds_dump(128), bf, bf.sgprs(), backend, lds_bytes=512, scratch_bytes_per_lane=256)
  b = src.view(np.uint8).reshape(64, 4)
  np.testing.assert_array_equal(out[:32], src[:32])
  np.testing.assert_array_equal(out[32:64], b[1:33, 0].astype(np.int8).astype(np.int32).view(np.uint32))
  np.testing.assert_array_equal(out[64:96], 1000 + np.arange(32))
  np.testing.assert_array_equal(out[96:], src[:32])

@pytest.mark.parametrize("backend", BACKENDS)
def test_buffer_loads_into_lds(backend):
  """through the V#: out-of-range lanes write 0 to their LDS dword; LDS_FORMAT_X converts the X channel"""
  I = R3
  src, out = (np.arange(64, dtype=np.uint32) * 3 + 0xff00).astype(np.uint32), np.zeros(96, np.uint32)
  bf = Bufs(out, src)
  d = vsharp("gfx1100", bf.addr(1), 100)
  dfmt = vsharp("gfx1100", bf.addr(1), 100, fmt=FMT["16_16_SNORM"])
  prog = [I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0]), I.s_mov_b32(I.M0, 0),
          I.buffer_load_lds_b32(vaddr=I.v[1], srsrc=I.s[4:7], soffset=I.NULL, offset=0, offen=1),
          I.s_movk_i32(I.M0, 128), I.buffer_load_lds_i16(vaddr=I.v[1], srsrc=I.s[4:7], soffset=I.NULL, offset=0, offen=1),
          I.s_movk_i32(I.M0, 256), I.buffer_load_lds_format_x(vaddr=I.v[1], srsrc=I.s[8:11], soffset=I.NULL, offset=0, offen=1)]
  go("gfx1100", prog + lds_dump(96), bf, [*bf.sgprs()[:2], 0, 0, *d, *dfmt], backend, lds_bytes=384)
  inr = np.arange(32) * 4 < 100
  np.testing.assert_array_equal(out[:32], np.where(inr, src[:32], 0))
  np.testing.assert_array_equal(out[32:64], np.where(inr, (src[:32] & 0xffff).astype(np.uint16).view(np.int16).astype(np.int32).view(np.uint32), 0))
  x = (src[:32] & 0xffff).astype(np.uint16).view(np.int16).astype(np.float32) / np.float32(32767)
  np.testing.assert_array_equal(out[64:], np.where(inr, np.maximum(x, np.float32(-1)).view(np.uint32), 0))

@pytest.mark.parametrize("backend", BACKENDS)
def test_load_into_lds_past_lds_faults(backend):
  I = R3
  src = np.arange(32, dtype=np.uint32)
  bf = Bufs(src)
  with pytest.raises(GPUFault) as ei:
    go("gfx1100", [I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0]), I.s_movk_i32(I.M0, 64), I.global_load_lds_b32(addr=I.v[1], saddr=I.s[0:1], offset=0)],
       bf, bf.sgprs(), backend, lds_bytes=128)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.lane, r.limit) == ("write", "lds", 128, 4, 16, 128)

def test_gfx9_descriptor_layout_for_cdna():
  """the gfx9 V# (CDNA) decodes through the same model: tinygrad's own gfx9 scratch descriptor (ops_amd: ADD_TID_ENABLE,
  SWIZZLE_ENABLE, ELEMENT_SIZE 1 = 4 bytes, INDEX_STRIDE 3 = 64 lanes, 32_UINT) interleaves dword k of lane l at
  (k * 64 + l) * 4, unchecked; a raw gfx9 buffer (stride 0) checks the offset against NUM_RECORDS"""
  from mockgpu.emu.arch import get_arch
  from mockgpu.emu.buffer import descriptor, map_access, format_table
  a = get_arch("gfx950")
  w1 = hsa.union_SQ_BUF_RSRC_WORD1_bitfields(BASE_ADDRESS_HI=0x12, SWIZZLE_ENABLE=1)
  w3 = hsa.union_SQ_BUF_RSRC_WORD3_bitfields(NUM_FORMAT=hsa.BUF_NUM_FORMAT_UINT, DATA_FORMAT=hsa.BUF_DATA_FORMAT_32, ELEMENT_SIZE=1,
                                             INDEX_STRIDE=3, ADD_TID_ENABLE=1)
  d = descriptor(a, [0x1000, int.from_bytes(bytes(w1), "little"), 1 << 20, int.from_bytes(bytes(w3), "little")], 0x40)
  assert (d.base, d.elem, d.idx_stride, d.add_tid) == (0x12_0000_1040, 4, 64, 1)
  assert format_table(a)[d.fmt] == ((32,), hsa.BUF_NUM_FORMAT_UINT)
  for l, k in ((0, 0), (5, 0), (63, 3), (7, 2)):
    assert map_access(d, l, 4 * k) == (d.base + (k * 64 + l) * 4, True)
  raw = descriptor(a, [0x1000, 0, 100, 0], 8)
  assert map_access(raw, 0, 96) == (0x1000 + 8 + 96, True) and map_access(raw, 0, 100)[1] is False

# ---------------- TFE: the fail status VGPR after the returned data ----------------
TFE_LOADS = [("buffer_load_b32", 1, 0), ("buffer_load_b96", 3, 0), ("buffer_load_d16_b16", 1, 0), ("buffer_load_d16_hi_u8", 1, 0),
             ("buffer_load_format_xyz", 3, 1), ("buffer_load_d16_format_xyz", 2, 1), ("buffer_load_d16_format_xyzw", 2, 1),
             ("tbuffer_load_format_xy", 2, 1), ("tbuffer_load_d16_format_x", 1, 1)]

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_tfe_status_after_the_data(arch, backend):
  """TFE writes the fail status to the VGPR after the data the load returns (D16 formats: two halves per VGPR); nothing is
  partially resident, so it is 0 for every active lane (out-of-range lanes too); inactive lanes and the VGPR after it keep
  their values, the data is the same as without TFE"""
  I = ARCHS[arch][0]
  src = (np.arange(64, dtype=np.uint32) * 0x01010101 + 0x3c003c00).astype(np.uint32)
  bf = Bufs(src)
  nrec = 20 * 8
  prog = [I.v_lshlrev_b32_e32(I.v[1], 3, I.v[0])] + [I.v_mov_b32_e32(I.v[8 + k], 0xdeadbeef) for k in range(12 * len(TFE_LOADS))]
  prog.append(I.s_mov_b32(I.EXEC_LO, 0x00ffffff))
  for i, (op, nd, fm) in enumerate(TFE_LOADS):
    base = 8 + 12 * i
    kw = dict(format=FMT["16_16_16_16_FLOAT"] if "d16" in op else 20) if op.startswith("tbuffer") else {}
    prog.append(buf(arch, op, I.v[base:base + nd - 1] if nd > 1 else I.v[base], I.v[1], 0, I.NULL, 0, offen=1, tfe=1, **kw))
    prog.append(buf(arch, op, I.v[base + 5:base + 5 + nd - 1] if nd > 1 else I.v[base + 5], I.v[1], 0, I.NULL, 0, offen=1, **kw))
  st = go(arch, prog, bf, vsharp(arch, bf.addr(0), nrec, fmt=FMT["16_16_16_16_FLOAT"]), backend)
  vg = st.state.vgprs
  for i, (op, nd, fm) in enumerate(TFE_LOADS):
    base = 8 + 12 * i
    for l in range(32):
      if l >= 24:   # inactive: untouched
        assert [vg[base + k][l] for k in range(10)] == [0xdeadbeef] * 10, (op, l)
        continue
      assert [vg[base + k][l] for k in range(nd)] == [vg[base + 5 + k][l] for k in range(nd)], (op, l)   # same data as without TFE
      assert vg[base + nd][l] == 0 and vg[base + nd + 1][l] == 0xdeadbeef, (op, l)                        # status, then untouched
      if l < 20 and op == "buffer_load_b32": assert vg[base][l] == src[2 * l]
      if l >= 20 and op == "buffer_load_b32": assert vg[base][l] == 0   # past NUM_RECORDS (160 bytes)

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["buffer_store_b32", "buffer_atomic_add_u32", "buffer_load_lds_b32"])
def test_tfe_without_status_vgpr_is_invalid(arch, backend, op):
  """stores, atomics and loads into LDS return no VGPR data, so TFE has nowhere to put the status: a clear error"""
  if op == "buffer_load_lds_b32" and arch != "gfx1100": return
  I = ARCHS[arch][0]
  bf = Bufs(np.zeros(64, np.uint32))
  inst = (I.buffer_load_lds_b32(vaddr=I.v[1], srsrc=I.s[0:3], soffset=I.NULL, offset=0, offen=1, tfe=1) if "lds" in op
          else buf(arch, op, I.v[2], I.v[1], 0, I.NULL, 0, offen=1, tfe=1))
  with pytest.raises(InvalidInstruction, match="TFE set on a buffer store, atomic or load into LDS") as ei:
    go(arch, [I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0]), inst], bf, vsharp(arch, bf.addr(0), 256), backend, lds_bytes=256)
  assert ei.value.report.pc == 4 and op.upper() in ei.value.report.disasm
