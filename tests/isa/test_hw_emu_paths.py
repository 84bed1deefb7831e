"""Emulator paths where the hardware does something the pseudocode (or the emulator's set-up around it) did not: known
answers stated by issue 10 (items 4, 8-12), each run on both backends and on every arch that has the instruction; then the
pseudocode state the handlers once left uninitialised (docs/emu.md, "Pseudocode state"): the entries that read it, with
answers from their ISA text, the static check that every member an entry reads is set, and the poison mode that proves it
at run time."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as R3
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from tinygrad.runtime.autogen.amd.cdna import ins as C
from tinygrad.runtime.autogen import amdgpu_kd as kd
from mockgpu.emu.api import Dispatch, run_code
from mockgpu.emu.errors import InvalidInstruction
from isa_harness import Bufs, f32

BACKENDS = pytest.mark.parametrize("backend", ["c", "python"])
DSL = {"gfx1100": R3, "gfx1201": R4, "gfx950": C}
M32 = 0xffffffff

def prog(arch, insts) -> bytes: return b"".join(i.to_bytes() for i in insts) + DSL[arch].s_endpgm().to_bytes()

def run_arch(arch, insts, backend, wave64=False, bufs=None, **kw):
  """Run `insts` as one wave (wave64 on gfx950) with the buffers' addresses in s0..; the captured wave state."""
  n = 64 if wave64 or arch == "gfx950" else 32
  bufs = bufs or Bufs()
  return run_code(prog(arch, insts), bufs.mem, arch=arch, block=(n, 1, 1), wave64=n == 64, user_sgprs=bufs.sgprs(),
                  rsrc2=len(bufs.sgprs()) << 1, capture=True, backend=backend, **kw).state

def seeded(I, reg, k1, k2):
  """v[reg] = (lane * k1) ^ k2 (u32): lane-varying data with every bit pattern, formed in the kernel."""
  return [I.s_mov_b32(I.s[20], k1), I.v_mul_lo_u32(I.v[reg], I.s[20], I.v[0]), I.s_mov_b32(I.s[21], k2), I.v_xor_b32_e32(I.v[reg], I.s[21], I.v[reg])]

def seeded_np(n, k1, k2): return ((np.arange(n, dtype=np.uint64) * k1) & M32 ^ k2).astype(np.uint32)

def vreg(st, r): return np.array(st.vgprs[r], np.uint32)

# ---- issue 10, item 4: V_DOT4_I32_IU8 / V_DOT8_I32_IU4: NEG[0] makes S0's elements signed, NEG[1] S1's ----

def dot_iu(a, b, c, eb, n, sa, sb) -> int:
  def el(x, k, s): e = int(x) >> (k * eb) & ((1 << eb) - 1); return e - (1 << eb) if s and e >> (eb - 1) else e
  return (int(c) + sum(el(a, k, sa) * el(b, k, sb) for k in range(n))) & M32

@pytest.mark.hw_fact("V_DOT4_I32_IU8", "V_DOT8_I32_IU4", source="issue 10")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
@BACKENDS
def test_dot_iu_signedness_from_neg(arch, backend):
  I = DSL[arch]
  ks = [(0x9e3779b1, 0x80f08f7f), (0x85ebca6b, 0x7f8099f1), (0xc2b2ae35, 0x1234)]
  ops = [I.v_dot4_i32_iu8(I.v[10 + n], I.v[2], I.v[3], I.v[4], neg=n) for n in range(4)]
  ops += [I.v_dot8_i32_iu4(I.v[14 + n], I.v[2], I.v[3], I.v[4], neg=n) for n in range(4)]
  st = run_arch(arch, [x for r, k in enumerate(ks) for x in seeded(I, 2 + r, *k)] + ops, backend)
  a, b, c = (seeded_np(32, *k) for k in ks)
  for n in range(4):
    assert vreg(st, 10 + n).tolist() == [dot_iu(a[L], b[L], c[L], 8, 4, n & 1, n >> 1) for L in range(32)], f"DOT4 neg={n}"
    assert vreg(st, 14 + n).tolist() == [dot_iu(a[L], b[L], c[L], 4, 8, n & 1, n >> 1) for L in range(32)], f"DOT8 neg={n}"

