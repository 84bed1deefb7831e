"""VINTERP (parameter interpolation over quads), LDSDIR/VDSDIR (LDS direct loads via M0) and EXP/VEXPORT (no export target
in a compute dispatch) on both backends. Expected values: the ISA's formulas evaluated with numpy (inputs chosen so the
FMA is exact in float64), f16 rounding by numpy (RNE) or by truncation toward zero."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from mockgpu.emu.api import run_code
from mockgpu.emu.errors import GPUFault, InvalidInstruction
from isa_harness import run, f32

BACKENDS = ["c", "python"]
P = (np.arange(32) * 0.375 - 3).astype(np.float32)     # per-lane parameter data: quad lane 0 = P0, 1 = P10, 2 = P20
I = (np.arange(32) % 7 * 0.25 - 0.5).astype(np.float32)  # per-lane barycentric
quad = np.arange(32) & ~3

def _ld(reg, vals):   # v[reg] = vals[lane]: one v_mov per lane under a one-lane EXEC
  return [v_mov_b32_e32(v[reg], 0)] + [x for L, val in enumerate(vals) for x in (s_mov_b32(EXEC_LO, 1 << L), v_mov_b32_e32(v[reg], int(val)))] + \
         [s_mov_b32(EXEC_LO, 0xffffffff)]

def _f32s(st, r): return np.array(st.state.vgprs[r], np.uint32).view(np.float32)

@pytest.mark.parametrize("backend", BACKENDS)
def test_p10_p2_f32_neg_clamp(backend):
  pre = _ld(1, P.view(np.uint32)) + _ld(2, I.view(np.uint32))
  st = run(pre + [v_interp_p10_f32(v[3], v[1], v[2], v[1]), v_interp_p2_f32(v[4], v[1], v[2], v[3]),
                  v_interp_p10_f32(v[5], v[1], v[2], v[1], neg=5), v_interp_p2_f32(v[6], v[1], v[2], v[3], clmp=1, waitexp=7),
                  v_interp_p10_f32(v[1], v[1], v[2], v[1])], sgprs=(), backend=backend)
  p10 = (P[quad + 1].astype(np.float64) * I + P[quad]).astype(np.float32)
  p2 = (P[quad + 2].astype(np.float64) * I + p10).astype(np.float32)
  np.testing.assert_array_equal(_f32s(st, 3), p10)
  np.testing.assert_array_equal(_f32s(st, 4), p2)
  np.testing.assert_array_equal(_f32s(st, 5), (-P[quad + 1].astype(np.float64) * I - P[quad]).astype(np.float32))
  np.testing.assert_array_equal(_f32s(st, 6), np.clip(p2, 0, 1))
  np.testing.assert_array_equal(_f32s(st, 1), p10)   # vdst == src0: every lane read its quad before any lane wrote

def _rtz16(x: np.ndarray) -> np.ndarray:
  h = x.astype(np.float16)
  over = np.abs(h.astype(np.float64)) > np.abs(x.astype(np.float64))
  return np.where(over, np.nextafter(h, np.float16(0)), h)

@pytest.mark.parametrize("backend", BACKENDS)
def test_f16_variants_opsel_and_rtz(backend):
  lo, hi = P.astype(np.float16), (-2 * P).astype(np.float16)
  packed = lo.view(np.uint16).astype(np.uint32) | hi.view(np.uint16).astype(np.uint32) << 16
  i2 = (1 + 3 * 2.0 ** -12 + np.arange(32) % 3 * 2.0 ** -13).astype(np.float32)   # products whose f16 rounding differs RNE/RTZ
  pre = _ld(1, packed) + _ld(2, I.view(np.uint32)) + _ld(7, i2.view(np.uint32)) + [v_mov_b32_e32(v[5], 0x11112222), v_mov_b32_e32(v[6], 0x33334444)]
  st = run(pre + [v_interp_p10_f16_f32(v[3], v[1], v[2], v[1], opsel=0b0101), v_interp_p10_rtz_f16_f32(v[4], v[1], v[2], v[1], opsel=0b0001),
                  v_interp_p2_f16_f32(v[5], v[1], v[7], v[8], opsel=0b1000), v_interp_p2_rtz_f16_f32(v[6], v[1], v[7], v[8])],
           sgprs=(), backend=backend)
  np.testing.assert_array_equal(_f32s(st, 3), (hi[quad + 1].astype(np.float64) * I + hi[quad]).astype(np.float32))
  np.testing.assert_array_equal(_f32s(st, 4), (hi[quad + 1].astype(np.float64) * I + lo[quad]).astype(np.float32))
  exact = (lo[quad + 2].astype(np.float64) * i2).astype(np.float32)       # v8 = 0: S2 = +0
  assert (_rtz16(exact) != exact.astype(np.float16)).any()
  v5, v6 = np.array(st.state.vgprs[5], np.uint32), np.array(st.state.vgprs[6], np.uint32)
  np.testing.assert_array_equal(v5 >> 16, exact.astype(np.float16).view(np.uint16)); assert (v5 & 0xffff == 0x2222).all()
  np.testing.assert_array_equal(v6 & 0xffff, _rtz16(exact).view(np.uint16)); assert (v6 >> 16 == 0x3333).all()

@pytest.mark.parametrize("backend", BACKENDS)
def test_rdna4_vinterp_and_ds_direct_load(backend):
  code = b"".join(i.to_bytes() for i in [R4.v_cvt_f32_u32_e32(R4.v[1], R4.v[0]), R4.v_mov_b32_e32(R4.v[2], f32(0.25)),
    R4.v_interp_p10_f32(R4.v[3], R4.v[1], R4.v[2], R4.v[1]), R4.v_mov_b32_e32(R4.v[4], 0), R4.v_mov_b32_e32(R4.v[5], 0xfedcba98),
    R4.ds_store_b32(addr=R4.v[4], data0=R4.v[5], offset0=8), R4.s_wait_dscnt(simm16=0), R4.s_mov_b32(R4.M0, 8 + 2 | 5 << 16),
    R4.ds_direct_load(vdst=R4.v[6]), R4.s_endpgm()])
  st = run_code(code, arch="gfx1201", block=(32, 1, 1), lds_bytes=64, capture=True, backend=backend)
  np.testing.assert_array_equal(_f32s(st, 3), ((quad + 1) * 0.25 + quad).astype(np.float32))
  assert st.state.vgprs[6] == (0xfffffedc,) * 32     # i16 at byte 10: 0xfedc sign-extended

@pytest.mark.parametrize("backend", BACKENDS)
def test_lds_direct_load_types_and_fault(backend):
  word = 0x80c1f27f
  pre = [v_mov_b32_e32(v[1], 0), v_mov_b32_e32(v[2], word), ds_store_b32(addr=v[1], data0=v[2], offset0=4), s_waitcnt(simm16=0),
         s_mov_b32(EXEC_LO, 0x0000ffff)]
  loads = []
  for r, (addr, ty) in enumerate(((5, 0), (4, 4), (6, 1), (6, 5), (4, 2)), start=3):
    loads += [s_mov_b32(M0, addr | ty << 16), lds_direct_load(vdst=v[r])]
  st = run(pre + loads, sgprs=(), lds_bytes=64, backend=backend)
  b = word.to_bytes(4, "little")
  want = [b[1], (b[0] ^ 0x80) - 0x80 & 0xffffffff, int.from_bytes(b[2:], "little"), (int.from_bytes(b[2:], "little") ^ 0x8000) - 0x8000 & 0xffffffff, word]
  for r, x in enumerate(want, start=3): assert st.state.vgprs[r][:16] == (x,) * 16 and st.state.vgprs[r][16:] == (0,) * 16, r
  with pytest.raises(GPUFault) as ei: run([s_mov_b32(M0, 62 | 2 << 16), lds_direct_load(vdst=v[1])], sgprs=(), lds_bytes=64, backend=backend)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.lane, r.limit) == ("read", "lds", 62, 4, 0, 64)
  with pytest.raises(InvalidInstruction, match=r"reserved data type"): run([s_mov_b32(M0, 3 << 16), lds_direct_load(vdst=v[1])], sgprs=(), backend=backend)

@pytest.mark.parametrize("backend", BACKENDS)
def test_param_load_and_export_are_clear_errors(backend):
  with pytest.raises(InvalidInstruction, match="LDS_PARAM_LOAD .* a compute dispatch has none") as ei:
    run([s_mov_b32(M0, 0), lds_param_load(vdst=v[1], attr=2, attr_chan=1)], sgprs=(), lds_bytes=64, backend=backend)
  assert "LDS_PARAM_LOAD" in ei.value.report.disasm
  with pytest.raises(InvalidInstruction, match=r"EXP target=9 en=0x0 done=1: .*no export target"):
    run([EXP(vsrc0=v[0], vsrc1=v[0], vsrc2=v[0], vsrc3=v[0], en=0, target=9, done=1)], sgprs=(), backend=backend)
  with pytest.raises(InvalidInstruction, match=r"EXP target=12 en=0xf done=0"):
    run_code(R4.VEXPORT(vsrc0=R4.v[0], vsrc1=R4.v[0], vsrc2=R4.v[0], vsrc3=R4.v[0], en=15, target=12).to_bytes(), arch="gfx1201", backend=backend)
