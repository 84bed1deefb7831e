"""The MODE register (hwreg 1) across encodings: initialised from RSRC1, read by S_GETREG_B32 (SOPK), written by
S_SETREG_B32 / S_SETREG_IMM32_B32 (SOPK) and S_ROUND_MODE / S_DENORM_MODE (SOPP), and honoured by VALU float ops, on both
backends. Expected values are worked out from the ISA's MODE fields (FP_ROUND [3:0]: f32 [1:0], f16/f64 [3:2], 0 nearest
even, 1 +inf, 2 -inf, 3 toward zero; FP_DENORM [7:4]: f32 [5:4], f16/f64 [7:6], bit 0 keeps input and bit 1 output
denormals; DX10_CLAMP [8]; IEEE [9]) and IEEE arithmetic, stated per case."""
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, f32, f16

def hwreg(rid, off=0, size=32): return rid | off << 6 | (size - 1) << 11
MODE = 1
ONE, NEXT = f32(1.0), f32(1.0) + 1                      # 1.0 and the next f32 above it (1 + 2^-23)
TINY = f32(2.0 ** -25 + 2.0 ** -30)                     # 1 + TINY lies strictly between ONE and NEXT, nearer ONE

def regs(st, *vr): return [st.state.vgprs[r][0] for r in vr]

@pytest.mark.parametrize("backend", ["c", "python"])
def test_setreg_rounding_and_getreg(backend):
  # 1 + TINY and -1 - TINY in each f32 rounding mode: nearest -> 1, +inf -> NEXT / -1, -inf -> 1 / -NEXT, zero -> 1 / -1
  want = {0: (ONE, ONE | 1 << 31), 1: (NEXT, ONE | 1 << 31), 2: (ONE, NEXT | 1 << 31), 3: (ONE, ONE | 1 << 31)}
  for rm in range(4):
    prog = [s_mov_b32(s[4], TINY), s_mov_b32(s[5], rm), s_setreg_b32(simm16=hwreg(MODE, 0, 2), sdst=s[5]),
            v_mov_b32_e32(v[1], s[4]), v_add_f32_e32(v[2], 1.0, v[1]), v_sub_f32_e32(v[3], -1.0, v[1]), s_getreg_b32(s[6], hwreg(MODE)),
            s_getreg_b32(s[7], hwreg(MODE, 0, 2))]
    st = run(prog, sgprs=(), backend=backend)
    assert tuple(regs(st, 2, 3)) == want[rm], rm
    # default RSRC1 (LLVM's kernel descriptor defaults): MODE 0x3c0 = IEEE, DX10_CLAMP, f16/f64 denormals kept, f32 flushed
    assert st.state.sgprs[6] == 0x3c0 | rm and st.state.sgprs[7] == rm and st.state.mode == 0x3c0 | rm

@pytest.mark.parametrize("backend", ["c", "python"])
def test_setreg_imm32_field_and_fused_fma(backend):
  # FP_ROUND = 1 (+inf) for f32 only through an offset/size field write. fma((1+2^-12)^2 + 2^-30): exact 1 + 2^-11 + 2^-24 + 2^-30
  # rounds up once to 1 + 2^-11 + 2^-23; an unfused mul then add would round twice, to 1 + 2^-11 + 2^-22.
  a, c = f32(1 + 2.0 ** -12), f32(2.0 ** -30)
  prog = [s_setreg_imm32_b32(simm16=hwreg(MODE, 0, 2), literal=1), s_mov_b32(s[4], a), s_mov_b32(s[5], c),
          v_fma_f32(v[2], s[4], s[4], s[5]), s_getreg_b32(s[6], hwreg(MODE, 4, 4))]
  st = run(prog, sgprs=(), backend=backend)
  assert regs(st, 2) == [f32(1 + 2.0 ** -11 + 2.0 ** -23)]
  assert st.state.sgprs[6] == 0xc                         # FP_DENORM (default: f32 flushed, f16/f64 kept) untouched by the 2-bit write
  # setreg ignores bits outside its field: writing 0xffffffff to FP_DENORM[f32] only sets MODE[5:4]
  st = run([s_setreg_imm32_b32(simm16=hwreg(MODE, 4, 2), literal=0xffffffff), s_setreg_imm32_b32(simm16=hwreg(MODE, 4, 2), literal=0),
            s_getreg_b32(s[6], hwreg(MODE))], sgprs=(), backend=backend)
  assert st.state.sgprs[6] == 0x3c0

