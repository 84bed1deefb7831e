"""Hardware facts of issue 10 (results recorded on RDNA3/CDNA GPUs) for the division helpers, `<>`, OMOD and V_SIN/V_COS,
on every arch that has the instruction and on both backends. Expected values are the hardware's, as the issue states them,
never what either backend computes; the LLVM division test takes numpy's IEEE quotient (the expansion is correctly rounded
on the GPUs, which is why the compiler emits it)."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as R3
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from tinygrad.runtime.autogen.amd.cdna import ins as C
from tinygrad.runtime.autogen import amdgpu_kd as kd
from mockgpu.emu.api import run_code
from isa_harness import Bufs

BACKENDS = pytest.mark.parametrize("backend", ["c", "python"])
ALL = pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950"])
ISA = {"gfx1100": R3, "gfx1201": R4, "gfx950": C}
F32_KEEP, F64_KEEP = 3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_32_SHIFT, 3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_16_64_SHIFT
IEEE = 1 << kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_IEEE_MODE_SHIFT
NAN32, INF32, NAN64, INF64 = 0x7fc00000, 0x7f800000, 0x7ff8000000000000, 0x7ff0000000000000

def waves(arch) -> int: return 64 if arch == "gfx950" else 32

def run(arch, backend, ops, *words, rsrc1=F32_KEEP | F64_KEEP):
  """v10+i = words[i][lane] (u32) for each lane of one wave, run `ops`; the captured wave state."""
  I, n = ISA[arch], waves(arch)
  bf = Bufs(*[np.ascontiguousarray(np.resize(np.asarray(w, np.uint32), n)) for w in words])
  pre = [I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0])]
  for i in range(len(words)):
    d, sa = I.v[10 + i], I.s[2 * i:2 * i + 1]
    pre.append(I.global_load_b32(vdst=d, addr=I.v[1], saddr=sa) if arch == "gfx1100" else
               I.global_load_b32(vdst=d, vaddr=I.v[1:2], saddr=sa, ioffset=0) if arch == "gfx1201" else
               C.global_load_dword(vdst=d, addr=I.v[1], saddr=sa))
  pre.append(R4.s_wait_loadcnt(simm16=0) if arch == "gfx1201" else I.s_waitcnt(simm16=0))
  prog = b"".join(i.to_bytes() for i in pre + list(ops) + [I.s_endpgm()])
  return run_code(prog, bf.mem, arch=arch, wave64=n == 64, block=(n, 1, 1), user_sgprs=bf.sgprs(), rsrc2=2 * len(words) << 1,
                  rsrc1=rsrc1, capture=True, backend=backend).state

def u32s(st, r) -> np.ndarray: return np.array(st.vgprs[r], np.uint32)
def u64s(st, r) -> np.ndarray: return u32s(st, r).astype(np.uint64) | u32s(st, r + 1).astype(np.uint64) << np.uint64(32)
def b32(*x) -> np.ndarray: return np.array(x, np.float32).view(np.uint32)
def words64(*x) -> tuple[np.ndarray, np.ndarray]: w = np.array(x, np.float64).view(np.uint32); return w[0::2].copy(), w[1::2].copy()
def d64(x) -> int: return int(np.array(x, np.float64).view(np.uint64))
def sgpr_mask(st, r, n) -> int: return st.sgprs[r] | (st.sgprs[r + 1] << 32 if n == 64 else 0)
def vcc_reg(arch): return ISA[arch].VCC if arch == "gfx950" else ISA[arch].VCC_LO
def sdst(arch): return ISA[arch].s[20:21] if arch == "gfx950" else ISA[arch].s[20]
def bits(mask, n) -> list[int]: return [mask >> i & 1 for i in range(n)]

# (S0, S1, S2) -> (D, VCC bit); S1 = denominator, S2 = numerator. First match wins: a zero S1 or S2 -> NaN, VCC=1;
# exp(S2) - exp(S1) >= 96 -> VCC=1, D = S0 * 2^64 if S0 == S1 else S0; quotient would be denormal -> VCC=1, D = S0
# unscaled (the denominator's call, S0 == S1); ordinary -> D = S0, VCC=0. The numerator's call of a denormal quotient and the
# tiny-numerator case (exp(S2) <= 23) are left to the LLVM division tests below: the summary of them (S0 unscaled;
# VCC set) would make the GPUs' correctly rounded division return 0 for 2^-100 / 2^40 (docs/pcode.md, "Hardware corrections")
DIV_SCALE_F32 = [((1.0, 0.0, 1.0), (NAN32, 1)), ((0.0, 3.0, 0.0), (NAN32, 1)), ((3.0, 3.0, 0.0), (NAN32, 1)),
                 ((2.0**-50, 2.0**-50, 2.0**50), (b32(2.0**14)[0], 1)), ((2.0**50, 2.0**-50, 2.0**50), (b32(2.0**50)[0], 1)),
                 ((2.0**40, 2.0**40, 2.0**-100), (b32(2.0**40)[0], 1)),
                 ((3.0, 3.0, 1.0), (b32(3.0)[0], 0)), ((1.0, 3.0, 1.0), (b32(1.0)[0], 0)), ((-7.5, -7.5, 1e10), (b32(-7.5)[0], 0))]

@pytest.mark.hw_fact("V_DIV_SCALE_F32", source="issue 10")
@ALL
@BACKENDS
def test_div_scale_f32_cases_and_per_lane_vcc(arch, backend):
  I, n = ISA[arch], waves(arch)
  # the cases in lanes 0.., then ordinary lanes: the last lane's VCC bit is 0, so a whole-mask write per lane would leave 0
  rows = DIV_SCALE_F32 + [DIV_SCALE_F32[6]] * (n - len(DIV_SCALE_F32))
  s0, s1, s2 = (b32(*[r[0][k] for r in rows]) for k in range(3))
  st = run(arch, backend, [I.s_mov_b32(I.s[20], -1), I.s_mov_b32(I.s[21], -1),
                           I.v_div_scale_f32(I.v[5], sdst(arch), I.v[10], I.v[11], I.v[12]),
                           I.v_div_scale_f32(I.v[6], vcc_reg(arch), I.v[10], I.v[11], I.v[12])], s0, s1, s2)
  want_d, want_vcc = [r[1][0] for r in rows], [r[1][1] for r in rows]
  assert list(u32s(st, 5)[:n]) == want_d and list(u32s(st, 6)[:n]) == want_d
  assert bits(sgpr_mask(st, 20, n), n) == want_vcc and bits(st.vcc, n) == want_vcc

@pytest.mark.hw_fact("V_DIV_SCALE_F32", source="issue 10")
@ALL
@BACKENDS
def test_div_scale_f32_denormal_denominator_flushed_reads_as_zero(arch, backend):
  # f32 denormals flushed (RSRC1 FLOAT_DENORM_MODE_32 = 0): a denormal S1 is a zero denominator -> NaN, VCC = 1
  I, n = ISA[arch], waves(arch)
  st = run(arch, backend, [I.v_div_scale_f32(I.v[5], vcc_reg(arch), I.v[10], I.v[11], I.v[12])],
           b32(1e-40), b32(1e-40), b32(1.0), rsrc1=F64_KEEP)
  assert list(u32s(st, 5)[:n]) == [NAN32] * n and st.vcc == (1 << n) - 1

@pytest.mark.hw_fact("V_DIV_SCALE_F64", source="issue 10")
@ALL
@BACKENDS
def test_div_scale_f64_cases_and_per_lane_vcc(arch, backend):
  # f64: the thresholds are exp(S2) - exp(S1) >= 768 and the scale 2^128
  I, n = ISA[arch], waves(arch)
  rows = [((1.0, 0.0, 1.0), (NAN64, 1)), ((0.0, 3.0, 0.0), (NAN64, 1)),
          ((2.0**-400, 2.0**-400, 2.0**400), (d64(2.0**-272), 1)), ((2.0**400, 2.0**-400, 2.0**400), (d64(2.0**400), 1)),
          ((2.0**600, 2.0**600, 2.0**-450), (d64(2.0**600), 1)), ((3.0, 3.0, 1.0), (d64(3.0), 0)), ((1.0, 3.0, 1.0), (d64(1.0), 0))]
  rows += [rows[5]] * (n - len(rows))
  ins = [w for k in range(3) for w in words64(*[r[0][k] for r in rows])]
  st = run(arch, backend, [I.s_mov_b32(I.s[20], -1), I.s_mov_b32(I.s[21], -1),
                           I.v_div_scale_f64(I.v[4:5], sdst(arch), I.v[10:11], I.v[12:13], I.v[14:15])], *ins)
  assert [int(x) for x in u64s(st, 4)[:n]] == [r[1][0] for r in rows]
  assert bits(sgpr_mask(st, 20, n), n) == [r[1][1] for r in rows]

def fmas(arch):
  I = ISA[arch]
  return (I.v_div_fmas_f32_e64 if arch == "gfx950" else I.v_div_fmas_f32), (I.v_div_fmas_f64_e64 if arch == "gfx950" else I.v_div_fmas_f64)

def set_vcc(arch, mask):
  I = ISA[arch]
  return [I.s_mov_b32(I.VCC_LO, mask & 0xffffffff)] + ([I.s_mov_b32(I.VCC_HI, mask >> 32)] if arch == "gfx950" else [])

@pytest.mark.hw_fact("V_DIV_FMAS_F32", source="issue 10")
@ALL
@BACKENDS
def test_div_fmas_f32_scale_direction(arch, backend):
  # VCC bit set: fma * 2^64 when exp(S2) > 127 (|S2| >= 2), else fma * 2^-64; bit clear: the plain fma
  n = waves(arch)
  rows = [((1.5, 2.0, 4.0), 1, 7.0 * 2.0**64), ((1.5, 2.0, 2.0), 1, 5.0 * 2.0**64), ((1.5, 2.0, -4.0), 1, -1.0 * 2.0**64),
          ((1.5, 2.0, 0.5), 1, 3.5 * 2.0**-64), ((1.0, 1.0, 1.9990234375), 1, 2.9990234375 * 2.0**-64), ((1.5, 2.0, 4.0), 0, 7.0),
          ((1.5, 2.0, 0.5), 0, 3.5)]
  rows += [rows[5]] * (n - len(rows))
  mask = sum(r[1] << i for i, r in enumerate(rows))
  st = run(arch, backend, set_vcc(arch, mask) + [fmas(arch)[0](ISA[arch].v[5], ISA[arch].v[10], ISA[arch].v[11], ISA[arch].v[12])],
           *(b32(*[r[0][k] for r in rows]) for k in range(3)))
  assert list(u32s(st, 5)[:n]) == list(b32(*[r[2] for r in rows]))

@pytest.mark.hw_fact("V_DIV_FMAS_F64", source="issue 10")
@ALL
@BACKENDS
def test_div_fmas_f64_scale_direction(arch, backend):
  # f64: 2^+128 when exp(S2) > 1023 (|S2| >= 2), else 2^-128
  I, n = ISA[arch], waves(arch)
  rows = [((1.5, 2.0, 4.0), 1, 7.0 * 2.0**128), ((1.5, 2.0, 0.5), 1, 3.5 * 2.0**-128), ((1.5, 2.0, -2.0), 1, 1.0 * 2.0**128),
          ((1.5, 2.0, -4.0), 1, -1.0 * 2.0**128), ((1.5, 2.0, 4.0), 0, 7.0)]
  rows += [rows[4]] * (n - len(rows))
  mask = sum(r[1] << i for i, r in enumerate(rows))
  ins = [w for k in range(3) for w in words64(*[r[0][k] for r in rows])]
  st = run(arch, backend, set_vcc(arch, mask) + [fmas(arch)[1](I.v[4:5], I.v[10:11], I.v[12:13], I.v[14:15])], *ins)
  assert list(u64s(st, 4)[:n]) == list(np.array([r[2] for r in rows], np.float64).view(np.uint64))

@pytest.mark.hw_fact("V_DIV_FIXUP_F32", "V_DIV_FIXUP_F64", source="issue 10")
@ALL
@BACKENDS
def test_div_fixup_nan_quotient_is_signed_infinity(arch, backend):
  # S1, S2 ordinary numbers and S0 NaN: D = infinity with sign(S1) ^ sign(S2) (a NaN numerator or denominator stays NaN)
  I, n = ISA[arch], waves(arch)
  fix32, fix64 = (I.v_div_fixup_f32_e64, I.v_div_fixup_f64_e64) if arch == "gfx950" else (I.v_div_fixup_f32, I.v_div_fixup_f64)
  nan = float("nan")
  rows = [((nan, 3.0, 1.0), INF32), ((nan, -3.0, 1.0), INF32 | 1 << 31), ((nan, -3.0, -1.0), INF32), ((nan, 3.0, -1.0), INF32 | 1 << 31),
          ((nan, 2.0**-100, 2.0**100), INF32), ((nan, 3.0, nan), NAN32)]
  rows += [rows[0]] * (n - len(rows))
  f = [b32(*[r[0][k] for r in rows]) for k in range(3)]
  d = [w for k in range(3) for w in words64(*[r[0][k] for r in rows])]
  st = run(arch, backend, [fix32(I.v[5], I.v[10], I.v[11], I.v[12]), fix64(I.v[6:7], I.v[13:14], I.v[15:16], I.v[17:18])], *f, *d)
  assert list(u32s(st, 5)[:n]) == [r[1] for r in rows]
  assert [int(x) for x in u64s(st, 6)[:n]] == [(NAN64 if r[1] == NAN32 else INF64 | (r[1] >> 31) << 63) for r in rows]

def fdiv32(arch):
  """LLVM's f32 fdiv expansion (llc -mcpu=gfx1100 of `fdiv float`): v10 / v11 -> v5."""
  I = ISA[arch]
  ds, fm, fx = (I.v_div_scale_f32, fmas(arch)[0], I.v_div_fixup_f32_e64 if arch == "gfx950" else I.v_div_fixup_f32)
  fma, sc = (I.v_fma_f32_e64 if arch == "gfx950" else I.v_fma_f32), sdst(arch)
  return [ds(I.v[6], sc, I.v[11], I.v[11], I.v[10]), I.v_rcp_f32_e32(I.v[7], I.v[6]), fma(I.v[8], I.v[6], I.v[7], 1.0, neg=1),
          fma(I.v[7], I.v[8], I.v[7], I.v[7]), ds(I.v[8], vcc_reg(arch), I.v[10], I.v[11], I.v[10]), I.v_mul_f32_e32(I.v[9], I.v[8], I.v[7]),
          fma(I.v[12], I.v[6], I.v[9], I.v[8], neg=1), fma(I.v[9], I.v[12], I.v[7], I.v[9]), fma(I.v[6], I.v[6], I.v[9], I.v[8], neg=1),
          fm(I.v[6], I.v[6], I.v[7], I.v[9]), fx(I.v[5], I.v[6], I.v[11], I.v[10])]

