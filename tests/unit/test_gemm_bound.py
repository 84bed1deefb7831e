"""mockgpu.emu.gemm without the emulator: the error bound holds for float32 accumulation simulated in numpy (and a wrong
product term at small K breaks it), bf16 rounding, the sweep, kernel-argument packing and the label assembler."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import s_nop, s_cbranch_scc1, s_branch, s_endpgm
from mockgpu.emu.errors import EmuError
from mockgpu.emu.gemm import Branch, assemble, error_bound, to_bits, from_bits, sweep_shapes, _kernargs, load_kernel

def accumulate(A, B, acc, order="seq"):
  """C = A @ B with every product and sum rounded to `acc` (numpy dtype), in sequential or pairwise order."""
  P = (A[:, :, None] * B[None, :, :]).astype(acc)   # products (exact for 16-bit inputs in f32)
  if order == "seq":
    c = np.zeros((A.shape[0], B.shape[1]), acc)
    for k in range(A.shape[1]): c = (c + P[:, k]).astype(acc)
    return c
  while P.shape[1] > 1:
    if P.shape[1] % 2: P = np.concatenate([P, np.zeros_like(P[:, :1])], 1)
    P = (P[:, 0::2] + P[:, 1::2]).astype(acc)
  return P[:, 0]

@pytest.mark.parametrize("K,order,out", [(16, "seq", "f32"), (256, "seq", "f32"), (1024, "pair", "f32"), (256, "seq", "f16"), (16, "seq", "f16")])
def test_bound_holds_for_f32_accumulation(K, order, out):
  rng = np.random.default_rng(K)
  A, B = (from_bits(to_bits(rng.uniform(-1, 1, sh), "f16"), "f16") for sh in ((8, K), (K, 8)))
  got = accumulate(A, B, np.float32, order).astype(np.float64)
  if out == "f16": got = got.astype(np.float16).astype(np.float64)
  ref, absprod = A @ B, np.abs(A) @ np.abs(B)
  b = error_bound(K, "f32", out, ref, absprod)
  assert (np.abs(got - ref) <= b).all()
  if out == "f32": assert (np.abs(got - ref) / b).max() < 0.5   # typical errors grow as sqrt(K), the bound as K

def test_bound_formula_and_a_dropped_term_at_small_k():
  ref, absprod = np.array([3.0]), np.array([4.0])
  assert error_bound(16, "f32", "f32", ref, absprod)[0] == 2 * 16 * 2.0 ** -24 * 4 + 16 * 2.0 ** -150
  acc = 2 * 16 * 2.0 ** -24 * 4 + 16 * 2.0 ** -150
  assert error_bound(16, "f32", "f16", ref, absprod)[0] == acc + 2.0 ** -11 * (3 + acc) + 2.0 ** -25
  rng = np.random.default_rng(1)
  A, B = rng.uniform(-1, 1, (4, 16)), rng.uniform(-1, 1, (16, 4))
  wrong = A[:, 1:] @ B[1:]   # one K term missing
  assert (np.abs(wrong - A @ B) > error_bound(16, "f32", "f32", A @ B, np.abs(A) @ np.abs(B))).all()

def test_bf16_rounds_to_nearest_even():
  x = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -2.0, 1 + 2.0 ** -8 + 2.0 ** -20])
  assert to_bits(x, "bf16").tolist() == [0x3f80, 0x3f82, 0xc000, 0x3f81]
  assert from_bits(np.array([0x3f82], np.uint16), "bf16").tolist() == [1.015625]

def test_sweep_adds_edge_sizes_the_kernel_supports():
  assert sweep_shapes(load_kernel("wmma_gfx1100")) == [(1, 1, 16), (16, 16, 16), (17, 17, 32), (32, 48, 16), (47, 17, 64), (64, 64, 64),
                                                       (100, 36, 256), (128, 128, 128)]
  assert sweep_shapes(load_kernel("tinygrad_matmul256_gfx1100")) == [(256, 256, 256)]   # fixed_shapes: nothing added

def test_kernel_arguments_align_pointers():
  assert _kernargs(("M", "A", "K"), {"M": 7, "A": 0x1122334455667788, "K": 9}) == [7, 0, 0x55667788, 0x11223344, 9]
  with pytest.raises(EmuError, match="names 'D'"): _kernargs(("D",), {})

def test_assemble_resolves_labels_both_ways():
  code = assemble(["top:", s_nop(simm16=0), Branch(s_cbranch_scc1, "end"), s_nop(simm16=0), Branch(s_branch, "top"), "end:", s_endpgm()])
  words = np.frombuffer(code, np.uint32)
  assert len(words) == 5 and words[1] & 0xffff == 2 and words[3] & 0xffff == 0xfffc   # +2 dwords forward, -4 back to the top
  with pytest.raises(EmuError, match="unknown label 'nowhere'"): assemble([Branch(s_branch, "nowhere")])
