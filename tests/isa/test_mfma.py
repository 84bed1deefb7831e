"""CDNA (gfx950, wave64) MFMA against numpy on both backends. The matrices are placed by the lane layouts of the CDNA3/CDNA4
ISA guides' matrix-arithmetic chapter (written out here independently of mockgpu.emu.matrix); inputs are small integers so
every product and sum is exact and numpy's matmul per block is the oracle."""
import numpy as np
import pytest
import tinygrad.runtime.autogen.amd.cdna.ins as C
from isa_harness import Bufs

rng = np.random.default_rng(21)
BACKENDS = ("c", "python")
ABITS = {"f32": 32, "f16": 16, "bf16": 16, "i8": 8, "fp8": 8, "bf8": 8, "f64": 64}
FP8_INT = {"fp8": {0: 0x00, 1: 0x38, 2: 0x40, 3: 0x44}, "bf8": {0: 0x00, 1: 0x3c, 2: 0x40, 3: 0x42}}   # OCP E4M3 / E5M2

def bits_of(x, t):
  if t in FP8_INT: return np.vectorize(lambda e: FP8_INT[t][abs(int(e))] | (0x80 if e < 0 else 0))(x).astype(np.uint64)
  if t == "f16": return x.astype(np.float16).view(np.uint16).astype(np.uint64)
  if t == "bf16": return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint64)
  if t == "f32": return x.astype(np.float32).view(np.uint32).astype(np.uint64)
  if t == "f64": return x.astype(np.float64).view(np.uint64)
  return (x.astype(np.int64) & ((1 << ABITS.get(t, 32)) - 1)).astype(np.uint64)

