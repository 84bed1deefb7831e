"""VOP2: float and integer arithmetic against numpy, VCC carry chains, v_cndmask, literal forms (FMAMK/FMAAK), FMAC."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import lanes, f32

rng = np.random.default_rng(1)

def test_float_binops():
  a, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
  for op, ref in ((v_add_f32_e32, a + b), (v_sub_f32_e32, a - b), (v_mul_f32_e32, a * b), (v_max_f32_e32, np.maximum(a, b)),
                  (v_min_f32_e32, np.minimum(a, b))):
    out, _ = lanes([op(v[5], v[2], v[3])], a, b)
    np.testing.assert_array_equal(out.view(np.float32), ref.astype(np.float32))

def test_fmac_and_literal_forms():
  a, b, c = (rng.standard_normal(32).astype(np.float32) for _ in range(3))
  out, _ = lanes([v_mov_b32_e32(v[5], v[4]), v_fmac_f32_e32(v[5], v[2], v[3])], a, b, c)
  np.testing.assert_allclose(out.view(np.float32), a * b + c, rtol=1e-6, atol=1e-6)
  out, _ = lanes([v_fmamk_f32_e32(v[5], v[2], v[3], literal=f32(3.0))], a, b)
  np.testing.assert_allclose(out.view(np.float32), a * 3.0 + b, rtol=1e-6, atol=1e-6)
  out, _ = lanes([v_fmaak_f32_e32(v[5], v[2], v[3], literal=f32(-2.0))], a, b)
  np.testing.assert_allclose(out.view(np.float32), a * b - 2.0, rtol=1e-6, atol=1e-6)

def test_integer_ops_and_inline_constants():
  a, b = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32), rng.integers(0, 32, 32).astype(np.uint32)
  out, _ = lanes([v_lshlrev_b32_e32(v[5], v[3], v[2])], a, b)
  np.testing.assert_array_equal(out, (a.astype(np.uint64) << b).astype(np.uint32))
  out, _ = lanes([v_xor_b32_e32(v[5], -1, v[2])], a)
  np.testing.assert_array_equal(out, ~a)
  out, _ = lanes([v_mul_u32_u24_e32(v[5], v[2], v[3])], a, b)
  np.testing.assert_array_equal(out, ((a & 0xffffff).astype(np.uint64) * b).astype(np.uint32))

def test_carry_chain_64bit_add():
  a, b = rng.integers(0, 2**63, 32, dtype=np.uint64), rng.integers(0, 2**63, 32, dtype=np.uint64)
  lo = lambda x: (x & 0xffffffff).astype(np.uint32)
  out, _ = lanes([v_add_co_u32(v[5], VCC_LO, v[2], v[3]), v_add_co_ci_u32_e32(v[6], v[4], v[4])], lo(a), lo(b), np.zeros(32, np.uint32), out_words=2)
  want_carry = ((a & 0xffffffff) + (b & 0xffffffff)) >> 32
  np.testing.assert_array_equal(out[0::2], lo(a + b))
  np.testing.assert_array_equal(out[1::2], want_carry.astype(np.uint32))

def test_cndmask_uses_vcc():
  a, b = np.arange(32, dtype=np.uint32), np.arange(32, dtype=np.uint32) + 100
  out, _ = lanes([s_mov_b32(VCC_LO, 0xaaaaaaaa), v_cndmask_b32_e32(v[5], v[2], v[3])], a, b)
  np.testing.assert_array_equal(out, np.where(np.arange(32) % 2 == 1, b, a))

DX9_CASES = np.array([(0, 3, 1), (0, np.inf, 2), (-0.0, np.nan, 5), (4, 0, -0.0), (0, 3, -0.0), (np.inf, 0, 1), (2, 3, 1), (-1.5, 2, 0.25)], np.float32)

def dx9_want(a, b, c):
  """DX9 rule: a zero multiplicand makes the product +0 (even times INF or NaN), then the addend is added (+0 + -0 = +0)."""
  with np.errstate(invalid="ignore"): fma = (a.astype(np.float64) * b + c).astype(np.float32)   # exact for these values
  return np.where((a == 0) | (b == 0), np.float32(0) + c, fma)

@pytest.mark.parametrize("backend", ["c", "python"])
def test_dx9_zero_multiplicand(backend):
  a, b, c = (np.resize(DX9_CASES[:, i], 32) for i in range(3))
  for ops in ([v_mov_b32_e32(v[5], v[4]), v_fmac_dx9_zero_f32_e32(v[5], v[2], v[3])], [v_mov_b32_e32(v[5], v[4]), v_fmac_dx9_zero_f32_e64(v[5], v[2], v[3])],
              [v_fma_dx9_zero_f32(v[5], v[2], v[3], v[4])]):
    out, _ = lanes(ops, a, b, c, backend=backend)
    np.testing.assert_array_equal(out, dx9_want(a, b, c).view(np.uint32), err_msg=repr(ops[-1]))   # bit-exact: +0, not -0
  out, _ = lanes([v_mul_dx9_zero_f32_e32(v[5], v[2], v[3])], a, b, backend=backend)
  np.testing.assert_array_equal(out, dx9_want(a, b, np.zeros(32, np.float32)).view(np.uint32))

def test_valu_pseudocode_reads_only_its_operands():
  """Every VALU entry's pseudocode reads only the sources its operand table gives the op: a source it has not is never set
  up by the handlers (the C handler would read an uninitialised field). A text that does needs a corrections.FIXES entry."""
  from mockgpu.emu.arch import ARCHS
  from mockgpu.emu.gen_c import _VALU, _opinfo, _usage, semantics_entry
  from mockgpu.emu.isa import formats, operands
  from mockgpu.pcode.tables import entries
  bad = []
  for arch in ARCHS.values():
    ents, tab = entries(arch.family), operands(arch.family)
    for f in (f for f in formats(arch.family) if f.name in _VALU):
      for op in sorted(f.valid):
        m = f.enum(op)
        if (e := semantics_entry(m, ents)) not in ents: continue
        sb, reads = _opinfo(tab.get(m, {}), f.name, m.name)[0], _usage(arch.family, ents, e).reads
        bad += [f"{arch.name} {m.name} reads S{i}" for i in range(3) if f"S{i}" in reads and not sb[i]]
  assert bad == []
