/* emu_buffer.h: buffer instructions through a resource descriptor (V#). The C twin of mockgpu/emu/buffer.py (Desc,
 * map_access): the generated VS_* macros give the V# fields of this arch, buf_setup decodes them once per instruction,
 * buf_lane forms a lane's address, and MEM accesses of the pseudocode (space SP_BUFFER) go through buf_map, which applies
 * the swizzle and the range check (out of range: loads read 0, stores and atomics are dropped; in range but unmapped: a
 * global fault like any other). */

struct Buf {
  uint64_t base;                 /* V# base + SGPR offset */
  uint32_t stride, nrec, elem, idx_stride, add_tid, oob, fmt;
  uint32_t ioff, idxen, offen; int vaddr;
  uint32_t idx, off; uint64_t addr;   /* current lane: record index, offset, linear address the pseudocode starts from */
  uint64_t lim;                  /* scalar buffer ops (oob OOB_SCALAR): bytes in range from base */
};
enum { OOB_SCALAR = 5 };

/* RDNA4 (and CDNA's scalar CalcScalarBufferAddr) buffer pseudocode computes its address with these built-ins; buf_lane /
 * sbuf_setup put it in ADDR */
#define PC_EXT_CalcBufferAddr(s, ...) buf_calc_addr(s)
#define PC_EXT_CalcScalarBufferAddr(s, ...) buf_calc_addr(s)
static inline uint64_t buf_calc_addr(PcState *s) {
  if (((Wave *)s->user)->c->space == SP_BUFFER) return s->ADDR;
  s->fault = 2; s->fault_msg = "CalcBufferAddr outside a buffer instruction"; return 0;
}

/* scalar buffer ops (S_BUFFER_*, mockgpu.emu.buffer.scalar_desc is the Python twin): the V# in s[sbase:sbase+3] gives the
 * base (48 bits, its two low bits ignored), STRIDE and NUM_RECORDS; index, swizzle, format, ADD_TID and OOB_SELECT do not
 * apply. The address is base + offset (offset = immediate + SGPR offset, 32 bits, aligned down to the access size); an
 * access of n bytes is in range iff offset + n <= NUM_RECORDS * STRIDE (STRIDE 0: NUM_RECORDS bytes). Out of range: loads
 * read 0, stores and atomics are dropped, as for vector buffer ops */
static int sbuf_setup(Wave *w, Buf *b, int sbase, uint32_t off, uint32_t align) {
  if (UNLIKELY(sbase + 3 >= NSREG)) { set_status(w, ST_UNSUPPORTED, MSG_SBUF_RSRC); return 0; }
  const uint32_t *d = w->s + sbase;
  uint32_t st = VS_STRIDE(d);
  b->base = ((uint64_t)VS_BASE_ADDRESS(d) | (uint64_t)VS_BASE_ADDRESS_HI(d) << 32) & ~3ull;
  b->lim = st ? (uint64_t)VS_NUM_RECORDS(d) * st : VS_NUM_RECORDS(d);
  b->oob = OOB_SCALAR; b->off = off & ~(align - 1); b->idx = 0; b->addr = b->base + b->off;
  return 1;
}

/* tfe_ok: the op returns data in VGPRs (a load). TFE on a store, an atomic or a load into LDS has no status VGPR to write:
 * the ISA defines the fail status for fetches into VGPRs only (LLVM has no TFE form of them either) */
static int buf_setup(Wave *w, const Inst *in, Buf *b, int rsrc, int soffset, int ioff, int idxen, int offen, int vaddr, int tfe, int tfe_ok) {
  if (UNLIKELY(tfe && !tfe_ok)) { set_status(w, ST_INVALID, MSG_TFE_INVALID); return 0; }
  if (UNLIKELY(rsrc + 3 >= NSREG)) { set_status(w, ST_UNSUPPORTED, MSG_BUF_RSRC); return 0; }
  const uint32_t *d = w->s + rsrc;
  uint32_t so = (uint32_t)scalar_src(w, in, soffset, 32, 0);
  b->base = ((uint64_t)VS_BASE_ADDRESS(d) | (uint64_t)VS_BASE_ADDRESS_HI(d) << 32) + so;
  b->stride = VS_STRIDE(d); b->nrec = VS_NUM_RECORDS(d); b->elem = VS_ELEM(d); b->idx_stride = 8u << VS_INDEX_STRIDE(d);
  b->add_tid = VS_ADD_TID_ENABLE(d); b->oob = VS_OOB_SELECT(d); b->fmt = VS_FMT(d);
  b->ioff = (uint32_t)ioff; b->idxen = (uint32_t)idxen; b->offen = (uint32_t)offen; b->vaddr = vaddr;
  return !w->c->status;
}

/* lane L: index = VGPR index (idxen) + lane (ADD_TID_ENABLE), offset = instruction offset + VGPR offset (offen; the VGPR
 * after the index when both are enabled); returns the linear address of offset 0 of the access */
