"""SOPK: 16-bit immediates (sign extension), compares into SCC, add with overflow."""
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import run

def test_s_movk_sign_extends():
  st = run([s_movk_i32(s[4], 0x8000), s_movk_i32(s[5], 0x7fff)], sgprs=())
  assert st.state.sgprs[4] == 0xffff8000 and st.state.sgprs[5] == 0x7fff

def test_s_addk_and_cmpk():
  st = run([s_movk_i32(s[4], 10), s_addk_i32(s[4], 0xfffe), s_cmpk_eq_i32(s[4], 8), s_cselect_b32(s[5], 1, 0),
            s_cmpk_lt_u32(s[4], 4), s_cselect_b32(s[6], 1, 0)], sgprs=())
  assert st.state.sgprs[4] == 8 and st.state.sgprs[5] == 1 and st.state.sgprs[6] == 0

def test_s_getreg_hw_id_reads_wave_id():
  # HW_REG_HW_ID1 (23), offset 0, size 5 -> the wave's id within the workgroup (wave 0 is captured)
  st = run([s_getreg_b32(s[4], 23 | (4 << 11))], sgprs=(), block=(64, 1, 1))
  assert st.state.sgprs[4] == 0
