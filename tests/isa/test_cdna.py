"""CDNA (gfx950, wave64) on both backends: one test per encoding family, assembled with the wheel's cdna DSL. Expected values
come from numpy or the ISA definition (gfx9 operand encodings, SMEM/FLAT addressing, SDWA selects, gfx9 DPP controls, the
gfx90a+ unified VGPR file with AccVGPRs at RSRC3.ACCUM_OFFSET)."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.cdna import ins as C
from tinygrad.runtime.autogen.amd.cdna.ins import v, s
from mockgpu.emu.api import run_code
from isa_harness import Bufs

OFF = C.EXEC_HI   # gfx9 FLAT/GLOBAL/SCRATCH saddr "off" is 0x7f (the DSL's default NULL encodes 0x7c, which is M0 on gfx9)
M0 = C.src[124]   # gfx9 M0 is scalar encoding 124 (the DSL's M0 constant is RDNA's 125)
BACKENDS = pytest.mark.parametrize("backend", ["c", "python"])
N = 64

def run9(insts, bufs=None, *, backend="c", block=(N, 1, 1), sgprs=None, arch="gfx950", **kw):
  """Run `insts` + s_endpgm as one gfx950 (or `arch`) wave64 dispatch with the buffers' addresses in s0.. (pairs); registers in .state."""
  bufs = bufs or Bufs()
  us = tuple(sgprs) if sgprs is not None else bufs.sgprs()
  kw.setdefault("rsrc2", len(us) << 1)
  prog = b"".join(i.to_bytes() for i in insts) + C.s_endpgm().to_bytes()
  return run_code(prog, bufs.mem, arch=arch, wave64=True, block=block, user_sgprs=us, capture=True, backend=backend, **kw)

def lanes(ops, *ins, backend="c", **kw):
  """v2.. = ins[i][lane] (u32 words), run `ops`, return the captured wave state (v1 = lane * 4)."""
  bf = Bufs(*[np.ascontiguousarray(np.asarray(x).view(np.uint32)) for x in ins])
  pre = [C.v_lshlrev_b32_e32(v[1], 2, v[0])] + [C.global_load_dword(vdst=v[2 + i], addr=v[1], saddr=s[2 * i:2 * i + 1]) for i in range(len(ins))]
  return run9(pre + [C.s_waitcnt(simm16=0)] + list(ops), bf, backend=backend, **kw).state

def vreg(st, r): return np.array(st.vgprs[r], np.uint32)

@BACKENDS
def test_salu_m0_and_branch(backend):
  st = run9([C.s_mov_b32(s[10], 0x12345678), C.s_add_u32(s[11], s[10], 1), C.s_lshl_b64(s[12:13], s[10:11], 4),
             C.s_movk_i32(s[14], -5), C.s_cmp_gt_i32(s[14], 0), C.s_cselect_b32(s[15], 1, 2), C.s_mov_b32(M0, 77),
             C.s_mov_b32(s[16], M0), C.s_branch(simm16=1), C.s_mov_b32(s[17], 1), C.s_bcnt1_i32_b64(s[18], C.EXEC),
             C.s_movk_i32(s[19], 1000), C.s_addk_i32(s[19], -3), C.s_cmpk_eq_i32(s[19], 997), C.s_cselect_b32(s[25], 5, 6)], backend=backend).state
  assert st.m0 == 77 and st.sgprs[16] == 77 and st.sgprs[124] == 77
  assert st.sgprs[11] == 0x12345679 and st.sgprs[12] | st.sgprs[13] << 32 == (0x12345679_12345678 << 4) & (2**64 - 1)
  assert (st.sgprs[14], st.sgprs[15], st.sgprs[17], st.sgprs[18], st.sgprs[19], st.sgprs[25]) == (2**32 - 5, 2, 0, 64, 997, 5)