static inline uint64_t buf_lane(Wave *w, Buf *b, int L) {
  const uint32_t *va = w->v + (b->vaddr & (NVREG - 1)) * MAXLANES;
  b->idx = (b->idxen ? va[L] : 0) + (b->add_tid ? (uint32_t)L : 0);
  b->off = b->ioff + (b->offen ? w->v[((b->vaddr + (int)b->idxen) & (NVREG - 1)) * MAXLANES + L] : 0);
  b->addr = b->base + (uint64_t)b->idx * b->stride + b->off;
  return b->addr;
}

/* the pseudocode's address a (linear from buf_lane's) -> the physical address; 0 when out of range */
static inline int buf_map(const Buf *b, uint64_t a, uint64_t *p) {
  uint32_t off = b->off + (uint32_t)(a - b->addr), idx = b->idx;
  uint64_t rel = b->elem ? ((uint64_t)(idx / b->idx_stride) * b->stride + (uint64_t)(off / b->elem) * b->elem) * b->idx_stride
                           + (uint64_t)(idx % b->idx_stride) * b->elem + off % b->elem
                         : (uint64_t)idx * b->stride + off;
  *p = b->base + rel;
  switch (b->oob) {
    case 0: return idx < b->nrec && off < b->stride;
    case 1: return idx < b->nrec;
    case 2: return b->nrec != 0;
    case 3: return rel < b->nrec;
    default: return b->add_tid ? 1 : b->stride == 0 ? off < b->nrec : idx < b->nrec;
  }
}
static inline int sbuf_ok(const Buf *b, uint64_t a, int n) { return a - b->base + (uint64_t)n <= b->lim; }
static uint64_t b_rd(PcState *s, uint64_t a, int n) {
  const Buf *b = ((Wave *)s->user)->c->buf;
  if (b->oob == OOB_SCALAR) return sbuf_ok(b, a, n) ? g_rd(s, a, n) : 0;
  uint64_t p; if (!buf_map(b, a, &p)) return 0;
  return g_rd(s, p, n);
}
static void b_wr(PcState *s, uint64_t a, int n, uint64_t v) {
  const Buf *b = ((Wave *)s->user)->c->buf;
  if (b->oob == OOB_SCALAR) { if (sbuf_ok(b, a, n)) g_wr(s, a, n, v); return; }
  uint64_t p; if (buf_map(b, a, &p)) g_wr(s, p, n, v);
}

/* ---- the *_FORMAT_* ops (mockgpu.emu.buffer.fmt_load / fmt_store / from_format / to_format are the Python twins) ---- */
static inline float bf_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t bf_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
/* unsigned float, 5 exponent bits (bias 15), m mantissa bits (the 10/11-bit channels) <-> f32 bits */
static uint32_t bf_uf_to_f32(uint32_t x, int m) {
  uint32_t e = x >> m, mm = x & ((1u << m) - 1);
  if (e == 31) return 0x7f800000u | mm << (23 - m);
  if (e == 0) return bf_f2u(ldexpf((float)mm, -14 - m));
  return (e + 112) << 23 | mm << (23 - m);
}
static uint32_t bf_f32_to_uf(uint32_t u, int m) {
  uint32_t ex = (u >> 23) & 0xff, mant = u & 0x7fffff;
  if (ex == 255) return 31u << m | (mant ? 1u << (m - 1) : 0);
  if ((u >> 31) || ex == 0) return 0;
  int e = (int)ex - 112, sh = 23 - m; uint32_t full = mant | 1u << 23;
  if (e < 1) { sh += 1 - e; e = 0; }
  if (sh > 24) return 0;
  uint32_t r = full >> sh, rem = full & ((1u << sh) - 1), half = 1u << (sh - 1);
  r += rem > half || (rem == half && (r & 1));
  if (e == 0) return r;
  if (r >> (m + 1)) { r >>= 1; e++; }
  return e >= 31 ? 31u << m : (uint32_t)e << m | (r & ((1u << m) - 1));
}
/* a b-bit channel of number format nf -> the register value (f32 bits for the float-like formats) */
static uint32_t bf_from(uint32_t x, int b, int nf) {
  int32_t sx = b < 32 && (x >> (b - 1) & 1) ? (int32_t)(x - (1u << b)) : (int32_t)x;
  switch (nf) {
    case NF_UINT: return x;
    case NF_SINT: return (uint32_t)sx;
    case NF_USCALED: return bf_f2u((float)x);
    case NF_SSCALED: return bf_f2u((float)sx);
    case NF_UNORM: return bf_f2u((float)x / (float)(uint32_t)((1ull << b) - 1));
    case NF_SNORM: { float f = (float)sx / (float)((1u << (b - 1)) - 1); return bf_f2u(f < -1.0f ? -1.0f : f); }
    default: return b == 32 ? x : b == 16 ? (uint32_t)pc_cvt(x, PC_F16, PC_F32, PC_MODE_DEFAULT) : bf_uf_to_f32(x, b - 5);
  }
}
/* the register value -> a b-bit channel (norm: clamp, scale, round to nearest even; scaled: clamp, truncate; ints: low bits) */
static uint32_t bf_to(uint32_t u, int b, int nf) {
  uint32_t mask = b == 32 ? 0xffffffffu : (1u << b) - 1;
  if (nf == NF_UINT || nf == NF_SINT) return u & mask;
  if (nf == NF_FLOAT) return b == 32 ? u : b == 16 ? (uint32_t)pc_cvt(u, PC_F32, PC_F16, PC_MODE_DEFAULT) : bf_f32_to_uf(u, b - 5);
  float f = bf_u2f(u);
  if (f != f) return 0;
  if (nf == NF_UNORM) return (uint32_t)(int64_t)nearbyintf((f < 0.0f ? 0.0f : f > 1.0f ? 1.0f : f) * (float)mask) & mask;
  if (nf == NF_SNORM) return (uint32_t)(int64_t)nearbyintf((f < -1.0f ? -1.0f : f > 1.0f ? 1.0f : f) * (float)((1u << (b - 1)) - 1)) & mask;
  double t = trunc((double)f), lo = nf == NF_USCALED ? 0.0 : -(double)(1ull << (b - 1)), hi = nf == NF_USCALED ? (double)mask : (double)((1ull << (b - 1)) - 1);
  return (uint32_t)(int64_t)(t < lo ? lo : t > hi ? hi : t) & mask;
}
/* one lane of a *_FORMAT_* op on VDATA vd: the element is in or out of range as a whole (out: loads read 0, stores write
 * nothing); byte channels are accessed alone, packed channels through their dword (stores read-modify-write it); missing
 * channels load 0 (X, Y, Z) or 1 / 1.0 (W); D16 packs f16 (float-like formats) or the low 16 bits into halves */
