"""Matrix instructions (WMMA) against numpy, on both backends and in wave32 and wave64. The matrices are placed in VGPRs by
the lane layouts the ISA guides document (written out here independently of mockgpu.emu.matrix); inputs are small
integers (or exactly representable values) so that every product and sum is exact and numpy's matmul is the oracle."""
import numpy as np
import pytest
import tinygrad.runtime.autogen.amd.rdna3.ins as rdna3, tinygrad.runtime.autogen.amd.rdna4.ins as rdna4
from isa_harness import Bufs, run

rng = np.random.default_rng(11)
BACKENDS = ("c", "python")

def run_regs(mod, insts, inputs: dict, wave: int, backend: str, arch: str) -> np.ndarray:
  """Load inputs {first VGPR: [nregs][wave] u32} with global loads, run `insts`, return wave 0's VGPRs [256][wave]."""
  v, s = mod.v, mod.s
  bf = Bufs(*(np.ascontiguousarray(x, np.uint32).reshape(-1) for x in inputs.values()))
  ld = [mod.v_lshlrev_b32_e32(v[1], 2, v[0])]
  for j, (reg, x) in enumerate(inputs.items()):
    for i in range(len(x)):
      ld.append(rdna3.global_load_b32(vdst=v[reg + i], addr=v[1], saddr=s[2 * j:2 * j + 1], offset=i * 4 * wave) if mod is rdna3 else
                rdna4.global_load_b32(vdst=v[reg + i], vaddr=v[1:2], saddr=s[2 * j:2 * j + 1], ioffset=i * 4 * wave))
  ld.append(rdna3.s_waitcnt(simm16=0) if mod is rdna3 else rdna4.s_wait_loadcnt(simm16=0))
  st = run(ld + list(insts), bf, block=(wave, 1, 1), wave64=wave == 64, backend=backend, arch=arch)
  return np.array(st.state.vgprs, np.uint64).astype(np.uint32)

def bits_of(x, t):
  return {"f16": lambda: x.astype(np.float16).view(np.uint16).astype(np.uint32),
          "bf16": lambda: (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint32),
          "f32": lambda: x.astype(np.float32).view(np.uint32)}.get(t, lambda: x.astype(np.int64).astype(np.uint32))()

def value_of(u, t):
  if t == "f16": return (u & 0xffff).astype(np.uint16).view(np.float16).astype(np.float64)
  if t == "bf16": return ((u & 0xffff) << 16).astype(np.uint32).view(np.float32).astype(np.float64)
  if t == "f32": return u.astype(np.uint32).view(np.float32).astype(np.float64)
  return u.astype(np.uint32).view(np.int32).astype(np.int64)

