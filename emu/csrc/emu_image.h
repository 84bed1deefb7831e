/* emu_image.h: RDNA3 MIMG and RDNA4 VIMAGE loads, stores, atomics and GET_RESINFO on linear images (docs/emu.md "Images"). The T# field
 * positions, swizzle-mode names and address counts come from mockgpu.emu.image (generated above this header), the data
 * formats and their conversions from the buffer instructions (BUF_FMTS, bf_from / bf_to in emu_buffer.h);
 * pyimage.py is the Python mirror. Texel accesses go through gptr(): the same MemoryMap checks and fault records as
 * global memory. */
#include <stdarg.h>

typedef struct { int n, bits[4], numfmt, bpp; } ImgFmt;   /* a row of buffer.py's BUF_FMTS (numfmt: NF_*) */
typedef struct {
  uint64_t base;
  const ImgFmt *f; ImgFmt fm;
  int fmt, type, w, h, d, nslices, base_array, base_level, last_level, pitch2d, sel[4];   /* MSAA: 1 << last_level samples */
} Img;

static inline uint64_t tfield(const uint32_t *d, int nd, int lo, int wd) {
  uint64_t v = 0;
  for (int i = 0; i < wd; i++) { int b = lo + i; if (b / 32 < nd) v |= (uint64_t)(d[b / 32] >> (b % 32) & 1) << i; }
  return v;
}
#define TF(d, nd, F) tfield((d), (nd), F)

static int img_fail(Wave *w, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int img_fail(Wave *w, int st, const char *fmt, ...) {
  char msg[160]; va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof(msg), fmt, ap); va_end(ap);
  set_status(w, st, msg); return 0;
}

/* decode the T# in s[srsrc..] (8 dwords, r128: 4); 0 with the status set if it is not a modelled linear image */
static int img_setup(Wave *w, const Inst *in, Img *t) {
  if (in->nsa) return img_fail(w, ST_UNSUPPORTED, "MIMG with NSA (non-sequential address VGPRs) is not modelled");
  int nd = in->r128 ? 4 : 8; uint32_t d[8] = {0};
  for (int i = 0; i < nd; i++) d[i] = in->srsrc + i < NSREG ? w->s[in->srsrc + i] : 0;
  int sw = (int)TF(d, nd, TS_SW_MODE), fmt = (int)TF(d, nd, TS_FORMAT), type = (int)TF(d, nd, TS_TYPE);
  if (sw) return img_fail(w, ST_UNSUPPORTED, "image T# in s[%d:%d] uses swizzle mode %d (SW_%s): only linear images (SW_LINEAR) are modelled",
                          in->srsrc, in->srsrc + nd - 1, sw, SW_MODE_NAMES[sw]);
  if (type < 8) return img_fail(w, ST_INVALID, "T# in s[%d:%d] has TYPE=%d, not an image type (8..15)", in->srsrc, in->srsrc + nd - 1, type);
  if (fmt >= 128 || !BUF_FMTS[fmt][0]) return img_fail(w, ST_UNSUPPORTED, "image T# in s[%d:%d]: FORMAT=%d is not modelled (docs/emu.md Images)",
                                                         in->srsrc, in->srsrc + nd - 1, fmt);
  t->fm.n = 0; t->fm.bpp = 0; t->fm.numfmt = BUF_FMTS[fmt][4];
  for (int i = 0; i < 4; i++) { t->fm.bits[i] = BUF_FMTS[fmt][i]; t->fm.n += BUF_FMTS[fmt][i] != 0; t->fm.bpp += BUF_FMTS[fmt][i]; }
  t->fm.bpp /= 8;
  int depth = (int)TF(d, nd, TS_DEPTH), arr = type == 11 || type == 12 || type == 13 || type == 15;
  t->base = TF(d, nd, TS_BASE) << 8; t->f = &t->fm; t->fmt = fmt; t->type = type;
  t->w = (int)TF(d, nd, TS_WIDTH) + 1; t->h = type == 8 || type == 12 ? 1 : (int)TF(d, nd, TS_HEIGHT) + 1;
  t->d = type == 10 ? depth + 1 : 1; t->nslices = arr ? depth + 1 : 1; t->base_array = arr ? (int)TF(d, nd, TS_BASE_ARRAY) : 0;
  t->base_level = (int)TF(d, nd, TS_BASE_LEVEL); t->last_level = (int)TF(d, nd, TS_LAST_LEVEL);
  t->pitch2d = type == 9 && depth ? depth + 1 : 0;
  t->sel[0] = (int)TF(d, nd, TS_SEL_X); t->sel[1] = (int)TF(d, nd, TS_SEL_Y); t->sel[2] = (int)TF(d, nd, TS_SEL_Z); t->sel[3] = (int)TF(d, nd, TS_SEL_W);
  return 1;
}
static inline uint64_t img_pitch(int width, int bpp) { int g = 256; while (bpp % g) g >>= 1; uint64_t st = 256 / g; return (width + st - 1) / st * st; }