# numerator, denominator: ordinary, tiny numerator (exp <= 23), quotient denormal, quotient near the top, denormal
# denominator, zeros, infinities
FDIV_CASES = [(1.0, 3.0), (-7.0, 0.1), (2.0**-110, 3.0), (2.0**-110, 2.0**-120), (1e-33, 1e-30), (2.0**-100, 2.0**40), (1.0, 2.0**127),
              (1e-30, 1e10), (2.0**100, 2.0**-10), (2.0**120, 2.0**-10), (3e38, 0.5), (2.0**-50, 2.0**-140), (1.0, 1e-40), (0.0, 5.0),
              (5.0, 0.0), (0.0, 0.0), (np.inf, 2.0), (2.0, np.inf), (np.inf, np.inf), (1e-45, 3.0), (3.4e38, 3.4e38)]

@ALL
@BACKENDS
def test_llvm_f32_division_expansion_is_correctly_rounded(arch, backend):
  # the div_scale / rcp / fma / div_fmas / div_fixup sequence LLVM emits for `fdiv float` gives the IEEE quotient (numpy),
  # denormals kept, which only holds if V_DIV_SCALE and V_DIV_FMAS agree on every scaling case
  n = waves(arch)
  a, b = (np.resize(np.array([c[k] for c in FDIV_CASES], np.float32), n) for k in range(2))
  st = run(arch, backend, fdiv32(arch), a.view(np.uint32), b.view(np.uint32))
  with np.errstate(all="ignore"): want = a / b
  got = u32s(st, 5)[:n].view(np.float32)
  np.testing.assert_array_equal(got, want, err_msg=str([(x, y) for x, y, g, w in zip(a, b, got, want) if not (g == w or (g != g and w != w))]))

