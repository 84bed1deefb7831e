"""Kernels tinygrad's own compiler emitted (fixtures/kernels, LLVM for gfx1100), run on the emulator; numpy is the oracle."""
import numpy as np
from mockgpu.emu.codeobj import load_elf
from mockgpu.emu.fixtures import load_fixture
from mockgpu.emu.launch import prepare
from isa_harness import Bufs

def test_matmul_256_f32():
  elf, meta = load_fixture("matmul256_f32_gfx1100_k0")
  co = load_elf(elf)
  assert co.wave32 and co.user_sgpr_count >= 2
  rng = np.random.default_rng(7)
  a, b = rng.standard_normal((256, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
  out = np.zeros((256, 256), np.float32)
  bf = Bufs(out, a, b)
  st = prepare(co, "gfx1100", meta["grid"], meta["block"], [bf.addr(0), bf.addr(1), bf.addr(2)], memory=bf.mem).run()
  np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
  assert st.workgroups == 32 and st.waves == 32 * 4

def test_elementwise_1m_f32_both_backends():
  # E_8192_32_4: x * y + 1, four elements per lane (B128 loads/stores, 64-bit address arithmetic); the Python backend runs the
  # first 64 workgroups (128 elements each). LLVM contracts x * y + 1 into one FMA (one rounding); numpy's float64 x * y + 1
  # rounded to float32 rounds twice, which agrees with it bit for bit on these inputs (seeded)
  elf, meta = load_fixture("elementwise1m_f32_gfx1100_k0")
  assert meta["name"] == "E_8192_32_4" and meta["grid"] == [8192, 1, 1] and meta["block"] == [32, 1, 1]
  rng = np.random.default_rng(8)
  x, y = rng.standard_normal(1 << 20).astype(np.float32), rng.standard_normal(1 << 20).astype(np.float32)
  ref = (x.astype(np.float64) * y + 1).astype(np.float32)
  for backend, grid in (("c", meta["grid"]), ("python", [64, 1, 1])):
    out = np.zeros(1 << 20, np.float32)
    bf = Bufs(out, x, y)
    st = prepare(load_elf(elf), "gfx1100", grid, meta["block"], [bf.addr(0), bf.addr(1), bf.addr(2)], memory=bf.mem).run(backend=backend)
    n = grid[0] * 128
    assert st.workgroups == grid[0] and st.instructions == 28 * grid[0], backend
    np.testing.assert_array_equal(out[:n], ref[:n]); assert not out[n:].any(), backend
