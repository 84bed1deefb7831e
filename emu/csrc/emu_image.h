/* emu_image.h: RDNA3 MIMG loads, stores, atomics and GET_RESINFO on linear images (docs/emu.md "Images"). The T# field
 * positions, swizzle-mode names and address counts come from mockgpu.emu.image (generated above this header), the data
 * formats and their conversions from the buffer instructions (BUF_FMTS, bf_from / bf_to in emu_buffer.h);
 * pyimage.py is the Python mirror. Texel accesses go through gptr(): the same MemoryMap checks and fault records as
 * global memory. */
#include <stdarg.h>

typedef struct { int n, bits[4], numfmt, bpp; } ImgFmt;   /* a row of buffer.py's BUF_FMTS (numfmt: NF_*) */
typedef struct {
  uint64_t base;
  const ImgFmt *f; ImgFmt fm;
  int fmt, type, w, h, d, nslices, base_array, base_level, last_level, pitch2d, sel[4];
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
  int depth = (int)TF(d, nd, TS_DEPTH), arr = type == 11 || type == 12 || type == 13;
  t->base = TF(d, nd, TS_BASE) << 8; t->f = &t->fm; t->fmt = fmt; t->type = type;
  t->w = (int)TF(d, nd, TS_WIDTH) + 1; t->h = type == 8 || type == 12 ? 1 : (int)TF(d, nd, TS_HEIGHT) + 1;
  t->d = type == 10 ? depth + 1 : 1; t->nslices = arr ? depth + 1 : 1; t->base_array = arr ? (int)TF(d, nd, TS_BASE_ARRAY) : 0;
  t->base_level = (int)TF(d, nd, TS_BASE_LEVEL); t->last_level = (int)TF(d, nd, TS_LAST_LEVEL);
  t->pitch2d = type == 9 && depth ? depth + 1 : 0;
  t->sel[0] = (int)TF(d, nd, TS_SEL_X); t->sel[1] = (int)TF(d, nd, TS_SEL_Y); t->sel[2] = (int)TF(d, nd, TS_SEL_Z); t->sel[3] = (int)TF(d, nd, TS_SEL_W);
  return 1;
}
static int img_dim_ok(Wave *w, const Inst *in) {
  if (in->dim >= 6) return img_fail(w, ST_UNSUPPORTED, "MIMG dim=%s: multisampled image layouts are not modelled", DIM_NAMES[in->dim]);
  return 1;
}
static inline uint64_t img_pitch(int width, int bpp) { int g = 256; while (bpp % g) g >>= 1; uint64_t st = 256 / g; return (width + st - 1) / st * st; }

/* the address coordinates of lane L (a16: two 16-bit values per VGPR) */
static inline void img_coords(const Wave *w, const Inst *in, int L, int n, uint32_t *c) {
  int r = in->vaddr - 256;
  for (int i = 0; i < n; i++)
    c[i] = in->a16 ? w->v[((r + i / 2) & 255) * MAXLANES + L] >> (i % 2 * 16) & 0xffff : w->v[((r + i) & 255) * MAXLANES + L];
}
/* texel address of (x, y, slice | z) at level base_level + lvl; 0 if the texel is outside the image (no memory access) */
static int img_texel(const Img *t, int dim, const uint32_t *c, uint32_t lvl, uint64_t *addr) {
  uint32_t x = c[0], y = dim == 0 || dim == 4 ? 0 : c[1], s = dim == 4 ? c[1] : dim == 2 || dim == 3 || dim == 5 ? c[2] : 0;
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
  Img t; if (!img_setup(w, in, &t) || !img_dim_ok(w, in)) return;
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
        if (in->d16) v = img_isfloat(f) ? (uint32_t)pc_cvt(v, PC_F32, PC_F16, 0) & 0xffff : v & 0xffff;
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
  Img t; if (!img_setup(w, in, &t) || !img_dim_ok(w, in)) return;
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
        if (!pck) v = img_isfloat(f) ? (uint32_t)pc_cvt(v, PC_F16, PC_F32, 0) : f->numfmt == NF_SINT ? (uint32_t)sext(v, 16) : v;
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
    memcpy(p, raw, bpp);
  }
}

/* IMAGE_ATOMIC_*: pcode's entry on the texel's address (a 32-bit format); DATA = dmask VGPRs, glc returns the old value.
 * A texel outside the image is not touched and returns 0. */
static void img_atomic(Wave *w, const Inst *in, void (*fn)(PcState *)) {
  Img t; if (!img_setup(w, in, &t) || !img_dim_ok(w, in)) return;
  if (t.f->bpp != 4) { img_fail(w, ST_UNSUPPORTED, "image atomics need a 32-bit format; the T# has FORMAT=%d", t.fmt); return; }
  int nc = DIM_COORDS[in->dim], nd = __builtin_popcount(in->dmask & 15);
  uint64_t ex = rd_exec(w);
  PcState s; s.user = w; s.fault = 0;
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
      if (UNLIKELY(s.fault)) { w->c->atomic = 0; pc_fault(w, &s); return; }
    }
    if (in->glc) w->v[(in->data0 - 256) * MAXLANES + L] = s.RETURN_DATA.d[0];
  }
  w->c->atomic = 0;
}

/* IMAGE_GET_RESINFO: for mip level vaddr (from BASE_LEVEL): X width, Y height (1D arrays: layers), Z depth (arrays: layers,
 * cube: layers / 6), W the level count; levels past the last give 0 sizes. dmask picks components into consecutive VGPRs. */
static void img_resinfo(Wave *w, const Inst *in) {
  Img t; if (!img_setup(w, in, &t)) return;
  uint64_t ex = rd_exec(w);
  int nl = t.last_level >= t.base_level ? t.last_level - t.base_level + 1 : 0, layers = t.nslices - t.base_array;
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    uint32_t lvl = w->v[(in->vaddr - 256) * MAXLANES + L], r[4] = {0, 0, 0, (uint32_t)nl}, k = 0;
    if (lvl < (uint32_t)nl) {
      int l = t.base_level + (int)lvl;
      r[0] = t.w >> l ? (uint32_t)(t.w >> l) : 1;
      r[1] = t.type == 12 ? (uint32_t)layers : t.type == 8 ? 0 : (t.h >> l ? (uint32_t)(t.h >> l) : 1);
      r[2] = t.type == 10 ? (t.d >> l ? (uint32_t)(t.d >> l) : 1) : t.type == 13 ? (uint32_t)layers : t.type == 11 ? (uint32_t)layers / 6 : 0;
    }
    for (int i = 0; i < 4; i++) if (in->dmask >> i & 1) w->v[((in->data0 - 256 + k++) & 255) * MAXLANES + L] = r[i];
  }
}
static void h_image_unsupported(Wave *w, const Inst *in) {
  (void)in;
  set_status(w, ST_UNSUPPORTED, "MIMG sampling, gather, GET_LOD and MSAA_LOAD are not modelled (docs/emu.md Images)");
}
