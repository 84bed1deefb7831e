"""Random programs (fixed seeds) run on the generated-C and the Python reference backends: identical registers, LDS
traffic, instruction counts and per-opcode counts. Both backends share the decoder tables and operand rules; the
semantics come from two independent pseudocode backends (generated C vs mockgpu.pcode.pyeval)."""
import random, struct
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from mockgpu.emu.api import run_code
from isa_harness import code

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
  ]
  insts += [r.choice(gens)() for _ in range(n)]
  return code(*insts)

@pytest.mark.parametrize("seed", range(6))
def test_random_programs_agree(seed):
  prog = program(seed)
  res = [run_code(prog, backend=b, block=(8, 1, 1), lds_bytes=512, capture=True, op_counts=True) for b in ("c", "python")]
  c, p = res
  assert (c.instructions, c.op_counts) == (p.instructions, p.op_counts)
  assert c.state.sgprs == p.state.sgprs and (c.state.exec, c.state.vcc, c.state.scc) == (p.state.exec, p.state.vcc, p.state.scc)
  for reg in range(32): assert c.state.vgprs[reg] == p.state.vgprs[reg], f"v{reg}"

def test_fault_reports_agree():
  from mockgpu.emu.errors import GPUFault
  prog = code(v_lshlrev_b32_e32(v[1], 4, v[0]), ds_store_b32(addr=v[1], data0=v[0]))
  reps = []
  for b in ("c", "python"):
    with pytest.raises(GPUFault) as ei: run_code(prog, backend=b, block=(32, 1, 1), lds_bytes=256)
    reps.append(ei.value.report)
  assert reps[0] == reps[1]
