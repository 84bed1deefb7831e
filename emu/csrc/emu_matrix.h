/* emu_matrix.h: the generic matrix kernel (WMMA, SWMMAC, MFMA). Shapes, element types and lane layouts are data generated
 * by mockgpu.emu.matrix (MatOp tables, one packed `lane | reg << 8 | shift << 16` per matrix element), which also defines
 * MAT_MINI (small float values), the element-type codes ET_* and widths ET_BITS (matrix.ETYPES) and the MFMA field accessors
 * MAT_CBSZ/MAT_ABID/MAT_BLGP/MAT_SCALE before including this header; the semantics are described there and mirrored by its
 * Python kernel. */
typedef struct {
  uint16_t m, n, k, blocks; uint8_t ta, tb, tc, opsel_half, sparse, mfma, scaled;
  const uint32_t *lay[2][4];   /* [wave64][A, B, C/D, sparse index]; NULL: not defined in that wave size */
} MatOp;

static inline float emu_h2f(uint32_t h) {
  uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023, b;
  if (e == 0) { float f = ldexpf((float)m, -24); return s ? -f : f; }
  b = e == 31 ? (s << 31) | 0x7f800000u | (m << 13) : (s << 31) | ((e + 112) << 23) | (m << 13);
  float f; memcpy(&f, &b, 4); return f;
}
static inline uint32_t emu_f2h(float f) {   /* round to nearest even */
  uint32_t b; memcpy(&b, &f, 4);
  uint32_t s = (b >> 16) & 0x8000; int e = (int)((b >> 23) & 255) - 127 + 15; uint32_t m = b & 0x7fffff;
  if (((b >> 23) & 255) == 255) return s | 0x7c00 | (m ? 0x200 | (m >> 13) : 0);
  if (e >= 31) return s | 0x7c00;
  if (e <= 0) {
    if (e < -10) return s;
    m |= 0x800000; uint32_t sh = (uint32_t)(14 - e), r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return s | r;
  }
  uint32_t r = ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
  return s | r;
}

/* one float element of a matrix operand, widened exactly */
static inline double mat_float(uint64_t raw, int t) {
  uint32_t b = (uint32_t)raw; float f; double d;
  switch (t) {
    case ET_F16: return emu_h2f(b);
    case ET_BF16: b <<= 16; break;
    case ET_FP8: return MAT_MINI[0][b & 255];
    case ET_BF8: return MAT_MINI[1][b & 255];
    case ET_F64: memcpy(&d, &raw, 8); return d;
    case ET_XF32: if ((b & 0x7fffffffu) <= 0x7f800000u) b = (b + 0xfffu + ((b >> 13) & 1)) & 0xffffe000u; break;   /* RNE to 10 mantissa bits */
  }
  memcpy(&f, &b, 4); return f;
}
/* the lane B is read from under MFMA's BLGP (matrix.py _blgp_lane) */
static inline int mat_blgp(int blgp, int l) {
  switch (blgp) {
    case 1: return l % 32; case 2: return l % 32 + 32; case 3: return (l + 16) % 64;
    case 4: case 5: case 6: case 7: return (blgp - 4) * 16 + l % 16;
  }
  return l;
}

