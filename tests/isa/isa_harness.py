"""Helpers for the ISA tests: assemble with the wheel's DSL, run one dispatch on the emulator, read registers and buffers.
Test modules import them by this module's unique name (`from isa_harness import run`), not from conftest.

Expected values in these tests come from numpy or the ISA definition, never from the emulator."""
import struct
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import s_endpgm
from mockgpu.emu.api import run_code
from mockgpu.emu.memory import MemoryMap

def f32(x) -> int: return struct.unpack("<I", struct.pack("<f", x))[0]
def as_f32(u) -> float: return struct.unpack("<f", struct.pack("<I", u & 0xffffffff))[0]
def f16(x) -> int: return int(np.array(x, np.float16).view(np.uint16))
def as_f16(u) -> float: return float(np.array(u & 0xffff, np.uint16).view(np.float16))
def f64(x) -> int: return struct.unpack("<Q", struct.pack("<d", x))[0]

def code(*insts, end=True) -> bytes:
  return b"".join(i.to_bytes() for i in insts) + (s_endpgm().to_bytes() if end else b"")

# lane-mask tests (test_carry_lanes.py, test_cmp_lanes.py): (cdna, wave64) = gfx1100 wave32 (the full-wave loops), wave64, gfx950
LANE_CASES = [(False, False), (False, True), (True, True)]

def check_lanes(run_case, check, cdna: bool, w64: bool, backend: str):
  """`check(*run_case(cdna, w64, seed, exec_full, backend))` over both EXEC kinds and three seeds (one on the slow Python backend)."""
  for exec_full in (True, False):
    for seed in range(3 if backend == "c" else 1): check(*run_case(cdna, w64, seed, exec_full, backend))

def check_lanes_translated(run_case, check, cdna: bool, w64: bool):
  """With MOCKGPU_EMU_XLAT=sync set by the caller: a first dispatch gets the kernel translated, then full and partial EXEC
  runs must run translated and pass `check`."""
  run_case(cdna, w64, 0, True)
  for seed, full in ((1, True), (2, False), (3, True)):
    st, *rest = run_case(cdna, w64, seed, full)
    assert st.extra.get("translated"), "the dispatch did not run translated"
    check(st, *rest)

class Bufs:
  """numpy buffers registered in a MemoryMap; `sgprs()` gives their addresses as (lo, hi) user SGPR pairs."""
  def __init__(self, *arrays):
    self.mem, self.arrays = MemoryMap(), [np.ascontiguousarray(a) for a in arrays]
    for i, a in enumerate(self.arrays): self.mem.add(a.ctypes.data, a.nbytes, f"buf{i}")
  def addr(self, i) -> int: return self.arrays[i].ctypes.data
  def sgprs(self) -> tuple:
    return tuple(x for a in self.arrays for x in (a.ctypes.data & 0xffffffff, a.ctypes.data >> 32))
  def __getitem__(self, i): return self.arrays[i]

def run(insts, bufs: Bufs | None = None, *, block=(32, 1, 1), grid=(1, 1, 1), sgprs=None, end=True, **kw):
  """Run `insts` (+ s_endpgm) with the buffers' addresses in s0.. and return Stats (registers of wave 0 in .state)."""
  bufs = bufs or Bufs()
  us = tuple(sgprs) if sgprs is not None else bufs.sgprs()
  kw.setdefault("rsrc2", len(us) << 1)
  return run_code(code(*insts, end=end), bufs.mem, block=block, grid=grid, user_sgprs=us, capture=True, **kw)

def lanes(ops, a, b=None, c=None, n=32, out_dtype=np.uint32, out_words=1, **kw):
  """Per-lane test: v2 = a[lane], v3 = b[lane], v4 = c[lane] (u32 words), run `ops`, return v5 (v5:v6 if out_words=2) per lane.
  Keyword arguments go to run() (e.g. backend="python")."""
  from tinygrad.runtime.autogen.amd.rdna3.ins import v, s, v_lshlrev_b32_e32, global_load_b32, global_store_b32, global_store_b64, s_waitcnt
  def words(x):
    x = np.asarray(x if x is not None else np.zeros(n, np.uint32))
    return np.ascontiguousarray(x.astype(np.float32 if x.dtype.kind == "f" else np.uint32).view(np.uint32))
  arrs = [words(x) for x in (a, b, c)]
  out = np.zeros(n * out_words, np.uint32)
  bf = Bufs(*arrs, out)
  pre = [v_lshlrev_b32_e32(v[1], 2, v[0]), *(global_load_b32(vdst=v[2 + i], addr=v[1], saddr=s[2 * i:2 * i + 1]) for i in range(3)),
         s_waitcnt(simm16=0)]
  post = ([global_store_b32(addr=v[1], data=v[5], saddr=s[6:7])] if out_words == 1 else
          [v_lshlrev_b32_e32(v[1], 3, v[0]), global_store_b64(addr=v[1], data=v[5:6], saddr=s[6:7])])
  st = run(pre + list(ops) + post, bf, block=(n, 1, 1), **kw)
  return out.view(out_dtype) if out_dtype != np.uint32 else out, st

# ---- image tests (test_mimg.py, test_vimage.py): a T# written independently of mockgpu.emu.image, from the bit positions
# docs/emu.md "Images" states ----
IMG_FMT = {"8_UNORM": 1, "8_SINT": 6, "16_SNORM": 8, "16_FLOAT": 13, "32_UINT": 20, "32_FLOAT": 22, "16_16_SNORM": 24, "10_11_11_FLOAT": 30,
           "16_16_FLOAT": 35, "2_10_10_10_UNORM": 36, "8_8_8_8_UNORM": 42, "8_8_8_8_UINT": 46, "8_8_8_8_SINT": 47,
           "16_16_16_16_UINT": 55, "16_16_16_16_FLOAT": 57, "IMAGE_ONLY_100": 100}
IMG_TY = {"1D": 8, "2D": 9, "3D": 10, "CUBE": 11, "1D_ARRAY": 12, "2D_ARRAY": 13, "2D_MSAA": 14, "2D_MSAA_ARRAY": 15}
XYZW = (4, 5, 6, 7)

def tsharp(base, fmt, w, h=1, typ="2D", depth=0, sel=XYZW, base_level=0, last_level=0, sw=0, base_array=0) -> list[int]:
  """The 8 dwords of an image descriptor: 256-byte aligned `base`, format (an IMG_FMT name or the code), size, type, DST_SEL,
  levels, swizzle mode."""
  d = ((base >> 8) | (IMG_FMT[fmt] if isinstance(fmt, str) else fmt) << 52 | (w - 1) << 62 | (h - 1) << 78 | sel[0] << 96 | sel[1] << 99 | sel[2] << 102 | sel[3] << 105 |
       base_level << 108 | last_level << 112 | sw << 116 | IMG_TY[typ] << 124 | depth << 128 | base_array << 144)
  return [(d >> (32 * i)) & 0xffffffff for i in range(8)]