def cmp_ops(arch):
  I = ISA[arch]
  return [(I.v_cmp_lg_f32_e64, 10, 11), (I.v_cmp_nlg_f32_e64, 10, 11), (I.v_cmp_lg_f16_e64, 12, 13), (I.v_cmp_nlg_f16_e64, 12, 13),
          (I.v_cmp_lg_f64_e64, 14, 16), (I.v_cmp_nlg_f64_e64, 14, 16)]

@pytest.mark.hw_fact("V_CMP_LG_F16", "V_CMP_NLG_F16", "V_CMP_LG_F32", "V_CMP_NLG_F32", "V_CMP_LG_F64", "V_CMP_NLG_F64",
                     "V_CMPX_LG_F32", "V_CMPX_NLG_F64", source="issue 10")
@ALL
@BACKENDS
def test_cmp_lg_is_ordered_not_equal(arch, backend):
  # `<>` is ordered not-equal: LG is false when either input is NaN, NLG (its negation) true
  I, n = ISA[arch], waves(arch)
  nan = float("nan")
  pairs = [(1.0, 2.0), (2.0, 2.0), (nan, 2.0), (2.0, nan), (nan, nan), (-0.0, 0.0), (np.inf, -np.inf), (np.inf, np.inf)]
  lg = [1, 0, 0, 0, 0, 0, 1, 0]
  pairs, lg = pairs + [pairs[0]] * (n - len(pairs)), lg + [1] * (n - len(lg))
  a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
  h = lambda x: x.astype(np.float16).view(np.uint16).astype(np.uint32)
  ops = [op(I.s[20 + 2 * k:21 + 2 * k] if n == 64 else I.s[20 + 2 * k], I.v[x:x + 1] if x >= 14 else I.v[x], I.v[y:y + 1] if y >= 14 else I.v[y]) for k, (op, x, y) in enumerate(cmp_ops(arch))]
  ops += [I.v_cmpx_lg_f32_e32(I.v[10], I.v[11]), I.s_mov_b64(I.s[40:41], I.EXEC), I.s_mov_b64(I.EXEC, -1) if n == 64 else I.s_mov_b32(I.EXEC_LO, -1),
          I.v_cmpx_nlg_f64_e32(I.v[14:15], I.v[16:17]), I.s_mov_b64(I.s[42:43], I.EXEC)]
  st = run(arch, backend, ops, a.astype(np.float32).view(np.uint32), b.astype(np.float32).view(np.uint32), h(a), h(b), *words64(*a), *words64(*b))
  want_lg, want_nlg = sum(v << i for i, v in enumerate(lg)), sum((1 - v) << i for i, v in enumerate(lg))
  for k in range(6): assert sgpr_mask(st, 20 + 2 * k, n) == (want_lg if k % 2 == 0 else want_nlg), cmp_ops(arch)[k][0]
  assert sgpr_mask(st, 40, n) == want_lg and sgpr_mask(st, 42, n) == want_nlg

