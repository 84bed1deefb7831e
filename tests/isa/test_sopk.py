"""SOPK: 16-bit immediates (sign extension), compares into SCC, add with overflow, the wave64 subvector loop."""
import pytest
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

@pytest.mark.parametrize("backend", ["c", "python"])
def test_s_version_does_nothing(backend):
  """S_VERSION: "Do nothing - for use by tools only" (the ISA text under its pseudocode `nop()`): no register, SCC or PC change."""
  st = run([s_mov_b32(s[4], 7), s_cmp_eq_u32(s[4], 7), s_version(simm16=0x1234), s_cselect_b32(s[5], s[4], 0)], sgprs=(), backend=backend)
  assert st.state.sgprs[5] == 7 and st.state.scc == 1 and st.instructions == 5

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("wave64, lo, hi", [(True, 0x0000ff0f, 0xf0000001), (True, 0, 0x80000000), (True, 0x3, 0), (True, 0, 0), (False, 0xff00ff00, 0)])
def test_subvector_loop(backend, wave64, lo, hi):
  """S_SUBVECTOR_LOOP_BEGIN/END (the rule in docs/emu.md): a wave64 runs the block once per non-empty EXEC half, low half
  first, SDST holding the other half; EXEC is whole again after the END. wave32 has no high half: the block runs once."""
  body = [s_add_u32(s[10], s[10], 1), v_add_nc_u32_e32(v[1], s[10], v[1]), s_cmp_eq_u32(s[10], 1),
          s_cselect_b64(s[20:21], EXEC, s[20:21]), s_cselect_b64(s[22:23], s[22:23], EXEC)]
  nb = sum(len(i.to_bytes()) for i in body) // 4
  pre = [s_mov_b32(s[10], 0), *(s_mov_b32(s[20 + k], 0xd0d) for k in range(4)), s_mov_b32(EXEC_LO, lo), s_mov_b32(EXEC_HI, hi)]
  prog = pre + [s_subvector_loop_begin(s[4], nb), *body, s_subvector_loop_end(s[4], -(nb + 1) & 0xffff), s_mov_b64(s[24:25], EXEC)]
  st = run(prog, sgprs=(), block=(64 if wave64 else 32, 1, 1), wave64=wave64, backend=backend)
  g, n = st.state.sgprs, 64 if wave64 else 32
  halves = [h for h in ((lo, 0), (0, hi)) if h[0] | h[1]]            # the passes, in order: low half, then high half
  d = lambda a: g[a] | g[a + 1] << 32
  assert g[10] == len(halves) and d(24) == lo | hi << 32
  assert d(20) == (halves[0][0] | halves[0][1] << 32 if halves else 0xd0d_00000d0d)
  assert d(22) == (halves[1][1] << 32 if len(halves) == 2 else 0xd0d_00000d0d)
  assert g[4] == (lo if len(halves) == 2 else 0)
  ex = lo | hi << 32
  want = [(halves.index(next(h for h in halves if (h[0] | h[1] << 32) >> l & 1)) + 1) if ex >> l & 1 else 0 for l in range(n)]
  assert list(st.state.vgprs[1][:n]) == want
  assert st.instructions == len(pre) + 1 + len(halves) * (len(body) + 1) + (lo == 0) + 2   # BEGIN jumps to END when EXEC_LO is 0