/* the VGPR of address dword j: field va<j>, past the last field (va<nva-1>) the VGPRs after it (image.ALIASES) */
static inline int img_areg(const Inst *in, int j) {
  const int32_t va[5] = {in->va0, in->va1, in->va2, in->va3, in->va4};
  return (j < in->nva ? va[j] : va[in->nva - 1] + j - (in->nva - 1)) & 255;
}
/* the address coordinates of lane L (a16: two 16-bit values per VGPR) */
static inline void img_coords(const Wave *w, const Inst *in, int L, int n, uint32_t *c) {
  for (int i = 0; i < n; i++)
    c[i] = in->a16 ? w->v[img_areg(in, i / 2) * MAXLANES + L] >> (i % 2 * 16) & 0xffff : w->v[img_areg(in, i) * MAXLANES + L];
}
/* texel address of (x, y, slice | z[, fragment]) at level base_level + lvl; 0 if the texel is outside the image (no memory
 * access). MSAA types: one level of 1 << LAST_LEVEL samples per texel, stored after each other (docs/emu.md Images). */
static int img_texel(const Img *t, int dim, const uint32_t *c, uint32_t lvl, uint64_t *addr) {
  uint32_t x = c[0], y = dim == 0 || dim == 4 ? 0 : c[1], s = dim == 4 ? c[1] : dim == 2 || dim == 3 || dim == 5 || dim == 7 ? c[2] : 0;
  if (t->type >= 14) {
    uint64_t fr = dim == 6 ? c[2] : dim == 7 ? c[3] : 0, ns = (uint64_t)1 << t->last_level, sl = (uint64_t)t->base_array + s;
    uint64_t pitch = img_pitch(t->w * (int)ns, t->f->bpp);
    if (lvl || x >= (uint32_t)t->w || y >= (uint32_t)t->h || sl >= (uint64_t)t->nslices || fr >= ns) return 0;
    *addr = t->base + (((sl * (uint64_t)t->h + y) * pitch + (uint64_t)x * ns + fr) * (uint64_t)t->f->bpp);
    return 1;
  }
  if (t->last_level < t->base_level || lvl > (uint32_t)(t->last_level - t->base_level)) return 0;
  int L = t->base_level + (int)lvl, bpp = t->f->bpp;
  uint64_t off = 0, wl = 1, hl = 1, dl = 1, pitch = 1;
  for (int i = 0; i <= L; i++) {
    wl = t->w >> i ? (uint64_t)(t->w >> i) : 1; hl = t->h >> i ? (uint64_t)(t->h >> i) : 1; dl = t->type == 10 ? (t->d >> i ? (uint64_t)(t->d >> i) : 1) : (uint64_t)t->nslices;
    pitch = i == 0 && t->pitch2d ? (uint64_t)t->pitch2d : img_pitch((int)wl, bpp);
    if (i < L) off += pitch * hl * dl * bpp;
  }
  uint64_t sl = t->type == 10 ? s : (uint64_t)t->base_array + s;
  if (x >= wl || y >= hl || sl >= dl) return 0;
  *addr = t->base + off + ((sl * hl + y) * pitch + x) * bpp;
  return 1;
}

static inline int img_isfloat(const ImgFmt *f) { return f->numfmt != NF_UINT && f->numfmt != NF_SINT; }
static inline uint32_t img_comp(const uint32_t *raw, const ImgFmt *f, int c) {   /* raw bits of component c (0 if absent) */
  if (c >= f->n) return 0;
  int o = 0; for (int i = 0; i < c; i++) o += f->bits[i];
  uint64_t win = (uint64_t)raw[o / 32 + 1] << 32 | raw[o / 32];
  return (uint32_t)(win >> (o % 32)) & (f->bits[c] == 32 ? 0xffffffffu : (1u << f->bits[c]) - 1);
}
static inline uint32_t img_to_reg(const ImgFmt *f, int c, uint32_t raw) { return bf_from(raw, f->bits[c], f->numfmt); }
static inline uint32_t img_from_reg(const ImgFmt *f, int c, uint32_t v) { return bf_to(v, f->bits[c], f->numfmt); }
static inline int img_ndata(const Inst *in, int pck_bits) {   /* data VGPRs of a load/store: dmask components, packed by d16/pck */
  int n = __builtin_popcount(in->dmask & 15);
  return in->d16 || (pck_bits && pck_bits <= 16) ? (n + 1) / 2 : n;
}
static inline int img_pckw(const ImgFmt *f) { return f->bits[0] <= 16 ? 16 : 32; }