@pytest.mark.parametrize("backend", ["c", "python"])
def test_s_round_mode_and_s_denorm_mode(backend):
  dn32, dn16 = f32(2.0 ** -130), f16(2.0 ** -20)         # an f32 and an f16 denormal
  base = [s_mov_b32(s[4], dn32), s_mov_b32(s[5], dn16), v_add_f32_e64(v[2], 0, s[4]), v_add_f16_e64(v[3], 0, s[5]),
          s_mov_b32(s[8], TINY), v_add_f32_e64(v[4], 1.0, s[8]), s_getreg_b32(s[6], hwreg(MODE, 0, 8))]
  # S_DENORM_MODE 0x3 << 2 | 0: flush f32 denormals (inputs and outputs), keep f16/f64 ones; S_ROUND_MODE 1: f32 toward +inf
  st = run([s_denorm_mode(0xc), s_round_mode(1), *base], sgprs=(), backend=backend)
  assert regs(st, 2, 3, 4) == [0, dn16, NEXT] and st.state.sgprs[6] == 0xc1
  # S_DENORM_MODE 0x3: keep f32, flush f16 (f16 0 + denormal -> +0); rounding back to nearest even
  st = run([s_denorm_mode(3), s_round_mode(0), *base], sgprs=(), backend=backend)
  assert regs(st, 2, 3, 4) == [dn32, 0, ONE] and st.state.sgprs[6] == 0x30
  # flush f32 outputs only (FP_DENORM[f32] = 1): a normal times 1/4 that lands in the denormals becomes +0, a denormal input
  # times 2^40 (normal result) is kept
  st = run([s_denorm_mode(0xd), s_mov_b32(s[4], f32(2.0 ** -126)), s_mov_b32(s[5], dn32), v_mul_f32_e64(v[2], 0.25, s[4]),
            s_mov_b32(s[6], f32(2.0 ** 40)), v_mul_f32_e32(v[3], s[6], v[2]), v_mov_b32_e32(v[4], s[5]), v_mul_f32_e32(v[4], s[6], v[4])],
           sgprs=(), backend=backend)
  assert regs(st, 2, 3, 4) == [0, 0, f32(2.0 ** -90)]

@pytest.mark.parametrize("backend", ["c", "python"])
def test_rsrc1_float_mode_initialises_mode(backend):
  # RSRC1: FLOAT_ROUND_MODE_32 [13:12] = 3 (toward zero), FLOAT_ROUND_MODE_16_64 [15:14] = 0, FLOAT_DENORM_MODE_32 [17:16] = 0
  # (flush), FLOAT_DENORM_MODE_16_64 [19:18] = 3, ENABLE_DX10_CLAMP [21], ENABLE_IEEE_MODE [23] -> MODE 0xc3 | 1 << 8 | 1 << 9
  rsrc1 = 3 << 12 | 0 << 16 | 3 << 18 | 1 << 21 | 1 << 23
  prog = [s_getreg_b32(s[6], hwreg(MODE)), s_mov_b32(s[4], f32(2.0 ** -130)), v_add_f32_e64(v[2], 0, s[4]),
          s_mov_b32(s[5], f32(-(2.0 ** -24 + 2.0 ** -30))), v_add_f32_e64(v[4], 1.0, s[5]), s_mov_b32(s[7], 0x7fa00000), v_max_f32_e64(v[5], 1.0, s[7])]
  st = run(prog, sgprs=(), rsrc1=rsrc1, backend=backend)
  assert st.state.sgprs[6] == 0x3c3 and st.state.mode == 0x3c3
  # the f32 denormal input is flushed; 1 - 2^-24 - 2^-30 lies between the f32s 1 - 2^-23 and 1 - 2^-24 (nearer the latter),
  # toward zero gives 1 - 2^-23; IEEE mode: max(1.0, sNaN) is the quieted NaN
  assert regs(st, 2, 4, 5) == [0, f32(1 - 2.0 ** -23), 0x7fe00000]
  # without IEEE mode the NaN operand yields the other one
  st = run(prog, sgprs=(), rsrc1=rsrc1 & ~(1 << 23), backend=backend)
  assert regs(st, 5) == [f32(1.0)] and st.state.mode == 0x1c3
