/* emu_bvh.h: IMAGE_BVH_INTERSECT_RAY / IMAGE_BVH64_INTERSECT_RAY (RDNA3 MIMG, RDNA4 VIMAGE), the model of docs/emu.md
 * "Ray tracing". T# fields, node sizes and the miss result come from mockgpu.emu.bvh (generated above this header); pybvh.py is the Python twin.
 * Node fetches go through gptr(): the MemoryMap checks and fault records of global memory. Every float operation is one
 * f32 operation rounded to nearest even; the volatile result keeps gcc (-ffp-contract=fast by default, which ignores
 * `#pragma STDC FP_CONTRACT`) from fusing a multiply and an add into an FMA. */

static inline float bvh_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t bvh_u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bvh_add(float a, float b) { volatile float r = a + b; return r; }
static inline float bvh_sub(float a, float b) { volatile float r = a - b; return r; }
static inline float bvh_mul(float a, float b) { volatile float r = a * b; return r; }
static inline float bvh_div(float a, float b) { volatile float r = a / b; return r; }
static inline float bvh_min(float a, float b) { return a != a ? b : b != b ? a : b < a ? b : a; }   /* a NaN operand is ignored */
static inline float bvh_max(float a, float b) { return a != a ? b : b != b ? a : b > a ? b : a; }

#include <stdarg.h>
static inline uint64_t bvh_field(const uint32_t *d, int lo, int wd) {   /* T# bits [lo, lo + wd) of the 4 dwords */
  uint64_t v = 0;
  for (int i = 0; i < wd; i++) v |= (uint64_t)(d[(lo + i) / 32] >> ((lo + i) % 32) & 1) << i;
  return v;
}
static int bvh_fail(Wave *w, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bvh_fail(Wave *w, int st, const char *fmt, ...) {
  char msg[200]; va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof(msg), fmt, ap); va_end(ap);
  set_status(w, st, msg); return 0;
}

/* box node (fp32: 128 bytes, fp16: 64): four child pointers, then per child min xyz, max xyz. A child hits when the slab
 * interval [tmin, tmax] of its box meets [0, extent): tmax >= max(0, tmin) and tmin < extent. */
static void bvh_box(const uint8_t *p, int fp16, float ext, const float *o, const float *inv, int sort, uint32_t *res) {
  uint32_t ch[4]; float d[4]; int hit[4];
  memcpy(ch, p, 16);
  for (int i = 0; i < 4; i++) {
    float lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
      if (fp16) { uint16_t l, h; memcpy(&l, p + 16 + i * 12 + a * 2, 2); memcpy(&h, p + 16 + i * 12 + 6 + a * 2, 2);
                  lo[a] = bvh_f((uint32_t)pc_cvt(l, PC_F16, PC_F32, 0xf0)); hi[a] = bvh_f((uint32_t)pc_cvt(h, PC_F16, PC_F32, 0xf0)); }
      else { memcpy(&lo[a], p + 16 + i * 24 + a * 4, 4); memcpy(&hi[a], p + 16 + i * 24 + 12 + a * 4, 4); }
    }
    float tmin = 0, tmax = 0;
    for (int a = 0; a < 3; a++) {
      float t0 = bvh_mul(bvh_sub(lo[a], o[a]), inv[a]), t1 = bvh_mul(bvh_sub(hi[a], o[a]), inv[a]);
      float n = bvh_min(t0, t1), f = bvh_max(t0, t1);
      tmin = a ? bvh_max(tmin, n) : n; tmax = a ? bvh_min(tmax, f) : f;
    }
    d[i] = tmin; hit[i] = ch[i] != BVH_INVALID_NODE && tmax >= bvh_max(0.0f, tmin) && tmin < ext;
  }
  if (!sort) { for (int i = 0; i < 4; i++) res[i] = hit[i] ? ch[i] : BVH_INVALID_NODE; return; }
  int n = 0;   /* hits in ascending entry distance, ties in node order, then the misses */
  for (int i = 0; i < 4; i++) {
    if (!hit[i]) continue;
    int j = n++;
    while (j > 0 && d[i] < d[res[j - 1]]) { res[j] = res[j - 1]; j--; }
    res[j] = (uint32_t)i;
  }
  for (int i = 0; i < 4; i++) res[i] = i < n ? ch[res[i]] : BVH_INVALID_NODE;
}

/* triangle node: vertices v0, v1, v2 (f32 xyz) at bytes 0..35. Watertight test in ray space: kz = the largest |dir|
 * component, kx/ky the next two (swapped when dir[kz] < 0), shear by dir/dir[kz]; edge functions u, v, w must not have
 * both signs; t_num = u*az + v*bz + w*cz, t_denom = u + v + w; behind the origin (t_num and t_denom of opposite signs) is a
 * miss. Result (t_num, t_denom, i_num = v, j_num = w) or BVH_MISS. */
