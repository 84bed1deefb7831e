"""Random programs (fixed seeds) run on the generated-C and the Python reference backends: identical registers, LDS
traffic, instruction counts and per-opcode counts. Both backends share the decoder tables and operand rules; the
semantics come from two independent pseudocode backends (generated C vs mockgpu.pcode.pyeval)."""
import dataclasses, random, struct
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from mockgpu.emu.api import run_code
from isa_harness import code

pytestmark = pytest.mark.differential   # mockgpu emu fidelity: backend-vs-backend, not known answers

SHARED_BASE = src[235]   # high dword of the flat LDS aperture (programs below shadow `src`)

def _f(x): return struct.unpack("<I", struct.pack("<f", x))[0]

def program(seed: int, n: int = 32) -> bytes:
  r = random.Random(seed)
  V = lambda: v[r.randint(1, 8)]
  S = lambda: s[r.randint(4, 12)]
  src = lambda: r.choice([V(), V(), S(), r.randint(-16, 64), r.choice([0.5, -1.0, 2.0, INV_2PI]), r.randint(65, 1 << 30)])
  ssrc = lambda: r.choice([S(), S(), r.randint(-16, 64), r.randint(65, 1 << 30)])
  insts = [v_mov_b32_e32(v[i], _f(r.uniform(-8, 8)) if i % 2 else r.randint(0, 1 << 31)) for i in range(1, 9)]
  insts += [s_mov_b32(s[i], r.randint(0, 1 << 31)) for i in range(4, 13)]
  insts += [v_lshlrev_b32_e32(v[20], 2, v[0]), s_mov_b32(s[13], SHARED_BASE), v_mov_b32_e32(v[21], v[20]), v_mov_b32_e32(v[22], s[13])]
  gens = [
    lambda: r.choice([v_add_f32_e32, v_mul_f32_e32, v_sub_f32_e32, v_max_f32_e32, v_add_nc_u32_e32, v_xor_b32_e32, v_and_b32_e32,
                      v_lshlrev_b32_e32, v_cndmask_b32_e32, v_min_i32_e32])(V(), src(), V()),
    lambda: r.choice([v_mov_b32_e32, v_cvt_f32_i32_e32, v_not_b32_e32, v_floor_f32_e32, v_cvt_u32_f32_e32, v_bfrev_b32_e32])(V(), src()),
    lambda: v_fma_f32(V(), V(), src() if r.random() < 0.3 else V(), V(), neg=r.randint(0, 7), abs=r.randint(0, 7)),
    lambda: r.choice([v_add3_u32, v_bfe_u32, v_mad_u32_u24, v_max3_f32, v_med3_i32, v_lshl_or_b32])(V(), V(), V(), V()),
    lambda: v_add_f32_e64(V(), V(), V(), clmp=r.randint(0, 1), omod=r.randint(0, 3)),
    lambda: r.choice([v_cmp_lt_f32_e32, v_cmp_gt_i32_e32, v_cmp_eq_u32_e32])(src(), V()),
    lambda: v_cmp_lt_u32_e64(s[r.choice([14, 16])], V(), src()),
    lambda: r.choice([s_add_u32, s_mul_i32, s_and_b32, s_lshl_b32, s_cselect_b32, s_sub_u32, s_max_i32])(S(), S(), ssrc()),
    lambda: r.choice([s_mov_b32, s_not_b32, s_brev_b32])(S(), S()),
    lambda: r.choice([s_cmp_lt_i32, s_cmp_eq_u32])(S(), S()),
    lambda: VOP1_DPP16(VOP1Op.V_MOV_B32_E32, vdst=V(), src0=DPP, vsrc0=V(), dpp=r.choice([0x1b, 0x111, 0x121, 0x140, 0x161]), row_mask=15, bank_mask=15, bc=1),
    lambda: v_dual_mul_f32(VOPDOp.V_DUAL_ADD_F32, vdstx=v[5], vdsty=v[6], srcx0=V(), vsrcx1=V(), srcy0=V(), vsrcy1=V()),
    lambda: ds_store_b32(addr=v[20], data0=V(), offset0=r.choice([0, 4, 128])),
    lambda: ds_load_b32(vdst=V(), addr=v[20], offset0=r.choice([0, 4, 128])),
    lambda: ds_swizzle_b32(vdst=V(), addr=v[0], data0=V(), offset0=r.randint(0, 255), offset1=r.choice([0x00, 0x13, 0x80, 0xc0, 0xc4, 0xe0])),
    lambda: r.choice([v_add3_u32, v_mad_u32_u24, v_xad_u32, v_sad_u8, v_msad_u8, v_mad_i32_i16, v_mad_u16])(V(), V(), V(), V(), clmp=1),
    lambda: v_add_co_ci_u32(V(), s[r.choice([14, 16])], V(), src(), VCC_LO, clmp=r.randint(0, 1)),
    lambda: r.choice([flat_load_b32(vdst=V(), addr=v[21:22], offset=r.choice([0, 4, 128])), flat_store_b32(addr=v[21:22], data=V(), offset=r.choice([0, 8]))]),
    lambda: r.choice([s_round_mode, s_denorm_mode])(r.randint(0, 15)),     # MODE: rounding / denormals of the following float ops
    lambda: s_setreg_imm32_b32(simm16=1 | r.randint(0, 9) << 6 | r.randint(0, 3) << 11, literal=r.getrandbits(4)),
  ]
  insts += [r.choice(gens)() for _ in range(n)]
  return code(*insts)

