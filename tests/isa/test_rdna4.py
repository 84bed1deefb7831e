"""RDNA4 (gfx1201): the same engine with the rdna4 tables. Workgroup ids arrive in TTMP9/TTMP7, memory instructions use the
VGLOBAL/VSCRATCH encodings and RDNA4's address built-ins; tinygrad's gfx1201 matmul kernel is checked against numpy."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from mockgpu.emu.api import run_code
from mockgpu.emu.codeobj import load_elf
from mockgpu.emu.fixtures import load_fixture
from mockgpu.emu.launch import prepare
from isa_harness import Bufs

def r4code(*insts) -> bytes: return b"".join(i.to_bytes() for i in insts) + R4.s_endpgm().to_bytes()

def test_ttmp_workgroup_ids_and_salu():
  st = run_code(r4code(R4.s_add_co_u32(R4.s[4], R4.ttmp[9], 5), R4.s_mov_b32(R4.s[5], R4.ttmp[7])), arch="gfx1201", grid=(1, 1, 1),
                block=(32, 1, 1), capture=True)
  assert st.state.sgprs[4] == 5 and st.state.sgprs[5] == 0

@pytest.mark.parametrize("backend", ["c", "python"])
def test_global_load_store_and_wait(backend):
  # the DSL sizes vaddr as 64 bits regardless of saddr; only v1 is encoded and, with saddr, used as a 32-bit offset
  src, dst = np.arange(32, dtype=np.uint32) * 5, np.zeros(32, np.uint32)
  b = Bufs(src, dst)
  run_code(r4code(R4.v_lshlrev_b32_e32(R4.v[1], 2, R4.v[0]), R4.global_load_b32(vdst=R4.v[2], vaddr=R4.v[1:2], saddr=R4.s[0:1], ioffset=0),
                  R4.s_wait_loadcnt(simm16=0), R4.v_add_nc_u32_e32(R4.v[2], 1, R4.v[2]),
                  R4.global_store_b32(vaddr=R4.v[1:2], vsrc=R4.v[2], saddr=R4.s[2:3], ioffset=0)),
           b.mem, arch="gfx1201", block=(32, 1, 1), user_sgprs=b.sgprs(), rsrc2=4 << 1, backend=backend)
  np.testing.assert_array_equal(dst, src + 1)

def test_matmul_256_f32_gfx1201():
  elf, meta = load_fixture("matmul256_f32_gfx1201_k0")
  co = load_elf(elf)
  rng = np.random.default_rng(8)
  a, b = rng.standard_normal((256, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
  out = np.zeros((256, 256), np.float32)
  bf = Bufs(out, a, b)
  prepare(co, "gfx1201", meta["grid"], meta["block"], [bf.addr(0), bf.addr(1), bf.addr(2)], memory=bf.mem).run()
  np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("backend", ["c", "python"])
def test_int_clamp_and_swizzle(backend):
  # V_MAD_CO_U64_U32 and V_ADD3_U32 with clamp saturate the exact result; DS_SWIZZLE quad permute [3, 2, 1, 0] (ISA definition)
  M = (1 << 32) - 1
  p = [R4.v_mov_b32_e32(R4.v[1], -1), R4.v_mov_b32_e32(R4.v[2], -1), R4.v_mov_b32_e32(R4.v[3], -2), R4.v_mov_b32_e32(R4.v[4], -1),
       R4.v_mad_co_u64_u32(R4.v[5:6], R4.s[20], R4.v[1], R4.v[2], R4.v[3:4], clmp=1),
       R4.v_add3_u32(R4.v[7], R4.v[1], R4.v[2], R4.v[3], clmp=1), R4.v_add3_u32(R4.v[8], R4.v[1], 2, 3, clmp=0),
       R4.v_add_nc_u32_e32(R4.v[9], 50, R4.v[0]), R4.ds_swizzle_b32(vdst=R4.v[10], addr=R4.v[0], data0=R4.v[9], offset0=0x1b, offset1=0x80),
       R4.s_wait_dscnt(simm16=0), R4.s_endpgm()]
  st = run_code(b"".join(i.to_bytes() for i in p), arch="gfx1201", capture=True, backend=backend)
  g = st.state.vgprs
  assert (g[5][0], g[6][0]) == (M, M) and M * M + (M << 32 | (M - 1)) > 1 << 64   # (2^32-1)^2 + (2^64-2) saturates
  assert g[7][0] == M and g[8][0] == (M + 5) & M
  assert g[10][:8] == tuple(50 + (i & ~3) + 3 - (i & 3) for i in range(8))

@pytest.mark.parametrize("backend", ["c", "python"])
def test_sleep_var_wakeup_and_endpgm_saved(backend):
  """S_SLEEP_VAR (a sleep for SSRC0 time units) and S_WAKEUP are no-ops (execution is in order, nothing sleeps); S_ENDPGM_SAVED
  ends the wave like S_ENDPGM"""
  prog = b"".join(i.to_bytes() for i in (R4.s_mov_b32(R4.s[4], 1000), R4.s_sleep_var(R4.s[4]), R4.s_wakeup(), R4.s_mov_b32(R4.s[5], 2),
                                         R4.s_endpgm_saved(), R4.s_mov_b32(R4.s[5], 9)))
  st = run_code(prog, arch="gfx1201", block=(32, 1, 1), capture=True, backend=backend)
  assert (st.state.sgprs[4], st.state.sgprs[5], st.instructions) == (1000, 2, 5)

@pytest.mark.parametrize("backend", ["c", "python"])
def test_ds_condxchg32_rtn_b64(backend):
  """RDNA4 runs the same corrected DS_CONDXCHG32_RTN_B64 text: both dwords at (ADDR + offset) & 0xfff8 and +4 return their
  old value; each is replaced by the low 31 bits of its half of DATA when that half's bit 31 is set"""
  I = R4
  prog = [I.v_lshlrev_b32_e32(I.v[1], 3, I.v[0]), I.v_add_nc_u32_e32(I.v[2], 0x100, I.v[0]), I.v_add_nc_u32_e32(I.v[3], 0x200, I.v[0]),
          I.ds_store_b64(addr=I.v[1], data0=I.v[2:3]), I.v_or_b32_e32(I.v[4], 0x80000000, I.v[0]), I.v_mov_b32_e32(I.v[5], 7),
          I.v_subrev_nc_u32_e32(I.v[6], 2, I.v[1]), I.s_wait_dscnt(simm16=0),
          I.ds_condxchg32_rtn_b64(vdst=I.v[8:9], addr=I.v[6], data0=I.v[4:5], offset0=2), I.s_wait_dscnt(simm16=0),   # (8l - 2 + 2) & 0xfff8
          I.ds_load_b64(vdst=I.v[10:11], addr=I.v[1]), I.s_wait_dscnt(simm16=0)]
  st = run_code(r4code(*prog), arch="gfx1201", block=(32, 1, 1), lds_bytes=256, capture=True, backend=backend)
  vg = st.state.vgprs
  for l in range(32):
    assert (vg[8][l], vg[9][l], vg[10][l], vg[11][l]) == (0x100 + l, 0x200 + l, l, 0x200 + l), l

@pytest.mark.parametrize("backend", ["c", "python"])
def test_missing_pcode_builtin_is_unsupported_on_both_backends(backend):
  # RDNA4's DS_BVH_STACK_PUSH4_POP1 pseudocode calls DECODE_ADDR, a built-in the emulator does not provide (docs/emu.md)
  from mockgpu.emu.errors import InvalidInstruction
  with pytest.raises(InvalidInstruction, match="DECODE_ADDR") as ei:
    run_code(r4code(R4.ds_bvh_stack_push4_pop1_rtn_b32(R4.v[1], R4.v[2], R4.v[3], R4.v[4:7])), arch="gfx1201", block=(32, 1, 1),
             lds_bytes=1024, backend=backend)
  assert "DS_BVH_STACK_PUSH4_POP1_RTN_B32" in ei.value.report.disasm and ei.value.report.kind == "invalid"
