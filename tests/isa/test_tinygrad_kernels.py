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
