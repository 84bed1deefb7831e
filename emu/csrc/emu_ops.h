/* emu_ops.h: operand fetch (inline constants, literals, SGPR/VGPR, op_sel, abs/neg, DPP16/DPP8) and result write-back
 * (VGPR halves, clamp/omod) shared by the generated per-opcode handlers. Hand-written; see docs/emu.md. */

/* static per-opcode operand description, generated from the wheel's OPERANDS table */
typedef struct {
  uint8_t sbits[3];   /* bits of src0..2 (0: absent) */
  uint8_t sfw[3];     /* float width of src0..2 for abs/neg and float inline constants (0: integer operand) */
  uint8_t dbits, dfw; /* result bits / float width (clamp, omod) */
  uint8_t t16;        /* VOP1/VOP2/VOPC encoding: 16-bit VGPR operands use bit 7 of the register field as .h */
  uint8_t packed;     /* VOP3P sources (bit i: src i) holding two 16-bit values: op_sel/op_sel_hi pick the halves, neg/neg_hi
                       * negate the halves of float ones */
  uint8_t mix;        /* V_FMA_MIX*: the pseudocode applies op_sel itself, modifiers follow the selected width */
  uint8_t pk32;       /* VOP3P sources (bit i) holding two 32-bit values in a register pair (gen_c.pk32) */
} OpInfo;

/* the inline constants FCONST16/32/64 and the flat apertures (APERTURE_SHARED/PRIVATE, SH_MEM_BASES): mockgpu.emu.facts. A FLAT
 * address whose high dword is an aperture's goes to the workgroup's LDS / the lane's scratch at the low dword; the rest is global */
static inline int flat_space(uint64_t addr) {
  uint64_t hi = addr >> 32;
  return LIKELY(hi != APERTURE_SHARED >> 32 && hi != APERTURE_PRIVATE >> 32) ? SP_GLOBAL : hi == APERTURE_SHARED >> 32 ? SP_LDS : SP_SCRATCH;
}

/* value of a non-VGPR source encoding (0..255) as `bits` wide raw bits; fw: float width for float inline constants */
static inline uint64_t scalar_src(Wave *w, const Inst *in, int e, int bits, int fw) {
  if (e < 128) {
    if (e == ENC_NULL) return 0;
    uint64_t v = w->s[e];
    if (bits > 32 && e < SREG_EXEC_HI) v |= (uint64_t)w->s[e + 1] << 32;
    if (e == SREG_EXEC_LO || e == SREG_EXEC_HI) v &= w->c->wave_mask >> (e == SREG_EXEC_HI ? 32 : 0) | (bits > 32 ? w->c->wave_mask : 0);
    return v;
  }
  if (e <= SRC_INT_POS_END) return (uint64_t)(e - SRC_INT_ZERO);
  if (e <= SRC_INT_NEG_END) return (uint64_t)(int64_t)(SRC_INT_POS_END - e);
  if (e >= SRC_FLOAT && e <= SRC_FLOAT_END) {
    int k = fw ? fw : bits;
    return k == 64 ? FCONST64[e - SRC_FLOAT] : k == 16 ? FCONST16[e - SRC_FLOAT] : FCONST32[e - SRC_FLOAT];
  }
  switch (e) {
    case SRC_LITERAL: return (fw == 64) ? (uint64_t)in->lit << 32 : in->lit;
    case SRC_SCC: return w->scc;
    case SRC_VCCZ: return rd_vcc(w) == 0;
    case SRC_EXECZ: return rd_exec(w) == 0;
    case SRC_SHARED_BASE: return bits > 32 ? APERTURE_SHARED : APERTURE_SHARED >> 32;
    case SRC_SHARED_LIMIT: return bits > 32 ? APERTURE_SHARED + 0xffffffffull : (APERTURE_SHARED + 0xffffffffull) >> 32;
    case SRC_PRIVATE_BASE: return bits > 32 ? APERTURE_PRIVATE : APERTURE_PRIVATE >> 32;
    case SRC_PRIVATE_LIMIT: return bits > 32 ? APERTURE_PRIVATE + 0xffffffffull : (APERTURE_PRIVATE + 0xffffffffull) >> 32;
  }
  set_status(w, ST_UNSUPPORTED, MSG_SRC_ENCODING);
  return 0;
}

