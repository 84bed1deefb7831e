"""VOPC: compares write VCC (inactive lanes read 0), V_CMPX writes EXEC, NaN ordering, class tests."""
import numpy as np
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import lanes

rng = np.random.default_rng(5)
def mask(bits): return sum(int(b) << i for i, b in enumerate(bits))

def test_cmp_lt_f32_with_nan():
  a, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
  a[3] = np.nan
  _, st = lanes([v_cmp_lt_f32_e32(v[2], v[3])], a, b)
  assert st.state.vcc == mask(a < b)
  _, st = lanes([v_cmp_neq_f32_e32(v[2], v[3])], a, b)       # unordered compare: true for NaN
  assert st.state.vcc == mask(~(a == b))

def test_cmp_lg_nlg_are_ordered():
  # LG is "less than or greater than" (LLVM's fcmp one): false when either input is NaN; NLG (fcmp ueq) is its complement, true on NaN;
  # the integer NE entries spell the same operator `<>` and are plain !=
  a, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
  a[3], b[5], a[7], b[7], b[9] = np.nan, np.nan, np.nan, np.nan, a[9]
  _, st = lanes([v_cmp_lg_f32_e32(v[2], v[3])], a, b)
  assert st.state.vcc == mask((a < b) | (a > b))
  _, st = lanes([v_cmp_nlg_f32_e32(v[2], v[3])], a, b)
  assert st.state.vcc == mask(~((a < b) | (a > b)))
  i = rng.integers(-3, 3, 32).astype(np.int32)
  _, st = lanes([v_cmp_ne_i32_e32(v[2], v[3])], i.view(np.uint32), np.roll(i, 1).view(np.uint32))
  assert st.state.vcc == mask(i != np.roll(i, 1))

def test_cmp_inactive_lanes_are_zero():
  _, st = lanes([s_mov_b32(EXEC_LO, 0x0000ffff), v_cmp_le_u32_e32(0, v[2])], np.arange(32, dtype=np.uint32))
  assert st.state.vcc == 0x0000ffff

def test_cmpx_writes_exec():
  a = rng.integers(-5, 5, 32).astype(np.int32)
  _, st = lanes([v_cmpx_gt_i32_e32(0, v[2])], a.view(np.uint32))
  assert st.state.exec == mask(0 > a)

def test_cmp_class():
  a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40] * 4, np.float32)
  _, st = lanes([v_cmp_class_f32_e32(v[2], v[3])], a, np.full(32, 0b1000000111, np.uint32))   # sNaN, qNaN, -inf, +inf
  assert st.state.vcc == mask(np.isnan(a) | np.isinf(a))