@pytest.mark.hw_fact("S_CMP_LG_F32", "S_CMP_NLG_F32", "S_CMP_LG_F16", "S_CMP_NLG_F16", source="issue 10")
@BACKENDS
def test_s_cmp_lg_is_ordered_not_equal(backend):
  # the SALU float compares of RDNA4: S_CMP_LG is false with a NaN input, S_CMP_NLG true
  I, nan32, nan16 = R4, 0x7fc00000, 0x7e00
  ops = []
  for k, (op, a, b) in enumerate([(I.s_cmp_lg_f32, nan32, 0x3f800000), (I.s_cmp_nlg_f32, nan32, 0x3f800000), (I.s_cmp_lg_f32, 0x3f800000, 0x40000000),
                                  (I.s_cmp_nlg_f32, 0x3f800000, 0x3f800000), (I.s_cmp_lg_f16, 0x3c00, nan16), (I.s_cmp_nlg_f16, 0x3c00, nan16)]):
    ops += [I.s_mov_b32(I.s[30], a), I.s_mov_b32(I.s[31], b), op(I.s[30], I.s[31]), I.s_cselect_b32(I.s[40 + k], 1, 0)]
  st = run("gfx1201", backend, ops)
  assert st.sgprs[40:46] == (0, 1, 1, 1, 0, 1)