@pytest.mark.parametrize("seed", range(6))
def test_random_programs_agree(seed):
  prog = program(seed)
  res = [run_code(prog, backend=b, block=(8, 1, 1), lds_bytes=512, capture=True, op_counts=True) for b in ("c", "python")]
  c, p = res
  assert (c.instructions, c.op_counts) == (p.instructions, p.op_counts)
  assert c.state.sgprs == p.state.sgprs and (c.state.exec, c.state.vcc, c.state.scc, c.state.mode) == (p.state.exec, p.state.vcc, p.state.scc, p.state.mode)
  for reg in range(32): assert c.state.vgprs[reg] == p.state.vgprs[reg], f"v{reg}"

def test_fault_reports_agree():
  from mockgpu.emu.errors import GPUFault
  prog = code(v_lshlrev_b32_e32(v[1], 4, v[0]), ds_store_b32(addr=v[1], data0=v[0]))
  reps = []
  for b in ("c", "python"):
    with pytest.raises(GPUFault) as ei: run_code(prog, backend=b, block=(32, 1, 1), lds_bytes=256)
    reps.append(dataclasses.replace(ei.value.report, pc_addr=0))   # run_code's code buffer may move between the two runs
  assert reps[0] == reps[1]

def buffer_program(seed: int, n: int = 24):
  """random buffer ops (RDNA3 MUBUF/MTBUF, LDS loads) through random V#s whose addresses stay inside one 128 KiB buffer:
  indices < 64, strides <= 64, offsets < 512, any swizzle / index stride / ADD_TID_ENABLE / OOB_SELECT / NUM_RECORDS"""
  from tinygrad.runtime.autogen import hsa
  r = random.Random(seed)
  def vs(base):
    w1 = hsa.union_SQ_BUF_RSRC_WORD1_GFX11_bitfields(BASE_ADDRESS_HI=base >> 32, STRIDE=r.choice([0, 4, 12, 16, 64]), SWIZZLE_ENABLE=r.randint(0, 3))
    w3 = hsa.union_SQ_BUF_RSRC_WORD3_GFX11_bitfields(FORMAT=r.choice([20, 22, 42, 30, 57, 24, 40, 6]), INDEX_STRIDE=r.randint(0, 3),
                                                      ADD_TID_ENABLE=r.randint(0, 1), OOB_SELECT=r.randint(0, 3))
    return [base & 0xffffffff, int.from_bytes(bytes(w1), "little"), r.choice([0, 40, 300, 4096, 1 << 20]), int.from_bytes(bytes(w3), "little")]
  def V(k=1):
    lo = r.randint(4, 13 - k)
    return v[lo:lo + k - 1] if k > 1 else v[lo]
  insts = [v_mul_u32_u24_e32(v[1], r.randint(1, 7), v[0]), v_and_b32_e32(v[1], 63, v[1]), v_mul_u32_u24_e32(v[2], r.randint(1, 16), v[0]),
           v_and_b32_e32(v[2], 255, v[2])] + [v_mov_b32_e32(v[i], r.choice([r.randint(0, 1 << 31), _f(r.uniform(-4, 4))])) for i in range(4, 14)]
  insts += [s_mov_b32(M0, r.choice([0, 64]))]
  def mods():
    offen, idxen = r.randint(0, 1), r.randint(0, 1)   # vaddr: the index VGPR (v1), then the offset VGPR (v2)
    return dict(vaddr=v[1:2] if offen and idxen else v[2] if offen else v[1], srsrc=r.choice([s[0:3], s[4:7]]), soffset=r.choice([NULL, s[8]]),
                offset=r.randint(0, 255), offen=offen, idxen=idxen)
  ops = [
    lambda: r.choice([buffer_load_b32, buffer_load_u8, buffer_load_i16, buffer_load_d16_hi_u8, buffer_load_d16_b16])(vdata=V(), **mods()),
    lambda: r.choice([buffer_load_b64, buffer_store_b64])(vdata=V(2), **mods()),
    lambda: r.choice([buffer_load_b128, buffer_store_b128, buffer_load_format_xyzw, buffer_store_format_xyzw])(vdata=V(4), **mods()),
    lambda: r.choice([buffer_store_b32, buffer_store_b8, buffer_store_d16_hi_b16, buffer_load_format_x, buffer_load_d16_format_xy])(vdata=V(), **mods()),
    lambda: r.choice([tbuffer_load_format_xy, tbuffer_store_format_xy, tbuffer_load_d16_format_xyzw])(vdata=V(2), format=r.randint(1, 63), **mods()),
    lambda: r.choice([buffer_atomic_add_u32, buffer_atomic_max_i32, buffer_atomic_add_f32, buffer_atomic_min_f32, buffer_atomic_swap_b32])(
      vdata=V(), glc=r.randint(0, 1), **mods()),
    lambda: buffer_atomic_cmpswap_b32(vdata=V(2), glc=1, **mods()),
    lambda: r.choice([buffer_load_lds_b32, buffer_load_lds_i8, buffer_load_lds_format_x])(**mods()),
  ]
  insts += [r.choice(ops)() for _ in range(n)]
  insts += [v_lshlrev_b32_e32(v[20], 2, v[0]), ds_load_b32(vdst=v[14], addr=v[20]), ds_load_b32(vdst=v[15], addr=v[20], offset0=128, offset1=1)]
  return code(*insts), vs, r