/* IMAGE_LOAD[_MIP][_PCK[_SGN]] (pck: 0 convert, 1 raw zero-extended, 2 raw sign-extended) */
static void img_load(Wave *w, const Inst *in, int mip, int pck) {
  Img t; if (!img_setup(w, in, &t)) return;
  const ImgFmt *f = t.f; int nc = DIM_COORDS[in->dim] + mip, bpp = f->bpp, pw = pck ? img_pckw(f) : 0, nd = img_ndata(in, pw);
  uint64_t ex = rd_exec(w);
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    uint32_t c[5], raw[5] = {0}, comp[4], dv[5] = {0}; uint64_t a;
    img_coords(w, in, L, nc, c);
    if (img_texel(&t, in->dim, c, mip ? c[nc - 1] : 0, &a)) { uint8_t *p = gptr(w, a, bpp, K_READ, L); if (!p) return; memcpy(raw, p, bpp); }
    for (int i = 0; i < 4; i++) comp[i] = img_comp(raw, f, i);
    int k = 0;
    for (int i = 0; i < 4; i++) {
      if (!(in->dmask >> i & 1)) continue;
      uint32_t v;
      if (pck) { v = comp[i]; if (pw == 16 && i < f->n && f->bits[i] < 16 && pck == 2) v = (uint32_t)sext(v, f->bits[i]) & 0xffff; }
      else {
        int sel = t.sel[i];
        v = sel >= 4 ? (sel - 4 < f->n ? img_to_reg(f, sel - 4, comp[sel - 4]) : 0) : sel == 1 ? (img_isfloat(f) ? 0x3f800000u : 1u) : 0;
        if (in->d16) v = img_isfloat(f) ? (uint32_t)pc_cvt(v, PC_F32, PC_F16, PC_MODE_DEFAULT) & 0xffff : v & 0xffff;
      }
      if (in->d16 || pw == 16) dv[k / 2] |= (v & 0xffff) << (k % 2 * 16); else dv[k] = v;
      k++;
    }
    for (int i = 0; i < nd; i++) w->v[((in->data0 - 256 + i) & 255) * MAXLANES + L] = dv[i];
    if (in->tfe || in->lwe) w->v[((in->data0 - 256 + nd) & 255) * MAXLANES + L] = 0;
  }
}

/* IMAGE_STORE[_MIP][_PCK]: the dmask components come from consecutive VGPRs, the others are stored as 0 */
static void img_store(Wave *w, const Inst *in, int mip, int pck) {
  Img t; if (!img_setup(w, in, &t)) return;
  const ImgFmt *f = t.f; int nc = DIM_COORDS[in->dim] + mip, bpp = f->bpp, pw = pck ? img_pckw(f) : 0;
  uint64_t ex = rd_exec(w);
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    uint32_t c[5], comp[4] = {0}, raw[5] = {0}; uint64_t a;
    img_coords(w, in, L, nc, c);
    int k = 0;
    for (int i = 0; i < 4; i++) {
      if (!(in->dmask >> i & 1)) continue;
      uint32_t v = w->v[((in->data0 - 256 + ((in->d16 || pw == 16) ? k / 2 : k)) & 255) * MAXLANES + L];
      if (in->d16 || pw == 16) {
        v = v >> (k % 2 * 16) & 0xffff;
        if (!pck) v = img_isfloat(f) ? (uint32_t)pc_cvt(v, PC_F16, PC_F32, PC_MODE_DEFAULT) : f->numfmt == NF_SINT ? (uint32_t)sext(v, 16) : v;
      }
      comp[i] = v; k++;
    }
    if (!img_texel(&t, in->dim, c, mip ? c[nc - 1] : 0, &a)) continue;
    int o = 0;
    for (int i = 0; i < f->n; i++) {
      uint64_t b = pck ? comp[i] & (f->bits[i] == 32 ? 0xffffffffu : (1u << f->bits[i]) - 1) : img_from_reg(f, i, comp[i]);
      raw[o / 32] |= (uint32_t)(b << (o % 32)); if (o % 32 + f->bits[i] > 32) raw[o / 32 + 1] |= (uint32_t)(b >> (32 - o % 32));
      o += f->bits[i];
    }
    uint8_t *p = gptr(w, a, bpp, K_WRITE, L); if (!p) return;
    memcpy(p, raw, bpp); watch_wr(w, a, bpp, L);
  }
}

/* IMAGE_ATOMIC_*: pcode's entry on the texel's address (a 32-bit format); DATA = dmask VGPRs, glc returns the old value.
 * A texel outside the image is not touched and returns 0. */