/* scalar destination write: `bits` wide to the SGPR encoding e (NULL discards, EXEC/VCC honour the wave size) */
static inline void sdst_write(Wave *w, int e, uint64_t v, int bits) {
  if (e == ENC_NULL) return;
  if (e == SREG_EXEC_LO) { if (bits > 32) wr_exec(w, v); else w->s[SREG_EXEC_LO] = (uint32_t)v; return; }
  if (e < 128) w->s[e] = (uint32_t)v;
  if (bits > 32 && e + 1 < 128) w->s[e + 1] = (uint32_t)(v >> 32);
}
static inline void sdst_write_reg(Wave *w, int e, const PcReg *r, int bits) {
  for (int i = 0; i < (bits + 31) / 32 && e + i < SREG_WIDE_END; i++) w->s[e + i] = r->d[i];
}

typedef struct {
  const uint32_t *lo[3], *hi[3];   /* per-lane source words; scalar sources are broadcast into bc */
  uint32_t sh[3], shhi[3];
  uint64_t andm[3], xorm[3];
  uint32_t bc[3][2][MAXLANES];
  uint32_t *d, *d2; uint32_t dsh;
  uint32_t *dreal;                 /* SDWA: the destination VGPR; d points at a copy the op writes, sdwa_dst merges it back */
  uint64_t exec;
  int post, omod, clamp;
  uint32_t dpp[2][MAXLANES];
} VOps;

/* the source lane of lane L under DPP16 control ctl: DPP16_SRC is generated from gen_c.dpp16_src (the rules, per arch); *valid
 * 1, 0 (out of range) or -1 (a control this arch does not have) */
static inline int dpp16_src(int ctl, int L, int *valid) {
  int s = DPP16_SRC[ctl & 511][L];
  *valid = s >= 0 ? 1 : s == -1 ? 0 : -1;
  return s >= 0 ? s : L;
}