@BACKENDS
def test_smem_gfx9_offsets(backend):
  # IMM=1: immediate byte offset; IMM=0: OFFSET[6:0] names the SGPR holding it; SOFFSET_EN=1 adds SGPR[SOFFSET]
  words = np.arange(16, dtype=np.uint32) * 11 + 3
  st = run9([C.s_mov_b32(s[20], 12), C.s_load_dword(sdata=s[10], sbase=s[0:1], offset=8, imm=1),
             C.s_load_dword(sdata=s[11], sbase=s[0:1], offset=20, imm=0),
             C.s_load_dword(sdata=s[12], sbase=s[0:1], offset=4, imm=1, soffset_en=1, soffset=s[20]),
             C.s_load_dwordx2(sdata=s[14:15], sbase=s[0:1], offset=24, imm=1), C.s_waitcnt(simm16=0)], Bufs(words), backend=backend).state
  assert st.sgprs[10:16] == (words[2], words[3], words[4], 0, words[6], words[7])

@BACKENDS
def test_valu_vop1_vop2_vop3(backend):
  rng = np.random.default_rng(1)
  a, b = rng.uniform(-4, 4, N).astype(np.float32), rng.uniform(-4, 4, N).astype(np.float32)
  st = lanes([C.v_add_f32_e32(v[5], v[2], v[3]), C.v_mul_f32_e64(v[6], v[2], v[3], neg=1, abs=2),
              C.v_mov_b32_e32(v[7], 0xdead0000), C.v_cvt_f16_f32_e32(v[7], v[2]),     # gfx9: a 16-bit result zeroes bits 31:16
              C.v_mov_b32_e32(v[8], 0xbeef), C.v_fma_f16(v[8], v[7], v[7], v[7], opsel=8),   # op_sel[3]: the high half, low kept
              C.v_lshlrev_b64(v[10:11], 3, v[2:3]), C.v_mad_u32_u24_e64(v[12], v[0], v[0], 7),
              C.v_floor_f32_e64(v[13], v[2], neg=1)], a, b, backend=backend)   # the VOP3 form of a VOP1 op runs the VOP1 entry
  np.testing.assert_array_equal(vreg(st, 5).view(np.float32), a + b)
  np.testing.assert_array_equal(vreg(st, 6).view(np.float32), -a * np.abs(b))
  h = a.astype(np.float16)
  np.testing.assert_array_equal(vreg(st, 7), h.view(np.uint16).astype(np.uint32))
  fma = (h.astype(np.float64) * h.astype(np.float64) + h.astype(np.float64)).astype(np.float16)   # exact in f64, one rounding
  np.testing.assert_array_equal(vreg(st, 8), fma.view(np.uint16).astype(np.uint32) << 16 | 0xbeef)
  pair = (vreg(st, 2).astype(np.uint64) | vreg(st, 3).astype(np.uint64) << 32) << 3
  np.testing.assert_array_equal(vreg(st, 10).astype(np.uint64) | vreg(st, 11).astype(np.uint64) << 32, pair)
  np.testing.assert_array_equal(vreg(st, 12), np.arange(N, dtype=np.uint32) ** 2 + 7)
  np.testing.assert_array_equal(vreg(st, 13).view(np.float32), np.floor(-a))

@BACKENDS
def test_vop3p_packed(backend):
  rng = np.random.default_rng(2)
  a, b = rng.uniform(-2, 2, (N, 2)).astype(np.float16), rng.uniform(-2, 2, (N, 2)).astype(np.float16)
  st = lanes([C.v_pk_add_f16(v[5], v[2], v[3]), C.v_pk_mul_f16(v[6], v[2], v[3], opsel=1, opsel_hi=0, neg_hi=2)], a, b, backend=backend)
  np.testing.assert_array_equal(vreg(st, 5).view(np.float16).reshape(N, 2), a + b)
  # opsel=1: src0 low half <- a.hi; opsel_hi=0: src0/src1 high halves <- their low halves; neg_hi bit 1: negate src1's high half
  lo, hi = a[:, 1] * b[:, 0], a[:, 0] * -b[:, 0]
  np.testing.assert_array_equal(vreg(st, 6).view(np.float16).reshape(N, 2), np.stack([lo, hi], 1))

@BACKENDS
def test_vopc_64bit_masks_and_cmpx(backend):
  rng = np.random.default_rng(3)
  a, b = rng.integers(0, 100, N).astype(np.uint32), rng.integers(0, 100, N).astype(np.uint32)
  st = lanes([C.v_cmp_lt_u32_e64(s[20:21], v[2], v[3]), C.v_cmpx_gt_u32_e32(v[2], v[3]), C.s_mov_b64(s[22:23], C.EXEC)], a, b, backend=backend)
  mask = lambda m: sum(1 << i for i in range(N) if m[i])
  assert st.sgprs[20] | st.sgprs[21] << 32 == mask(a < b)
  assert st.sgprs[22] | st.sgprs[23] << 32 == mask(a > b) == st.exec == st.vcc   # gfx9 V_CMPX writes EXEC and VCC

