"""Compares (V_CMP_*, V_CMPX_*): the C backend's full-wave loops run each lane as lane 0 from an empty mask and pack the bits
after the loop (gen_c._lane_loop, zero), masked with EXEC when some lanes are inactive. numpy is the oracle: the masks (bits of inactive
lanes 0) of E32 (VCC) and E64 (SGPR mask) forms and the EXEC a CMPX leaves, NaN operands, on both backends, wave32 and wave64
(gfx1100) and gfx950, interpreted and translated. The EXEC mask and the inputs come from user SGPRs and buffers."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as R
from tinygrad.runtime.autogen.amd.cdna import ins as C
from mockgpu.emu.api import run_code
from isa_harness import Bufs, LANE_CASES, check_lanes, check_lanes_translated

def f32(x):   # f32 denormals flushed (run_code's default MODE, ArchSpec.default_rsrc1)
  f = x.astype(np.uint32).view(np.float32)
  return np.where(np.abs(f) < np.finfo(np.float32).tiny, np.float32(0), f)
def f64(lo, hi): return (lo | hi << np.uint64(32)).view(np.float64)
# per lane from the three loaded words a, b, c (uint64 arrays): the compare's result
ORACLE = {"lt_f32": lambda a, b, c: f32(a) < f32(b), "neq_f32": lambda a, b, c: ~(f32(a) == f32(b)),
          "o_f32": lambda a, b, c: ~np.isnan(f32(a)) & ~np.isnan(f32(b)), "ge_f32": lambda a, b, c: f32(a) >= f32(b),
          "nge_f32": lambda a, b, c: ~(f32(a) >= f32(b)), "gt_u32": lambda a, b, c: a > b,
          "eq_i32": lambda a, b, c: a.astype(np.uint32).view(np.int32) == b.astype(np.uint32).view(np.int32),
          "lt_f64": lambda a, b, c: f64(a, b) < f64(b, c), "le_i32": lambda a, b, c: a.astype(np.uint32).view(np.int32) <= b.astype(np.uint32).view(np.int32)}
# (oracle, op name, form): "e32" writes VCC, "e64" an SGPR mask, "x32"/"x64" CMPX (EXEC; CDNA's also write VCC / the SGPR mask)
OPS = [("lt_f32", "e32"), ("neq_f32", "e32"), ("o_f32", "e64"), ("ge_f32", "e64"), ("nge_f32", "e32"), ("gt_u32", "e64"),
       ("eq_i32", "e32"), ("lt_f64", "e64"), ("lt_f64", "e32"), ("lt_f32", "x32"), ("le_i32", "x64"), ("neq_f32", "x32")]

def program(cdna: bool, w64: bool) -> bytes:
  """v2, v3, v4 = a, b, c [lane]; EXEC = s[6:7], VCC before an E32 op s[8:9]; op k leaves its mask in s[20 + 2k] (:+1), a CMPX also its EXEC in s[50 + 2k]."""
  I = C if cdna else R
  v, s = I.v, I.s
  m = (lambda r: s[r:r + 1]) if cdna else (lambda r: s[r])   # RDNA's DSL types SGPR masks as one register
  ld = [(I.global_load_dword if cdna else I.global_load_b32)(vdst=v[2 + i], addr=v[1], saddr=s[2 * i:2 * i + 1]) for i in range(3)]
  setx = (lambda r: I.s_mov_b64(I.EXEC, s[r:r + 1])) if w64 else (lambda r: I.s_mov_b32(I.EXEC_LO, s[r]))
  getm = (lambda r, src: I.s_mov_b64(s[r:r + 1], src)) if w64 else (lambda r, src: I.s_mov_b32(s[r], src))
  vcc, exe = (I.VCC, I.EXEC) if w64 else (I.VCC_LO, I.EXEC_LO)
  body = [I.v_lshlrev_b32_e32(v[1], 2, v[0]), *ld, I.s_waitcnt(simm16=0), setx(6)]
  for k, (name, form) in enumerate(OPS):
    kind, t = name.split("_")
    x, y = (v[2:3], v[3:4]) if t == "f64" else (v[2], v[3])
    op = getattr(I, f"v_cmp{'x' if form[0] == 'x' else ''}_{name}_e{form[1:]}")
    if form == "e32": body += [I.s_mov_b64(I.VCC, s[8:9]) if w64 else I.s_mov_b32(I.VCC_LO, s[8]), op(x, y), getm(20 + 2 * k, vcc)]
    elif form == "e64": body.append(op(m(20 + 2 * k), x, y))
    elif form == "x32": body += [op(x, y), getm(50 + 2 * k, exe), *([getm(20 + 2 * k, vcc)] if cdna else []), setx(6)]
    else: body += [op(m(20 + 2 * k) if cdna else I.EXEC_LO, x, y), getm(50 + 2 * k, exe), setx(6)]
  return b"".join(i.to_bytes() for i in body + [I.s_endpgm()])

SPECIAL = np.array([0x7fc00000, 0x7fa00000, 0xffc00001, 0x7f800000, 0xff800000, 0, 0x80000000, 0x3f800000, 0xbf800000, 1, 0x80000001,
                    0x7ff80000, 0xfff00000, 0x3ff00000, 0xffffffff, 0x7fffffff], np.uint64)   # NaNs (f32, f64 high words), infs, zeros, ...

def run_case(cdna: bool, w64: bool, seed: int, exec_full: bool, backend: str = "c"):
  rng = np.random.default_rng(seed)
  n = 64 if w64 else 32
  a, b, c = (rng.choice(SPECIAL, n) for _ in range(3))
  for x in (a, b, c): x[::3] = rng.integers(0, 1 << 32, len(x[::3]), dtype=np.uint64)
  b[::5] = a[::5]; c[1::4] = b[1::4]   # equal operands
  ex = (1 << n) - 1 if exec_full else int(rng.integers(1, 1 << 62)) & ((1 << n) - 1) | 1
  vcc = int(rng.integers(0, 1 << 63)) << 1 | 1   # bits of inactive lanes in the VCC before an E32 compare
  bufs = Bufs(*(x.astype(np.uint32) for x in (a, b, c)))
  us = (*bufs.sgprs(), ex & 0xffffffff, ex >> 32, vcc & 0xffffffff, vcc >> 32)
  st = run_code(program(cdna, w64), bufs.mem, arch="gfx950" if cdna else "gfx1100", wave64=w64, block=(n, 1, 1), user_sgprs=us,
                rsrc2=len(us) << 1, capture=True, backend=backend)
  return st, cdna, a, b, c, ex, n

def check(st, cdna, a, b, c, ex, n):
  act = np.array([ex >> L & 1 for L in range(n)], bool)
  reg = lambda r: st.state.sgprs[r] | (st.state.sgprs[r + 1] << 32 if n == 64 else 0)
  for k, (name, form) in enumerate(OPS):
    want = sum(1 << L for L, r in enumerate(ORACLE[name](a, b, c)) if r and act[L])
    if form[0] == "x":
      assert reg(50 + 2 * k) == want, f"op {k} v_cmpx_{name} {form}: EXEC {reg(50 + 2 * k):#x}, numpy {want:#x}"
      if not cdna: continue
    assert reg(20 + 2 * k) == want, f"op {k} v_cmp_{name} {form}: mask {reg(20 + 2 * k):#x}, numpy {want:#x}"

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("cdna,w64", LANE_CASES)
def test_compare_masks_against_numpy(cdna, w64, backend):
  check_lanes(run_case, check, cdna, w64, backend)

@pytest.mark.engine
@pytest.mark.parametrize("cdna,w64", LANE_CASES)
def test_compare_masks_translated(monkeypatch, cdna, w64):
  monkeypatch.setenv("MOCKGPU_EMU_XLAT", "sync")
  check_lanes_translated(run_case, check, cdna, w64)