static void bvh_triangle(const uint8_t *p, const float *o, const float *dir, uint32_t *res) {
  float vt[3][3], ad[3];
  memcpy(vt, p, 36);
  for (int a = 0; a < 3; a++) ad[a] = fabsf(dir[a]);
  int kz = ad[0] >= ad[1] ? (ad[0] >= ad[2] ? 0 : 2) : (ad[1] >= ad[2] ? 1 : 2), kx = (kz + 1) % 3, ky = (kx + 1) % 3;
  if (dir[kz] < 0) { int t = kx; kx = ky; ky = t; }
  float sz = bvh_div(1.0f, dir[kz]), sx = bvh_mul(dir[kx], sz), sy = bvh_mul(dir[ky], sz), X[3], Y[3], Z[3];
  for (int i = 0; i < 3; i++) {
    float r[3];
    for (int a = 0; a < 3; a++) r[a] = bvh_sub(vt[i][a], o[a]);
    X[i] = bvh_sub(r[kx], bvh_mul(sx, r[kz])); Y[i] = bvh_sub(r[ky], bvh_mul(sy, r[kz])); Z[i] = bvh_mul(sz, r[kz]);
  }
  float u = bvh_sub(bvh_mul(X[2], Y[1]), bvh_mul(Y[2], X[1])), v = bvh_sub(bvh_mul(X[0], Y[2]), bvh_mul(Y[0], X[2]));
  float ww = bvh_sub(bvh_mul(X[1], Y[0]), bvh_mul(Y[1], X[0]));
  if ((u < 0 || v < 0 || ww < 0) && (u > 0 || v > 0 || ww > 0)) { memcpy(res, BVH_MISS, 16); return; }
  float det = bvh_add(u, bvh_add(v, ww)), t = bvh_add(bvh_add(bvh_mul(u, Z[0]), bvh_mul(v, Z[1])), bvh_mul(ww, Z[2]));
  if ((det > 0 && t < 0) || (det < 0 && t > 0)) { memcpy(res, BVH_MISS, 16); return; }
  res[0] = bvh_u(t); res[1] = bvh_u(det); res[2] = bvh_u(v); res[3] = bvh_u(ww);
}

/* IMAGE_BVH[64]_INTERSECT_RAY with the T# in s[sr..sr+3] and the address VGPR groups g[0..4]: node pointer (np dwords),
 * ray extent, origin xyz, direction xyz, inverse direction xyz (A16: direction and inverse direction as f16 pairs
 * {dx, dy}, {dz, ix}, {iy, iz} from g[3]); the handler (bvh.c_handler) maps the encoding's address fields to the groups.
 * Four result VGPRs from vdata. */
static void bvh_intersect(Wave *w, const Inst *in, int np, int sr, const int *g) {
  uint32_t d[4];
  for (int i = 0; i < 4; i++) d[i] = sr + i < NSREG ? w->s[sr + i] : 0;
  int type = (int)bvh_field(d, BVH_TS_TYPE), grow = (int)bvh_field(d, BVH_TS_BOX_GROW);
  if (type != BVH_TYPE) { bvh_fail(w, ST_INVALID, "BVH T# in s[%d:%d] has TYPE=%d, expected %d (BVH)", sr, sr + 3, type, BVH_TYPE); return; }
  for (int i = 0; i < 4; i++)
    if (d[i] & ~BVH_KNOWN[i]) {
      bvh_fail(w, ST_UNSUPPORTED, "BVH T# in s[%d:%d] sets bit %d, outside the modelled fields (docs/emu.md Ray tracing)", sr, sr + 3,
               32 * i + __builtin_ctz(d[i] & ~BVH_KNOWN[i]));
      return;
    }
  if (grow) { bvh_fail(w, ST_UNSUPPORTED, "BVH T# in s[%d:%d]: BOX_GROWING_AMOUNT=%d is not modelled (docs/emu.md Ray tracing)", sr, sr + 3, grow); return; }
  if (!bvh_field(d, BVH_TS_TRI_RETURN)) {
    bvh_fail(w, ST_UNSUPPORTED, "BVH T# in s[%d:%d]: TRIANGLE_RETURN_MODE=0 (triangle id / hit status) is not modelled, only 1 (i/j)", sr, sr + 3);
    return;
  }
  uint64_t base = bvh_field(d, BVH_TS_BASE) << 8, size = bvh_field(d, BVH_TS_SIZE);
  int sort = (int)bvh_field(d, BVH_TS_BOX_SORT);
  uint64_t ex = rd_exec(w);
  while (ex) {
    int L = __builtin_ctzll(ex); ex &= ex - 1;
#define BV(k, i) w->v[((g[k] + (i)) & 255) * MAXLANES + L]
    uint64_t ptr = BV(0, 0) | (np == 2 ? (uint64_t)BV(0, 1) << 32 : 0);
    float ext = bvh_f(BV(1, 0)), o[3], dir[3], inv[3];
    for (int a = 0; a < 3; a++) o[a] = bvh_f(BV(2, a));
    for (int a = 0; a < 3; a++) {
      if (in->a16) {
        dir[a] = bvh_f((uint32_t)pc_cvt(BV(3, a / 2) >> (a % 2 * 16) & 0xffff, PC_F16, PC_F32, 0xf0));
        inv[a] = bvh_f((uint32_t)pc_cvt(BV(3, (a + 3) / 2) >> ((a + 3) % 2 * 16) & 0xffff, PC_F16, PC_F32, 0xf0));
      } else { dir[a] = bvh_f(BV(3, a)); inv[a] = bvh_f(BV(4, a)); }
    }
#undef BV
    uint32_t res[4] = {BVH_INVALID_NODE, BVH_INVALID_NODE, BVH_INVALID_NODE, BVH_INVALID_NODE};
    int nt = (int)(ptr & 7);
    if ((ptr >> 3) <= size) {
      if (!BVH_NODE_BYTES[nt]) {
        bvh_fail(w, ST_UNSUPPORTED, "IMAGE_BVH lane %d: node pointer 0x%llx has type %d (%s), which is not modelled (docs/emu.md Ray tracing)",
                 L, (unsigned long long)ptr, nt, BVH_NODE_NAMES[nt]);
        return;
      }
      const uint8_t *p = gptr(w, base + (ptr >> 3) * 64, BVH_NODE_BYTES[nt], K_READ, L);
      if (!p) return;
      if (nt == 0) bvh_triangle(p, o, dir, res); else bvh_box(p, nt == 4, ext, o, inv, sort, res);
    }
    for (int i = 0; i < 4; i++) w->v[((in->data0 - 256 + i) & 255) * MAXLANES + L] = res[i];
  }
}
