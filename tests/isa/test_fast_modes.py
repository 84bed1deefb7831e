"""The VALU fast lane loops (one loop per float mode of gen_c.FAST_MODES, every lane computed and the active ones written back)
against the Python backend's per-lane evaluation, the reference (a full wave, and one with an inactive lane, whose register
and memory are left alone), and against numpy: denormal, tiny, special and normal f32/f64 operands in
every MODE float byte the fast loops are specialised for and in modes they are not. Expected values: IEEE arithmetic
(numpy) with the ISA's FP_DENORM rule (MODE[5:4] f32, [7:6] f16/f64; bit 0 keeps input, bit 1 output denormals; a flushed
value keeps its sign) and the canonical quiet NaN 0x7fc00000."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from isa_harness import Bufs, run
from mockgpu.emu.gen_c import FAST_MODES

N = 32
_A = [2.0 ** -130, -(2.0 ** -140), 2.0 ** -126, 1.5 * 2.0 ** -126, 3.0, -0.0, 0.0, float("inf"), 2.0 ** -64, 1.0, -2.0 ** -127, 1e30,
      2.0 ** -149, 7.5, -3.25, 2.0 ** -100]
_B = [1.0, 2.0 ** -130, 0.5, -1.5 * 2.0 ** -126, 2.0 ** -127, 2.0 ** -140, -0.0, float("-inf"), 2.0 ** -64, 2.0 ** -149, 4.0, 1e30,
      -1.0, 2.0 ** -20, 2.0 ** -125, -(2.0 ** -30)]
A = np.array((_A * 2)[:N], np.float32)
B = np.array((_B[5:] + _B[:5]) * 2, np.float32)[:N]
C = np.array([x * (-1) ** i for i, x in enumerate((_A[::-1] * 2)[:N])], np.float32)
OPS = ("add", "mul", "sub", "fmac", "fma", "sqrt", "max", "dual_mul", "dual_add")

A64 = np.array([x * 2.0 ** -960 for x in A.astype(np.float64)], np.float64)   # f64 denormals, tiny normals, specials
B64 = np.array([x * 2.0 ** -900 for x in B.astype(np.float64)], np.float64)

def _prog(exec_lo: int):
  """v2, v3, v4 = A, B, C of the lane, v[20:21], v[22:23] = A64, B64; one result per op into the output rows (op k at word
  k * N + lane, the f64 sum in the second output)."""
  ld = [v_lshlrev_b32_e32(v[1], 2, v[0]), *(global_load_b32(vdst=v[2 + i], addr=v[1], saddr=s[2 * i:2 * i + 1]) for i in range(3)),
        v_lshlrev_b32_e32(v[1], 3, v[0]), global_load_b64(vdst=v[20:21], addr=v[1], saddr=s[6:7]), global_load_b64(vdst=v[22:23], addr=v[1], saddr=s[8:9]),
        s_waitcnt(simm16=0), v_mov_b32_e32(v[9], v[4]), s_mov_b32(EXEC_LO, exec_lo)]
  ops = [v_add_f32_e32(v[5], v[2], v[3]), v_mul_f32_e32(v[6], v[2], v[3]), v_sub_f32_e32(v[7], v[2], v[3]), v_fmac_f32_e32(v[9], v[2], v[3]),
         v_fma_f32(v[10], v[2], v[3], v[4]), v_sqrt_f32_e32(v[11], v[2]), v_max_f32_e32(v[12], v[2], v[3]),
         v_dual_mul_f32(VOPDOp.V_DUAL_ADD_F32, vdstx=v[13], vdsty=v[14], srcx0=v[2], vsrcx1=v[3], srcy0=v[4], vsrcy1=v[3]),
         v_add_f64(v[24:25], v[20:21], v[22:23])]
  res = [5, 6, 7, 9, 10, 11, 12, 13, 14]
  st = [v_lshlrev_b32_e32(v[1], 2, v[0])] + [global_store_b32(addr=v[1], data=v[r], saddr=s[10:11], offset=4 * N * k) for k, r in enumerate(res)]
  st += [v_lshlrev_b32_e32(v[1], 3, v[0]), global_store_b64(addr=v[1], data=v[24:25], saddr=s[12:13])]
  return ld + ops + st

def _run(mode: int, exec_lo: int, backend: str = "c"):
  out, o64 = np.zeros(len(OPS) * N, np.uint32), np.zeros(N, np.uint64)
  bf = Bufs(A.view(np.uint32), B.view(np.uint32), C.view(np.uint32), A64, B64, out, o64)
  rsrc1 = (mode & 0xff) << 12 | 1 << 21 | 1 << 23
  run(_prog(exec_lo), bf, block=(N, 1, 1), rsrc1=rsrc1, backend=backend)
  return out.reshape(len(OPS), N), o64

def _ftz(x: np.ndarray, keep: bool) -> np.ndarray:
  if keep: return x
  x = x.copy(); tiny = (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny); x[tiny] = np.copysign(0, x[tiny]); return x

def _bits(x: np.ndarray) -> np.ndarray:
  u = x.astype(np.float32).view(np.uint32).copy(); u[np.isnan(x)] = 0x7fc00000; return u

def _want(mode: int) -> dict:
  """numpy results of the ops with an exact numpy counterpart, in nearest-even `mode`."""
  fi, fo = bool(mode >> 4 & 1), bool(mode >> 5 & 1)
  a, b = _ftz(A, fi), _ftz(B, fi)
  with np.errstate(all="ignore"):
    r = {"add": a + b, "mul": a * b, "sub": a - b, "sqrt": np.sqrt(a)}
  return {k: _bits(_ftz(v, fo)) for k, v in r.items()}

@pytest.mark.parametrize("mode", [*FAST_MODES, 0x00, 0x30, 0xe0, 0xd0])
def test_fast_loop_matches_lane_loop_and_numpy(mode):
  full, f64full = _run(mode, 0xffffffff)
  part, f64part = _run(mode, 0x7fffffff)
  ref, f64ref = _run(mode, 0x7fffffff, backend="python")
  assert (part == ref).all(), [OPS[k] for k in range(len(OPS)) if (part[k] != ref[k]).any()]
  assert (f64part == f64ref).all() and not part[:, N - 1].any()   # the inactive lane's results are never written nor stored
  assert (full[:, :N - 1] == part[:, :N - 1]).all() and (f64full[:N - 1] == f64part[:N - 1]).all()
  for k, want in _want(mode).items():
    got = full[OPS.index(k)]
    assert (got == want).all(), (k, [(i, hex(int(A[i].view(np.uint32))), hex(int(B[i].view(np.uint32))), hex(int(got[i])), hex(int(want[i])))
                                     for i in np.flatnonzero(got != want)])
  # VOPD: X = A * B, Y = C + B
  fi, fo = bool(mode >> 4 & 1), bool(mode >> 5 & 1)
  with np.errstate(all="ignore"):
    assert (full[OPS.index("dual_mul")] == _bits(_ftz(_ftz(A, fi) * _ftz(B, fi), fo))).all()
    assert (full[OPS.index("dual_add")] == _bits(_ftz(_ftz(C, fi) + _ftz(B, fi), fo))).all()
  # f64 (FP_DENORM[7:6])
  a64, b64 = _ftz(A64, bool(mode >> 6 & 1)), _ftz(B64, bool(mode >> 6 & 1))
  with np.errstate(all="ignore"):
    w64 = _ftz(a64 + b64, bool(mode >> 7 & 1))
  u64 = w64.view(np.uint64).copy(); u64[np.isnan(w64)] = 0x7ff8000000000000
  assert (f64full == u64).all()

def test_fast_loop_matches_python_backend():
  # the fma/fmac/max results have no exact numpy counterpart: the Python reference backend is the oracle, in the two fast modes
  for mode in FAST_MODES:
    (c, c64), (p, p64) = _run(mode, 0xffffffff), _run(mode, 0xffffffff, backend="python")
    assert (c == p).all() and (c64 == p64).all(), [OPS[k] for k in range(len(OPS)) if (c[k] != p[k]).any()]
