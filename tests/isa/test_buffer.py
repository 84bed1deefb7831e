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
from mockgpu.emu.errors import GPUFault
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