#pragma STDC FP_CONTRACT OFF
static void mat_run(Wave *w, const Inst *in, const MatOp *op) {
  const int w64 = w->c->wave_size == 64;
  if (!op->lay[w64][0]) { set_status(w, ST_INVALID, w64 ? "matrix op is not defined in wave64" : "matrix op is not defined in wave32"); return; }
  if (in->src0 < 256 || in->src1 < 256) { set_status(w, ST_INVALID, "matrix op A and B must be VGPRs"); return; }
  if (op->sparse && in->src2 < 256) { set_status(w, ST_INVALID, "SWMMAC index (src2) must be a VGPR"); return; }
  const int iset = op->sparse == 2 ? MAT_ABID(in) : in->opsel & 3;   /* sparse index set: SMFMAC ABID, SWMMAC INDEX_KEY */
  if (op->sparse == 2 && (MAT_CBSZ(in) || MAT_BLGP(in))) { set_status(w, ST_INVALID, "SMFMAC with CBSZ or BLGP != 0 is not modelled"); return; }
  if (op->sparse && iset * 2 * (op->m * op->k / 2 / w->c->wave_size) >= 32) {
    set_status(w, ST_INVALID, op->sparse == 2 ? "SMFMAC ABID selects bits beyond the index VGPR" : "SWMMAC INDEX_KEY (OPSEL[1:0]) selects bits beyond the index VGPR");
    return;
  }
  if (op->scaled && (MAT_SCALE(in, 0) < 256 || MAT_SCALE(in, 1) < 256)) { set_status(w, ST_INVALID, "scaled MFMA scale operands must be VGPRs"); return; }
  const int M = op->m, N = op->n, K = op->k, NB = op->blocks, KA = op->sparse ? K / 2 : K;
  const int isint = op->tc == ET_I32, f64 = op->tc == ET_F64, half = op->opsel_half ? ((in->opsel >> 2) & 1) * 16 : 0;
  const int fmt_sel = op->ta == ET_F8F6F4, fmts[2] = {fmt_sel ? MAT_CBSZ(in) : 0, fmt_sel ? MAT_BLGP(in) : 0};
  if (fmts[0] > 4 || fmts[1] > 4) { set_status(w, ST_INVALID, "F8F6F4 MFMA: CBSZ/BLGP format is not one of FP8/BF8/FP6/BF6/FP4 (0..4)"); return; }
  const int neg = op->mfma ? 0 : in->neg, neg_hi = op->mfma ? 0 : in->neg_hi, blgp = op->mfma && !fmt_sel ? MAT_BLGP(in) : 0;
  double fa[NB * M * KA], fb[NB * K * N], fc[NB * M * N]; int64_t ia[NB * M * KA], ib[NB * K * N], ic[NB * M * N]; int kidx[M * KA], asrc[NB];
  uint8_t sxa[op->scaled ? NB * M * KA : 1], sxb[op->scaled ? NB * K * N : 1], *sexp[2] = {sxa, sxb};   /* scaled: E8M0 of each A / B element */
  const int base[3] = {in->src0 - 256, in->src1 - 256, op->sparse ? in->vdst - 256 : in->src2 - 256}, ts[3] = {op->ta, op->tb, op->tc};
  const int cnt[3] = {NB * M * KA, NB * K * N, NB * M * N}, csc = in->src2 < 256 && !op->sparse;
  const uint32_t *lays[3] = {op->lay[w64][0], op->lay[w64][1], op->lay[w64][2]};
  double *fs[3] = {fa, fb, fc}; int64_t *is[3] = {ia, ib, ic};
  uint64_t cs = 0;
  if (csc) { cs = scalar_src(w, in, in->src2, f64 ? 64 : 32, f64 ? 64 : ET_BITS[op->tc] == 16 ? 16 : 32); if (w->c->status) return; }
  for (int i = 0; i < 3; i++) {
    int t = ts[i], bits = t == ET_F8F6F4 ? MAT_MINI_BITS[fmts[i]] : ET_BITS[t]; uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    for (int e = 0; e < cnt[i]; e++) {
      uint32_t p = lays[i][e], lane = p & 255, sh = (p >> 16) + (i == 2 ? half : 0), rr = (p >> 8) & 255;
      if (t == ET_F8F6F4) { uint32_t pos = (rr * 32 + sh) * bits; rr = pos / 32; sh = pos % 32; }
      uint32_t r = (base[i] + rr) & (NVREG - 1);
      uint64_t raw;
      if (i == 1) lane = mat_blgp(blgp, lane);
      if (op->scaled && i < 2) {
        int sel = (in->opsel >> i & 1) | (in->opsel_hi >> i & 1) << 1;
        sexp[i][e] = (uint8_t)(w->v[((MAT_SCALE(in, i) - 256) & (NVREG - 1)) * MAXLANES + lane] >> (8 * sel));
      }
      if (i == 2 && csc) raw = cs & mask;
      else raw = ((w->v[r * MAXLANES + lane] | (uint64_t)w->v[((r + 1) & (NVREG - 1)) * MAXLANES + lane] << 32) >> sh) & mask;
      if (t == ET_F8F6F4) fs[i][e] = MAT_MINI[fmts[i]][raw];
      else if (t == ET_IU8 || t == ET_IU4) is[i][e] = ((neg >> i) & 1) ? sext(raw, bits) : (int64_t)raw;
      else if (t == ET_I8 || t == ET_I32) is[i][e] = sext(raw, bits);
      else {
        double x = mat_float(raw, t);
        if (i < 2) { if ((sh < 16 ? neg : neg_hi) >> i & 1) x = -x; }
        else { if (neg_hi >> 2 & 1) x = fabs(x); if (neg >> 2 & 1) x = -x; }
        fs[i][e] = x;
      }
    }
  }
  for (int b = 0; b < NB; b++) {   /* CBSZ/ABID: block b multiplies the A of block ABID of its group of 2^CBSZ blocks */
    int cb = op->mfma && !fmt_sel ? MAT_CBSZ(in) : 0;
    asrc[b] = (b >> cb << cb) | (cb ? MAT_ABID(in) & ((1 << cb) - 1) : 0);
  }
  for (int e = 0; e < M * KA; e++) {   /* K row of B each stored A element multiplies: dense k, or 4*(j/2) + its 2-bit index */
    if (!op->sparse) { kidx[e] = e % KA; continue; }
    uint32_t p = op->lay[w64][3][e], key = iset * 2 * (M * KA / w->c->wave_size);
    kidx[e] = 4 * (e % KA / 2) + ((w->v[((in->src2 - 256) & (NVREG - 1)) * MAXLANES + (p & 255)] >> ((p >> 16) + key)) & 3);
  }
  const int dbits = ET_BITS[op->tc];
  for (int e = 0; e < NB * M * N; e++) {
    int b = e / (M * N), m = e / N % M, n = e % N; uint64_t out;
    const double *A = fa + (asrc[b] * M + m) * KA, *B = fb + b * K * N + n; const int64_t *IA = ia + (asrc[b] * M + m) * KA, *IB = ib + b * K * N + n;
    const int *KI = kidx + m * KA;
    if (isint) {
      int64_t acc = ic[e];
      for (int j = 0; j < KA; j++) acc += IA[j] * IB[KI[j] * N];
      if (in->clmp) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
      out = (uint32_t)acc;
    } else if (f64) {
      double acc = fc[e];
      for (int j = 0; j < KA; j++) { double p = A[j] * B[KI[j] * N]; acc = acc + p; }
      memcpy(&out, &acc, 8);
      if (acc != acc) out = 0x7ff8000000000000ull;
    } else if (op->scaled) {   /* the exact product times both block scales, rounded once */
      const uint8_t *SA = sexp[0] + (asrc[b] * M + m) * KA, *SB = sexp[1] + b * K * N + n;
      float acc = (float)fc[e];
      for (int j = 0; j < KA; j++) {
        float p = SA[j] == 255 || SB[KI[j] * N] == 255 ? NAN : (float)ldexp(A[j] * B[KI[j] * N], SA[j] + SB[KI[j] * N] - 254);
        acc = acc + p;
      }
      uint32_t bb; memcpy(&bb, &acc, 4);
      out = acc != acc ? 0x7fc00000u : bb;
    } else {
      float acc = (float)fc[e];
      for (int j = 0; j < KA; j++) { float p = (float)A[j] * (float)B[KI[j] * N]; acc = acc + p; }
      uint32_t bb; memcpy(&bb, &acc, 4);
      if (op->tc == ET_F32) out = acc != acc ? 0x7fc00000u : bb;
      else if (op->tc == ET_F16) out = acc != acc ? 0x7e00u : emu_f2h(acc);
      else out = acc != acc ? 0x7fc0u : (bb + 0x7fffu + ((bb >> 16) & 1)) >> 16;
    }
    uint32_t p = op->lay[w64][2][e], lane = p & 255, sh = (p >> 16) + half, r = (in->vdst - 256 + ((p >> 8) & 255)) & (NVREG - 1);
    uint32_t *d = w->v + r * MAXLANES + lane;
    if (dbits == 64) { *d = (uint32_t)out; w->v[((r + 1) & (NVREG - 1)) * MAXLANES + lane] = (uint32_t)(out >> 32); continue; }
    uint32_t mask = (dbits == 32 ? 0xffffffffu : (1u << dbits) - 1) << sh;
    *d = (*d & ~mask) | (((uint32_t)out << sh) & mask);
  }
}