@BACKENDS
def test_readlane_writes_the_sgpr_its_vdst_names(backend):
  # V_READFIRSTLANE_B32 / V_READLANE_B32 put their result in SGPR[vdst] (the wheel's DSL only spells the field as a VGPR:
  # v[2] here encodes LLVM's `v_readfirstlane_b32 s2, v1` = 0x7e040501); VGPRs of the same number keep their value
  assert C.v_readfirstlane_b32_e32(v[10], v[2]).to_bytes() == (0x7e140502).to_bytes(4, "little")
  a = np.arange(N, dtype=np.uint32) * 7 + 3
  st = lanes([C.v_mov_b32_e32(v[10], 0x5555), C.s_mov_b32(s[20], 41), C.s_mov_b32(C.EXEC_LO, 0), C.s_mov_b32(C.EXEC_HI, 0xfffffff0),
              C.v_readfirstlane_b32_e32(v[10], v[2]), C.v_readfirstlane_b32_e64(v[11], v[2]), C.v_readlane_b32(v[12], v[2], s[20]),
              C.v_readlane_b32(v[13], v[2], 5), C.s_mov_b64(C.EXEC, -1)], a, backend=backend)
  assert st.sgprs[10:14] == (a[36], a[36], a[41], a[5])   # first active lane 36; READLANE ignores EXEC
  np.testing.assert_array_equal(vreg(st, 10), np.full(N, 0x5555))

@BACKENDS
def test_vopc_lg_nlg_nan(backend):
  # `<>` of the pseudocode is ordered on floats: V_CMP_LG false and V_CMP_NLG true when an input is NaN (LLVM tests |x| !lg inf
  # with v_cmp_nlg for "x is inf or NaN", e.g. before tinygrad's fp8 conversion clamp)
  a = np.array([np.nan, -np.nan, np.inf, -np.inf, 1.0, -500.0, 0.0, 2.0] * 8, np.float32)
  b = np.array([1.0, np.nan, np.inf, np.inf, 1.0, 3.0, -0.0, np.nan] * 8, np.float32)
  st = lanes([C.v_cmp_lg_f32_e64(s[20:21], v[2], v[3]), C.v_cmp_nlg_f32_e64(s[22:23], v[2], v[3], abs=1)], a, b, backend=backend)
  mask = lambda m: sum(1 << i for i in range(N) if m[i])
  assert st.sgprs[20] | st.sgprs[21] << 32 == mask((a < b) | (a > b))
  assert st.sgprs[22] | st.sgprs[23] << 32 == mask(~((np.abs(a) < b) | (np.abs(a) > b)))
  d = np.array([1.0, np.nan, 2.0, -np.inf] * 16)
  w = d.view(np.uint32).reshape(N, 2)
  st = lanes([C.v_cmp_nlg_f64_e32(1.0, v[2:3]), C.v_cmp_lg_f64_e64(s[20:21], v[2:3], 2.0)], w[:, 0].copy(), w[:, 1].copy(), backend=backend)
  assert st.vcc == mask(~((1 < d) | (1 > d))) and st.sgprs[20] | st.sgprs[21] << 32 == mask((d < 2) | (d > 2))