@pytest.mark.parametrize("seed", range(3))
def test_random_buffer_programs_agree(seed):
  import numpy as np
  from isa_harness import Bufs
  prog, vs, r = buffer_program(seed)
  init = np.random.default_rng(seed).integers(0, 1 << 32, 32768, dtype=np.uint32)
  res = []
  for b in ("c", "python"):
    bf = Bufs(init.copy())
    r.seed(seed + 1000)   # the same descriptors for both runs
    us = (*vs(bf.addr(0)), *vs(bf.addr(0)), r.randint(0, 64))
    st = run_code(prog, bf.mem, backend=b, block=(16, 1, 1), user_sgprs=us, rsrc2=len(us) << 1, lds_bytes=512, capture=True, op_counts=True)
    res.append((st, bf[0]))
  (c, cm), (p, pm) = res
  assert (c.instructions, c.op_counts) == (p.instructions, p.op_counts)
  for reg in range(16): assert c.state.vgprs[reg] == p.state.vgprs[reg], f"v{reg}"
  np.testing.assert_array_equal(cm, pm)

WMMA = [(v_wmma_f32_16x16x16_f16, 8), (v_wmma_f32_16x16x16_bf16, 8), (v_wmma_f16_16x16x16_f16, 8), (v_wmma_bf16_16x16x16_bf16, 8),
        (v_wmma_i32_16x16x16_iu8, 4), (v_wmma_i32_16x16x16_iu4, 2)]