# ---- item 8: V_PERMLANE64_B32 is a no-op in wave32 (VDST unchanged); wave64 swaps the halves (its pseudocode) ----

@pytest.mark.hw_fact("V_PERMLANE64_B32", source="issue 10")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
@BACKENDS
def test_permlane64(arch, backend):
  I = DSL[arch]
  body = seeded(I, 2, 0x9e3779b1, 0x5a5a5a5a) + seeded(I, 5, 0x85ebca6b, 0x0f0f0f0f) + [I.v_permlane64_b32_e32(I.v[5], I.v[2])]
  st = run_arch(arch, body, backend)
  assert vreg(st, 5).tolist() == seeded_np(32, 0x85ebca6b, 0x0f0f0f0f).tolist()
  st = run_arch(arch, body, backend, wave64=True)
  assert vreg(st, 5).tolist() == seeded_np(64, 0x9e3779b1, 0x5a5a5a5a)[np.arange(64) ^ 32].tolist()

# ---- item 9: DS atomics without _RTN never write VDST, whatever the encoding's VDST field holds ----

@pytest.mark.hw_fact("DS_ADD_U32", "DS_MAX_U32", "DS_ADD_RTN_U32", source="issue 10")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950"])
@BACKENDS
def test_ds_atomic_without_rtn_leaves_vdst(arch, backend):
  I = DSL[arch]
  st_, ld, wait = ((I.ds_write_b32, I.ds_read_b32, I.s_waitcnt(simm16=0)) if arch == "gfx950" else
                   (I.ds_store_b32, I.ds_load_b32, I.s_wait_dscnt(simm16=0) if arch == "gfx1201" else I.s_waitcnt(simm16=0)))
  body = [I.v_lshlrev_b32_e32(I.v[1], 2, I.v[0]), I.v_add_nc_u32_e32(I.v[2], 1, I.v[0]) if arch != "gfx950" else I.v_add_u32_e32(I.v[2], 1, I.v[0]),
          I.v_mov_b32_e32(I.v[7], 0x5a5a5a5a), I.v_mov_b32_e32(I.v[8], 0x5a5a5a5a), st_(addr=I.v[1], data0=I.v[2]), wait,
          I.ds_add_u32(vdst=I.v[7], addr=I.v[1], data0=I.v[2]), I.ds_max_u32(vdst=I.v[8], addr=I.v[1], data0=I.v[0]), wait,
          I.ds_add_rtn_u32(vdst=I.v[9], addr=I.v[1], data0=I.v[2]), wait, ld(vdst=I.v[10], addr=I.v[1]), wait]
  st = run_arch(arch, body, backend, lds_bytes=256)
  n, L = len(st.vgprs[0]), np.arange(len(st.vgprs[0]))
  assert vreg(st, 7).tolist() == vreg(st, 8).tolist() == [0x5a5a5a5a] * n
  assert vreg(st, 9).tolist() == (2 * (L + 1)).tolist() and vreg(st, 10).tolist() == (3 * (L + 1)).tolist()

# ---- item 10: VINTERP takes an SGPR or another scalar source in S1, read as a scalar for all lanes ----

@pytest.mark.hw_fact("V_INTERP_P10_F32", "V_INTERP_P2_F32", source="issue 10")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
@BACKENDS
def test_vinterp_scalar_s1(arch, backend):
  I = DSL[arch]
  st = run_arch(arch, [I.v_cvt_f32_u32_e32(I.v[1], I.v[0]), I.s_mov_b32(I.s[5], f32(0.25)), I.v_interp_p10_f32(I.v[3], I.v[1], I.s[5], I.v[1]),
                       I.v_interp_p2_f32(I.v[4], I.v[1], I.s[5], I.v[3]), I.v_interp_p10_f32(I.v[5], I.v[1], 0.5, I.v[1]),
                       I.v_interp_p10_f32(I.v[6], I.v[1], I.s[5], I.v[1], neg=2)], backend)
  q = (np.arange(32) & ~3).astype(np.float64)   # quad lane k holds P_k = its lane number
  f = lambda r: vreg(st, r).view(np.float32).tolist()
  assert f(3) == ((q + 1) * 0.25 + q).astype(np.float32).tolist()
  assert f(4) == ((q + 2) * 0.25 + (q + 1) * 0.25 + q).astype(np.float32).tolist()
  assert f(5) == ((q + 1) * 0.5 + q).astype(np.float32).tolist()
  assert f(6) == (-(q + 1) * 0.25 + q).astype(np.float32).tolist()