@BACKENDS
def test_sdwa_selects(backend):
  rng = np.random.default_rng(4)
  a, b = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32), rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
  h = rng.uniform(-3, 3, N).astype(np.float16)
  c = b & 0xffff | h.view(np.uint16).astype(np.uint32) << 16
  st = lanes([C.v_mov_b32_e32(v[5], 0x11223344),
              # byte 1 of a, sign-extended, + word 1 of b; result into word 1, word 0 of v5 preserved
              C.v_add_u32_e32(v[5], C.SDWA, v[3], vsrc0=v[2], src0_sel=1, src0_sext=1, src1_sel=5, dst_sel=5, dst_unused=2),
              C.v_cvt_f32_f16_e32(v[6], C.SDWA, vsrc0=v[4], src0_sel=5, src0_neg=1, dst_sel=6),   # f32(-word1 of c)
              C.v_lshrrev_b32_e32(v[7], C.SDWA, v[2], vsrc0=v[136], s0=1, dst_sel=0, dst_unused=1, src1_sel=6),  # s0: vsrc0 136 = constant 8
              C.v_cmp_lt_u32_e32(C.SDWA, v[3], vsrc0=v[2], src0_sel=0, src1_sel=0, sdst=s[20], sd=1)], a, b, c, backend=backend)
  sb1 = ((a >> 8) & 0xff).astype(np.int8).astype(np.int32).astype(np.uint32)
  np.testing.assert_array_equal(vreg(st, 5), ((sb1 + (b >> 16)) & 0xffff) << 16 | 0x3344)
  np.testing.assert_array_equal(vreg(st, 6).view(np.float32), -h.astype(np.float32))
  np.testing.assert_array_equal(vreg(st, 7), ((a >> 8) & 0xff).astype(np.int8).astype(np.int32).astype(np.uint32))
  assert st.sgprs[20] | st.sgprs[21] << 32 == sum(1 << i for i in range(N) if (a[i] & 0xff) < (b[i] & 0xff))

@BACKENDS
@pytest.mark.parametrize("ctl,row_mask,src", [
  (0x138, 15, lambda L: L - 1 if L > 0 else None), (0x130, 15, lambda L: L + 1 if L < 63 else None),   # wave_shr:1, wave_shl:1
  (0x134, 15, lambda L: (L + 1) % 64), (0x13c, 15, lambda L: (L - 1) % 64),                            # wave_rol:1, wave_ror:1
  (0x142, 0xa, lambda L: (L & ~15) - 1), (0x143, 0xc, lambda L: 31),                                 # row_bcast:15, row_bcast:31
  (0x111, 15, lambda L: L - 1 if L % 16 else None), (0x1b, 15, lambda L: (L & ~3) | (3 - (L & 3))),  # row_shr:1, quad_perm [3,2,1,0]
  (0x153, 15, lambda L: (L & ~15) | 3)])                                                            # row_newbcast:3
