"""SMEM: scalar loads of 1..16 dwords with immediate and SGPR offsets; scalar buffer ops through the V#; cache probes."""
import numpy as np
import pytest
from tinygrad.runtime.autogen import hsa
from tinygrad.runtime.autogen.amd.rdna3 import ins as R3
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from tinygrad.runtime.autogen.amd.cdna import ins as C
from mockgpu.emu.api import run_code
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs

def test_s_load_widths_and_offsets():
  data = np.arange(64, dtype=np.uint32) * 7 + 1
  b = Bufs(data)
  st = run([s_load_b32(sdata=s[4], sbase=s[0:1], offset=8, soffset=NULL), s_load_b64(sdata=s[6:7], sbase=s[0:1], offset=0, soffset=NULL),
            s_mov_b32(s[3], 0), s_mov_b32(s[20], 16), s_load_b128(sdata=s[8:11], sbase=s[0:1], offset=4, soffset=s[20]),
            s_load_b512(sdata=s[24:39], sbase=s[0:1], offset=64, soffset=NULL), s_waitcnt(simm16=0)], b)
  sg = st.state.sgprs
  assert sg[4] == data[2] and (sg[6], sg[7]) == (data[0], data[1])
  assert list(sg[8:12]) == list(data[5:9])              # byte offset 4 + 16
  assert list(sg[24:40]) == list(data[16:32])

# ---------------- S_BUFFER_*: through the V# in s[sbase:sbase+3] ----------------

BACKENDS = ["c", "python"]

def sharp(arch, base, nrec, stride=0):
  """a V# as tinygrad's SQ_BUF_RSRC_WORD* structs lay it out (the swizzle/format/OOB fields scalar buffer ops ignore are set
  to values that would change a vector access: swizzle on, OOB_SELECT 0)"""
  var = {"gfx1100": ("_GFX11", "_GFX11"), "gfx1201": ("_GFX11", "_GFX12"), "gfx950": ("", "")}[arch]
  w1 = getattr(hsa, f"union_SQ_BUF_RSRC_WORD1{var[0]}_bitfields")(BASE_ADDRESS_HI=base >> 32, STRIDE=stride, SWIZZLE_ENABLE=1)
  w3 = getattr(hsa, f"union_SQ_BUF_RSRC_WORD3{var[1]}_bitfields")(**({"OOB_SELECT": 0, "FORMAT": 20} if arch != "gfx950" else {"DATA_FORMAT": 4, "NUM_FORMAT": 4}))
  return [base & 0xffffffff, int.from_bytes(bytes(w1), "little"), nrec, int.from_bytes(bytes(w3), "little")]

def srun(arch, insts, bf, sgprs, backend):
  I = {"gfx1100": R3, "gfx1201": R4, "gfx950": C}[arch]
  prog = b"".join(i.to_bytes() for i in insts) + I.s_endpgm().to_bytes()
  return run_code(prog, bf.mem, arch=arch, block=(64 if arch == "gfx950" else 32, 1, 1), wave64=arch == "gfx950", user_sgprs=tuple(sgprs),
                  rsrc2=len(sgprs) << 1, capture=True, backend=backend).state.sgprs

def want(words, base_byte, offs, lim, n=4):
  """what a scalar buffer load of n bytes at each byte offset (from the V# base, a dword-aligned byte of `words`) reads:
  the access is in range iff offset + n <= lim"""
  b = words.view(np.uint8)
  return [int.from_bytes(b[base_byte + o:base_byte + o + n].tobytes(), "little") if o + n <= lim else 0 for o in offs]

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_s_buffer_load_range_and_stride(arch, backend):
  """base = V# base (its two low bits ignored), offset = immediate + SGPR offset, range-checked per dword against
  NUM_RECORDS (STRIDE 0) or NUM_RECORDS * STRIDE bytes; swizzle and OOB_SELECT do not apply; a negative offset is out of range"""
  I = {"gfx1100": R3, "gfx1201": R4}[arch]
  words = (np.arange(64, dtype=np.uint32) * 0x01020304 + 0x0a0b0c0d).astype(np.uint32)
  bf = Bufs(words)
  ld = lambda op, sd, sb, off, so=I.NULL: getattr(I, op)(sdata=sd, sbase=sb, soffset=so, **({"offset": off} if arch == "gfx1100" else {"ioffset": off}))
  base = bf.addr(0) + 16
  prog = [ld("s_buffer_load_b32", I.s[20], I.s[0:3], 4), ld("s_buffer_load_b128", I.s[24:27], I.s[0:3], 32),     # dwords 8..11: 9..11 past 40 bytes
          I.s_mov_b32(I.s[12], 28), ld("s_buffer_load_b64", I.s[28:29], I.s[0:3], 8, I.s[12]),                      # offset 36: dword 1 out
          ld("s_buffer_load_b256", I.s[32:39], I.s[4:7], 0), ld("s_buffer_load_b32", I.s[40], I.s[4:7], 44),         # stride 12 x 4 records = 48 bytes
          ld("s_buffer_load_b32", I.s[41], I.s[4:7], -4 & 0x1fffff if arch == "gfx1100" else -4 & 0xffffff),
          ld("s_buffer_load_b512", I.s[48:63], I.s[8:11], 0)]                                                          # NUM_RECORDS 0: all 0
  sg = srun(arch, prog + [(I.s_waitcnt(simm16=0) if arch == "gfx1100" else I.s_wait_kmcnt(simm16=0))], bf,
            [*sharp(arch, base + 3, 40), *sharp(arch, base, 4, stride=12), *sharp(arch, base, 0)], backend)
  assert sg[20] == want(words, 16, [4], 40)[0]
  assert list(sg[24:28]) == want(words, 16, [32, 36, 40, 44], 40)
  assert list(sg[28:30]) == want(words, 16, [36, 40], 40)
  assert list(sg[32:40]) == want(words, 16, range(0, 32, 4), 48) and sg[40] == want(words, 16, [44], 48)[0] and sg[41] == 0
  assert list(sg[48:64]) == [0] * 16