static int sdwa_setup(Wave *w, const Inst *in, const OpInfo *oi, VOps *o);
/* set up sources/destination of a per-lane VALU op. src encodings are 0..511 (256+ = VGPR). Returns 0 on error. */
static __attribute__((noinline)) int valu_setup(Wave *w, const Inst *in, const OpInfo *oi, VOps *o, int e0, int e1, int e2, int edst,
                             int opsel, int neg, int abs, int neg_hi, int opsel_hi) {
  int es[3] = {e0, e1, e2};
  o->exec = rd_exec(w);
  for (int i = 0; i < 3; i++) {
    int bits = oi->sbits[i], fw = oi->sfw[i], e = es[i];
    o->sh[i] = 0; o->shhi[i] = 16; o->andm[i] = ~0ull; o->xorm[i] = 0;
    if (i == 0 && in->dpp_kind) continue;   /* DPP: src0 comes from vsrc0 through the lane permutation below */
    if (!bits) { o->lo[i] = o->hi[i] = o->bc[i][0]; continue; }
    int hi16 = 0;
    if (e >= 256) {
      int r = e - 256;
      if (bits == 16 && oi->t16) { hi16 = r >> 7; r &= 127; }
      o->lo[i] = w->v + r * MAXLANES; o->hi[i] = w->v + ((r + 1) & (NVREG - 1)) * MAXLANES;
    } else {
      uint64_t v = scalar_src(w, in, e, bits, fw);
      uint32_t vl = (uint32_t)v, vh = (uint32_t)(v >> 32);
      if (w->c->wave_size == 32) {
        for (uint32_t L = 0; L < 32; L++) o->bc[i][0][L] = vl;
        if (bits > 32) for (uint32_t L = 0; L < 32; L++) o->bc[i][1][L] = vh;
      } else {
        for (uint32_t L = 0; L < MAXLANES; L++) o->bc[i][0][L] = vl;
        if (bits > 32) for (uint32_t L = 0; L < MAXLANES; L++) o->bc[i][1][L] = vh;
      }
      o->lo[i] = o->bc[i][0]; o->hi[i] = o->bc[i][1];
    }
    if (oi->packed >> i & 1) {
      o->sh[i] = (opsel >> i & 1) * 16; o->shhi[i] = (opsel_hi >> i & 1) * 16;
      if (fw) o->xorm[i] = (uint64_t)(neg >> i & 1) << 15 | (uint64_t)(neg_hi >> i & 1) << 31;
      continue;
    }
    if (oi->pk32 >> i & 1) {   /* op_sel / op_sel_hi: which dword of the pair feeds the low / high result */
      const uint32_t *d0 = o->lo[i], *d1 = o->hi[i];
      o->lo[i] = (opsel >> i & 1) ? d1 : d0; o->hi[i] = (opsel_hi >> i & 1) ? d1 : d0;
      if (fw) o->xorm[i] = (uint64_t)(neg >> i & 1) << 31 | (uint64_t)(neg_hi >> i & 1) << 63;
      continue;
    }
    if (oi->mix) {
      int sb = (opsel_hi >> i & 1) ? ((opsel >> i & 1) ? 31 : 15) : 31;
      o->xorm[i] = (uint64_t)(neg >> i & 1) << sb; o->andm[i] = ~((uint64_t)(neg_hi >> i & 1) << sb);
      continue;
    }
    if (bits == 16) o->sh[i] = (hi16 | (opsel >> i & 1)) * 16;
    if (fw) {
      uint64_t sbit = 1ull << (fw - 1);
      if (abs >> i & 1) o->andm[i] = ~sbit;
      if (neg >> i & 1) o->xorm[i] = sbit;
    }
  }
  o->d = o->d2 = 0; o->dsh = 0;
  if (edst >= 256) {
    int r = edst - 256;
    if (oi->dbits == 16) { int h = oi->t16 ? r >> 7 : (opsel >> 3 & 1); if (oi->t16) r &= 127; o->dsh = h * 16; }
    o->d = w->v + r * MAXLANES; o->d2 = w->v + ((r + 1) & (NVREG - 1)) * MAXLANES;
  }
  o->post = 0; o->omod = 0; o->clamp = 0;
  if (in->dpp_kind == 4) return sdwa_setup(w, in, oi, o);
  if (in->dpp_kind) {
    int r = in->vsrc0 - 256, bits = oi->sbits[0];
    const uint32_t *vl = w->v + r * MAXLANES, *vh = w->v + ((r + 1) & (NVREG - 1)) * MAXLANES;
    uint64_t ex = o->exec, wmask = 0;
    for (int L = 0; L < (int)w->c->wave_size; L++) {
      int valid = 1, sl;
      if (in->dpp_kind == 1) {
        sl = dpp16_src(in->dpp, L, &valid);
        if (valid < 0) { set_status(w, ST_UNSUPPORTED, MSG_DPP16_CTRL); return 0; }
        if (!(in->row_mask >> (L >> 4) & 1) || !(in->bank_mask >> ((L >> 2) & 3) & 1)) continue;
        if (valid && !in->fi && !(ex >> sl & 1)) valid = 0;
        if (!valid && !in->bc) continue;
      } else {
        sl = (L & ~7) | ((in->lane_sel >> ((L & 7) * 3)) & 7);
        if (in->dpp_kind == 2 && !(ex >> sl & 1)) valid = 0;
      }
      wmask |= 1ull << L;
      o->dpp[0][L] = valid ? vl[sl] : 0; o->dpp[1][L] = valid ? vh[sl] : 0;
    }
    o->exec &= wmask;
    o->lo[0] = o->dpp[0]; o->hi[0] = o->dpp[1];
    if (bits == 16 && oi->t16) o->sh[0] = ((r >> 7) & 1) * 16;
    if (in->dpp_kind == 1 && oi->sfw[0]) {
      uint64_t sbit = 1ull << (oi->sfw[0] - 1);
      if (in->src0_abs) o->andm[0] = ~sbit;
      if (in->src0_neg) o->xorm[0] = sbit;
    }
    if (in->dpp_kind == 1 && oi->sfw[1]) {
      uint64_t sbit = 1ull << (oi->sfw[1] - 1);
      if (in->src1_abs) o->andm[1] = ~sbit;
      if (in->src1_neg) o->xorm[1] = sbit;
    }
  }
  return 1;
}

/* per-lane source reads; lo/hi/sh/andm/xorm are the loop-invariant locals the handlers copy out of VOps */
#define SRC16(i, L) (((lo##i[L] >> sh##i) & 0xffff & am##i) ^ xm##i)
#define SRC32(i, L) ((lo##i[L] & am##i) ^ xm##i)
#define SRC64(i, L) ((((uint64_t)hi##i[L] << 32 | lo##i[L]) & am64##i) ^ xm64##i)
#define SRCPK(i, L) (((lo##i[L] >> sh##i & 0xffff) | (lo##i[L] >> shh##i & 0xffff) << 16) ^ xm##i)
#define SRCLOCALS(o, i) const uint32_t *lo##i = (o).lo[i], *hi##i = (o).hi[i]; const uint32_t sh##i = (o).sh[i], shh##i = (o).shhi[i]; \
  const uint32_t am##i = (uint32_t)(o).andm[i], xm##i = (uint32_t)(o).xorm[i]; const uint64_t am64##i = (o).andm[i], xm64##i = (o).xorm[i]; \
  (void)lo##i; (void)hi##i; (void)sh##i; (void)shh##i; (void)am##i; (void)xm##i; (void)am64##i; (void)xm64##i;

