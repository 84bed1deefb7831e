"""Python-backend mirror of the graphics-flavoured encodings (gen_gfx.py, csrc/emu_gfx.h): VINTERP, LDS direct loads and
exports; images are in pyimage.py. Same results, faults and messages as the C handlers."""
from __future__ import annotations
from mockgpu.emu.gen_gfx import VINTERP_VGPRS, vinterp_shadows
from mockgpu.emu.facts import ST_FAULT, ST_INVALID, ST_UNSUPPORTED, MSG, K_READ, SP_LDS

__all__ = ["exec_vinterp", "lds_direct_load", "export"]

M32 = 0xffffffff

def exec_vinterp(c, w, f: dict, name: str, ename: str, ops: dict, u, pyrun, post, Stop, scalar_src):
  if min(f["src0"], f["src2"]) < 256: raise Stop(ST_INVALID, msg=VINTERP_VGPRS)
  s1 = scalar_src(w, f, f["src1"], 32, 32) if f["src1"] < 256 else None   # S1 may be scalar: the same value in every lane
  neg, opsel, exe = f["neg"], f["opsel"], w.exec
  w.vshadow = [[(x >> ((opsel >> i & 1) * 16 if bits == 16 else 0)) ^ (neg >> i & 1) << (bits - 1) for x in w.v[f[k] - 256]]
               for k, i, bits in vinterp_shadows(ops, u)]
  out = {}
  try:
    for L in range(c.wave_size):
      if not exe >> L & 1: continue
      kw = dict(laneId=L, SRC0=len(w.v), SRC2=len(w.v) + 1, MODE=(w.mode & ~0xc) | 0xc if "_RTZ_" in name else w.mode,
                S1=(w.v[f["src1"] - 256][L] if s1 is None else s1) ^ (neg >> 1 & 1) << 31)
      if "S2" in u.reads: kw["S2"] = w.v[f["src2"] - 256][L] ^ (neg >> 2 & 1) << 31
      out[L] = pyrun(c, w, ename, **kw).D0
  finally: w.vshadow = []
  d, clamp = f["vdst"] - 256, f["clmp"]
  for L, val in out.items():
    if ops["vdst"][1] == 16:
      sh = (opsel >> 3 & 1) * 16
      w.v[d][L] = (w.v[d][L] & ~(0xffff << sh) & M32) | (post(val, 16, 0, clamp) if clamp else val & 0xffff) << sh
    else: w.v[d][L] = post(val & M32, 32, 0, clamp) if clamp else val & M32

def lds_direct_load(c, w, f: dict, Stop):
  m0, exe = w.s[125], w.exec
  ty = (m0 >> 16) & 7; n = (1, 2, 4, 0, 1, 2, 0, 0)[ty]
  if not n: raise Stop(ST_INVALID, msg=MSG["LDS_DIRECT_TYPE"])
  a = m0 & 0xffff
  if a + n > len(w.lds):
    raise Stop(ST_FAULT, kind=K_READ, space=SP_LDS, addr=a, size=n, lane=(exe & -exe).bit_length() - 1 if exe else 0, limit=len(w.lds))
  v = int.from_bytes(w.lds[a:a + n], "little")
  c.lds_rw[0] += n   # one read, broadcast (h_lds_direct_load)
  if ty >= 4 and v >> (8 * n - 1): v -= 1 << (8 * n)
  for L in range(c.wave_size):
    if exe >> L & 1: w.v[f["vdst"] - 256][L] = v & M32

def export(f: dict, Stop):
  raise Stop(ST_UNSUPPORTED, msg=f"EXP target={f['target']} en={f['en']:#x} done={f['done']}: {MSG['EXPORT']}")