def test_dpp_gfx9(backend, ctl, row_mask, src):
  a = np.arange(N, dtype=np.uint32) * 7 + 100
  st = lanes([C.v_mov_b32_e32(v[5], 5), C.v_add_u32_e32(v[5], C.DPP, v[2], vsrc0=v[2], dpp=ctl, row_mask=row_mask, bank_mask=15)], a, backend=backend)
  exp = [5 if not row_mask >> (L // 16) & 1 or src(L) is None else a[src(L)] + a[L] for L in range(N)]
  np.testing.assert_array_equal(vreg(st, 5), np.array(exp, np.uint32))

@BACKENDS
def test_ds_and_acc_data(backend):
  a = np.arange(N, dtype=np.uint32) * 3 + 1
  st = lanes([C.ds_write_b32(addr=v[1], data0=v[2], offset0=16), C.ds_write2_b32(addr=v[1], data0=v[2], data1=v[2], offset0=64, offset1=128),
              C.s_waitcnt(simm16=0), C.ds_read_b32(vdst=v[5], addr=v[1], offset0=16), C.ds_read_b32(vdst=v[0], addr=v[1], offset0=16, acc=1),
              C.ds_read2_b32(vdst=v[6:7], addr=v[1], offset0=64, offset1=128), C.s_waitcnt(simm16=0),
              C.v_accvgpr_read(v[8], v[0])], a, backend=backend, lds_bytes=2048)
  # lane L wrote a[L] at byte 4L + 16; ds_write2 offsets count dwords: 4L + 256 and 4L + 512, overwriting lanes 60..63's first word
  L = np.arange(N)
  first = np.where(L >= 60, a[L - 60], a)
  np.testing.assert_array_equal(vreg(st, 5), first)
  np.testing.assert_array_equal(vreg(st, 6), a)
  np.testing.assert_array_equal(vreg(st, 7), a)
  np.testing.assert_array_equal(vreg(st, 8), first)   # through AccVGPR a0
  np.testing.assert_array_equal(vreg(st, 4), first)   # RSRC3.ACCUM_OFFSET = 0: AccVGPR a0 is unified slot 4

@BACKENDS
def test_gfx942_uses_the_top_of_its_64k_lds(backend):
  # MI300X: 64 KiB of LDS per workgroup; lane L stores a[L] at 0xff00 + 4L (the last 256 bytes) and reads it back
  a = np.arange(N, dtype=np.uint32) * 7 + 5
  st = lanes([C.s_mov_b32(s[10], 0xff00), C.v_add_u32_e32(v[3], s[10], v[1]), C.ds_write_b32(addr=v[3], data0=v[2]), C.s_waitcnt(simm16=0),
              C.ds_read_b32(vdst=v[5], addr=v[3]), C.s_waitcnt(simm16=0)], a, backend=backend, arch="gfx942", lds_bytes=65536)
  np.testing.assert_array_equal(vreg(st, 5), a)
  np.testing.assert_array_equal(vreg(st, 3), 0xff00 + 4 * np.arange(N))
  if backend == "c":   # gfx942 and gfx950 generate the same C: one library serves both
    from mockgpu.emu.arch import get_arch
    from mockgpu.emu.build import build
    assert build(get_arch("gfx942")).path == build(get_arch("gfx950")).path

@BACKENDS
@pytest.mark.parametrize("op", ["cvt", "mfma"])
def test_gfx942_stops_at_fp8_ops(backend, op):
  # MI300X's FP8/BF8 are the FNUZ formats (E4M3 bias 8, E5M2 bias 16, NaN 0x80); the emulator models the OCP ones (gfx950), so
  # gfx942 stops with the reason instead of computing OCP values; the same code runs on gfx950
  from mockgpu.emu.errors import InvalidInstruction
  v = C.v
  ins = ([C.v_mov_b32_e32(v[2], 0x38), C.v_cvt_f32_fp8_e32(v[5], v[2])] if op == "cvt" else
         [C.v_mfma_f32_16x16x32_fp8_fp8(v[64:67], v[8:9], v[16:17], v[24:27])])
  assert run9(ins, backend=backend).instructions == len(ins) + 1
  with pytest.raises(InvalidInstruction, match="unsupported: FP8/BF8 on this arch are the FNUZ formats") as e:
    run9(ins, backend=backend, arch="gfx942")
  assert e.value.report.pc == (4 if op == "cvt" else 0)   # the FP8 op itself (after the 4-byte v_mov)

@BACKENDS
def test_flat_global_scratch(backend):
  a = np.arange(N + 2, dtype=np.uint32) * 9 + 2
  out, cnt = np.zeros(N, np.uint32), np.array([10], np.uint32)
  bf = Bufs(a, out, cnt)
  st = run9([C.v_lshlrev_b32_e32(v[1], 2, v[0]), C.v_mov_b32_e32(v[3], s[1]), C.v_add_u32_e32(v[10], 4, v[1]),
             C.v_add_co_u32_e32(v[2], s[0], v[10]), C.v_addc_co_u32_e32(v[3], 0, v[3]),   # v[2:3] = &a[lane + 1]
             C.flat_load_dword(vdst=v[4], addr=v[2], offset=4, saddr=OFF),   # FLAT offset: 12 bits, unsigned
             C.global_load_dword(vdst=v[5], addr=v[2], offset=-4, saddr=OFF), C.s_waitcnt(simm16=0),   # saddr off: 64-bit vaddr v[2:3], signed offset
             C.global_store_dword(addr=v[1], data=v[4], saddr=s[2:3]), C.v_mov_b32_e32(v[6], 1), C.v_mov_b32_e32(v[7], 0),
             C.global_atomic_add(vdst=v[8], addr=v[7], data=v[6], saddr=s[4:5], sc0=1),   # sc0 (GLC): return the old value
             C.scratch_store_dword(addr=v[0], data=v[4], saddr=OFF, offset=8), C.s_mov_b32(s[10], 4),
             C.scratch_load_dword(vdst=v[9], addr=v[0], saddr=s[10], offset=4), C.s_waitcnt(simm16=0)], bf, backend=backend,
            scratch_bytes_per_lane=64, sgprs=bf.sgprs()).state
  np.testing.assert_array_equal(vreg(st, 4), a[2:])
  np.testing.assert_array_equal(vreg(st, 5), a[:-2])
  np.testing.assert_array_equal(out, a[2:])
  assert cnt[0] == 10 + N and sorted(vreg(st, 8)) == list(range(10, 10 + N))
  np.testing.assert_array_equal(vreg(st, 9), vreg(st, 4))   # scratch: saddr 4 + offset 4 == offset 8, per lane

@BACKENDS
def test_accvgpr_unified_file(backend):
  # RSRC3.ACCUM_OFFSET = 1: AccVGPRs start at unified slot (1 + 1) * 4 = 8, so a0 aliases v8 and a3 aliases v11
  a = np.arange(N, dtype=np.uint32) + 1000
  st = lanes([C.v_mov_b32_e32(v[8], 7), C.v_accvgpr_read(v[5], v[0]), C.v_accvgpr_write(v[3], s[0]), C.v_accvgpr_write(v[2], v[2]),
              C.v_accvgpr_mov_b32_e32(v[1], v[2]), C.global_load_dword(vdst=v[4], addr=v[1], saddr=s[0:1], acc=1), C.s_waitcnt(simm16=0),
              C.v_accvgpr_read(v[6], v[4])], a, backend=backend, rsrc3=1)
  np.testing.assert_array_equal(vreg(st, 5), np.full(N, 7))
  np.testing.assert_array_equal(vreg(st, 11), np.full(N, st.sgprs[0]))
  np.testing.assert_array_equal(vreg(st, 10), a)   # a2 = v[2]
  np.testing.assert_array_equal(vreg(st, 9), a)    # a1 = a2
  np.testing.assert_array_equal(vreg(st, 12), a)   # a4 (load with acc=1)
  np.testing.assert_array_equal(vreg(st, 6), a)

@BACKENDS
def test_wave_setup_gfx9(backend):
  # user SGPRs, then TGID X/Y (RSRC2 bits 7, 8) and the private segment wave offset (bit 0); packed thread ids in v0;
  # a 96-thread workgroup is two waves, the second partial (EXEC = 32 lanes)
  out = np.zeros((6, 96), np.uint32)
  bf = Bufs(out)
  prog = [C.s_mul_i32(s[6], s[3], 2), C.s_add_u32(s[6], s[6], s[2]), C.s_mul_i32(s[6], s[6], 96 * 4),   # (y * 2 + x) * 96 * 4
          C.v_and_b32_e32(v[2], 0x3ff, v[0]), C.v_bfe_u32_e64(v[3], v[0], 10, 10), C.v_mad_u32_u24_e64(v[2], v[3], 32, v[2]),  # x + 32 y
          C.v_lshlrev_b32_e32(v[1], 2, v[2]), C.v_add_u32_e32(v[1], s[6], v[1]),
          C.v_lshl_or_b32(v[4], s[3], 16, v[2]), C.s_bcnt1_i32_b64(s[7], C.EXEC), C.v_add_u32_e32(v[4], s[7], v[4]),
          C.global_store_dword(addr=v[1], data=v[4], saddr=s[0:1])]
  st = run9(prog, bf, backend=backend, grid=(2, 3, 1), block=(32, 3, 1), rsrc2=(2 << 1) | 1 << 7 | 1 << 8 | 1, sgprs=bf.sgprs()).state
  t = np.arange(96)
  assert st.sgprs[2:5] == (0, 0, 0)
  for y in range(3):
    for x in range(2): np.testing.assert_array_equal(out[y * 2 + x], (y << 16) + t + np.where(t < 64, 64, 32))

@BACKENDS
def test_packed_f32_and_bitop3(backend):
  rng = np.random.default_rng(5)
  a, b, c = (rng.integers(-100, 100, N).astype(np.float32) for _ in range(3))   # small integers: every fma below is exact
  st = lanes([C.v_pk_fma_f32(v[6:7], v[2:3], v[3:4], v[2:3], opsel=1, opsel_hi=2, opsel_hi2=1, neg=4),
              C.v_pk_add_f32(v[8:9], v[2:3], 2.0, opsel_hi=1, neg_hi=1),   # an inline constant sits in the low dword: op_sel_hi 0
              C.v_bitop3_b32(v[10], v[2], v[3], v[4], omod=3, abs=5, neg=0)], a, b, c, backend=backend)   # truth table 0xe8: majority
  # low result: dwords op_sel picks (src0: v3 = b, src1: v3 = b, src2: v2 = a, negated); high: op_sel_hi (v2 = a, v4 = c, v3 = b)
  np.testing.assert_array_equal(vreg(st, 6).view(np.float32), b * b - a)
  np.testing.assert_array_equal(vreg(st, 7).view(np.float32), a * c + b)
  np.testing.assert_array_equal(vreg(st, 8).view(np.float32), a + 2)
  np.testing.assert_array_equal(vreg(st, 9).view(np.float32), -b + 2)
  x, y, z = (vreg(st, r) for r in (2, 3, 4))
  np.testing.assert_array_equal(vreg(st, 10), (x & y) | (x & z) | (y & z))

# gfx950 GLOBAL_LOAD_LDS_DWORDX3/X4: lane L's 12/16 bytes go to LDS at M0 + offset + L * 12/16 (the dword form's layout with
# the lane's whole load as the unit)
@BACKENDS
@pytest.mark.parametrize("op,nb", [("global_load_lds_dwordx4", 16), ("global_load_lds_dwordx3", 12)])
def test_global_load_lds_multi_dword(backend, op, nb):
  src = (np.arange(N * 4 + 4, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32)
  perm = np.random.default_rng(3).permutation(N)   # lane L loads from byte 16 * perm[L] + offset of src
  M0B, OFS = 64, 16
  bf = Bufs(src, (perm * 16).astype(np.uint32))
  prog = [C.v_lshlrev_b32_e32(v[1], 2, v[0]), C.global_load_dword(vdst=v[2], addr=v[1], saddr=s[2:3]), C.s_waitcnt(simm16=0),
          C.s_mov_b32(M0, M0B), getattr(C, op)(addr=v[2], saddr=s[0:1], offset=OFS), C.s_waitcnt(simm16=0),
          *(C.ds_read_b32(vdst=v[10 + k], addr=v[1], offset0=(M0B + OFS + 256 * k) & 255, offset1=(M0B + OFS + 256 * k) >> 8) for k in range(nb // 4)),
          C.s_waitcnt(simm16=0)]
  st = run9(prog, bf, backend=backend, lds_bytes=2048).state
  want = np.concatenate([src[4 * p + OFS // 4:4 * p + OFS // 4 + nb // 4] for p in perm])   # the LDS dwords from M0 + offset on
  np.testing.assert_array_equal(np.concatenate([vreg(st, 10 + k) for k in range(nb // 4)]), want)

# gfx950 DS_READ_B64_TR_B4/B8/B16, DS_READ_B96_TR_B6: in each group of 16 lanes the lanes' 64 (96) bits, taken in lane order,
# are a matrix of rows of 16 elements; lane i receives column i (element j = row j)
def tr_elems(words, width, ndw):
  big = int(sum(int(x) << (32 * k) for k, x in enumerate(words)))
  return [(big >> (width * e)) & ((1 << width) - 1) for e in range(32 * ndw // width)]

@BACKENDS
@pytest.mark.parametrize("op,width,ndw,exec_lo", [("ds_read_b64_tr_b16", 16, 2, 0xffffffff), ("ds_read_b64_tr_b16", 16, 2, 0xfffffffd),
                                                  ("ds_read_b64_tr_b8", 8, 2, 0xffffffff), ("ds_read_b64_tr_b4", 4, 2, 0xffffffff),
                                                  ("ds_read_b96_tr_b6", 6, 3, 0xffffffff)])
def test_ds_read_transpose(backend, op, width, ndw, exec_lo):
  rng = np.random.default_rng(width)
  data = rng.integers(0, 2**32, (N, ndw), dtype=np.uint64).astype(np.uint32)   # LDS slot p (bytes 16p..) holds data[p]
  perm = rng.permutation(N)   # lane L reads slot perm[L]
  st = lanes([C.v_lshlrev_b32_e32(v[20], 4, v[0]), *(C.ds_write_b32(addr=v[20], data0=v[2 + k], offset0=4 * k) for k in range(ndw)),
              C.s_waitcnt(simm16=0), C.s_mov_b32(C.EXEC_LO, exec_lo),
              getattr(C, op)(vdst=v[30:29 + ndw], addr=v[2 + ndw]), C.s_waitcnt(simm16=0)],
             *(np.ascontiguousarray(data[:, k]) for k in range(ndw)), (perm * 16).astype(np.uint32), backend=backend, lds_bytes=1024)
  active = [exec_lo >> L & 1 if L < 32 else 1 for L in range(N)]
  src = [tr_elems(data[perm[L]], width, ndw) if active[L] else [0] * (32 * ndw // width) for L in range(N)]   # inactive lanes give 0
  for g in range(0, N, 16):
    flat = [e for L in range(g, g + 16) for e in src[L]]   # rows of 16 elements
    for i in range(16):
      if not active[g + i]: continue
      col = sum(flat[16 * j + i] << (width * j) for j in range(32 * ndw // width))
      assert [int(vreg(st, 30 + k)[g + i]) for k in range(ndw)] == [(col >> (32 * k)) & 0xffffffff for k in range(ndw)], (g + i)

@BACKENDS
def test_memtime_is_the_emulated_clock(backend):
  # S_MEMTIME / S_MEMREALTIME read the deterministic clock: wave-instructions the dispatch executed so far, this one included
  st = run9([C.s_nop(simm16=0), C.s_memtime(sdata=s[10:11]), C.s_memrealtime(sdata=s[12:13])], backend=backend).state
  assert st.sgprs[10:14] == (2, 0, 3, 0)

@BACKENDS
def test_cache_and_hint_ops_are_no_ops(backend):
  # no data cache, translation cache, sleeping wave, exception state or VALU/MFMA co-issue is modelled: nothing changes
  ops = [C.s_dcache_wb(), C.s_dcache_wb_vol(), C.s_dcache_inv_vol(), C.s_dcache_discard(sbase=s[0:1], soffset=s[4]),
         C.s_dcache_discard_x2(sbase=s[0:1], soffset=s[4]), C.s_atc_probe(sbase=s[0:1], sdata=s[0], offset=0),
         C.s_atc_probe_buffer(sbase=s[0:3], sdata=s[0], offset=0), C.s_wakeup(), C.v_clrexcp_e32(), C.v_clrexcp_e64(),
         C.s_set_valu_coexec_mode(simm16=1)]
  base = run9([C.s_mov_b32(s[20], 5)], backend=backend)
  st = run9(ops + [C.s_mov_b32(s[20], 5)], backend=backend)
  assert st.state.sgprs == base.state.sgprs and st.state.vgprs == base.state.vgprs and st.instructions == base.instructions + len(ops)

@BACKENDS
@pytest.mark.parametrize("e64", [False, True])
def test_exp_log_legacy(backend, e64):
  # modelled as V_EXP_F32 / V_LOG_F32 (the ISA gives the legacy ops no other definition): exact cases from numpy
  x = np.array([-3, -1, 0, 1, 5, 10, -np.inf, np.inf] * 8, np.float32)
  y = np.array([0.125, 0.5, 1, 2, 1024, 2.0**-20, 0, np.inf, -1, np.nan, -0.0, 2.0**100] * 5 + [4] * 4, np.float32)
  ex, lg = (C.v_exp_legacy_f32_e64, C.v_log_legacy_f32_e64) if e64 else (C.v_exp_legacy_f32_e32, C.v_log_legacy_f32_e32)
  st = lanes([ex(v[5], v[2]), lg(v[6], v[3])], x, y, backend=backend)
  with np.errstate(divide="ignore", invalid="ignore"): want_lg = np.log2(y)
  np.testing.assert_array_equal(vreg(st, 5).view(np.float32), np.exp2(x))
  np.testing.assert_array_equal(vreg(st, 6).view(np.float32), want_lg)

@BACKENDS
@pytest.mark.parametrize("inst,match", [(C.s_rfe_restore_b64(ssrc0=s[0:1], ssrc1=s[2]), "S_RFE_RESTORE_B64.*trap handler"),
                                        (C.v_screen_partition_4se_b32_e32(v[1], v[2]), "V_SCREEN_PARTITION_4SE_B32.*graphics")])
def test_trap_return_and_graphics_ops_are_reported(backend, inst, match):
  from mockgpu.emu.errors import InvalidInstruction
  with pytest.raises(InvalidInstruction, match=match): run9([inst], backend=backend)