def pack(rows, bits):
  """rows[lane] = the elements lane holds in order from bit 0 of its first VGPR -> [nregs][64] u32."""
  per = max(1, 32 // bits)
  words = [[] for _ in rows]
  for l, r in enumerate(rows):
    acc, n = 0, 0
    for x in r:
      acc |= int(x) << (n * bits); n += 1
      if n * bits >= 32 and n >= per: words[l] += [(acc >> (32 * i)) & 0xffffffff for i in range(max(1, bits // 32))]; acc, n = 0, 0
    if n: words[l].append(acc)
  return np.array(words, np.uint64).T.astype(np.uint32)

# A (blocks x M x K): lane l holds row l%M of block (l/M)%blocks, K group g = l/(M*blocks) of G = 64/(M*blocks) groups holds
# K = g*K/G .. +K/G-1. B the same with columns. C/D: see dpos.
def ab_regs(X, t):
  nb, M, K = X.shape
  G = 64 // (M * nb)
  kp = K // G
  return pack([[X[(l // M) % nb][l % M][(l // (M * nb)) * kp + e] for e in range(kp)] for l in range(64)], ABITS[t])

def dpos(M, b, r, c, nb=16):
  """(VGPR element index, lane) of D[b][r][c]: 4x4 (16 blocks): element r, lane 4b+c; F64 4x4 (4 blocks): element 0, lane
  16r + 4b + c; 16x16: element 4b + r%4, lane 16*(r/4)+c; 32x32: element 16b + 4*(r/8) + r%4, lane 32*((r/4)%2) + c."""
  if M == 4: return (r, 4 * b + c) if nb == 16 else (0, 16 * r + 4 * b + c)
  if M == 16: return 4 * b + r % 4, 16 * (r // 4) + c
  return 16 * b + 4 * (r // 8) + r % 4, 32 * ((r // 4) % 2) + c

def cd_regs(X, t):
  nb, M, N = X.shape
  n = nb * M * N // 64
  el = np.zeros((64, n), np.uint64)
  raw = bits_of(X, t)
  for b in range(nb):
    for r in range(M):
      for c in range(N): i, l = dpos(M, b, r, c, nb); el[l][i] = raw[b][r][c]
  return pack(el, 64 if t == "f64" else 32)

def cd_read(regs, t, nb, M, N):
  out = np.zeros((nb, M, N), np.float64 if t != "i32" else np.int64)
  for b in range(nb):
    for r in range(M):
      for c in range(N):
        i, l = dpos(M, b, r, c, nb)
        if t == "f64": out[b][r][c] = np.array([int(regs[2 * i][l]) | int(regs[2 * i + 1][l]) << 32], np.uint64).view(np.float64)[0]
        elif t == "i32": out[b][r][c] = np.array([regs[i][l]], np.uint32).view(np.int32)[0]
        else: out[b][r][c] = np.array([regs[i][l]], np.uint32).view(np.float32)[0]
  return out

def run_regs(insts, inputs: dict, backend: str, acc=(), **kw) -> np.ndarray:
  """Load inputs {first VGPR: [nregs][64] u32} (8 VGPRs per buffer; AccVGPRs for the keys in `acc`), run `insts`, return
  wave 0's unified VGPR file [slots][64]."""
  v, s = C.v, C.s
  chunks = [(reg + i, x[i:i + 8], reg in acc) for reg, x in inputs.items() for i in range(0, len(x), 8)]
  bf = Bufs(*(np.ascontiguousarray(x, np.uint32).reshape(-1) for _, x, _ in chunks))
  ld = [C.v_lshlrev_b32_e32(v[1], 2, v[0])]
  for j, (reg, x, a) in enumerate(chunks):
    ld += [C.global_load_dword(vdst=v[reg + i], addr=v[1], saddr=s[2 * j:2 * j + 1], offset=i * 256, acc=int(a)) for i in range(len(x))]
  us = bf.sgprs()
  prog = b"".join(i.to_bytes() for i in ld + [C.s_waitcnt(simm16=0)] + list(insts)) + C.s_endpgm().to_bytes()
  from mockgpu.emu.api import run_code
  st = run_code(prog, bf.mem, arch="gfx950", wave64=True, block=(64, 1, 1), user_sgprs=us, rsrc2=len(us) << 1, capture=True, backend=backend, **kw)
  return np.array(st.state.vgprs, np.uint64).astype(np.uint32)

OPS = {"v_mfma_f32_32x32x2_f32": "f32", "v_mfma_f32_16x16x4_f32": "f32", "v_mfma_f32_4x4x1_16b_f32": "f32", "v_mfma_f32_32x32x1_2b_f32": "f32",
       "v_mfma_f32_16x16x1_4b_f32": "f32", "v_mfma_f32_32x32x8_f16": "f16", "v_mfma_f32_16x16x16_f16": "f16", "v_mfma_f32_16x16x32_f16": "f16",
       "v_mfma_f32_32x32x16_f16": "f16", "v_mfma_f32_4x4x4_16b_f16": "f16", "v_mfma_f32_16x16x4_4b_f16": "f16", "v_mfma_f32_32x32x4_2b_f16": "f16",
       "v_mfma_f32_16x16x16_bf16": "bf16", "v_mfma_f32_32x32x16_bf16": "bf16", "v_mfma_f32_4x4x4_16b_bf16": "bf16",
       "v_mfma_i32_16x16x32_i8": "i8", "v_mfma_i32_32x32x16_i8": "i8", "v_mfma_i32_16x16x64_i8": "i8", "v_mfma_i32_4x4x4_16b_i8": "i8",
       "v_mfma_i32_32x32x4_2b_i8": "i8", "v_mfma_f64_16x16x4_f64": "f64", "v_mfma_f64_4x4x4_4b_f64": "f64", "v_mfma_f32_16x16x32_fp8_fp8": "fp8",
       "v_mfma_f32_32x32x16_bf8_fp8": "bf8"}

def shape(name):
  dims = name.split("_")[3].split("x")
  nb = int(name.split("_")[4][:-1]) if name.split("_")[4].endswith("b") else 1
  return int(dims[0]), int(dims[1]), int(dims[2]), nb

def case(name, backend, *, A=None, B=None, Cm=None, **mods):
  ta = OPS[name]
  tb = "fp8" if name.endswith("_fp8") else ta
  tc = "i32" if "_i32_" in name else "f64" if ta == "f64" else "f32"
  M, N, K, nb = shape(name)
  lim = (-128, 128) if ta == "i8" else (-3, 4)
  A = rng.integers(*lim, (nb, M, K)) if A is None else A
  B = rng.integers(*lim, (nb, K, N)) if B is None else B
  Cm = rng.integers(-8, 9, (nb, M, N)) if Cm is None else Cm
  ra, rb, rc = ab_regs(bits_of(A, ta), ta), ab_regs(bits_of(B.transpose(0, 2, 1), tb), tb), cd_regs(Cm, tc)
  v = C.v
  op = getattr(C, name)(v[64:63 + len(rc)], v[8:7 + len(ra)], v[16:15 + len(rb)], v[24:23 + len(rc)], **mods)
  regs = run_regs([op], {8: ra, 16: rb, 24: rc}, backend)
  return A, B, Cm, cd_read(regs[64:64 + len(rc)], tc, nb, M, N)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(OPS))
def test_mfma_matches_numpy(name, backend):
  A, B, Cm, D = case(name, backend)
  np.testing.assert_array_equal(D, A.astype(np.int64) @ B + Cm)

@pytest.mark.parametrize("backend", BACKENDS)
def test_mfma_cbsz_abid_broadcast_a(backend):
  # CBSZ=2, ABID=1: in every group of 4 blocks, block 1's A is used by all four
  A, B, Cm, D = case("v_mfma_f32_4x4x4_16b_f16", backend, cbsz=2, abid=1)
  src = [(b & ~3) | 1 for b in range(16)]
  np.testing.assert_array_equal(D, A[src].astype(np.int64) @ B + Cm)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("blgp", range(8))
def test_mfma_blgp_permutes_b_lanes(blgp, backend):
  # BLGP: B is read from lane src(l): 1/2 broadcast lanes 0-31 / 32-63, 3 rotates down by 16, 4..7 broadcast a 16-lane group
  name = "v_mfma_f32_16x16x4_4b_f16"   # B block b lives in lanes 16b..16b+15, so a lane permutation moves whole blocks
  src = [(l, l % 32, l % 32 + 32, (l + 16) % 64, l % 16, 16 + l % 16, 32 + l % 16, 48 + l % 16)[blgp] for l in range(0, 64, 16)]
  A, B, Cm, D = case(name, backend, blgp=blgp)
  np.testing.assert_array_equal(D, A.astype(np.int64) @ B[[s // 16 for s in src]] + Cm)

@pytest.mark.parametrize("backend", BACKENDS)
def test_mfma_accvgpr_operands(backend):
  # RSRC3.ACCUM_OFFSET = 15: AccVGPR n is slot 64 + n of the unified file. ACC[1]: B from a16..a17; ACC_CD: C from a24..a27,
  # D to a32..a35 (A stays in v8..v9)
  A, B, Cm = rng.integers(-3, 4, (1, 16, 16)), rng.integers(-3, 4, (1, 16, 16)), rng.integers(-8, 9, (1, 16, 16))
  ra, rb, rc = ab_regs(bits_of(A, "f16"), "f16"), ab_regs(bits_of(B.transpose(0, 2, 1), "f16"), "f16"), cd_regs(Cm, "f32")
  v = C.v
  op = C.v_mfma_f32_16x16x16_f16(v[32:35], v[8:9], v[16:17], v[24:27], acc=2, acc_cd=1)
  regs = run_regs([op], {8: ra, 16: rb, 24: rc}, backend, acc=(16, 24), rsrc3=15)
  np.testing.assert_array_equal(cd_read(regs[96:100], "f32", 1, 16, 16), A.astype(np.int64) @ B + Cm)
  assert not regs[32:36].any()   # v32..v35 untouched

# SMFMAC (4:2 sparse A, LLVM's v_smfmac operands): lane l holds row l%M of A; of its lane group's K/G dense K (group l/M),
# every 4 consecutive K hold 2 stored elements, packed from bit 0 like a dense A of K/2 (E per lane); the 2-bit position of
# stored element e in its group of 4 is at bits ABID*2E + 2e of the lane's index VGPR (src2). C is read from D (vdst).
SPARSE = {"v_smfmac_f32_16x16x32_f16": "f16", "v_smfmac_f32_32x32x16_bf16": "bf16", "v_smfmac_i32_16x16x64_i8": "i8",
          "v_smfmac_f32_32x32x32_f16": "f16", "v_smfmac_f32_16x16x128_fp8_bf8": "fp8", "v_smfmac_i32_32x32x64_i8": "i8"}

def sparse_case(name, backend, abid, acc_cd=0):
  ta, M, N, K = SPARSE[name], *map(int, name.split("_")[3].split("x"))
  tb, tc, E = "bf8" if name.endswith("_bf8") else ta, "i32" if "_i32_" in name else "f32", K // (64 // M) // 2
  lim = (-128, 128) if ta == "i8" else (-3, 4)
  pos = np.array([[sorted(rng.choice(4, 2, replace=False)) for _ in range(K // 4)] for _ in range(M)])   # [row][K group][2]
  vals = rng.integers(*lim, (M, K // 2))   # stored element s of a row sits at K = 4*(s/2) + pos[row][s/2][s%2]
  A = np.zeros((M, K), np.int64)
  for m in range(M):
    for s in range(K // 2): A[m][4 * (s // 2) + pos[m][s // 2][s % 2]] = vals[m][s]
  B, Cm = rng.integers(*lim, (1, K, N)), rng.integers(-8, 9, (1, M, N))
  ra = pack([bits_of(vals[l % M][(l // M) * E:(l // M + 1) * E], ta) for l in range(64)], ABITS[ta])
  idx = rng.integers(0, 2**32, 64)   # the other index sets hold garbage
  for l in range(64):
    m, s0, sh = l % M, (l // M) * E, abid * 2 * E
    fld = sum(int(pos[m][(s0 + e) // 2][(s0 + e) % 2]) << (2 * e) for e in range(E))
    idx[l] = ((int(idx[l]) & ~(((1 << 2 * E) - 1) << sh)) | fld << sh) & 0xffffffff
  rb, rc, v = ab_regs(bits_of(B.transpose(0, 2, 1), tb), tb), cd_regs(Cm, tc), C.v
  d = 0 if acc_cd else 64   # acc_cd: D in a[0..] (slot 64 + n with ACCUM_OFFSET 15), the index stays v40
  op = getattr(C, name)(v[d:d + len(rc) - 1], v[8:7 + len(ra)], v[16:15 + len(rb)], v[40], abid=abid, acc_cd=acc_cd)
  regs = run_regs([op], {8: ra, 16: rb, 40: idx[None].astype(np.uint32), d: rc}, backend, acc=(0,) if acc_cd else (), rsrc3=15 if acc_cd else 0)
  return cd_read(regs[64:64 + len(rc)], tc, 1, M, N), A @ B[0] + Cm

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(SPARSE))
def test_smfmac_matches_numpy(name, backend):
  K, M = int(name.split("_")[3].split("x")[2]), int(name.split("_")[3].split("x")[0])
  D, want = sparse_case(name, backend, abid=32 // (K // (64 // M)) - 1)   # the last index set
  np.testing.assert_array_equal(D, want)

@pytest.mark.parametrize("backend", BACKENDS)
def test_smfmac_accvgpr_destination_and_index_set_0(backend):
  D, want = sparse_case("v_smfmac_f32_16x16x32_f16", backend, abid=0, acc_cd=1)
  np.testing.assert_array_equal(D, want)

@pytest.mark.parametrize("backend", BACKENDS)
def test_smfmac_index_set_out_of_range(backend):
  from mockgpu.emu.errors import InvalidInstruction
  with pytest.raises(InvalidInstruction, match="ABID"): sparse_case("v_smfmac_f32_16x16x128_fp8_bf8", backend, abid=1)   # 32 index bits: one set

# XF32 (CDNA3): f32 inputs rounded to 10 mantissa bits, ties to even (the model's rounding), then products and the K-ordered
# f32 accumulation of every MFMA
def xf32(x):
  m, e = np.frexp(x.astype(np.float64))
  return np.ldexp(np.rint(m * 2048) / 2048, e).astype(np.float32)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["v_mfma_f32_16x16x8_xf32", "v_mfma_f32_32x32x4_xf32"])
def test_mfma_xf32_rounds_inputs(name, backend):
  M, N, K, _ = shape(name)
  A, B, Cm = (rng.standard_normal(s).astype(np.float32) for s in ((1, M, K), (1, K, N), (1, M, N)))
  A[0, 0, :2] = [1 + 2**-11, 1 + 3 * 2**-11]   # ties: to 1 and to 1 + 2^-9 (even mantissas)
  ra, rb, rc, v = ab_regs(bits_of(A, "f32"), "f32"), ab_regs(bits_of(B.transpose(0, 2, 1), "f32"), "f32"), cd_regs(Cm, "f32"), C.v
  op = getattr(C, name)(v[64:63 + len(rc)], v[8:7 + len(ra)], v[16:15 + len(rb)], v[24:23 + len(rc)], opsel_hi=0, opsel_hi2=0)   # MAI acc bits 0
  D = cd_read(run_regs([op], {8: ra, 16: rb, 24: rc}, backend)[64:64 + len(rc)], "f32", 1, M, N)
  acc, xa, xb = Cm[0].copy(), xf32(A[0]), xf32(B[0])
  for k in range(K): acc = acc + xa[:, k, None] * xb[None, k, :]
  assert xa[0, 0] == 1 and xa[0, 1] == 1 + 2**-9
  np.testing.assert_array_equal(D[0], acc)

# gfx950 F8F6F4: CBSZ / BLGP give the formats of A / B (0 FP8 E4M3, 1 BF8 E5M2, 2 FP6 E2M3, 3 BF6 E3M2, 4 FP4 E2M1, OCP);
# each lane's 32 elements are packed back to back from bit 0 (FP6 elements straddle VGPRs)
MINI = [("fp8", 8, {1: 0x38, 2: 0x40, 3: 0x44}), ("bf8", 8, {1: 0x3c, 2: 0x40, 3: 0x42}), ("fp6", 6, {1: 0x08, 2: 0x10, 3: 0x14}),
        ("bf6", 6, {1: 0x0c, 2: 0x10, 3: 0x12}), ("fp4", 4, {1: 0x2, 2: 0x4, 3: 0x5})]
def pack_bits(rows, bits, nregs):
  words = []
  for r in rows:
    big = sum(int(x) << (i * bits) for i, x in enumerate(r))
    words.append([(big >> (32 * i)) & 0xffffffff for i in range(nregs)])
  return np.array(words, np.uint64).T.astype(np.uint32)

def mini_lanes(X, f, M, K):
  """X (M x K, small integers) in format f, lane l holding row l%M, K = (l/M)*K/G .. +K/G-1 (G = 64/M groups)."""
  enc = np.vectorize(lambda x: (MINI[f][2][abs(int(x))] if x else 0) | (1 << (MINI[f][1] - 1) if x < 0 else 0))(X)
  G = 64 // M
  return pack_bits([[enc[l % M][(l // M) * (K // G) + e] for e in range(K // G)] for l in range(64)], MINI[f][1], 8)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,fa,fb", [("v_mfma_f32_16x16x128_f8f6f4", 0, 4), ("v_mfma_f32_16x16x128_f8f6f4", 2, 3),
                                         ("v_mfma_f32_32x32x64_f8f6f4", 4, 1), ("v_mfma_f32_32x32x64_f8f6f4", 3, 2)])
def test_mfma_f8f6f4_formats(name, fa, fb, backend):
  M, N, K, _ = shape(name)
  A, B, Cm = rng.integers(-3, 4, (M, K)), rng.integers(-3, 4, (K, N)), rng.integers(-8, 9, (1, M, N))
  rc, v = cd_regs(Cm, "f32"), C.v
  na, nb = MINI[fa][1], MINI[fb][1]   # VGPRs: 32 elements of 8/6/4 bits
  op = getattr(C, name)(v[64:63 + len(rc)], v[8:7 + na], v[16:15 + nb], v[24:23 + len(rc)], cbsz=fa, blgp=fb)
  # a 64-bit instruction right before: its dword pair plus the MFMA must not decode as one VOP3PX2 (whose first dword is LD_SCALE)
  regs = run_regs([C.v_add_f32_e64(v[100], v[100], v[100]), op], {8: mini_lanes(A, fa, M, K), 16: mini_lanes(B.T, fb, N, K), 24: rc}, backend)
  np.testing.assert_array_equal(cd_read(regs[64:64 + len(rc)], "f32", 1, M, N)[0], A @ B + Cm[0])

# gfx950 VOP3PX2 scaled MFMA: each lane's 32 A (B) elements are one K block whose E8M0 scale is byte
# OPSEL[0] | OPSEL_HI[0] << 1 (OPSEL[1] | OPSEL_HI[1] << 1) of that lane's scale_src0 (scale_src1) VGPR: value 2^(e - 127)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,fa,fb,opsel,opsel_hi", [("v_mfma_scale_f32_16x16x128_f8f6f4", 0, 4, 1, 2),
                                                       ("v_mfma_scale_f32_32x32x64_f8f6f4", 2, 1, 2, 1)])
def test_mfma_scale_block_scales(name, fa, fb, opsel, opsel_hi, backend):
  M, N, K, _ = shape(name.replace("scale_", ""))
  kp = K // (64 // M)
  A, B, Cm = rng.integers(-3, 4, (M, K)), rng.integers(-3, 4, (K, N)), rng.integers(-8, 9, (1, M, N))
  sa, sb = rng.integers(125, 130, 64), rng.integers(125, 130, 64)   # 2^-2 .. 2^2: every sum stays exact in f32
  sa[5] = 0xff   # NaN: row 5 (lane 5 holds its first K block)
  ba, bb = (opsel & 1) | (opsel_hi & 1) << 1, (opsel >> 1 & 1) | (opsel_hi >> 1 & 1) << 1
  put = lambda s, byte: np.array([(int(g) & ~(0xff << 8 * byte)) | int(x) << 8 * byte for g, x in zip(rng.integers(0, 2**32, 64), s)], np.uint32)[None]
  As = A * 2.0 ** (sa[[[m + M * (k // kp) for k in range(K)] for m in range(M)]] - 127.0)
  Bs = B * 2.0 ** (sb[[[n + N * (k // kp) for n in range(N)] for k in range(K)]] - 127.0)
  with np.errstate(invalid="ignore"): want = As @ Bs + Cm[0]
  want[5, :] = np.nan
  rc, v = cd_regs(Cm, "f32"), C.v
  op = getattr(C, name)(v[64:63 + len(rc)], v[8:7 + MINI[fa][1]], v[16:15 + MINI[fb][1]], v[24:23 + len(rc)], scale_src0=256 + 40,
                        scale_src1=256 + 41, opsel=opsel, opsel_hi=opsel_hi, cbsz=fa, blgp=fb, abid=1, x2encoding=0xd3ac)   # as LLVM 22 encodes it
  regs = run_regs([op], {8: mini_lanes(A, fa, M, K), 16: mini_lanes(B.T, fb, N, K), 24: rc, 40: put(sa, ba), 41: put(sb, bb)}, backend)
  D = cd_read(regs[64:64 + len(rc)], "f32", 1, M, N)[0]
  np.testing.assert_array_equal(D, want)
  assert (regs[64:64 + len(rc)] == 0x7fc00000).sum() == N   # the canonical quiet NaN

@pytest.mark.parametrize("backend", BACKENDS)
def test_ld_scale_without_its_mfma_is_reported(backend):
  from mockgpu.emu.api import run_code
  from mockgpu.emu.errors import InvalidInstruction
  prog = C.v_mfma_ld_scale_b32(src0=C.v[1], src1=C.v[2]).to_bytes() + C.s_endpgm().to_bytes()
  with pytest.raises(InvalidInstruction, match="V_MFMA_LD_SCALE_B32"):
    run_code(prog, arch="gfx950", wave64=True, block=(64, 1, 1), backend=backend)

