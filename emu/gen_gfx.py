"""Handlers of the graphics-flavoured encodings (docs/emu.md "Graphics encodings"): VINTERP runs pcode's generated C with
its source modifiers applied to the VGPRs the pseudocode reads directly; LDSDIR/VDSDIR, EXP/VEXPORT and the image encodings
map to hand-written C (csrc/emu_gfx.h, csrc/emu_image.h) through GFX_PROSE. The Python backend mirrors each in pygfx.py."""
from __future__ import annotations
import re
from mockgpu.emu.image import sample_flags
from mockgpu.emu.pcinfo import Usage

__all__ = ["GFX_PROSE", "EXPORT_FORMATS", "IMAGE_FORMATS", "VINTERP_VGPRS", "vinterp_shadows", "vinterp", "image_kind", "image"]

# member name -> C handler, for ops whose pseudocode is prose or absent (same role as gen_c.PROSE_C)
GFX_PROSE = {"LDS_DIRECT_LOAD": "h_lds_direct_load", "DS_DIRECT_LOAD": "h_lds_direct_load",
             "LDS_PARAM_LOAD": "h_lds_param_load", "DS_PARAM_LOAD": "h_lds_param_load"}
EXPORT_FORMATS = ("EXP", "VEXPORT")   # no opcode field: every encoding is one export (h_export)
# S0 (and P10's S2) are read as other lanes' VGPRs; S1 may be an SGPR or another scalar source (hardware, issue 10)
VINTERP_VGPRS = "VINTERP S0 and S2 must be VGPRs (S1 may be scalar)"
IMAGE_FORMATS = ("MIMG", "VIMAGE")   # RDNA3, RDNA4: one core, the fields mapped by image.ALIASES; RDNA4 VSAMPLE is not modelled

def image_kind(name: str) -> tuple[str, int, int] | None:
  """("load" | "store", mip, pck: 0 convert / 1 raw / 2 raw sign-extended), ("atomic", 0, 0), ("resinfo", 0, 0),
  ("sample", image.SAMPLE_FLAGS of the op, 0), ("msaa", 0, 0), or None (BVH ops: bvh.py; atomics without pseudocode)."""
  if (fl := sample_flags(name)) is not None: return ("sample", fl, 0)
  if name == "IMAGE_MSAA_LOAD": return ("msaa", 0, 0)
  if name.startswith("IMAGE_ATOMIC_"): return ("atomic", 0, 0)
  if name == "IMAGE_GET_RESINFO": return ("resinfo", 0, 0)
  if (m := re.fullmatch(r"IMAGE_(LOAD|STORE)(_MIP)?(_PCK)?(_SGN)?", name)):
    return (m[1].lower(), int(bool(m[2])), 2 if m[4] else int(bool(m[3])))
  return None

def image(h: str, fn: str | None, name: str) -> str | None:
  """C handler of one image opcode (csrc/emu_image.h does the work; atomics run pcode's `fn` on the texel address), or None."""
  k = image_kind(name)
  if k is None or (k[0] == "atomic" and fn is None): return None
  call = {"load": f"img_load(w, in, {k[1]}, {k[2]})", "store": f"img_store(w, in, {k[1]}, {k[2]})", "atomic": f"img_atomic(w, in, {fn})",
          "resinfo": "img_resinfo(w, in)", "sample": f"img_sample(w, in, {k[1]})",
          "msaa": "img_msaa_load(w, in)"}[k[0]]
  return f"void {h}(Wave *w, const Inst *in) {{ {call}; }}\n"

def vinterp_shadows(ops: dict, u: Usage) -> tuple[tuple[str, int, int], ...]:
  """(source field, modifier bit, float width) of each source the pseudocode reads as VGPR[quad lane][SRCk]: src0 always,
  src2 when it reads SRC2 (P10). The handler copies each into shadow register NVREG + j (past the VGPR file) with its
  modifiers applied (neg flips the width's sign bit, op_sel takes an f16 from the high half) and points SRC0/SRC2 there."""
  return tuple((k, i, ops[k][1]) for i, k in ((0, "src0"), (2, "src2")) if i == 0 or "SRC2" in u.reads)

def vinterp(h: str, fn: str, u: Usage, ops: dict, name: str) -> str:
  """C handler of one VINTERP opcode. Every lane reads its quad's VGPRs before any lane's result is written (the results are
  buffered), S1 (a VGPR or a scalar read for all lanes) and S2 (a VGPR) are f32 with neg, RTZ variants convert with MODE's
  f16 rounding set toward zero, clamp applies to the result and op_sel[3] selects the f16 destination half."""
  d16 = ops["vdst"][1] == 16
  L = [f"void {h}(Wave *w, const Inst *in) {{",
       f'  if (in->src0 < 256 || in->src2 < 256) {{ set_status(w, ST_INVALID, "{VINTERP_VGPRS}"); return; }}',
       "  PC_STATE(s, w); Ctx *c = w->c; uint32_t out[MAXLANES]; uint64_t ex = rd_exec(w), e = ex;",
       f"  s.SRC0 = NVREG; s.SRC2 = NVREG + 1; s.MODE = {'(w->mode & ~0xcu) | 0xcu' if '_RTZ_' in name else 'w->mode'};",
       "  const uint32_t *v1 = in->src1 >= 256 ? w->v + (in->src1 - 256) * MAXLANES : NULL, *v2 = w->v + (in->src2 - 256) * MAXLANES; (void)v2;",
       "  const uint32_t s1 = v1 ? 0 : (uint32_t)scalar_src(w, in, in->src1, 32, 32);   /* S1 may be scalar: the same value in every lane */"]
  for j, (k, i, bits) in enumerate(vinterp_shadows(ops, u)):
    sh = f"(in->opsel >> {i} & 1) * 16" if bits == 16 else "0"
    L.append(f"  {{ const uint32_t *r = w->v + (in->{k} - 256) * MAXLANES, sh = {sh}, x = (uint32_t)(in->neg >> {i} & 1) << {bits - 1};"
             f" for (int L = 0; L < MAXLANES; L++) c->vshadow[{j}][L] = (r[L] >> sh) ^ x; }}")
  L.append(f"  c->vshadow_n = {len(vinterp_shadows(ops, u))};")
  body = ["s.laneId = (uint64_t)L;", "s.S1.d[0] = (v1 ? v1[L] : s1) ^ (in->neg >> 1 & 1) << 31; s.S1.d[1] = 0;"]
  if "S2" in u.reads: body.append("s.S2.d[0] = v2[L] ^ (in->neg >> 2 & 1) << 31; s.S2.d[1] = 0;")
  L += ["  while (e) {", "    int L = __builtin_ctzll(e); e &= e - 1;", *("    " + b for b in body), f"    {fn}(&s);",
        "    if (UNLIKELY(s.fault)) { c->vshadow_n = 0; PC_FAULT(w, s); return; }", "    out[L] = s.D0.d[0];", "  }", "  c->vshadow_n = 0;",
        "  VOps o; o.omod = 0; o.clamp = in->clmp; uint32_t *d = w->v + (in->vdst - 256) * MAXLANES;"]
  if d16: L.append("  const int sh = (in->opsel >> 3 & 1) * 16;\n  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1;"
                   " d[L] = (d[L] & ~(0xffffu << sh)) | (o.clamp ? post_f16(&o, out[L]) : out[L] & 0xffff) << sh; }")
  else: L.append("  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; d[L] = o.clamp ? post_f32(&o, out[L]) : out[L]; }")
  return "\n".join(L) + "\n}\n"