def wmma_program(seed: int) -> bytes:
  """Random bits (NaN/inf/denormal patterns included) in v8..v31, then every RDNA3 WMMA with random NEG/NEG_HI/OPSEL/clamp
  and C from VGPRs or an inline constant."""
  r = random.Random(seed)
  insts = []
  for reg in range(8, 32):
    insts += [v_mad_u32_u24(v[reg], v[0], r.randint(1, 1 << 23), r.randint(0, M32)), v_mul_lo_u32(v[reg], v[reg], r.randint(0, M32) | 1),
              v_xor_b32_e32(v[reg], r.randint(0, M32), v[reg])]
  for op, na in WMMA:
    d = r.choice([32, 40])
    insts.append(op(v[d:d + 7], v[8:7 + na], v[16:15 + na], r.choice([v[24:31], v[24:31], 1.0, -2]), neg=r.randint(0, 7),
                    neg_hi=r.randint(0, 7), opsel=r.choice([0, 4]), clmp=r.randint(0, 1)))
  return code(*insts)

M32 = 0xffffffff

@pytest.mark.parametrize("seed,wave", [(0, 32), (1, 64), (2, 32)])
def test_random_wmma_agree(seed, wave):
  prog = wmma_program(seed)
  res = [run_code(prog, backend=b, block=(wave - 5 * seed, 1, 1), wave64=wave == 64, capture=True, op_counts=True) for b in ("c", "python")]
  assert (res[0].instructions, res[0].op_counts) == (res[1].instructions, res[1].op_counts)
  for reg in range(8, 48): assert res[0].state.vgprs[reg] == res[1].state.vgprs[reg], f"v{reg}"