@pytest.mark.hw_fact("V_MUL_F32", "V_ADD_F64", "V_ADD_F16", source="issue 10")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx950"])
@BACKENDS
def test_omod_is_ignored_in_ieee_mode(arch, backend):
  # OMOD (x2, x4, x0.5) applies only when MODE.IEEE = 0; with RSRC1.IEEE_MODE set the result is unscaled. Clamp still applies.
  I, n = ISA[arch], waves(arch)
  a = np.resize(np.array([1.5, -3.0, 0.75, 2.0], np.float32), n)
  mul = I.v_mul_f32_e64
  ops = [mul(I.v[5], I.v[10], 2.0, omod=1), mul(I.v[6], I.v[10], 2.0, omod=3), mul(I.v[7], I.v[10], 2.0, omod=2, clmp=1),
         I.v_cvt_f64_f32_e32(I.v[20:21], I.v[10]), I.v_add_f64(I.v[8:9], I.v[20:21], I.v[20:21], omod=1),
         I.v_cvt_f16_f32_e32(I.v[22], I.v[10]), I.v_add_f16_e64(I.v[24], I.v[22], I.v[22], omod=2)]
  f16 = lambda x: np.asarray(x, np.float32).astype(np.float16).view(np.uint16)
  for rsrc1, k in ((F32_KEEP | F64_KEEP, (2.0, 0.5, 4.0)), (F32_KEEP | F64_KEEP | IEEE, (1.0, 1.0, 1.0))):
    st = run(arch, backend, ops, a.view(np.uint32), rsrc1=rsrc1)
    assert list(u32s(st, 5)[:n].view(np.float32)) == list(a * 2 * k[0])
    assert list(u32s(st, 6)[:n].view(np.float32)) == list(a * 2 * k[1])
    assert list(u32s(st, 7)[:n].view(np.float32)) == list(np.clip(a * 2 * k[2], 0, 1))
    assert list(u64s(st, 8)[:n].view(np.float64)) == list(a.astype(np.float64) * 2 * k[0])
    assert list(u32s(st, 24)[:n] & 0xffff) == list(f16(a * 2 * k[2]))