def pack(rows, bits):
  """rows[lane] = the elements (raw bits) lane holds, in order from bit 0 of its first VGPR -> [nregs][lanes] u32."""
  rows = np.asarray(rows, np.uint64) & ((1 << bits) - 1)
  per = 32 // bits
  n = -(-rows.shape[1] // per)
  return np.array([[sum(int(r[i * per + j]) << (j * bits) for j in range(per) if i * per + j < len(r)) for r in rows] for i in range(n)], np.uint32)

# ---------------- RDNA3 (ISA guide 7.9) ----------------
# A: lane l holds row l%16 (K in order from bit 0), B: column l%16, lanes >= 16 repeat lanes 0..15.
# C/D: VGPR i, lane l holds (M = G*i + l/16, N = l%16) with G = wave/16; 16-bit C/D in the low or (OPSEL[2]) high half.
def r3_ab(X, bits, wave): return pack([X[l % 16] for l in range(wave)], bits)
def r3_cd(X, wave):
  G = wave // 16
  return np.array([[X[G * i + l // 16][l % 16] for l in range(wave)] for i in range(16 // G)], np.uint32)
def r3_cd_read(regs, wave):
  G = wave // 16
  return np.array([[regs[m // G][(m % G) * 16 + n] for n in range(16)] for m in range(16)])

R3 = {"v_wmma_f32_16x16x16_f16": ("f16", "f32"), "v_wmma_f32_16x16x16_bf16": ("bf16", "f32"), "v_wmma_f16_16x16x16_f16": ("f16", "f16"),
      "v_wmma_bf16_16x16x16_bf16": ("bf16", "bf16"), "v_wmma_i32_16x16x16_iu8": ("iu8", "i32"), "v_wmma_i32_16x16x16_iu4": ("iu4", "i32")}
ABITS = {"f16": 16, "bf16": 16, "iu8": 8, "iu4": 4, "fp8": 8, "bf8": 8}

def r3_case(name, wave, backend, *, neg=0, neg_hi=0, opsel=0, clmp=0, A=None, B=None, C=None, old=None, dst=32):
  ti, to = R3[name]
  lo, hi = {"iu4": (0, 16), "iu8": (0, 256)}.get(ti, (-3, 4))
  A = rng.integers(lo, hi, (16, 16)) if A is None else A
  B = rng.integers(lo, hi, (16, 16)) if B is None else B
  C = rng.integers(-8, 9, (16, 16)) if C is None else C
  a_raw, b_raw = bits_of(A, ti), bits_of(B, ti)
  ins = {8: r3_ab(a_raw, ABITS[ti], wave), 16: r3_ab(b_raw.T, ABITS[ti], wave)}
  cr = r3_cd(bits_of(C, to), wave)
  half = 16 if opsel & 4 else 0
  if to in ("f16", "bf16"): cr = (cr << half) | (old if old is not None else 0)
  ins[24] = cr
  na = ABITS[ti] // 2   # VGPRs of A and B: 16 elements per lane
  op = getattr(rdna3, name)(rdna3.v[dst:dst + 7], rdna3.v[8:7 + na], rdna3.v[16:15 + na], rdna3.v[24:31], neg=neg, neg_hi=neg_hi, opsel=opsel,
                            clmp=clmp)
  regs = run_regs(rdna3, [op], ins, wave, backend, "gfx1100")
  D = regs[dst:dst + (8 if wave == 32 else 4)]
  return A, B, C, D, half

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("wave", (32, 64))
@pytest.mark.parametrize("name", list(R3))
def test_rdna3_wmma_matches_numpy(name, wave, backend):
  ti, to = R3[name]
  A, B, C, D, _ = r3_case(name, wave, backend)
  got = r3_cd_read(value_of(D, to), wave)
  np.testing.assert_array_equal(got, A.astype(np.int64) @ B + C)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["v_wmma_f16_16x16x16_f16", "v_wmma_bf16_16x16x16_bf16"])
def test_rdna3_wmma_16bit_result_in_high_half(name, backend):
  # in place (D = C, as LLVM's tied form): C is read from the high halves, D written there, the low halves are preserved
  old = rng.integers(0, 1 << 16, (8, 32)).astype(np.uint32)
  A, B, C, D, half = r3_case(name, 32, backend, opsel=4, old=old, dst=24)
  assert half == 16
  np.testing.assert_array_equal(D & 0xffff, old)
  np.testing.assert_array_equal(r3_cd_read(value_of(D >> 16, R3[name][1]), 32), A.astype(np.int64) @ B + C)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,bits", [("v_wmma_i32_16x16x16_iu8", 8), ("v_wmma_i32_16x16x16_iu4", 4)])
def test_rdna3_wmma_int_signedness_and_clamp(name, bits, backend):
  A, B = rng.integers(0, 1 << bits, (16, 16)), rng.integers(0, 1 << bits, (16, 16))
  sx = lambda X: np.where(X >= 1 << (bits - 1), X - (1 << bits), X)
  for neg, (a, b) in {0: (A, B), 1: (sx(A), B), 2: (A, sx(B)), 3: (sx(A), sx(B))}.items():
    _, _, C, D, _ = r3_case(name, 32, backend, neg=neg, A=A, B=B)
    np.testing.assert_array_equal(r3_cd_read(value_of(D, "i32"), 32), a @ b + C)
  m, ones = (1 << bits) - 1, np.full((16, 16), (1 << bits) - 1)
  for neg, c0, total in ((0, 2**31 - 10, 16 * m * m), (1, -2**31 + 10, -16 * m)):   # neg=1: A's all-ones elements are -1
    for clmp in (0, 1):
      _, _, _, D, _ = r3_case(name, 32, backend, A=ones, B=ones, C=np.full((16, 16), c0), clmp=clmp, neg=neg)
      exact = c0 + total
      want = min(max(exact, -2**31), 2**31 - 1) if clmp else (exact + 2**31) % 2**32 - 2**31
      assert (r3_cd_read(value_of(D, "i32"), 32) == want).all(), (neg, clmp)

@pytest.mark.parametrize("backend", BACKENDS)
def test_rdna3_wmma_float_modifiers(backend):
  # NEG[i] negates the A/B elements in the low halves (even K), NEG_HI[i] those in the high halves; NEG_HI[2] = |C|, NEG[2] = -C
  A, B, C, D, _ = r3_case("v_wmma_f32_16x16x16_f16", 32, backend, neg=0b101, neg_hi=0b110)
  sa = np.where(np.arange(16) % 2 == 0, -1, 1)     # A: low halves negated
  sb = np.where(np.arange(16) % 2 == 1, -1, 1)     # B: high halves negated
  want = (A * sa) @ (B * sb[:, None]) - np.abs(C)
  np.testing.assert_array_equal(r3_cd_read(value_of(D, "f32"), 32), want)

@pytest.mark.parametrize("backend", BACKENDS)
def test_rdna3_wmma_accumulates_in_f32_in_k_order(backend):
  # f16 output: the sum is kept in f32 and rounded to f16 once; 2048 + 1 + 1 ... is exact in f32, not in f16
  A, B = np.ones((16, 16)), np.ones((16, 16))
  C = np.full((16, 16), 2048.0)
  A, B, C, D, _ = r3_case("v_wmma_f16_16x16x16_f16", 32, backend, A=A, B=B, C=C)
  np.testing.assert_array_equal(r3_cd_read(value_of(D, "f16"), 32), np.full((16, 16), 2064.0))
  # f32 output, K order: C = 2^24, products +1 each: every partial sum 2^24 + 1 rounds back to 2^24 (RNE)
  A, B, C, D, _ = r3_case("v_wmma_f32_16x16x16_f16", 32, backend, A=np.ones((16, 16)), B=np.ones((16, 16)), C=np.full((16, 16), 2.0**24))
  np.testing.assert_array_equal(r3_cd_read(value_of(D, "f32"), 32), np.full((16, 16), 2.0**24))

@pytest.mark.parametrize("backend", BACKENDS)
def test_rdna3_wmma_inline_constant_c(backend):
  A, B = rng.integers(-3, 4, (16, 16)), rng.integers(-3, 4, (16, 16))
  ins = {8: r3_ab(bits_of(A, "f16"), 16, 32), 16: r3_ab(bits_of(B, "f16").T, 16, 32)}
  op = rdna3.v_wmma_f32_16x16x16_f16(rdna3.v[32:39], rdna3.v[8:15], rdna3.v[16:23], 1.0)
  regs = run_regs(rdna3, [op], ins, 32, backend, "gfx1100")
  np.testing.assert_array_equal(r3_cd_read(value_of(regs[32:40], "f32"), 32), A @ B + 1)

@pytest.mark.parametrize("family", ["rdna3", "rdna4", "cdna"])
def test_layout_tables_fill_the_wheels_operands(family):
  # wave32: each operand's elements occupy exactly the VGPRs the wheel's operand table gives the instruction, no two
  # elements share bits; wave64 needs the same or fewer VGPRs
  from mockgpu.emu.isa import operands
  from mockgpu.emu.matrix import ops, ETYPES
  ops_tab = {m.name: o for m, o in operands(family).items()}
  # the wheel has no operand table for the XF32 MFMAs tinygrad adds from the PDF: LLVM's register classes (VReg_64 A/B,
  # VReg_128 / VReg_512 D) stand in
  ops_tab |= {f"V_MFMA_F32_{s}_XF32": {"src0": (None, 64), "src1": (None, 64), "vdst": (None, d)} for s, d in (("16X16X8", 128), ("32X32X4", 512))}
  assert ops(family)
  for name, op in ops(family).items():
    for wave in op.lay:   # CDNA: wave64 only; F8F6F4 tables hold element indices (FP8: 8 bits each, the wheel's width)
      for key, lay, t in (("src0", op.lay[wave][0], op.a), ("src1", op.lay[wave][1], op.b), ("vdst", op.lay[wave][2], op.c)):
        bits = ETYPES[t][0]
        if t == "f8f6f4":
          lay = tuple((p & 255) | (((p >> 8) * 32 + (p >> 16)) * 8 // 32) << 8 | (((p >> 8) * 32 + (p >> 16)) * 8 % 32) << 16 for p in lay)
        cells = {((p >> 8) & 255, p & 255, ((p >> 16) + j)) for p in lay for j in range(bits)}
        assert len(cells) == len(lay) * bits, (name, key, wave)
        nregs = max((p >> 8) & 255 for p in lay) + max(1, bits // 32)
        want = ops_tab[name][key][1] // 32
        assert nregs == want if wave == 32 or family == "cdna" else nregs <= want, (name, key, wave, nregs, want)

# ---------------- RDNA4 (ISA guide 7.9): no repeated lanes ----------------
# A: lane l holds row l%16; lane group g = l/16 of G = wave/16 holds E = K/G elements in two chunks of E/2 consecutive K:
# chunk c of group g is K = (c*G + g)*E/2 ...; B the same with columns. C/D: lane l holds column l%16 and rows
# (l/16)*R .. (l/16)*R + R-1 (R = 256/wave), element i of the lane from bit 0 of its first VGPR (16-bit types: two per VGPR).
FP8_INT = {"fp8": {0: 0x00, 1: 0x38, 2: 0x40, 3: 0x44}, "bf8": {0: 0x00, 1: 0x3c, 2: 0x40, 3: 0x42}}   # OCP E4M3 / E5M2
def r4_bits(X, t):
  if t in FP8_INT: return np.vectorize(lambda x: FP8_INT[t][abs(int(x))] | (0x80 if x < 0 else 0))(X).astype(np.uint32)
  return bits_of(X, t)
def r4_ab(X, bits, wave):
  G, K = wave // 16, X.shape[1]
  E = K // G
  return pack([[X[l % 16][(e // (E // 2) * G + l // 16) * (E // 2) + e % (E // 2)] for e in range(E)] for l in range(wave)], bits)
def r4_cd(X, bits, wave):
  R = 256 // wave
  return pack([[X[(l // 16) * R + i][l % 16] for i in range(R)] for l in range(wave)], bits)
def r4_cd_read(D, bits, wave):
  R, per = 256 // wave, 32 // bits
  el = lambda l, i: (int(D[i // per][l]) >> (i % per * bits)) & ((1 << bits) - 1)
  return np.array([[el((m // R) * 16 + n, m % R) for n in range(16)] for m in range(16)], np.uint32)

R4 = {n.lower(): t for n, t in {"V_WMMA_F32_16X16X16_F16": ("f16", "f16", "f32"), "V_WMMA_F32_16X16X16_BF16": ("bf16", "bf16", "f32"),
      "V_WMMA_F16_16X16X16_F16": ("f16", "f16", "f16"), "V_WMMA_BF16_16X16X16_BF16": ("bf16", "bf16", "bf16"),
      "V_WMMA_I32_16X16X16_IU8": ("iu8", "iu8", "i32"), "V_WMMA_I32_16X16X16_IU4": ("iu4", "iu4", "i32"),
      "V_WMMA_I32_16X16X32_IU4": ("iu4", "iu4", "i32"), "V_WMMA_F32_16X16X16_FP8_FP8": ("fp8", "fp8", "f32"),
      "V_WMMA_F32_16X16X16_FP8_BF8": ("fp8", "bf8", "f32"), "V_WMMA_F32_16X16X16_BF8_FP8": ("bf8", "fp8", "f32"),
      "V_WMMA_F32_16X16X16_BF8_BF8": ("bf8", "bf8", "f32")}.items()}

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("wave", (32, 64))
@pytest.mark.parametrize("name", list(R4))
def test_rdna4_wmma_matches_numpy(name, wave, backend):
  ta, tb, tc = R4[name]
  K = int(name.split("x")[2].split("_")[0])
  rngs = {"iu4": (-8, 8), "iu8": (-128, 128)}
  A, B = rng.integers(*rngs.get(ta, (-3, 4)), (16, K)), rng.integers(*rngs.get(tb, (-3, 4)), (K, 16))
  C = rng.integers(-8, 9, (16, 16))
  na, nb, nc = ABITS[ta] * K // 64, ABITS[tb] * K // 64, 256 // 32 * (32 if tc == "f32" or tc == "i32" else 16) // 32
  ins = {8: r4_ab(r4_bits(A, ta), ABITS[ta], wave), 16: r4_ab(r4_bits(B.T, tb), ABITS[tb], wave),
         24: r4_cd(bits_of(C, tc), 32 if nc == 8 else 16, wave)}
  v = rdna4.v
  op = getattr(rdna4, name)(v[32:31 + nc], v[8:7 + na], v[16:15 + nb], v[24:23 + nc], neg=3 if ta.startswith("iu") else 0)
  regs = run_regs(rdna4, [op], ins, wave, backend, "gfx1201")
  got = value_of(r4_cd_read(regs[32:32 + nc], 32 if nc == 8 else 16, wave), tc)
  np.testing.assert_array_equal(got, A.astype(np.int64) @ B + C)

# SWMMAC: A holds two of every four K per row (4:2 sparsity) as a dense M x K/2 matrix in the layout above; the 2-bit position
# of stored element e of a lane within its group of four is at bits 2e (+ 2E * INDEX_KEY) of the lane's index VGPR.
S4 = {n.lower(): t for n, t in {"V_SWMMAC_F32_16X16X32_F16": ("f16", "f32"), "V_SWMMAC_F32_16X16X32_BF16": ("bf16", "f32"),
      "V_SWMMAC_F16_16X16X32_F16": ("f16", "f16"), "V_SWMMAC_BF16_16X16X32_BF16": ("bf16", "bf16"), "V_SWMMAC_I32_16X16X32_IU8": ("iu8", "i32"),
      "V_SWMMAC_I32_16X16X32_IU4": ("iu4", "i32"), "V_SWMMAC_I32_16X16X64_IU4": ("iu4", "i32"),
      "V_SWMMAC_F32_16X16X32_FP8_BF8": ("fp8", "f32"), "V_SWMMAC_F32_16X16X32_BF8_BF8": ("bf8", "f32")}.items()}

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("wave,key", [(32, 1), (64, 0)])
@pytest.mark.parametrize("name", list(S4))
def test_rdna4_swmmac_matches_numpy(name, wave, key, backend):
  ta, tc = S4[name]
  tb = "bf8" if "_bf8_bf8" in name or "fp8_bf8" in name else ta
  K = int(name.split("x")[2].split("_")[0])
  G, E = wave // 16, K // 2 // (wave // 16)
  if E * 2 * (key + 1) > 32: key = 0
  lim = {"iu4": (-8, 8), "iu8": (-128, 128)}.get(ta, (-3, 4))
  a = rng.integers(*lim, (16, K // 2))
  idx = np.array([[p for _ in range(K // 4) for p in sorted(rng.choice(4, 2, replace=False))] for _ in range(16)])
  full = np.zeros((16, K), np.int64)
  for m in range(16):
    for j in range(K // 2): full[m][4 * (j // 2) + idx[m][j]] = a[m][j]
  B, C = rng.integers(*lim, (K, 16)), rng.integers(-8, 9, (16, 16))
  kpos = lambda l, e: (e // (E // 2) * G + l // 16) * (E // 2) + e % (E // 2)
  iw = np.array([[sum(int(idx[l % 16][kpos(l, e)]) << (2 * e + 2 * E * key) for e in range(E)) for l in range(wave)]], np.uint32)
  na, nb = ABITS[ta] * K // 128, ABITS[tb] * K // 64
  nc = 8 if tc in ("f32", "i32") else 4
  ins = {8: r4_ab(r4_bits(a, ta), ABITS[ta], wave), 16: r4_ab(r4_bits(B.T, tb), ABITS[tb], wave),
         32: r4_cd(bits_of(C, tc), 32 if nc == 8 else 16, wave), 40: iw}
  v = rdna4.v
  op = getattr(rdna4, name)(v[32:31 + nc], v[8:7 + na], v[16:15 + nb], v[40], neg=3 if ta.startswith("iu") else 0, opsel=key)
  regs = run_regs(rdna4, [op], ins, wave, backend, "gfx1201")
  got = value_of(r4_cd_read(regs[32:32 + nc], 32 if nc == 8 else 16, wave), tc)
  np.testing.assert_array_equal(got, full @ B + C)