# ---- item 11: DPP16 controls 0x142 / 0x143 (GFX9's row_bcast:15 / row_bcast:31) on gfx11: every lane reads lane 0 of its row ----

@pytest.mark.hw_fact("V_MOV_B32", "V_ADD_NC_U32", source="issue 10 (DPP16 0x142/0x143 on gfx11)")
@pytest.mark.parametrize("wave64", [False, True])
@BACKENDS
def test_dpp16_row_bcast_controls_gfx11(wave64, backend):
  n = 64 if wave64 else 32
  st = run_arch("gfx1100", seeded(R3, 2, 0x9e3779b1, 0x5a5a5a5a) + [R3.v_mov_b32_e32(R3.v[6], 7),
    R3.VOP1_DPP16(R3.VOP1Op.V_MOV_B32_E32, vdst=R3.v[5], src0=R3.DPP, vsrc0=R3.v[2], dpp=0x142, row_mask=15, bank_mask=15),
    R3.VOP2_DPP16(R3.VOP2Op.V_ADD_NC_U32_E32, vdst=R3.v[6], src0=R3.DPP, vsrc0=R3.v[2], vsrc1=R3.v[2], dpp=0x143, row_mask=0b0101, bank_mask=15)],
    backend, wave64=wave64)
  a, L = seeded_np(n, 0x9e3779b1, 0x5a5a5a5a), np.arange(n)
  assert vreg(st, 5).tolist() == a[L & ~15].tolist()
  assert vreg(st, 6).tolist() == np.where(L >> 4 & 1, 7, a[L & ~15] + a).astype(np.uint32).tolist()   # rows 1 and 3 masked off

def test_dpp16_row_bcast_controls_stay_unsupported_on_gfx12():
  """0x142/0x143 on gfx12 have no stated hardware behaviour: still a clear error, not a guess"""
  for backend in ("c", "python"):
    with pytest.raises(InvalidInstruction, match="DPP16 control"):
      run_arch("gfx1201", [R4.VOP1_DPP16(R4.VOP1Op.V_MOV_B32_E32, vdst=R4.v[5], src0=R4.DPP, vsrc0=R4.v[0], dpp=0x142, row_mask=15,
                                         bank_mask=15)], backend)

# ---- item 12: the default RSRC1 is what LLVM's assembler writes for a kernel descriptor of the arch ----

# LLVM AMDGPUUsage, .amdhsa_* directive defaults: float_round_mode_32/16_64 0 (nearest even), float_denorm_mode_32 0 (flush),
# float_denorm_mode_16_64 3 (keep), dx10_clamp 1, ieee_mode 1 (both GFX6-GFX11 only; GFX12 reuses bits 21/23 as
# WG_RR_EN / DISABLE_PERF, default 0). Bit positions: tinygrad's amdgpu_kd.
LLVM_RSRC1 = {"gfx1100": 3 << 18 | 1 << 21 | 1 << 23, "gfx950": 3 << 18 | 1 << 21 | 1 << 23, "gfx1201": 3 << 18}