@pytest.mark.hw_fact("V_SIN_F32", "V_COS_F32", source="issue 10")
@ALL
@BACKENDS
def test_sin_cos_take_turns_reduced_exactly(arch, backend):
  # the input is in turns and reduced exactly (its fractional part first): sin(132000.0) = 0 and cos(132000.0) = 1 (the
  # published sin(x * 2PI) rounds x * 2PI to f32 first and gives 0.039); both encodings
  I, n = ISA[arch], waves(arch)
  x = np.full(n, 132000.0, np.float32)
  st = run(arch, backend, [I.v_sin_f32_e32(I.v[5], I.v[10]), I.v_cos_f32_e32(I.v[6], I.v[10]),
                           I.v_sin_f32_e64(I.v[7], I.v[10]), I.v_cos_f32_e64(I.v[8], I.v[10])], x.view(np.uint32))
  for r, want in ((5, 0.0), (6, 1.0), (7, 0.0), (8, 1.0)): assert list(u32s(st, r)[:n].view(np.float32)) == [want] * n, r

@ALL
@BACKENDS
def test_sin_cos_of_large_and_negative_turns(arch, backend):
  # only the fractional part counts: x and x + k (k an integer, exact in f32) give the same result, sign included
  I, n = ISA[arch], waves(arch)
  frac = np.resize(np.array([0.125, 0.25, 0.375, -0.125, 0.3125, -0.6875, 0.0, 0.5], np.float32), n)
  k = np.resize(np.array([0, 1, 4096, -8192, 65536, -3, 2**20, 7], np.float32), n)
  x = (frac + k).astype(np.float32)
  assert np.array_equal(x - k, frac)   # exact
  st = run(arch, backend, [I.v_sin_f32_e32(I.v[5], I.v[10]), I.v_cos_f32_e32(I.v[6], I.v[10]),
                           I.v_sin_f32_e32(I.v[7], I.v[11]), I.v_cos_f32_e32(I.v[8], I.v[11])], x.view(np.uint32), frac.view(np.uint32))
  assert np.array_equal(u32s(st, 5), u32s(st, 7)) and np.array_equal(u32s(st, 6), u32s(st, 8))
  t = 2 * np.pi * frac.astype(np.float64)
  np.testing.assert_allclose(u32s(st, 7)[:n].view(np.float32), np.sin(t), atol=2e-7)
  np.testing.assert_allclose(u32s(st, 8)[:n].view(np.float32), np.cos(t), atol=2e-7)