@pytest.mark.parametrize("backend", BACKENDS)
def test_rdna4_s_buffer_load_narrow_and_s_load_u8(backend):
  """RDNA4 byte/short scalar loads address their own size (not the dword): S_LOAD_U8/I8 at any byte, S_BUFFER_LOAD_U16/I16
  at 2-byte alignment, range-checked with their own size"""
  words = np.array([0x8081f2f3, 0x7f6e5d4c, 0x11223344, 0x99aabbcc], np.uint32)
  bf = Bufs(words)
  I, b = R4, words.view(np.uint8)
  prog = [I.s_load_u8(sdata=I.s[20], sbase=I.s[0:1], ioffset=1, soffset=I.NULL), I.s_load_i8(sdata=I.s[21], sbase=I.s[0:1], ioffset=3, soffset=I.NULL),
          I.s_load_i16(sdata=I.s[22], sbase=I.s[0:1], ioffset=2, soffset=I.NULL),
          I.s_buffer_load_u8(sdata=I.s[23], sbase=I.s[4:7], ioffset=5, soffset=I.NULL), I.s_buffer_load_i16(sdata=I.s[24], sbase=I.s[4:7], ioffset=2, soffset=I.NULL),
          I.s_buffer_load_u16(sdata=I.s[25], sbase=I.s[4:7], ioffset=6, soffset=I.NULL), I.s_buffer_load_i8(sdata=I.s[26], sbase=I.s[4:7], ioffset=7, soffset=I.NULL),
          I.s_buffer_load_u16(sdata=I.s[27], sbase=I.s[4:7], ioffset=8, soffset=I.NULL), I.s_wait_kmcnt(simm16=0)]
  sg = srun("gfx1201", prog, bf, [*bf.sgprs(), 0, 0, *sharp("gfx1201", bf.addr(0), 8)], backend)
  i8, i16 = lambda k: int(b[k:k + 1].view(np.int8)[0]) & 0xffffffff, lambda k: int(b[k:k + 2].view(np.int16)[0]) & 0xffffffff
  assert list(sg[20:28]) == [b[1], i8(3), i16(2), b[5], i16(2), int(b[6]) | int(b[7]) << 8, i8(7), 0]

@pytest.mark.parametrize("backend", BACKENDS)
def test_gfx950_s_buffer_load_store_atomic(backend):
  """gfx950 S_BUFFER_LOAD/STORE/ATOMIC through the V#: stores and atomics take their data from s[sdata..], atomics with
  GLC return the old value there (CMPSWAP: data, compare), out-of-range stores and atomics are dropped"""
  mem = np.arange(16, dtype=np.uint32) + 100
  bf = Bufs(mem)
  s = C.s
  prog = [C.s_buffer_load_dwordx4(sdata=s[20:23], sbase=s[0:3], offset=8, imm=1),
          C.s_mov_b32(s[24], 0xabc), C.s_buffer_store_dword(sdata=s[24], sbase=s[0:3], offset=0, imm=1),
          C.s_buffer_store_dword(sdata=s[24], sbase=s[0:3], offset=40, imm=1),                               # past 40 bytes: dropped
          C.s_mov_b32(s[25], 5), C.s_buffer_atomic_add(sdata=s[25], sbase=s[0:3], offset=4, imm=1, glc=1),
          C.s_mov_b32(s[26], 77), C.s_mov_b32(s[27], 108), C.s_buffer_atomic_cmpswap(sdata=s[26:27], sbase=s[0:3], offset=32, imm=1, glc=1),
          C.s_mov_b32(s[28], 1), C.s_buffer_atomic_add(sdata=s[28], sbase=s[0:3], offset=36, imm=1),            # no GLC: s28 stays 1
          C.s_mov_b32(s[29], 1), C.s_buffer_atomic_add(sdata=s[29], sbase=s[0:3], offset=40, imm=1, glc=1),    # out of range: dropped
          C.s_waitcnt(simm16=0)]
  sg = srun("gfx950", prog, bf, sharp("gfx950", bf.addr(0), 40), backend)
  assert list(sg[20:24]) == [102, 103, 104, 105] and sg[25] == 101 and sg[26] == 108 and sg[28] == 1
  assert mem.tolist() == [0xabc, 106, 102, 103, 104, 105, 106, 107, 77, 110, 110, 111, 112, 113, 114, 115]

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950"])
def test_atc_probe_is_a_nop(arch, backend):
  """S_ATC_PROBE / S_ATC_PROBE_BUFFER only probe the address-translation cache (no data returned, nothing written): no-ops,
  even for an address no MemoryMap range holds"""
  I = {"gfx1100": R3, "gfx1201": R4, "gfx950": C}[arch]
  off = {"gfx1100": dict(offset=0, soffset=I.NULL), "gfx1201": dict(ioffset=0, soffset=I.NULL), "gfx950": dict(offset=0, imm=1)}[arch]
  prog = [I.s_mov_b32(I.s[8], 7), I.s_atc_probe(sdata=I.s[8], sbase=I.s[0:1], **off), I.s_atc_probe_buffer(sdata=I.s[8], sbase=I.s[0:3], **off),
          I.s_mov_b32(I.s[9], 3)]
  sg = srun(arch, prog, Bufs(), [0xdead0000, 0x7fff, 0, 0], backend)
  assert (sg[8], sg[9]) == (7, 3)