static void buf_format(PcState *s, Buf *b, const uint8_t *fi, int nch, int d16, int hi, int store, uint32_t *vd) {
  uint64_t p; int ok = buf_map(b, b->addr, &p), nb = 0, packed = 0, nf = fi[4], fl = nf != NF_UINT && nf != NF_SINT;
  while (nb < 4 && fi[nb]) { packed |= fi[nb] % 8 != 0; nb++; }
  if (store && !ok) return;
  int n_ch = store ? (nch < nb ? nch : nb) : nch;
  for (int c = 0, boff = 0; c < n_ch; boff += c < nb ? fi[c] : 0, c++) {
    int byte = packed ? 0 : boff / 8, n = packed ? 4 : (c < nb ? fi[c] / 8 : 0), sh = packed ? boff : 0, hh = hi ? 1 : c;
    uint32_t cm = c < nb ? (fi[c] == 32 ? 0xffffffffu : (1u << fi[c]) - 1) : 0;
    if (store) {
      uint32_t u = vd[c];
      if (d16) { uint32_t h = (vd[hh / 2] >> (16 * (hh & 1))) & 0xffff; u = fl ? (uint32_t)pc_cvt(h, PC_F16, PC_F32, PC_MODE_DEFAULT) : nf == NF_SINT ? (uint32_t)(int32_t)(int16_t)h : h; }
      uint32_t raw = bf_to(u, fi[c], nf);
      buf_map(b, b->addr + byte, &p);
      if (fi[c] != 8 * n) { uint64_t cur = g_rd(s, p, 4); if (s->fault) return; raw = ((uint32_t)cur & ~(cm << sh)) | raw << sh; }
      g_wr(s, p, n, raw); if (s->fault) return;
    } else {
      uint32_t v = 0;
      if (ok && c < nb) { buf_map(b, b->addr + byte, &p); uint64_t r = g_rd(s, p, n); if (s->fault) return; v = bf_from((uint32_t)(r >> sh) & cm, fi[c], nf); }
      else if (ok && c == 3) v = fl ? 0x3f800000u : 1u;
      if (d16) { uint32_t h = fl ? (uint32_t)pc_cvt(v, PC_F32, PC_F16, PC_MODE_DEFAULT) : v & 0xffff; vd[hh / 2] = (vd[hh / 2] & ~(0xffffu << 16 * (hh & 1))) | h << 16 * (hh & 1); }
      else vd[c] = v;
    }
  }
}

/* ---- loads into LDS (GLOBAL/SCRATCH_LOAD_LDS_*, BUFFER_LOAD_LDS_*): the loaded value, zero- or sign-extended to a dword,
 * goes to LDS at M0 + instruction offset + lane * 4 (mockgpu.emu.buffer.c_lds_handler; Python twin in pybackend) ---- */
static inline uint32_t lds_ext(uint64_t v, int n, int sx) {
  return n == 4 ? (uint32_t)v : sx ? (uint32_t)(int32_t)(n == 1 ? (int8_t)v : (int16_t)v) : (uint32_t)v;
}
static inline void lds_put(PcState *s, Wave *w, int L, uint32_t ioff, uint32_t v) { l_wr(s, (uint32_t)(w->s[ENC_M0] + ioff + 4u * (uint32_t)L), 4, v); }