static void img_atomic(Wave *w, const Inst *in, void (*fn)(PcState *)) {
  Img t; if (!img_setup(w, in, &t)) return;
  if (t.f->bpp != 4) { img_fail(w, ST_UNSUPPORTED, "image atomics need a 32-bit format; the T# has FORMAT=%d", t.fmt); return; }
  int nc = DIM_COORDS[in->dim], nd = __builtin_popcount(in->dmask & 15);
  uint64_t ex = rd_exec(w);
  PC_STATE(s, w);   /* MODE: the float atomics round as it says */
  w->c->space = SP_GLOBAL; w->c->atomic = 1;
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    uint32_t c[5]; uint64_t a;
    img_coords(w, in, L, nc, c);
    s.RETURN_DATA.d[0] = 0;
    if (img_texel(&t, in->dim, c, 0, &a)) {
      s.laneId = (uint64_t)L; s.ADDR = a;
      for (int i = 0; i < 2; i++) s.DATA.d[i] = i < nd ? w->v[((in->data0 - 256 + i) & 255) * MAXLANES + L] : 0;
      fn(&s);
      if (UNLIKELY(s.fault)) { w->c->atomic = 0; PC_FAULT(w, s); return; }
    }
    if (in->glc) w->v[(in->data0 - 256) * MAXLANES + L] = s.RETURN_DATA.d[0];
  }
  w->c->atomic = 0;
}

/* IMAGE_GET_RESINFO: for mip level vaddr (from BASE_LEVEL): X width, Y height (1D arrays: layers), Z depth (arrays: layers,
 * cube: layers / 6), W the level count (MSAA: 1); levels past the last give 0 sizes. dmask picks components into consecutive VGPRs. */
static void img_resinfo(Wave *w, const Inst *in) {
  Img t; if (!img_setup(w, in, &t)) return;
  uint64_t ex = rd_exec(w);
  int nl = t.type >= 14 ? 1 : t.last_level >= t.base_level ? t.last_level - t.base_level + 1 : 0, layers = t.nslices - t.base_array;
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    uint32_t lvl = w->v[img_areg(in, 0) * MAXLANES + L], r[4] = {0, 0, 0, (uint32_t)nl}, k = 0;
    if (lvl < (uint32_t)nl) {
      int l = t.type >= 14 ? 0 : t.base_level + (int)lvl;
      r[0] = t.w >> l ? (uint32_t)(t.w >> l) : 1;
      r[1] = t.type == 12 ? (uint32_t)layers : t.type == 8 ? 0 : (t.h >> l ? (uint32_t)(t.h >> l) : 1);
      r[2] = t.type == 10 ? (t.d >> l ? (uint32_t)(t.d >> l) : 1) : t.type == 13 || t.type == 15 ? (uint32_t)layers : t.type == 11 ? (uint32_t)layers / 6 : 0;
    }
    for (int i = 0; i < 4; i++) if (in->dmask >> i & 1) w->v[((in->data0 - 256 + k++) & 255) * MAXLANES + L] = r[i];
  }
}
/* IMAGE_MSAA_LOAD: component ctz(DMASK) of samples fragment + 0..3 of texel (x, y[, slice]) into four VGPRs (D16: two),
 * converted and DST_SEL'd like IMAGE_LOAD; samples past the texel's last read 0 */
static void img_msaa_load(Wave *w, const Inst *in) {
  Img t; if (!img_setup(w, in, &t)) return;
  if (in->dim < 6) { img_fail(w, ST_INVALID, "IMAGE_MSAA_LOAD with dim=%s: it needs 2D_MSAA or 2D_MSAA_ARRAY", DIM_NAMES[in->dim]); return; }
  const ImgFmt *f = t.f; int nc = DIM_COORDS[in->dim], comp = in->dmask & 15 ? __builtin_ctz(in->dmask & 15) : 0, nd = in->d16 ? 2 : 4;
  uint64_t ex = rd_exec(w);
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    uint32_t c[4], dv[4] = {0}; uint64_t a;
    img_coords(w, in, L, nc, c);
    for (int k = 0; k < 4; k++) {
      uint32_t raw[5] = {0}, v, cc[4] = {c[0], c[1], c[2], c[3]};
      cc[nc - 1] = c[nc - 1] + (uint32_t)k;
      if (cc[nc - 1] >= c[nc - 1] && img_texel(&t, in->dim, cc, 0, &a)) { uint8_t *p = gptr(w, a, f->bpp, K_READ, L); if (!p) return; memcpy(raw, p, f->bpp); }
      int sel = t.sel[comp];
      v = sel >= 4 ? (sel - 4 < f->n ? img_to_reg(f, sel - 4, img_comp(raw, f, sel - 4)) : 0) : sel == 1 ? (img_isfloat(f) ? 0x3f800000u : 1u) : 0;
      if (in->d16) dv[k / 2] |= (img_isfloat(f) ? (uint32_t)pc_cvt(v, PC_F32, PC_F16, PC_MODE_DEFAULT) & 0xffff : v & 0xffff) << (k % 2 * 16); else dv[k] = v;
    }
    for (int i = 0; i < nd; i++) w->v[((in->data0 - 256 + i) & 255) * MAXLANES + L] = dv[i];
    if (in->tfe || in->lwe) w->v[((in->data0 - 256 + nd) & 255) * MAXLANES + L] = 0;
  }
}
static void h_image_unsupported(Wave *w, const Inst *in) {
  (void)in;
  set_status(w, ST_UNSUPPORTED, "this image op is not modelled (docs/emu.md Images, Ray tracing, What is missing)");
}

