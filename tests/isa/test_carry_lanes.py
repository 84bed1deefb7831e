"""Lane-mask ops whose pseudocode touches only the lane's own bit of VCC or of the SGPR mask (the carry ops, V_CNDMASK): the C
backend's lane loops run every lane on the incoming mask and gather the bits after the loop (gen_c._lane_loop; with partial
EXEC too, the bits of inactive lanes then cleared), the translator its XV_ variants. numpy is the oracle: results, carry masks (bits of inactive
lanes 0), on both backends, wave32 and wave64 (gfx1100 and gfx950), interpreted and translated.

The masks, the EXEC mask and the inputs come from user SGPRs and buffers, so one program (one translation) serves every case."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as R
from tinygrad.runtime.autogen.amd.cdna import ins as C
from mockgpu.emu.api import run_code
from isa_harness import Bufs, LANE_CASES, check_lanes, check_lanes_translated

M32 = (1 << 32) - 1
# result and carry-out (borrow) per lane from S0, S1 and the lane's carry-in bit, as unsigned 64-bit numpy arrays
ORACLE = {"add": lambda a, b, c: (a + b, (a + b) >> 32), "sub": lambda a, b, c: (a - b, b > a), "subrev": lambda a, b, c: (b - a, a > b),
          "addc": lambda a, b, c: (a + b + c, (a + b + c) >> 32), "subb": lambda a, b, c: (a - b - c, b + c > a),
          "subbrev": lambda a, b, c: (b - a - c, a + c > b), "cndmask": lambda a, b, c: (np.where(c == 1, b, a), None)}
# (oracle, instruction, form): "vcc" the VOP2 form (carry-in and -out VCC), "sd" the VOP3SD form (carry-out to an SGPR mask,
# carry-in from src2), "sdvcc" the VOP3SD form with VCC as both, "e64" V_CNDMASK_B32_E64 reading an SGPR mask
RDNA = [("addc", R.v_add_co_ci_u32_e32, "vcc"), ("subb", R.v_sub_co_ci_u32_e32, "vcc"), ("subbrev", R.v_subrev_co_ci_u32_e32, "vcc"),
        ("cndmask", R.v_cndmask_b32_e32, "vcc"), ("add", R.v_add_co_u32, "sd"), ("sub", R.v_sub_co_u32, "sd"), ("subrev", R.v_subrev_co_u32, "sd"),
        ("addc", R.v_add_co_ci_u32, "sd"), ("subb", R.v_sub_co_ci_u32, "sd"), ("subbrev", R.v_subrev_co_ci_u32, "sd"),
        ("addc", R.v_add_co_ci_u32, "sdvcc"), ("cndmask", R.v_cndmask_b32_e64, "e64")]
CDNA = [("add", C.v_add_co_u32_e32, "vcc"), ("sub", C.v_sub_co_u32_e32, "vcc"), ("subrev", C.v_subrev_co_u32_e32, "vcc"),
        ("addc", C.v_addc_co_u32_e32, "vcc"), ("subb", C.v_subb_co_u32_e32, "vcc"), ("subbrev", C.v_subbrev_co_u32_e32, "vcc"),
        ("cndmask", C.v_cndmask_b32_e32, "vcc"), ("add", C.v_add_co_u32, "sd"), ("sub", C.v_sub_co_u32, "sd"), ("subrev", C.v_subrev_co_u32, "sd"),
        ("addc", C.v_addc_co_u32, "sd"), ("subb", C.v_subb_co_u32, "sd"), ("subbrev", C.v_subbrev_co_u32, "sd"),
        ("addc", C.v_addc_co_u32, "sdvcc"), ("cndmask", C.v_cndmask_b32_e64, "e64")]
NOCARRYIN = ("add", "sub", "subrev")

def program(cdna: bool, w64: bool) -> tuple[bytes, list]:
  """v2 = a[lane], v3 = b[lane]; VCC = s[4:5] before each op; the SGPR carry-in is s[6:7]; EXEC = s[8:9] for the ops; op k writes
  v[10 + k] and its mask to s[20 + 2k] (:+1)."""
  I, ops = (C, CDNA) if cdna else (R, RDNA)
  v, s = I.v, I.s
  m = (lambda r: s[r:r + 1]) if cdna else (lambda r: s[r])   # RDNA's DSL types SGPR masks as one register: wave64 reads the pair
  ld = [I.global_load_dword(vdst=v[2 + i], addr=v[1], saddr=s[2 * i:2 * i + 1]) for i in range(2)] if cdna else \
       [I.global_load_b32(vdst=v[2 + i], addr=v[1], saddr=s[2 * i:2 * i + 1]) for i in range(2)]
  pre = [I.v_lshlrev_b32_e32(v[1], 2, v[0]), *ld, I.s_waitcnt(simm16=0)]
  pre += [I.s_mov_b64(I.EXEC, s[8:9])] if w64 else [I.s_mov_b32(I.EXEC_LO, s[8])]
  vcc = [I.s_mov_b64(I.VCC, s[4:5])] if w64 else [I.s_mov_b32(I.VCC_LO, s[4])]
  body = []
  for k, (name, op, form) in enumerate(ops):
    d, sd = v[10 + k], m(20 + 2 * k)
    if form == "vcc": body += [*vcc, op(d, v[2], v[3]), *([I.s_mov_b64(s[20 + 2 * k:21 + 2 * k], I.VCC)] if w64 else [I.s_mov_b32(sd, I.VCC_LO)])]
    elif form == "e64": body.append(op(d, v[2], v[3], m(6)))
    elif form == "sdvcc": body += [*vcc, op(d, I.VCC, v[2], v[3], I.VCC), *([I.s_mov_b64(s[20 + 2 * k:21 + 2 * k], I.VCC)] if w64 else [I.s_mov_b32(sd, I.VCC_LO)])]
    else: body.append(op(d, sd, v[2], v[3]) if name in NOCARRYIN else op(d, sd, v[2], v[3], m(6)))
  return b"".join(i.to_bytes() for i in pre + body + [I.s_endpgm()]), ops

def run_case(cdna: bool, w64: bool, seed: int, exec_full: bool, backend: str = "c"):
  rng = np.random.default_rng(seed)
  n = 64 if w64 else 32
  prog, ops = program(cdna, w64)
  # values near 0 and 2^32 so that carries and borrows (with and without the carry-in) go both ways in every lane
  a, b = (rng.choice(np.array([0, 1, 2, 0x7fffffff, 0x80000000, M32 - 1, M32], np.uint64), n) ^ rng.integers(0, 2, n, dtype=np.uint64)
          for _ in range(2))
  a[::3] = rng.integers(0, 1 << 32, len(a[::3]), dtype=np.uint64)
  vin, cin = (int(rng.integers(0, 1 << 63)) << 1 | int(rng.integers(0, 2)) for _ in range(2))   # bits of inactive lanes too
  ex = (1 << n) - 1 if exec_full else int(rng.integers(1, 1 << 62)) & ((1 << n) - 1) | 1
  bufs = Bufs(a.astype(np.uint32), b.astype(np.uint32))
  us = (*bufs.sgprs(), vin & M32, vin >> 32, cin & M32, cin >> 32, ex & M32, ex >> 32)
  st = run_code(prog, bufs.mem, arch="gfx950" if cdna else "gfx1100", wave64=w64, block=(n, 1, 1), user_sgprs=us, rsrc2=len(us) << 1,
                capture=True, backend=backend)
  return st, ops, a, b, vin, cin, ex, n

def check(st, ops, a, b, vin, cin, ex, n):
  act = np.array([ex >> L & 1 for L in range(n)], bool)
  bits = lambda m: np.array([m >> L & 1 for L in range(n)], np.uint64)
  for k, (name, _, form) in enumerate(ops):
    res, co = ORACLE[name](a, b, bits(cin if form in ("sd", "e64") else vin))
    got = np.array(st.state.vgprs[10 + k][:n], np.uint64)
    np.testing.assert_array_equal(got, np.where(act, res & M32, 0), err_msg=f"op {k} {name} {form}: result")
    if co is None: continue
    want = sum(int(c) << L for L, c in enumerate(co) if act[L])
    gm = st.state.sgprs[20 + 2 * k] | (st.state.sgprs[21 + 2 * k] << 32 if n == 64 else 0)
    assert gm == want, f"op {k} {name} {form}: mask {gm:#x}, numpy {want:#x}"

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("cdna,w64", LANE_CASES)
def test_carry_masks_against_numpy(cdna, w64, backend):
  check_lanes(run_case, check, cdna, w64, backend)

@pytest.mark.engine
@pytest.mark.parametrize("cdna,w64", LANE_CASES)
def test_carry_masks_translated(monkeypatch, cdna, w64):
  # the translator's XV_ variants (any EXEC; V_ADD_CO_U32 & co. VOP3SD without clamp have one too), the handlers for the rest
  monkeypatch.setenv("MOCKGPU_EMU_XLAT", "sync")
  check_lanes_translated(run_case, check, cdna, w64)