def rdna4_matrix_program(seed: int) -> bytes:
  """Random bits in v8..v47, then every RDNA4 WMMA and SWMMAC with random NEG/NEG_HI/clamp and SWMMAC index keys."""
  import tinygrad.runtime.autogen.amd.rdna4.ins as R4
  from mockgpu.emu.isa import operands
  r = random.Random(seed)
  insts = []
  for reg in range(8, 48):
    insts += [R4.v_mad_u32_u24(R4.v[reg], R4.v[0], r.randint(1, 1 << 23), r.randint(0, M32)),
              R4.v_mul_lo_u32(R4.v[reg], R4.v[reg], r.randint(0, M32) | 1), R4.v_xor_b32_e32(R4.v[reg], r.randint(0, M32), R4.v[reg])]
  for m, ops in operands("rdna4").items():
    if not m.name.startswith(("V_WMMA_", "V_SWMMAC_")): continue
    n = {k: bits // 32 for k, (_, bits, _) in ops.items()}
    sw = m.name.startswith("V_SWMMAC_")
    c = R4.v[40] if sw else r.choice([R4.v[24:23 + n["src2"]], 1.0])
    insts.append(getattr(R4, m.name.lower())(R4.v[48:47 + n["vdst"]], R4.v[8:7 + n["src0"]], R4.v[16:15 + n["src1"]], c,
                 neg=r.randint(0, 7), neg_hi=r.randint(0, 7), clmp=r.randint(0, 1), opsel=r.randint(0, 1) if sw and n["src0"] < 4 else 0))
  return b"".join(i.to_bytes() for i in insts) + R4.s_endpgm().to_bytes()

@pytest.mark.parametrize("seed,wave", [(0, 32), (1, 64)])
def test_random_rdna4_matrix_ops_agree(seed, wave):
  prog = rdna4_matrix_program(seed)
  res = [run_code(prog, arch="gfx1201", backend=b, block=(wave, 1, 1), wave64=wave == 64, capture=True, op_counts=True) for b in ("c", "python")]
  assert (res[0].instructions, res[0].op_counts) == (res[1].instructions, res[1].op_counts)
  for reg in range(8, 64): assert res[0].state.vgprs[reg] == res[1].state.vgprs[reg], f"v{reg}"

def cdna_program(seed: int, n: int = 32) -> bytes:
  """Random gfx950 (wave64) program: VALU with modifiers, SDWA selects, gfx9 DPP controls, VOPC masks, SALU, LDS, AccVGPR moves."""
  from tinygrad.runtime.autogen.amd.cdna import ins as C
  r = random.Random(seed)
  V = lambda: C.v[r.randint(1, 8)]
  S = lambda: C.s[r.randint(4, 12)]
  src = lambda: r.choice([V(), V(), S(), r.randint(-16, 64), r.choice([0.5, -1.0, 2.0]), r.randint(65, 1 << 30)])
  insts = [C.v_mov_b32_e32(C.v[i], _f(r.uniform(-8, 8)) if i % 2 else r.randint(0, 1 << 31)) for i in range(1, 9)]
  insts += [C.s_mov_b32(C.s[i], r.randint(0, 1 << 31)) for i in range(4, 13)] + [C.v_lshlrev_b32_e32(C.v[20], 2, C.v[0])]
  sdwa = lambda: dict(src0_sel=r.randint(0, 6), src1_sel=r.randint(0, 6), src0_sext=r.randint(0, 1), dst_sel=r.randint(0, 6), dst_unused=r.randint(0, 2))
  gens = [
    lambda: r.choice([C.v_add_f32_e32, C.v_mul_f32_e32, C.v_sub_f32_e32, C.v_max_f32_e32, C.v_add_u32_e32, C.v_xor_b32_e32,
                      C.v_lshlrev_b32_e32, C.v_cndmask_b32_e32, C.v_min_i32_e32, C.v_add_f16_e32, C.v_mul_u32_u24_e32])(V(), src(), V()),
    lambda: r.choice([C.v_mov_b32_e32, C.v_cvt_f32_i32_e32, C.v_not_b32_e32, C.v_floor_f32_e32, C.v_cvt_f16_f32_e32, C.v_bfrev_b32_e32])(V(), src()),
    lambda: C.v_fma_f32_e64(V(), V(), src() if r.random() < 0.3 else V(), V(), neg=r.randint(0, 7), abs=r.randint(0, 7)),
    lambda: r.choice([C.v_add3_u32_e64, C.v_bfe_u32_e64, C.v_mad_u32_u24_e64, C.v_max3_f32_e64, C.v_med3_i32_e64, C.v_lshl_or_b32])(V(), V(), V(), V()),
    lambda: C.v_add_f32_e64(V(), V(), V(), clmp=r.randint(0, 1), omod=r.randint(0, 3)),
    lambda: r.choice([C.v_cmp_lt_f32_e32, C.v_cmp_gt_i32_e32, C.v_cmpx_eq_u32_e32 if r.random() < 0.2 else C.v_cmp_ne_u32_e32])(src(), V()),
    lambda: (lambda k: C.v_cmp_lt_u32_e64(C.s[k:k + 1], V(), src()))(r.choice([14, 16])),
    lambda: r.choice([C.v_add_u32_e32, C.v_and_b32_e32, C.v_sub_f16_e32, C.v_max_i16_e32])(V(), C.SDWA, V(), vsrc0=V(), **sdwa()),
    lambda: C.v_cvt_f32_f16_e32(V(), C.SDWA, vsrc0=V(), src0_sel=r.choice([4, 5]), src0_neg=r.randint(0, 1), dst_sel=6),
    lambda: C.v_cmp_lt_i32_e32(C.SDWA, V(), vsrc0=V(), src0_sel=r.randint(0, 6), src1_sel=r.randint(0, 6), sdst=C.s[18], sd=r.randint(0, 1)),
    lambda: C.v_add_u32_e32(V(), C.DPP, V(), vsrc0=V(), dpp=r.choice([0x1b, 0x111, 0x130, 0x134, 0x138, 0x13c, 0x142, 0x143, 0x152]),
                            row_mask=r.choice([15, 0xa, 0xc]), bank_mask=15, bc=r.randint(0, 1)),
    lambda: r.choice([C.s_add_u32, C.s_mul_i32, C.s_and_b32, C.s_lshl_b32, C.s_cselect_b32, C.s_sub_u32, C.s_max_i32])(S(), S(), S()),
    lambda: r.choice([C.s_cmp_lt_i32, C.s_cmp_eq_u32])(S(), S()),
    lambda: C.ds_write_b32(addr=C.v[20], data0=V(), offset0=r.choice([0, 4, 128])),
    lambda: C.ds_read_b32(vdst=V(), addr=C.v[20], offset0=r.choice([0, 4, 128]), acc=r.randint(0, 1)),
    lambda: r.choice([lambda: C.v_accvgpr_write(C.v[r.randint(0, 3)], src()), lambda: C.v_accvgpr_read(V(), C.v[r.randint(0, 3)])])(),
  ]
  insts += [r.choice(gens)() for _ in range(n)]
  return b"".join(i.to_bytes() for i in insts) + C.s_endpgm().to_bytes()

@pytest.mark.parametrize("seed", range(4))
def test_random_cdna_programs_agree(seed):
  prog = cdna_program(seed)
  res = [run_code(prog, arch="gfx950", wave64=True, backend=b, block=(40, 1, 1), lds_bytes=1024, rsrc3=0, capture=True, op_counts=True)
         for b in ("c", "python")]
  c, p = res
  assert (c.instructions, c.op_counts) == (p.instructions, p.op_counts)
  assert c.state.sgprs == p.state.sgprs and (c.state.exec, c.state.vcc, c.state.scc) == (p.state.exec, p.state.vcc, p.state.scc)
  for reg in range(24): assert c.state.vgprs[reg] == p.state.vgprs[reg], f"v{reg}"

SAMPLE_OPS = [m.name for m in MIMGOp if m.name.startswith(("IMAGE_SAMPLE", "IMAGE_GATHER4")) or m.name == "IMAGE_GET_LOD"]

def image_program(seed: int, n: int = 10):
  """Random MIMG sampling ops over random T#/S# (every address mode, filter, mip filter, compare function, border type, LOD
  limits and bias, unnormalized coordinates), random dims, DMASK/D16/A16/TFE, and address VGPRs mixing ordinary coordinates
  with NaN, infinities, -0, huge values and random bits; the image holds random bits (NaN/inf texels included)."""
  from tinygrad.runtime.autogen.amd.rdna3 import ins as R
  from tinygrad.runtime.autogen.amd.rdna3.operands import OPERANDS
  r = random.Random(seed)
  special = [0x7fc00000, 0x7f800000, 0xff800000, 0x80000000, 0x4f000000, 0xcf000000, 0x3f800000, 0x3fc00000]
  insts = [v_mov_b32_e32(v[i], r.choice([_f(r.uniform(-1.5, 2.5))] * 6 + [r.choice(special), r.getrandbits(32),
                                         r.getrandbits(6) | r.getrandbits(6) << 8 | r.getrandbits(6) << 16])) for i in range(10, 24)]
  insts += [v_cvt_f32_u32_e32(v[24], v[0]), v_mul_f32_e32(v[24], 0.125, v[24]), v_mul_f32_e32(v[25], v[24], v[24])]
  insts += [v_fmac_f32_e32(v[i], r.choice([0.25, -0.5, 1.0]), v[r.choice([24, 25])]) for i in range(10, 24)]   # per-lane values, quad derivatives
  for k in range(n):
    fmt = r.choice([63, 57, 42, 22, 20, 24])
    op = r.choice([o for o in SAMPLE_OPS if fmt != 20 or "_C" not in o])
    dim = r.choice([0, 1, 2, 3, 4, 5])
    typ = {0: 8, 1: 9, 2: 10, 3: 11, 4: 12, 5: 13}[dim]
    w, h, bl = r.randint(1, 8), r.randint(1, 8), r.randint(0, 1)
    t = (fmt << 52 | (w - 1) << 62 | (h - 1) << 78 | r.choice([0xfac, 0xfac, 0xfac, r.getrandbits(12)]) << 96 | bl << 108 |
         r.randint(bl, 3) << 112 | typ << 124 | r.randint(1, 5) << 128 | (r.randint(0, 1) << 144 if typ in (11, 12, 13) else 0))
    smp = (r.getrandbits(9) | r.getrandbits(3) << 12 | r.randint(0, 1) << 15 | r.getrandbits(12) << 32 | r.getrandbits(12) << 44 |
           r.getrandbits(14) << 64 | r.getrandbits(8) << 84 | r.randint(0, 2) << 126)
    insts += [s_mov_b32(s[8], s[0]), s_or_b32(s[9], s[1], (t >> 32) & 0xffffffff)]   # base (x256) from the user SGPRs
    insts += [s_mov_b32(s[8 + i], (t >> (32 * i)) & 0xffffffff) for i in range(2, 8)]
    insts += [s_mov_b32(s[16 + i], (smp >> (32 * i)) & 0xffffffff) for i in range(4)]
    nreg = OPERANDS[MIMGOp[op]]["vaddr"][1] // 32
    d = 30 + 5 * k
    insts.append(getattr(R, op.lower())(v[d:d + 3], v[10:10 + nreg - 1], s[8:15], s[16:19], dim=dim, dmask=r.randint(0, 15),
                                        d16=r.randint(0, 1), a16=r.randint(0, 1), tfe=r.randint(0, 1), unrm=int(r.random() < 0.2)))
  return code(*insts)

@pytest.mark.parametrize("seed", range(6))
def test_random_sampling_programs_agree(seed):
  import numpy as np
  from isa_harness import Bufs
  prog = image_program(seed)
  img = np.random.default_rng(seed).integers(0, 256, 65536, dtype=np.uint8)
  res = []
  for b in ("c", "python"):
    bf = Bufs(np.zeros(65536 + 256, np.uint8))
    base = (bf.addr(0) + 255) & ~255
    bf[0][base - bf.addr(0):][:65536] = img          # the same texels at the 256-byte aligned base in both runs
    us = ((base >> 8) & 0xffffffff, (base >> 40) & 0xff)
    res.append(run_code(prog, bf.mem, backend=b, block=(32, 1, 1), user_sgprs=us, rsrc2=len(us) << 1, capture=True, op_counts=True))
  c, p = res
  assert (c.instructions, c.op_counts) == (p.instructions, p.op_counts)
  for reg in range(80): assert c.state.vgprs[reg] == p.state.vgprs[reg], f"v{reg}"

def vimage_program(seed: int, base: int, n: int = 24) -> bytes:
  """random RDNA4 VIMAGE ops on a 16x16 linear 2D image (256-byte rows) of a random 32-bit format: loads/stores (PCK, MIP,
  D16, A16, TFE, any dmask) and atomics with address VGPRs anywhere in v1..v9, coordinates 0..19 (16..19 are outside)"""
  from tinygrad.runtime.autogen.amd.rdna4 import ins as R
  from tinygrad.runtime.autogen.amd.rdna4.enum import VIMAGEOp
  from tinygrad.runtime.autogen.amd.rdna4.operands import OPERANDS
  r = random.Random(seed)
  fmt = r.choice([20, 22, 42, 35, 24])     # 32_UINT, 32_FLOAT, 8_8_8_8_UNORM, 16_16_FLOAT, 16_16_SNORM
  d = (base >> 8) | fmt << 52 | 15 << 62 | 15 << 78 | 4 << 96 | 5 << 99 | 6 << 102 | 7 << 105 | 9 << 124 | 63 << 128
  insts = [R.s_mov_b32(R.s[40 + i], (d >> (32 * i)) & 0xffffffff) for i in range(8)]
  insts += [R.v_mul_u32_u24_e32(R.v[i], r.randint(1, 7), R.v[0]) for i in range(1, 10)]
  insts += [R.v_and_b32_e32(R.v[i], r.choice([15, 19 | 16]) if i % 3 else 0x130013, R.v[i]) for i in range(1, 10)]   # < 20, a16 pairs
  insts += [R.v_mov_b32_e32(R.v[i], r.choice([r.randint(0, 1 << 31), _f(r.uniform(-2, 2))])) for i in range(10, 20)]
  atomics = [o for o in VIMAGEOp if "ATOMIC" in o.name]
  def op():
    a = dict(vaddr0=r.randint(1, 9), vaddr1=r.randint(1, 9), vaddr2=r.randint(1, 9), rsrc=40, dim=1, a16=r.randint(0, 1))
    k = r.random()
    if k < 0.35:
      f = r.choice([R.image_load, R.image_load_pck, R.image_load_mip, R.image_load_pck_sgn])
      return f(vdata=R.v[10:13], dmask=r.randint(1, 15), d16=r.randint(0, 1), tfe=r.randint(0, 1), **a)
    if k < 0.7:
      f = r.choice([R.image_store, R.image_store_pck, R.image_store_mip])
      return f(vdata=R.v[14:17], dmask=r.randint(1, 15), d16=r.randint(0, 1), **a)
    o = r.choice(atomics)
    if "BVH" in o.name: o = VIMAGEOp.IMAGE_ATOMIC_ADD_UINT
    nreg = OPERANDS[o]["vdata"][1] // 32
    lo = r.randint(10, 16)
    return getattr(R, o.name.lower())(vdata=R.v[lo:lo + nreg - 1] if nreg > 1 else R.v[lo], dmask=3 if "CMPSWAP" in o.name else 1,
                                      th=r.randint(0, 1), **a)
  insts += [op() for _ in range(n)]
  return b"".join(i.to_bytes() for i in insts) + R.s_endpgm().to_bytes()

@pytest.mark.parametrize("seed", range(3))
def test_random_vimage_programs_agree(seed):
  import numpy as np
  from mockgpu.emu.memory import MemoryMap
  init = np.random.default_rng(seed).integers(0, 1 << 32, 1024, dtype=np.uint32)
  res = []
  for b in ("c", "python"):
    raw = np.zeros(1024 + 64, np.uint32); base = (raw.ctypes.data + 255) & ~255
    img = raw[(base - raw.ctypes.data) // 4:][:1024]; img[:] = init
    mem = MemoryMap(); mem.add(base, 4096, "image")
    st = run_code(vimage_program(seed, base), mem, arch="gfx1201", backend=b, capture=True, op_counts=True)
    res.append((st, img.copy()))
  (c, cm), (p, pm) = res
  assert (c.instructions, c.op_counts) == (p.instructions, p.op_counts)
  for reg in range(20): assert c.state.vgprs[reg] == p.state.vgprs[reg], f"v{reg}"
  np.testing.assert_array_equal(cm, pm)