/* ---- sampling: IMAGE_SAMPLE*, IMAGE_GATHER4*, IMAGE_GET_LOD (docs/emu.md "Sampling"); pyimage.py mirrors it operation by
 * operation. Each f32 operation is its own statement and contraction is off, so the Python mirror (the f64 result rounded
 * to f32) gives the same bits; LOD arithmetic is f64. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
typedef struct { int mode[3], cmp, unnorm, mag, min, zf, mip, border; double minl, maxl, bias; } Samp;
typedef struct { uint32_t off; float bias, zref, g[2][3], c[4]; } SAddr;
typedef struct { int64_t i[4]; float wt[2]; int n; } Axis;   /* taps along one axis (index -1: border), bilinear weights */

static int samp_setup(Wave *w, const Inst *in, Samp *s) {
  uint32_t d[4];
  for (int i = 0; i < 4; i++) d[i] = in->ssamp + i < NSREG ? w->s[in->ssamp + i] : 0;
  s->mode[0] = (int)TF(d, 4, SS_CLAMP_X); s->mode[1] = (int)TF(d, 4, SS_CLAMP_Y); s->mode[2] = (int)TF(d, 4, SS_CLAMP_Z);
  s->cmp = (int)TF(d, 4, SS_DEPTH_COMPARE_FUNC); s->unnorm = (int)TF(d, 4, SS_FORCE_UNNORMALIZED) | in->unrm;
  s->mag = (int)TF(d, 4, SS_XY_MAG_FILTER); s->min = (int)TF(d, 4, SS_XY_MIN_FILTER); s->zf = (int)TF(d, 4, SS_Z_FILTER);
  s->mip = (int)TF(d, 4, SS_MIP_FILTER); s->border = (int)TF(d, 4, SS_BORDER_COLOR_TYPE);
  s->minl = (double)TF(d, 4, SS_MIN_LOD) / 256.0; s->maxl = (double)TF(d, 4, SS_MAX_LOD) / 256.0;
  s->bias = (double)sext((uint32_t)TF(d, 4, SS_LOD_BIAS), 14) / 256.0;
  int fm = (int)TF(d, 4, SS_FILTER_MODE), an = (int)TF(d, 4, SS_MAX_ANISO_RATIO), r = in->ssamp;
  if (fm) return img_fail(w, ST_UNSUPPORTED, "sampler S# in s[%d:%d] has FILTER_MODE=%d (min/max reduction): only blending (0) is modelled", r, r + 3, fm);
  if (an && ((s->mag | s->min) & 2)) return img_fail(w, ST_UNSUPPORTED, "sampler S# in s[%d:%d]: anisotropic filtering (MAX_ANISO_RATIO=%d) is not modelled", r, r + 3, an);
  if (s->border == 3 && (s->mode[0] >= 4 || s->mode[1] >= 4 || s->mode[2] >= 4))
    return img_fail(w, ST_UNSUPPORTED, "sampler S# in s[%d:%d]: BORDER_COLOR_TYPE=3 (the border color table) is not modelled", r, r + 3);
  return 1;
}
static inline float img_h2f(uint32_t v) { return pc_as_f((uint32_t)pc_cvt(v & 0xffff, PC_F16, PC_F32, PC_MODE_DEFAULT)); }
/* the address VGPRs of lane L in the ISA's order: offset, bias, z-compare, derivatives (h then v), coordinates, lod | clamp */
static void samp_addr(const Wave *w, const Inst *in, int fl, int L, SAddr *a) {
  int r = in->vaddr - 256, k = 0, g16 = in->a16 || (fl & SF_G16), ng = DIM_GRADS[in->dim], nc = DIM_COORDS[in->dim] + !!(fl & (SF_L | SF_CL));
#define SV(i) w->v[((r + (i)) & 255) * MAXLANES + L]
  memset(a, 0, sizeof(*a));
  if (fl & SF_O) a->off = SV(k++);
  if (fl & SF_B) { a->bias = in->a16 ? img_h2f(SV(k)) : pc_as_f(SV(k)); k++; }
  if (fl & SF_C) a->zref = pc_as_f(SV(k++));
  if (fl & SF_D)
    for (int d = 0; d < 2; d++) {
      for (int i = 0; i < ng; i++) a->g[d][i] = g16 ? img_h2f(SV(k + i / 2) >> (i % 2 * 16)) : pc_as_f(SV(k + i));
      k += g16 ? (ng + 1) / 2 : ng;
    }
  for (int i = 0; i < nc; i++) a->c[i] = in->a16 ? img_h2f(SV(k + i / 2) >> (i % 2 * 16)) : pc_as_f(SV(k + i));
#undef SV
}
/* texel index along one axis of `size` texels under address mode `m` (-1: the border color) */
static inline int64_t samp_wrap(int64_t i, int64_t n, int m) {
  if (m == 0) { i %= n; return i < 0 ? i + n : i; }
  if (m == 1) { i %= 2 * n; if (i < 0) i += 2 * n; return i < n ? i : 2 * n - 1 - i; }
  if (m == 2 || m == 3) return i < 0 ? 0 : i >= n ? n - 1 : i;
  return i < 0 || i >= n ? -1 : i;
}
/* the taps of coordinate x (texels) on an axis of n texels: `nt` consecutive texels from floor(x) (point) or floor(x - 0.5)
 * (linear, with the weights 1 - frac, frac), each through the address mode */