static inline uint32_t post_f32(const VOps *o, uint32_t x) {
  float f; memcpy(&f, &x, 4);
  if (o->omod) f *= o->omod == 1 ? 2.0f : o->omod == 2 ? 4.0f : 0.5f;
  if (o->clamp) f = (f != f) ? 0.0f : f < 0.0f ? 0.0f : f > 1.0f ? 1.0f : f;
  memcpy(&x, &f, 4); return x;
}
static inline uint64_t post_f64(const VOps *o, uint64_t x) {
  double f; memcpy(&f, &x, 8);
  if (o->omod) f *= o->omod == 1 ? 2.0 : o->omod == 2 ? 4.0 : 0.5;
  if (o->clamp) f = (f != f) ? 0.0 : f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
  memcpy(&x, &f, 8); return x;
}
static inline uint32_t post_f16(const VOps *o, uint32_t x) {   /* omod: the product rounded to f16 (exact but for denormals) */
  x &= 0xffff;
  if (o->omod) x = (uint32_t)pc_encode(pc_decode(x, PC_F16) * (o->omod == 1 ? 2.0 : o->omod == 2 ? 4.0 : 0.5), PC_F16, 0);
  if (o->clamp) { if ((x & 0x7fff) > 0x7c00 || (x & 0x8000)) x = 0; else if (x > 0x3c00) x = 0x3c00; }
  return x;
}
static inline uint32_t post_f16_at(const VOps *o, uint32_t x, int sh) { return (x & ~(0xffffu << sh)) | post_f16(o, x >> sh) << sh; }
/* lane masks of the fast lane loops (gen_c._lane_loop): bit L of `m` as lane L's 0/1 word, and back (n a multiple of 32). The
   unpacking loop vectorises (32 lanes at a time: shift counts of the element's width, 32-bit words as the lane loops' other
   operands). Packing moves each word's bit 0 to its sign and takes eight signs at once (movmskps) with AVX2: the vectorised
   shift-and-OR ended in a horizontal OR, a long chain between a carry step and the next one reading its mask */
static inline __attribute__((always_inline)) void lanes_unpack(uint64_t m, uint32_t *b, int n) {
  for (int k = 0; k < n / 32; k++) { const uint32_t v = (uint32_t)(m >> 32 * k); for (int L = 0; L < 32; L++) b[32 * k + L] = v >> L & 1; }
}
static inline __attribute__((always_inline)) uint64_t lanes_pack(const uint32_t *b, int n) {
  uint64_t m = 0;
#if defined(__AVX2__)
  for (int k = 0; k < n / 8; k++)
    m |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(b + 8 * k)), 31))) << 8 * k;
#else
  for (int k = 0; k < n / 32; k++) { uint32_t v = 0; for (int L = 0; L < 32; L++) v |= (b[32 * k + L] & 1) << L; m |= (uint64_t)v << 32 * k; }
#endif
  return m;
}
/* lanes_pack of the first nl (<= 64) lanes, the others' bits 0: a partial loop's mask without zeroing the lanes it did not run;
   a whole wave's (the translator's full-wave steps: nl known only at run time) takes the vectorised loop, not the 32 serial ORs */
static inline __attribute__((always_inline)) uint64_t lanes_pack_n(const uint32_t *b, int nl) {
  if (nl == 32) return lanes_pack(b, 32);
  if (nl == 64) return lanes_pack(b, 64);
  uint64_t m = 0;
  for (int L = 0; L < nl; L++) m |= (uint64_t)(b[L] & 1) << L;
  return m;
}

#define DST32(o, L, x) (dd[L] = (uint32_t)(x))
#define DST16(o, L, x) (dd[L] = (dd[L] & ~(0xffffu << dsh)) | ((uint32_t)(x) & 0xffff) << dsh)
#define DST64(o, L, x) (dd[L] = (uint32_t)(x), dd2[L] = (uint32_t)((uint64_t)(x) >> 32))
#define DSTLOCALS(o) uint32_t *const dd = (o).d, *const dd2 = (o).d2; const uint32_t dsh = (o).dsh; (void)dd; (void)dd2; (void)dsh;
#define OLD16(o, L) (((o).d[L] >> (o).dsh) & 0xffff)
#define OLD32(o, L) ((o).d[L])
#define OLD64(o, L) ((uint64_t)(o).d2[L] << 32 | (o).d[L])

