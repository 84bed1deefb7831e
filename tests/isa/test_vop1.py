"""VOP1: moves, conversions (numpy as the oracle), true16 halves, readfirstlane, DPP16 and DPP8 lane permutations."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, lanes

rng = np.random.default_rng(0)

def test_mov_and_cvt():
  a = rng.integers(-1000, 1000, 32).astype(np.int32)
  out, _ = lanes([v_cvt_f32_i32_e32(v[5], v[2])], a.view(np.uint32))
  np.testing.assert_array_equal(out.view(np.float32), a.astype(np.float32))
  x = (rng.standard_normal(32) * 100).astype(np.float32)
  out, _ = lanes([v_cvt_i32_f32_e32(v[5], v[2])], x)
  np.testing.assert_array_equal(out.view(np.int32), np.trunc(x).astype(np.int32))

def test_float_unary_ops():
  x = (rng.random(32) * 10 + 0.1).astype(np.float32)
  out, _ = lanes([v_sqrt_f32_e32(v[5], v[2])], x)
  np.testing.assert_allclose(out.view(np.float32), np.sqrt(x), rtol=1e-6)
  out, _ = lanes([v_floor_f32_e32(v[5], v[2])], x)
  np.testing.assert_array_equal(out.view(np.float32), np.floor(x))
  out, _ = lanes([v_exp_f32_e32(v[5], v[2])], x / 4)
  np.testing.assert_allclose(out.view(np.float32), np.exp2(x / 4), rtol=1e-5)

def test_cvt_f16_true16_halves():
  # v_cvt_f16_f32 writes v5.l, then again into v5.h (bit 7 of the VOP1 vdst field selects the high half)
  x = rng.standard_normal(32).astype(np.float32)
  out, _ = lanes([v_mov_b32_e32(v[5], 0), v_cvt_f16_f32_e32(v[5], v[2]), v_cvt_f16_f32_e32(v[5].h, v[3])], x, -x)
  np.testing.assert_array_equal((out & 0xffff).astype(np.uint16).view(np.float16), x.astype(np.float16))
  np.testing.assert_array_equal((out >> 16).astype(np.uint16).view(np.float16), (-x).astype(np.float16))

def test_readfirstlane_uses_lowest_active_lane():
  st = run([v_add_nc_u32_e32(v[1], 100, v[0]), s_mov_b32(EXEC_LO, 0xfff0), v_readfirstlane_b32_e32(s[4], v[1])], sgprs=())
  assert st.state.sgprs[4] == 104

def test_dpp16_row_shr_and_quad_perm():
  a = np.arange(32, dtype=np.uint32) * 3
  # row_shr:1 with bound_ctrl: lane 0 of each row reads 0; quad_perm [3,2,1,0] reverses each quad
  out, _ = lanes([VOP1_DPP16(VOP1Op.V_MOV_B32_E32, vdst=v[5], src0=DPP, vsrc0=v[2], dpp=0x111, row_mask=0xf, bank_mask=0xf, bc=1)], a)
  want = np.array([0 if l % 16 == 0 else a[l - 1] for l in range(32)], np.uint32)
  np.testing.assert_array_equal(out, want)
  out, _ = lanes([VOP1_DPP16(VOP1Op.V_MOV_B32_E32, vdst=v[5], src0=DPP, vsrc0=v[2], dpp=0b00011011, row_mask=0xf, bank_mask=0xf)], a)
  np.testing.assert_array_equal(out, a.reshape(-1, 4)[:, ::-1].reshape(-1))

def test_dpp8_lane_select():
  a = np.arange(32, dtype=np.uint32) + 1000
  sel = [7, 6, 5, 4, 3, 2, 1, 0]
  out, _ = lanes([VOP1_DPP8(VOP1Op.V_MOV_B32_E32, vdst=v[5], src0=src[233], vsrc0=v[2], **{f"lane_sel_{i}": x for i, x in enumerate(sel)})], a)
  np.testing.assert_array_equal(out, a.reshape(-1, 8)[:, ::-1].reshape(-1))