static void samp_axis(float x, int64_t n, int m, int lin, int nt, Axis *a) {
  if (x != x) x = 0.0f;
  if (m == 3 || m == 5 || m == 7) x = fabsf(x);
  if (m == 4 || m == 5) x = x < 0.0f ? 0.0f : x > (float)n ? (float)n : x;
  x = x < -1073741824.0f ? -1073741824.0f : x > 1073741824.0f ? 1073741824.0f : x;
  float u = lin ? x - 0.5f : x, f = floorf(u), fr = u - f;
  a->n = nt; a->wt[0] = lin ? 1.0f - fr : 1.0f; a->wt[1] = fr;
  for (int k = 0; k < nt; k++) a->i[k] = samp_wrap((int64_t)f + k, n, m);
}
static inline int samp_cmp(int fn, float r, float t) {
  switch (fn) { case 0: return 0; case 1: return r < t; case 2: return r == t; case 3: return r <= t; case 4: return r > t; case 5: return r != t; case 6: return r >= t; default: return 1; }
}
/* the register values (after DST_SEL) of texel (x, y, z | slice) of level lvl (from BASE_LEVEL), or the border color; 0 on a fault */
static int samp_texel(Wave *w, const Img *t, const Samp *s, int lvl, int64_t x, int64_t y, int64_t z, uint32_t *v, int L) {
  const ImgFmt *f = t->f; int fl = img_isfloat(f);
  if (x < 0 || y < 0 || z < 0) {
    uint32_t one = fl ? 0x3f800000u : 1u;
    for (int i = 0; i < 4; i++) v[i] = s->border == 2 || (s->border == 1 && i == 3) ? one : 0;
    return 1;
  }
  uint32_t c[3] = {(uint32_t)x, (uint32_t)y, (uint32_t)z}, raw[5] = {0}; uint64_t a;
  if (img_texel(t, 2, c, (uint32_t)lvl, &a)) { uint8_t *p = gptr(w, a, f->bpp, K_READ, L); if (!p) return 0; memcpy(raw, p, f->bpp); }
  for (int i = 0; i < 4; i++) {
    int sel = t->sel[i];
    v[i] = sel >= 4 ? (sel - 4 < f->n ? img_to_reg(f, sel - 4, img_comp(raw, f, sel - 4)) : 0) : sel == 1 ? (fl ? 0x3f800000u : 1u) : 0;
  }
  return 1;
}
static inline int64_t img_lsz(int v, int l) { return v >> l ? v >> l : 1; }
static inline float samp_coord_clamp(float x) { return x != x ? 0.0f : x < -1073741824.0f ? -1073741824.0f : x > 1073741824.0f ? 1073741824.0f : x; }