static inline int sext(uint64_t v, int bits) { return (int)((int64_t)(v << (64 - bits)) >> (64 - bits)); }

/* integer clamp (gen_c.INT_CLAMP, generated per op): the exact result of `kind` on the sources, saturated to the destination */
typedef struct { char kind; uint8_t eb, n, sg, b2, dbits, dsgn, packed; } IClamp;
static inline __int128 ielem(uint64_t x, int k, int eb, int sgn) {
  uint64_t v = eb >= 64 ? x : (x >> (k * eb)) & ((1ull << eb) - 1);
  return sgn ? (__int128)((int64_t)(v << (64 - eb)) >> (64 - eb)) : (__int128)v;
}
static inline uint64_t iclamp1(const IClamp *ic, uint64_t a, uint64_t b, uint64_t c, uint32_t cin, uint32_t neg) {
  int s0 = ic->sg & 1, s1 = ic->sg >> 1 & 1, eb = ic->eb;
  if (ic->sg & 8) { s0 = neg & 1; s1 = neg >> 1 & 1; }
  __int128 x = ielem(a, 0, eb, s0), y = ielem(b, 0, eb, s1), z = ic->b2 ? ielem(c, 0, ic->b2, ic->sg >> 2 & 1) : 0, r = 0;
  switch (ic->kind) {
    case '+': r = x + y; break;
    case '-': r = x - y; break;
    case 'r': r = y - x; break;
    case 'c': r = x + y + cin; break;
    case 'b': r = x - y - cin; break;
    case 'B': r = y - x - cin; break;
    case '3': r = x + y + z; break;
    case 'x': r = (__int128)((uint64_t)(x ^ y)) + z; break;
    case 'm': r = x * y + z; break;
    case 'd': r = z; for (int k = 0; k < ic->n; k++) r += ielem(a, k, eb, s0) * ielem(b, k, eb, s1); break;
    default:   /* 's', 'h', 'M': sums of absolute differences */
      for (int k = 0; k < ic->n; k++) {
        __int128 p = ielem(a, k, eb, 0), q = ielem(b, k, eb, 0);
        if (ic->kind != 'M' || q) r += p > q ? p - q : q - p;
      }
      r = (ic->kind == 'h' ? r << 16 : r) + z;
  }
  int db = ic->dbits;
  __int128 lo = ic->dsgn ? -((__int128)1 << (db - 1)) : 0, hi = ic->dsgn ? ((__int128)1 << (db - 1)) - 1 : ((__int128)1 << db) - 1;
  return (uint64_t)(r < lo ? lo : r > hi ? hi : r) & (db >= 64 ? ~0ull : (1ull << db) - 1);
}
static inline uint64_t iclamp(const IClamp *ic, uint64_t a, uint64_t b, uint64_t c, uint32_t cin, uint32_t neg) {
  if (!ic->packed) return iclamp1(ic, a, b, c, cin, neg);
  return iclamp1(ic, a & 0xffff, b & 0xffff, c & 0xffff, cin, neg) | iclamp1(ic, a >> 16 & 0xffff, b >> 16 & 0xffff, c >> 16 & 0xffff, cin, neg) << 16;
}

/* SDWA (gfx9, dpp_kind 4): each source is a byte/word/dword of a VGPR (with s0/s1: of an SGPR or constant), zero- or
 * sign-extended (src*_sext), then abs/neg as usual; the op writes a copy of vdst and sdwa_dst puts its low bits into the
 * dst_sel byte/word/dword, with the other bits zeroed (dst_unused 0), sign-extended (1) or preserved (2). omod/clamp apply. */