@pytest.mark.hw_fact("V_MUL_F32", "V_MUL_F16", source="issue 10 (default RSRC1 = LLVM's kernel descriptor defaults)")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950"])
@BACKENDS
def test_default_rsrc1_is_llvms(arch, backend):
  dx10_ieee = 1 << kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_DX10_CLAMP_SHIFT | 1 << kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_IEEE_MODE_SHIFT
  assert LLVM_RSRC1[arch] == 3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_16_64_SHIFT | (dx10_ieee if arch != "gfx1201" else 0)
  assert Dispatch(arch, 0).rsrc1 == LLVM_RSRC1[arch]
  I = DSL[arch]
  st = run_arch(arch, [I.v_mov_b32_e32(I.v[1], 0x00400000), I.v_mul_f32_e32(I.v[3], 1.0, I.v[1]), I.v_mov_b32_e32(I.v[2], 0x0200),
                       I.v_mul_f16_e32(I.v[4], 1.0, I.v[2]),
                       I.s_getreg_b32(I.s[6], 1 | 31 << 11) if arch != "gfx950" else I.s_getreg_b32(I.s[6], simm16=1 | 31 << 11)], backend)
  assert st.mode == (0x3c0 if arch != "gfx1201" else 0xc0)
  assert st.sgprs[6] == st.mode
  assert vreg(st, 3)[0] == 0            # f32 denormal (2^-127) flushed
  assert vreg(st, 4)[0] & 0xffff == 0x0200   # f16 denormal kept

# ---- pseudocode state read before the handler set it (found by gen_c's state check; answers from the ISA text) ----

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950"])
@BACKENDS
def test_salu_movrel_uses_the_raw_register_fields(arch, backend):
  """S_MOVRELS: D = SGPR[SRC0 + M0]; S_MOVRELD: SGPR[DST + M0] = S0 (SRC0/DST: the instruction's register numbers);
  RDNA S_MOVRELSD_2: SGPR[DST + M0[25:16]] = SGPR[SRC0 + M0[9:0]]"""
  I = DSL[arch]
  m0 = C.src[124] if arch == "gfx950" else I.M0
  body = [I.s_mov_b32(I.s[i], 100 + i) for i in range(10, 20)] + [I.s_mov_b32(m0, 2), I.s_movrels_b32(I.s[4], I.s[10]),
          I.s_mov_b32(I.s[5], 0xabc), I.s_movreld_b32(I.s[14], I.s[5])]
  if arch != "gfx950": body += [I.s_mov_b32(m0, 3 | 1 << 16), I.s_movrelsd_2_b32(I.s[16], I.s[10])]
  st = run_arch(arch, body, backend)
  assert st.sgprs[4] == 112 and st.sgprs[16] == 0xabc
  if arch != "gfx950": assert st.sgprs[17] == 113

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950"])
@BACKENDS
def test_mad_64_carry_out_is_the_sdst_bit(arch, backend):
  """V_MAD_U64_U32 / V_MAD_I64_I32 (RDNA4: V_MAD_CO_*): { D1.u1, D0.u64 } = S0 * S1 + S2 in 65 bits; D1 is the lane's SDST bit"""
  I, n = DSL[arch], 64 if arch == "gfx950" else 32
  mu, mi = (I.v_mad_co_u64_u32, I.v_mad_co_i64_i32) if arch == "gfx1201" else (I.v_mad_u64_u32, I.v_mad_i64_i32)
  sd = (lambda k: I.s[k:k + 1]) if n == 64 else (lambda k: I.s[k])
  ks = [(0x9e3779b1, 0xfff0f0f0), (0x85ebca6b, 0xff00ff00), (0xc2b2ae35, 0xf0000000), (0x27d4eb2f, 0xfffffff0)]
  st = run_arch(arch, [x for r, k in enumerate(ks) for x in seeded(I, 1 + r, *k)] + [mu(I.v[6:7], sd(20), I.v[1], I.v[2], I.v[3:4]),
                      mi(I.v[8:9], sd(22), I.v[1], I.v[2], I.v[3:4])], backend)
  a, b, c0, c1 = (seeded_np(n, *k).astype(object) for k in ks)
  sx = lambda x, bits: x - (1 << bits) if x >> (bits - 1) else x
  fu = [int(a[L]) * int(b[L]) + (int(c1[L]) << 32 | int(c0[L])) for L in range(n)]
  fi = [(sx(int(a[L]), 32) * sx(int(b[L]), 32) + sx(int(c1[L]) << 32 | int(c0[L]), 64)) & ((1 << 65) - 1) for L in range(n)]
  mask = lambda k: st.sgprs[k] | (st.sgprs[k + 1] << 32 if n == 64 else 0)
  assert mask(20) == sum((x >> 64 & 1) << L for L, x in enumerate(fu)) != 0
  assert mask(22) == sum((x >> 64 & 1) << L for L, x in enumerate(fi)) != 0
  assert [st.vgprs[6][L] | st.vgprs[7][L] << 32 for L in range(n)] == [x & (1 << 64) - 1 for x in fu]

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201"])
@BACKENDS
def test_global_addtid(arch, backend):
  """GLOBAL_LOAD/STORE_ADDTID_B32: lane L accesses SGPR_ADDR + INST_OFFSET[11:0] + 4L"""
  I = DSL[arch]
  src, dst = seeded_np(40, 0x9e3779b1, 7), np.zeros(40, np.uint32)
  b = Bufs(src, dst)
  off = {"ioffset": 8} if arch == "gfx1201" else {"offset": 8}
  wait = I.s_wait_loadcnt(simm16=0) if arch == "gfx1201" else I.s_waitcnt(simm16=0)
  st = run_arch(arch, [I.global_load_addtid_b32(vdst=I.v[3], saddr=I.s[0:1], **off), wait,
                       I.global_store_addtid_b32(data=I.v[3], saddr=I.s[2:3], **off) if arch == "gfx1100" else
                       I.global_store_addtid_b32(vsrc=I.v[3], saddr=I.s[2:3], **off)], backend, bufs=b)
  assert vreg(st, 3).tolist() == src[2:34].tolist()
  assert dst[2:34].tolist() == src[2:34].tolist() and not dst[:2].any() and not dst[34:].any()