/* the taps of level lvl (from BASE_LEVEL) for the lane's coordinates: ax[0..2] (x, y, z) and the array layer */
static void samp_taps(const Img *t, const Samp *s, const SAddr *a, int dim, int fl, int lvl, int lin, Axis *ax, int64_t *layer) {
  int la = t->base_level + lvl, cube = dim == 3, nax = dim == 0 || dim == 4 ? 1 : dim == 2 ? 3 : 2;
  int64_t n[3] = {img_lsz(t->w, la), img_lsz(t->h, la), dim == 2 ? img_lsz(t->d, la) : 1};
  *layer = 0;
  if (dim >= 3) {
    float sc = samp_coord_clamp(a->c[dim == 4 ? 1 : 2]);
    int64_t l = (int64_t)rintf(sc), nl = t->nslices - t->base_array;
    if (l < 0) l = 0;
    if (cube) l = (l >> 3) * 6 + ((l & 7) > 5 ? 5 : (l & 7));
    *layer = l >= nl ? (nl > 0 ? nl - 1 : 0) : l;
  }
  for (int k = 0; k < 3; k++) {
    if (k >= nax) { ax[k].n = 1; ax[k].i[0] = 0; ax[k].wt[0] = 1.0f; continue; }
    float x = a->c[k];
    if (cube) x = x - 1.0f;
    if (!s->unnorm) x = x * (float)n[k];
    if (fl & SF_O) x = x + (float)sext(a->off >> (8 * k) & 63, 6);
    int kl = k < 2 ? lin : (fl & (SF_GATHER | SF_GATHER4H)) || !img_isfloat(t->f) ? 0 : s->zf ? s->zf == 2 : lin;
    if (fl & SF_GATHER4H) samp_axis(x, n[k], s->mode[k], 0, k == 0 ? 4 : 1, &ax[k]);
    else samp_axis(x, n[k], cube ? 2 : s->mode[k], kl, kl ? 2 : 1, &ax[k]);
  }
}
/* filtered register values of level lvl; the gather ops return their four texels' component instead. 0 on a fault */
static int samp_level(Wave *w, const Img *t, const Samp *s, const SAddr *a, const Inst *in, int fl, int lvl, int lin, float *acc, uint32_t *bits, int L) {
  Axis ax[3]; int64_t layer; uint32_t v[4]; int first = 1, isf = img_isfloat(t->f);
  samp_taps(t, s, a, in->dim, fl, lvl, lin, ax, &layer);
  if (fl & (SF_GATHER | SF_GATHER4H)) {
    static const int GX[4] = {0, 1, 1, 0}, GY[4] = {1, 1, 0, 0};
    int comp = in->dmask & 15 ? __builtin_ctz(in->dmask & 15) : 0;
    for (int k = 0; k < 4; k++) {
      int kx = fl & SF_GATHER4H ? k : GX[k], ky = fl & SF_GATHER4H || ax[1].n == 1 ? 0 : GY[k];
      if (!samp_texel(w, t, s, lvl, ax[0].i[kx], ax[1].i[ky], in->dim == 2 ? ax[2].i[0] : layer, v, L)) return 0;
      bits[k] = fl & SF_C ? (samp_cmp(s->cmp, a->zref, pc_as_f(v[0])) ? 0x3f800000u : 0) : v[comp];
    }
    return 1;
  }
  for (int kz = 0; kz < ax[2].n; kz++) for (int ky = 0; ky < ax[1].n; ky++) for (int kx = 0; kx < ax[0].n; kx++) {
    float wt = ax[0].wt[kx] * ax[1].wt[ky];
    wt = wt * ax[2].wt[kz];
    if (wt == 0.0f) continue;
    if (!samp_texel(w, t, s, lvl, ax[0].i[kx], ax[1].i[ky], in->dim == 2 ? ax[2].i[kz] : layer, v, L)) return 0;
    if (fl & SF_C) { uint32_t c = samp_cmp(s->cmp, a->zref, pc_as_f(v[0])) ? 0x3f800000u : 0; v[0] = v[1] = v[2] = v[3] = c; }
    if (!isf) { memcpy(bits, v, sizeof(v)); return 1; }
    for (int i = 0; i < 4; i++) { float p = wt * pc_as_f(v[i]); acc[i] = first ? p : acc[i] + p; }
    first = 0;
  }
  for (int i = 0; i < 4; i++) bits[i] = pc_fbits(acc[i]);
  return 1;
}

