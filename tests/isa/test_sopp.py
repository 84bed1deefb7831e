"""SOPP: branches (taken/not taken, backward loops), waits and nops as no-ops, S_BARRIER across waves, S_ENDPGM."""
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run, Bufs
import numpy as np
import pytest
from mockgpu.emu.errors import InvalidInstruction

def test_branch_skips_and_loops():
  # s4 counts a backward loop 5 times; s_branch jumps over an instruction that would clobber s5
  st = run([s_mov_b32(s[4], 0), s_mov_b32(s[5], 1), s_branch(simm16=1), s_mov_b32(s[5], 9),
            s_add_u32(s[4], s[4], 1), s_cmp_lt_u32(s[4], 5), s_cbranch_scc1(simm16=0xfffd)], sgprs=())
  assert st.state.sgprs[4] == 5 and st.state.sgprs[5] == 1
  assert st.instructions == 3 + 3 * 5 + 1

def test_cbranch_execz_vccz_scc0():
  st = run([s_mov_b32(s[4], 0), s_mov_b32(EXEC_LO, 0), s_cbranch_execz(simm16=1), s_mov_b32(s[4], 1),
            s_mov_b32(EXEC_LO, -1), s_mov_b32(VCC_LO, 0), s_cbranch_vccz(simm16=1), s_mov_b32(s[4], 2),
            s_cmp_eq_u32(0, 1), s_cbranch_scc0(simm16=1), s_mov_b32(s[4], 3)], sgprs=())
  assert st.state.sgprs[4] == 0

def test_waits_and_nops_do_nothing():
  st = run([s_mov_b32(s[4], 7), s_nop(simm16=3), s_waitcnt(simm16=0), s_delay_alu(simm16=1), s_waitcnt_vscnt(NULL, 0)], sgprs=())
  assert st.state.sgprs[4] == 7 and st.instructions == 6

def test_barrier_orders_lds_across_waves():
  # 4 waves: each lane writes its id to LDS, barrier, then reads its neighbour wave's slot (tid + 32) % 128
  out = np.zeros(128, np.uint32)
  b = Bufs(out)
  st = run([v_lshlrev_b32_e32(v[1], 2, v[0]),
            ds_store_b32(addr=v[1], data0=v[0]), s_waitcnt(simm16=0), s_barrier(),
            v_add_nc_u32_e32(v[2], 128, v[1]), v_and_b32_e32(v[2], 0x1ff, v[2]), ds_load_b32(vdst=v[3], addr=v[2]), s_waitcnt(simm16=0),
            global_store_b32(addr=v[1], data=v[3], saddr=s[0:1])], b, block=(128, 1, 1),
           lds_bytes=512)
  assert st.waves == 4
  np.testing.assert_array_equal(out, (np.arange(128) + 32) % 128)


@pytest.mark.parametrize("backend", ["c", "python"])
def test_endpgm_saved_ends_like_endpgm_and_wakeup_is_a_nop(backend):
  """S_ENDPGM_SAVED ends the wave (with the register capture) like S_ENDPGM; S_WAKEUP has nothing to wake (S_SLEEP is a
  no-op) and continues"""
  st = run([s_mov_b32(s[4], 1), s_wakeup(), s_mov_b32(s[5], 2), s_endpgm_saved(), s_mov_b32(s[4], 9)], sgprs=(), backend=backend)
  assert (st.state.sgprs[4], st.state.sgprs[5], st.instructions) == (1, 2, 4)

@pytest.mark.parametrize("backend", ["c", "python"])
def test_endpgm_ordered_ps_done_is_pixel_shader_only(backend):
  with pytest.raises(InvalidInstruction, match="S_ENDPGM_ORDERED_PS_DONE is pixel-shader only") as ei:
    run([s_mov_b32(s[4], 1), s_endpgm_ordered_ps_done()], sgprs=(), backend=backend)
  assert ei.value.report.pc == 4 and "S_ENDPGM_ORDERED_PS_DONE" in ei.value.report.disasm