@pytest.mark.parametrize("arch", ["gfx1100", "gfx950"])
@BACKENDS
def test_conditional_debug_branches_not_taken(arch, backend):
  """S_CBRANCH_CDBG*: branch if the wave's conditional-debug status bits say so; no debugger sets them"""
  I = DSL[arch]
  body = [I.s_mov_b32(I.s[4], 1)]
  for op in (I.s_cbranch_cdbgsys, I.s_cbranch_cdbguser, I.s_cbranch_cdbgsys_or_user, I.s_cbranch_cdbgsys_and_user):
    body += [op(simm16=1), I.s_add_u32(I.s[4], I.s[4], 1) ]
  assert run_arch(arch, body, backend).sgprs[4] == 5

@BACKENDS
def test_cdna_fp8_conversion_sdwa_byte_select(backend):
  """V_CVT_F32_FP8/BF8 with SDWA src0_sel BYTE_n convert byte n of the source (the pseudocode's SDWA_SRC0_SEL)"""
  x = 0x3c48_40_38
  st = run_arch("gfx950", [C.v_mov_b32_e32(C.v[2], x), C.v_mov_b32_e32(C.v[3], x >> 8), C.v_mov_b32_e32(C.v[4], x >> 16),
                           C.v_cvt_f32_fp8_e32(C.v[5], C.SDWA, vsrc0=C.v[2], src0_sel=1, dst_sel=6),
                           C.v_cvt_f32_fp8_e32(C.v[6], C.v[3]), C.v_cvt_f32_fp8_e32(C.v[7], C.v[2]),
                           C.v_cvt_f32_bf8_e32(C.v[8], C.SDWA, vsrc0=C.v[2], src0_sel=2, dst_sel=6), C.v_cvt_f32_bf8_e32(C.v[9], C.v[4])], backend)
  g = lambda r: st.vgprs[r][0]
  assert g(5) == g(6) != g(7) and g(8) == g(9)

@pytest.mark.parametrize("op", [C.s_set_gpr_idx_on(C.s[4], 1), C.s_set_gpr_idx_off(), C.s_set_gpr_idx_idx(C.s[4]), C.s_set_gpr_idx_mode(simm16=1),
                                C.s_cbranch_g_fork(C.s[4:5], C.s[6:7]), C.s_cbranch_join(C.s[4])], ids=lambda i: i.op_name)