/* IMAGE_SAMPLE* / IMAGE_GATHER4* / IMAGE_GET_LOD (fl: SAMPLE_FLAGS): LOD from the quad's or the given derivatives, or given */
static void img_sample(Wave *w, const Inst *in, int fl) {
  Img t; Samp s; SAddr A[MAXLANES];
  if (!img_setup(w, in, &t) || !samp_setup(w, in, &s)) return;
  if (in->dim >= 6) { img_fail(w, ST_INVALID, "MIMG sampling with dim=%s: multisampled images cannot be sampled", DIM_NAMES[in->dim]); return; }
  const ImgFmt *f = t.f; int isf = img_isfloat(f), ng = DIM_GRADS[in->dim], nc = DIM_COORDS[in->dim] + !!(fl & (SF_L | SF_CL));
  if ((fl & SF_C) && !isf) { img_fail(w, ST_UNSUPPORTED, "depth-compare sampling of an integer format (T# FORMAT=%d) is not modelled", t.fmt); return; }
  int implicit = !(fl & (SF_L | SF_LZ | SF_D)), gather = !!(fl & (SF_GATHER | SF_GATHER4H)), q = t.last_level - t.base_level;
  int nd = fl & SF_GET_LOD || !gather ? __builtin_popcount(in->dmask & 15) : 4, ndv = in->d16 ? (nd + 1) / 2 : nd;
  if (q < 0) q = 0;
  uint64_t ex = rd_exec(w);
  for (int L = 0; L < (int)w->c->wave_size; L++) if (implicit || ex >> L & 1) samp_addr(w, in, fl, L, &A[L]);
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    const SAddr *a = &A[L];
    float g[2][3]; double p[2] = {0, 0}, lod, sz[3] = {1, 1, 1};
    if (!s.unnorm) { sz[0] = (double)img_lsz(t.w, t.base_level); sz[1] = (double)img_lsz(t.h, t.base_level); sz[2] = (double)img_lsz(t.d, t.base_level); }
    for (int d = 0; d < 2; d++) for (int i = 0; i < ng; i++) {
      if (implicit) { int qb = L & ~3; g[d][i] = A[qb + 1 + d].c[i] - A[qb].c[i]; } else g[d][i] = a->g[d][i];
      double gi = (double)g[d][i] * sz[i];
      gi = gi * gi; p[d] = p[d] + gi;
    }
    if (fl & SF_L) lod = (double)a->c[nc - 1];
    else if (fl & SF_LZ) lod = 0.0;
    else {
      double r2 = p[1] > p[0] ? p[1] : p[0];
      lod = r2 == 0.0 ? -INFINITY : 0.5 * log2(r2);
      lod = lod + s.bias; lod = lod + (double)a->bias;
    }
    double lo = s.minl, lodc;
    if ((fl & SF_CL) && (double)a->c[nc - 1] > lo) lo = (double)a->c[nc - 1];
    lodc = lod >= lo ? lod : lo;
    if (lodc > s.maxl) lodc = s.maxl;
    double lm = lodc < 0.0 ? 0.0 : lodc > (double)q ? (double)q : lodc;
    uint32_t res[4] = {0, 0, 0, 0}, r1[4]; float acc[4], acc1[4];
    if (fl & SF_GET_LOD) { res[0] = pc_fbits((float)lm); res[1] = pc_fbits((float)lod); }
    else {
      int mip = gather || !isf ? (s.mip ? 1 : 0) : s.mip, l0 = 0, two = 0, lin = gather || (isf && ((lodc <= 0.0 ? s.mag : s.min) & 1));
      float fr = 0.0f;
      if (mip == 1 || mip == 3) { l0 = lm <= 0.5 ? 0 : (int)ceil(lm + 0.5) - 1; if (l0 > q) l0 = q; }
      else if (mip == 2) { l0 = (int)floor(lm); fr = (float)(lm - (double)l0); two = fr > 0.0f && l0 < q; }
      if (!samp_level(w, &t, &s, a, in, fl, l0, lin, acc, res, L)) return;
      if (two) {
        if (!samp_level(w, &t, &s, a, in, fl, l0 + 1, lin, acc1, r1, L)) return;
        float wa = 1.0f - fr;
        for (int i = 0; i < 4; i++) { float p0 = wa * pc_as_f(res[i]); float p1 = fr * pc_as_f(r1[i]); res[i] = pc_fbits(p0 + p1); }
      }
    }
    uint32_t dv[5] = {0}; int k = 0, fo = isf || (fl & (SF_GET_LOD | SF_C));
    for (int i = 0; i < 4; i++) {
      if (!gather && !(in->dmask >> i & 1)) continue;
      uint32_t v = res[i];
      if (in->d16) { v = fo ? (uint32_t)pc_cvt(v, PC_F32, PC_F16, PC_MODE_DEFAULT) & 0xffff : v & 0xffff; dv[k / 2] |= v << (k % 2 * 16); }
      else dv[k] = v;
      k++;
    }
    for (int i = 0; i < ndv; i++) w->v[((in->data0 - 256 + i) & 255) * MAXLANES + L] = dv[i];
    if (in->tfe || in->lwe) w->v[((in->data0 - 256 + ndv) & 255) * MAXLANES + L] = 0;
  }
}
#pragma GCC pop_options
