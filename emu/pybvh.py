"""Python-backend twin of csrc/emu_bvh.h: IMAGE_BVH[64]_INTERSECT_RAY (RDNA3 MIMG, RDNA4 VIMAGE) with the same T# decoding, node fetches
(MemoryMap checks and fault records), f32 arithmetic (numpy float32: one rounding per operation) and messages."""
from __future__ import annotations
import ctypes, struct
import numpy as np
from mockgpu.emu.bvh import BVH_OPS, BVH_TYPE, INVALID_NODE, MISS, NODE_BYTES, NODE_TYPES, field, groups, known_mask
from mockgpu.emu.facts import ST_INVALID, ST_UNSUPPORTED
from mockgpu.pcode.softfloat import cvt, fmt_of

__all__ = ["exec_bvh"]

F16, F32, M64 = fmt_of("f", 16), fmt_of("f", 32), (1 << 64) - 1
def _f(u: int) -> np.float32: return np.uint32(u).view(np.float32)
def _u(x: np.float32) -> int: return int(np.float32(x).view(np.uint32))
def _h(u: int) -> np.float32: return _f(cvt(u & 0xffff, F16, F32))
def _min(a, b): return b if np.isnan(a) else a if np.isnan(b) else b if b < a else a   # a NaN operand is ignored
def _max(a, b): return b if np.isnan(a) else a if np.isnan(b) else b if b > a else a

def _box(p: bytes, fp16: bool, ext, o, inv, sort: int) -> list[int]:
  ch, d, hit = list(struct.unpack_from("<4I", p)), [], []
  for i in range(4):
    if fp16: c = [_h(x) for x in struct.unpack_from("<6H", p, 16 + i * 12)]
    else: c = [_f(x) for x in struct.unpack_from("<6I", p, 16 + i * 24)]
    for a in range(3):
      t0, t1 = (c[a] - o[a]) * inv[a], (c[3 + a] - o[a]) * inv[a]
      n, f = _min(t0, t1), _max(t0, t1)
      tmin, tmax = (_max(tmin, n), _min(tmax, f)) if a else (n, f)
    d.append(tmin); hit.append(ch[i] != INVALID_NODE and tmax >= _max(np.float32(0), tmin) and tmin < ext)
  if not sort: return [ch[i] if hit[i] else INVALID_NODE for i in range(4)]
  order = sorted((i for i in range(4) if hit[i]), key=lambda i: d[i])   # stable: ties keep node order
  return [ch[i] for i in order] + [INVALID_NODE] * (4 - len(order))

def _triangle(p: bytes, o, dr) -> list[int]:
  vt = [[_f(x) for x in struct.unpack_from("<3I", p, 12 * i)] for i in range(3)]
  ad = [abs(x) for x in dr]
  kz = (0 if ad[0] >= ad[2] else 2) if ad[0] >= ad[1] else (1 if ad[1] >= ad[2] else 2)
  kx = (kz + 1) % 3; ky = (kx + 1) % 3
  if dr[kz] < 0: kx, ky = ky, kx
  sz = np.float32(1) / dr[kz]; sx, sy = dr[kx] * sz, dr[ky] * sz
  X, Y, Z = [], [], []
  for i in range(3):
    r = [vt[i][a] - o[a] for a in range(3)]
    X.append(r[kx] - sx * r[kz]); Y.append(r[ky] - sy * r[kz]); Z.append(sz * r[kz])
  u, v, w = X[2] * Y[1] - Y[2] * X[1], X[0] * Y[2] - Y[0] * X[2], X[1] * Y[0] - Y[1] * X[0]
  if (u < 0 or v < 0 or w < 0) and (u > 0 or v > 0 or w > 0): return list(MISS)
  det, t = u + (v + w), (u * Z[0] + v * Z[1]) + w * Z[2]
  if (det > 0 and t < 0) or (det < 0 and t > 0): return list(MISS)
  return [_u(t), _u(det), _u(v), _u(w)]

def _Stop(status: int, **kw):
  from mockgpu.emu.pybackend import Stop   # the backend's control-flow exception (pybackend imports this module)
  return Stop(status, **kw)

def exec_bvh(c, w, fmt: str, f: dict, name: str):
  """Execute IMAGE_BVH_INTERSECT_RAY / IMAGE_BVH64_INTERSECT_RAY of encoding `fmt` (as csrc/emu_bvh.h and the handlers of
  bvh.c_handler); faults and errors raise Stop."""
  if fmt != "VIMAGE" and f["nsa"]: raise _Stop(ST_UNSUPPORTED, msg="IMAGE_BVH with NSA (non-sequential address VGPRs) is not modelled")
  sr, npd = f["rsrc"] if fmt == "VIMAGE" else f["srsrc"], BVH_OPS[name]
  d = sum((w.s[sr + i] if sr + i < 128 else 0) << (32 * i) for i in range(4))
  ty, grow, unk = field(d, "type"), field(d, "box_grow"), d & ~known_mask()
  if ty != BVH_TYPE: raise _Stop(ST_INVALID, msg=f"BVH T# in s[{sr}:{sr + 3}] has TYPE={ty}, expected {BVH_TYPE} (BVH)")
  if unk: raise _Stop(ST_UNSUPPORTED, msg=f"BVH T# in s[{sr}:{sr + 3}] sets bit {(unk & -unk).bit_length() - 1}, outside the modelled fields (docs/emu.md Ray tracing)")
  if grow: raise _Stop(ST_UNSUPPORTED, msg=f"BVH T# in s[{sr}:{sr + 3}]: BOX_GROWING_AMOUNT={grow} is not modelled (docs/emu.md Ray tracing)")
  if not field(d, "tri_return"):
    raise _Stop(ST_UNSUPPORTED, msg=f"BVH T# in s[{sr}:{sr + 3}]: TRIANGLE_RETURN_MODE=0 (triangle id / hit status) is not modelled, only 1 (i/j)")
  base, size, sort, g, exe = field(d, "base") << 8, field(d, "size"), field(d, "box_sort"), groups(fmt, npd, f), w.exec
  with np.errstate(all="ignore"):
    for L in range(c.wave_size):
      if not exe >> L & 1: continue
      bv = lambda k, i: w.v[(g[k] + i) & 255][L]
      ptr = bv(0, 0) | (bv(0, 1) << 32 if npd == 2 else 0)
      ext, o = _f(bv(1, 0)), [_f(bv(2, a)) for a in range(3)]
      if f["a16"]:
        hs = [bv(3, i // 2) >> (i % 2 * 16) for i in range(6)]
        dr, inv = [_h(x) for x in hs[:3]], [_h(x) for x in hs[3:]]
      else: dr, inv = [_f(bv(3, a)) for a in range(3)], [_f(bv(4, a)) for a in range(3)]
      res, nt = [INVALID_NODE] * 4, ptr & 7
      if ptr >> 3 <= size:
        if nt not in NODE_BYTES:
          raise _Stop(ST_UNSUPPORTED, msg=f"IMAGE_BVH lane {L}: node pointer 0x{ptr:x} has type {nt} ({NODE_TYPES[nt]}), which is not modelled (docs/emu.md Ray tracing)")
        a, n = (base + (ptr >> 3) * 64) & M64, NODE_BYTES[nt]
        from mockgpu.emu.pybackend import global_check   # (pybackend imports this module)
        global_check(w, a, n, 1, L)
        p = ctypes.string_at(a, n)
        res = _triangle(p, o, dr) if nt == 0 else _box(p, nt == 4, ext, o, inv, sort)
      for i in range(4): w.v[(f["data0"] - 256 + i) & 255][L] = res[i]