@BACKENDS
def test_cdna_unmodelled_wave_modes_are_clear_errors(op, backend):
  """VGPR indexing mode (S_SET_GPR_IDX_*) and the fork/join stack (S_CBRANCH_G_FORK/I_FORK/JOIN: MODE.CSP) are not modelled:
  running them silently would index or branch wrongly"""
  with pytest.raises(InvalidInstruction, match="not modelled"): run_arch("gfx950", [op], backend)

# ---- the proof: no pseudocode state is read uninitialised (docs/emu.md, "Pseudocode state") ----

@pytest.mark.parametrize("arch", ["gfx1100", "gfx1201", "gfx950"])
def test_every_state_member_read_is_set_or_zeroed_for_a_reason(arch):
  """Statically, over every generated handler: each PcState member its entries read (gen_c.pc_reads, conservative) is set
  from the wave or zeroed, and every zeroed member is in gen_c.STATE_ZERO with its reason. img_atomic (csrc/emu_image.h)
  sets up the image atomics by hand: their entries read only what it sets."""
  import re
  from mockgpu.emu.arch import get_arch
  from mockgpu.emu.gen_c import STATE_ZERO, generate, pc_reads
  from mockgpu.pcode import cemit
  a, pc = get_arch(arch), cemit.emit(get_arch(arch).family)
  gen = generate(a, pc, set(re.findall(r"\bvoid\s+(pc_\w+)\s*\(\s*PcState\s*\*", pc)), chunks=1)
  zeroed = {m for z in gen.zeroed.values() for m in z}
  assert zeroed <= set(STATE_ZERO), f"members read but never set, without a reason in STATE_ZERO: {sorted(zeroed - set(STATE_ZERO))}"
  assert "D0" in zeroed   # the check runs (16-bit results read the rest of D0 on every arch)
  assert set().union(*(r for f, r in pc_reads(pc).items() if "IMAGE_ATOMIC" in f)) <= {"ADDR", "DATA", "RETURN_DATA", "laneId"}

ALL3, RDNA = ("gfx1100", "gfx1201", "gfx950"), ("gfx1100", "gfx1201")
KNOWN_ANSWERS = [(test_dot_iu_signedness_from_neg, RDNA), (test_permlane64, RDNA), (test_ds_atomic_without_rtn_leaves_vdst, ALL3),
                 (test_vinterp_scalar_s1, RDNA), (test_salu_movrel_uses_the_raw_register_fields, ALL3), (test_global_addtid, RDNA),
                 (test_conditional_debug_branches_not_taken, ("gfx1100", "gfx950")), (test_mad_64_carry_out_is_the_sdst_bit, ALL3),
                 (test_default_rsrc1_is_llvms, ALL3)]

@pytest.mark.parametrize("byte", ["0xa5", "0xff"])
def test_poisoned_state_changes_nothing(byte, monkeypatch):
  """At run time, with every handler's PcState filled with a byte before its set-up (MOCKGPU_EMU_POISON): the known answers
  above still hold on the C backend, and random programs (tests/isa/test_backends_differential.py) leave the same registers
  and LDS-derived values as without poison."""
  from test_backends_differential import program, cdna_program
  progs = [(program(seed), dict(block=(8, 1, 1), lds_bytes=512)) for seed in range(3)]
  progs += [(cdna_program(seed), dict(arch="gfx950", wave64=True, block=(40, 1, 1), lds_bytes=1024)) for seed in range(2)]
  def runs(): return [(st.instructions, st.state) for st in (run_code(p, capture=True, **kw) for p, kw in progs)]
  clean = runs()
  monkeypatch.setenv("MOCKGPU_EMU_POISON", byte)
  assert runs() == clean
  for fn, archs in KNOWN_ANSWERS:
    for arch in archs: fn(arch, "c")
  test_cdna_fp8_conversion_sdwa_byte_select("c")
  for wave64 in (False, True): test_dpp16_row_bcast_controls_gfx11(wave64, "c")

def test_poison_setting_is_checked(monkeypatch):
  from mockgpu.emu.errors import UnsupportedDispatch
  monkeypatch.setenv("MOCKGPU_EMU_POISON", "0x1a5")
  with pytest.raises(UnsupportedDispatch, match=r"MOCKGPU_EMU_POISON='0x1a5': give one byte"): run_arch("gfx1100", [], "c")