static inline int sdwa_sel(int sel, int *sh) { *sh = sel < 4 ? sel * 8 : sel < 6 ? (sel - 4) * 16 : 0; return sel < 4 ? 8 : sel < 6 ? 16 : 32; }
static int sdwa_setup(Wave *w, const Inst *in, const OpInfo *oi, VOps *o) {
  if (in->src0_sel > 6 || in->src1_sel > 6 || in->dst_sel > 6 || in->dst_unused > 2) { set_status(w, ST_INVALID, MSG_SDWA_SEL); return 0; }
  for (int i = 0; i < 2; i++) {
    int bits = oi->sbits[i], fw = oi->sfw[i], sh, e = i == 0 ? in->vsrc0 : in->src1;
    if (!bits) continue;
    if (i == 0 ? in->s0 : in->s1) e -= 256;
    int width = sdwa_sel(i == 0 ? in->src0_sel : in->src1_sel, &sh), sx = i == 0 ? in->src0_sext : in->src1_sext;
    const uint32_t *src = e >= 256 ? w->v + (e - 256) * MAXLANES : 0;
    uint32_t sv = src ? 0 : (uint32_t)scalar_src(w, in, e, bits, fw);
    for (uint32_t L = 0; L < w->c->wave_size; L++) {
      uint32_t x = (src ? src[L] : sv) >> sh;
      o->bc[i][0][L] = width == 32 ? x : sx ? (uint32_t)sext(x, width) : x & ((1u << width) - 1);
    }
    o->lo[i] = o->bc[i][0]; o->hi[i] = src ? w->v + ((e - 255) & (NVREG - 1)) * MAXLANES : o->bc[i][1];
    o->sh[i] = 0; o->andm[i] = ~0ull; o->xorm[i] = 0;
    if (fw) {
      uint64_t sbit = 1ull << (fw - 1);
      if (i == 0 ? in->src0_abs : in->src1_abs) o->andm[i] = ~sbit;
      if (i == 0 ? in->src0_neg : in->src1_neg) o->xorm[i] = sbit;
    }
  }
  o->dreal = o->d;
  if (o->d) { memcpy(o->dpp[0], o->d, w->c->wave_size * sizeof(uint32_t)); o->d = o->dpp[0]; o->dsh = 0; }
  o->omod = EMU_OMOD(w->mode, in->omod); o->clamp = in->clmp; o->post = o->omod | o->clamp;
  return 1;
}
static void sdwa_dst(Wave *w, const Inst *in, const VOps *o) {
  (void)w;
  int sh, width = sdwa_sel(in->dst_sel, &sh);
  uint32_t m = width == 32 ? ~0u : ((1u << width) - 1) << sh;
  uint64_t ex = o->exec;
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
    uint32_t r = o->d[L], x = (r << sh) & m;
    if (in->dst_unused == 1 && width < 32) x = (uint32_t)((int64_t)sext(r, width) << sh);
    else if (in->dst_unused == 2) x |= o->dreal[L] & ~m;
    o->dreal[L] = x;
  }
}

/* the common case of valu_setup, inlined into each handler with its constant OpInfo: no DPP, no modifiers, 32/64-bit
 * operands. Returns 0 to fall back to valu_setup. */
static inline __attribute__((always_inline)) int valu_fast(Wave *w, const Inst *in, const OpInfo *oi, VOps *o, int e0, int e1, int e2,
                                                           int edst, int mods) {
  if (in->dpp_kind | mods) return 0;
  int es[3] = {e0, e1, e2};
  o->exec = rd_exec(w);
  for (int i = 0; i < 3; i++) {
    int bits = oi->sbits[i], e = es[i];
    o->sh[i] = 0; o->shhi[i] = 16; o->andm[i] = ~0ull; o->xorm[i] = 0;
    if (!bits) { o->lo[i] = o->hi[i] = o->bc[i][0]; continue; }
    if (e >= 256) { int r = e - 256; o->lo[i] = w->v + r * MAXLANES; o->hi[i] = w->v + ((r + 1) & (NVREG - 1)) * MAXLANES; continue; }
    uint64_t v = scalar_src(w, in, e, bits, oi->sfw[i]);
    uint32_t vl = (uint32_t)v, vh = (uint32_t)(v >> 32);
    for (int L = 0; L < MAXLANES; L++) o->bc[i][0][L] = vl;
    if (bits > 32) for (int L = 0; L < MAXLANES; L++) o->bc[i][1][L] = vh;
    o->lo[i] = o->bc[i][0]; o->hi[i] = o->bc[i][1];
  }
  o->d = o->d2 = 0; o->dsh = 0;
  if (edst >= 256) { int r = edst - 256; o->d = w->v + r * MAXLANES; o->d2 = w->v + ((r + 1) & (NVREG - 1)) * MAXLANES; }
  o->post = o->omod = o->clamp = 0;
  return 1;
}