def fdiv64(arch):
  """LLVM's f64 fdiv expansion (llc -mcpu=gfx1100 of `fdiv double`): v10:11 / v12:13 -> v4:5."""
  I = ISA[arch]
  ds, fm, fx = (I.v_div_scale_f64, fmas(arch)[1], I.v_div_fixup_f64_e64 if arch == "gfx950" else I.v_div_fixup_f64)
  fma, rcp = (I.v_fma_f64_e64 if arch == "gfx950" else I.v_fma_f64), I.v_rcp_f64_e32
  n, d = I.v[10:11], I.v[12:13]
  return [ds(I.v[4:5], sdst(arch), d, d, n), ds(I.v[20:21], vcc_reg(arch), n, d, n), rcp(I.v[6:7], I.v[4:5]),
          fma(I.v[8:9], I.v[4:5], I.v[6:7], 1.0, neg=1), fma(I.v[6:7], I.v[6:7], I.v[8:9], I.v[6:7]),
          fma(I.v[8:9], I.v[4:5], I.v[6:7], 1.0, neg=1), fma(I.v[6:7], I.v[6:7], I.v[8:9], I.v[6:7]),
          (I.v_mul_f64_e64 if arch == "gfx1201" else I.v_mul_f64)(I.v[8:9], I.v[20:21], I.v[6:7]), fma(I.v[4:5], I.v[4:5], I.v[8:9], I.v[20:21], neg=1),
          fm(I.v[4:5], I.v[4:5], I.v[6:7], I.v[8:9]), fx(I.v[4:5], I.v[4:5], d, n)]

FDIV64_CASES = [(1.0, 3.0), (-7.0, 0.1), (2.0**-1000, 3.0), (2.0**-1000, 2.0**-1010), (1e-300, 1e-290), (2.0**-1000, 2.0**40),
                (1.0, 2.0**1023), (0.5, 1.5 * 2.0**1022), (1e-300, 1e20), (2.0**1000, 2.0**-10), (2.0**1020, 2.0**-10), (1e308, 0.5),
                (2.0**-50, 2.0**-1070), (1.0, 5e-324), (0.0, 5.0), (5.0, 0.0), (0.0, 0.0), (np.inf, 2.0), (2.0, np.inf), (5e-324, 3.0),
                (1.7e308, 1.7e308), (2.0**-1020, 2.0**30)]

@ALL
@BACKENDS
def test_llvm_f64_division_expansion_is_correctly_rounded(arch, backend):
  n = waves(arch)
  a, b = (np.resize(np.array([c[k] for c in FDIV64_CASES], np.float64), n) for k in range(2))
  st = run(arch, backend, fdiv64(arch), *words64(*a), *words64(*b))
  with np.errstate(all="ignore"): want = a / b
  got = u64s(st, 4)[:n].view(np.float64)
  np.testing.assert_array_equal(got, want, err_msg=str([(x, y) for x, y, g, w in zip(a, b, got, want) if not (g == w or (g != g and w != w))]))
