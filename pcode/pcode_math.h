/* pcode_math.h: value helpers for generated pseudocode (included by pcode_rt.h). All values are raw bits in uint64_t
 * (unsigned __int128 for 65..128-bit values, PcWide above); floats are IEEE bit patterns. Float formats are numbered:
 * PC_F16 PC_BF16 PC_F32 PC_F64 PC_FP8 (OCP E4M3) PC_BF8 (E5M2) PC_FP6 (E2M3) PC_BF6 (E3M2) PC_FP4 (E2M1).
 * NaN policy: arithmetic producing NaN returns the canonical quiet NaN; conversions keep sign/payload (widening exactly,
 * narrowing truncated with the quiet bit set). Rounding and denormal flushing follow the MODE register (PcState.MODE, passed
 * as `m`; see the MODE section below). The Python reference (mockgpu.pcode.softfloat / pyeval) follows the same rules. */
#ifndef PCODE_MATH_H
#define PCODE_MATH_H
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <fenv.h>
typedef unsigned __int128 pc_u128;
enum { PC_F16, PC_BF16, PC_F32, PC_F64, PC_FP8, PC_BF8, PC_FP6, PC_BF6, PC_FP4 };
static const int PC_EB[9] = {5, 8, 8, 11, 4, 5, 2, 3, 2}, PC_MB[9] = {10, 7, 23, 52, 3, 2, 3, 2, 1};
static const int PC_IEEE[9] = {1, 1, 1, 1, 0, 1, 0, 0, 0}, PC_NANONLY[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};

#define PC_MASK(n) ((n) >= 64 ? ~0ULL : ((1ULL << (n)) - 1ULL))
#define PC_MASK128(n) ((n) >= 128 ? ~(pc_u128)0 : (((pc_u128)1 << (n)) - 1))
static inline int64_t pc_sext(uint64_t x, int n) { return n >= 64 ? (int64_t)x : (int64_t)(x << (64 - n)) >> (64 - n); }
static inline uint64_t pc_ext(uint64_t x, int from, int sgn, int to) { return (sgn ? (uint64_t)pc_sext(x, from) : x) & PC_MASK(to); }
static inline pc_u128 pc_ext128(pc_u128 x, int from, int sgn, int to) {
  if (sgn && from < 128 && ((x >> (from - 1)) & 1)) x |= ~PC_MASK128(from);
  return x & PC_MASK128(to);
}
/* integer narrowing with saturation (i32_to_i16, u32_to_u16): the value clamped to the destination's range */
static inline uint64_t pc_isat(uint64_t x, int from, int sgn, int to, int dsgn) {
  int64_t lo = dsgn ? -(int64_t)(1ULL << (to - 1)) : 0, hi = dsgn ? (int64_t)((1ULL << (to - 1)) - 1) : (int64_t)PC_MASK(to);
  if (sgn) { int64_t v = pc_sext(x, from); return (uint64_t)(v < lo ? lo : v > hi ? hi : v) & PC_MASK(to); }
  x &= PC_MASK(from);
  return (x > (uint64_t)hi ? (uint64_t)hi : x) & PC_MASK(to);
}
static inline uint64_t pc_shl(uint64_t a, uint64_t b, int n) { return b >= (uint64_t)n ? 0 : (a << b) & PC_MASK(n); }
static inline uint64_t pc_shr(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }
static inline uint64_t pc_sar(uint64_t a, uint64_t b, int n) { int64_t v = pc_sext(a, n); return (uint64_t)(v >> (b >= 63 ? 63 : b)) & PC_MASK(n); }
static inline pc_u128 pc_shl128(pc_u128 a, uint64_t b, int n) { return b >= (uint64_t)n ? 0 : (a << b) & PC_MASK128(n); }
static inline pc_u128 pc_shr128(pc_u128 a, uint64_t b) { return b >= 128 ? 0 : a >> b; }
static inline uint64_t pc_udiv(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t pc_umod(uint64_t a, uint64_t b) { return b ? a % b : 0; }
static inline uint64_t pc_sdiv(int64_t a, int64_t b) { return b == 0 ? 0 : (b == -1 ? (uint64_t)0 - (uint64_t)a : (uint64_t)(a / b)); }
static inline uint64_t pc_smod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : (uint64_t)(a % b); }
static inline uint64_t pc_rev(uint64_t x, int n) { uint64_t r = 0; for (int i = 0; i < n; i++) r |= ((x >> i) & 1) << (n - 1 - i); return r; }

/* bit fields of dword arrays (PcReg.d / PcWide.d, 1024 bits); n <= 128; bits past 1024 read as 0 and are not written */
static inline pc_u128 pc_rd_bits(const uint32_t *d, uint64_t lo, int n) {
  if (lo >= 1024) return 0;
  uint64_t q[3] = {0, 0, 0}, w = lo >> 6, sh = lo & 63;
  for (int i = 0; i < 3; i++) if (w + i < 16) memcpy(&q[i], (const char *)d + 8 * (w + i), 8);
  pc_u128 r = (pc_u128)q[0] | ((pc_u128)q[1] << 64);
  if (sh) r = (r >> sh) | ((pc_u128)q[2] << (128 - sh));
  return r & PC_MASK128(n);
}
static inline uint64_t pc_getbit(const uint64_t *q, uint64_t b) { return b < 1024 ? (q[b >> 6] >> (b & 63)) & 1 : 0; }
static inline void pc_setbit(uint64_t *q, uint64_t b, uint64_t v) { if (b < 1024) q[b >> 6] = (q[b >> 6] & ~(1ULL << (b & 63))) | ((uint64_t)(v & 1) << (b & 63)); }
static inline uint64_t pc_part(pc_u128 x, int base) { return base >= 128 || base <= -64 ? 0 : base >= 0 ? (uint64_t)(x >> base) : (uint64_t)(x << -base); }
static inline void pc_wr_bits(uint32_t *d, uint64_t lo, int n, pc_u128 v) {
  if (lo >= 1024) return;
  uint64_t w = lo >> 6, sh = lo & 63;
  pc_u128 m = PC_MASK128(n);
  v &= m;
  for (int i = 0; i < 3; i++) {
    if (w + i >= 16) break;
    int base = 64 * i - (int)sh;
    uint64_t mw = pc_part(m, base), vw = pc_part(v, base), q;
    if (!mw) continue;
    memcpy(&q, (char *)d + 8 * (w + i), 8);
    q = (q & ~mw) | vw;
    memcpy((char *)d + 8 * (w + i), &q, 8);
  }
}
typedef struct { uint32_t d[32]; } PcWideT;
static inline PcWideT pc_rd_wide(const uint32_t *d, uint64_t lo, int n) {
  PcWideT r; memset(&r, 0, sizeof r);
  for (int i = 0; i < n; i++) { uint64_t b = lo + i; if (b < 1024 && ((d[b >> 5] >> (b & 31)) & 1)) r.d[i >> 5] |= 1u << (i & 31); }
  return r;
}
static inline void pc_wr_wide(uint32_t *d, uint64_t lo, int n, PcWideT v) {
  for (int i = 0; i < n; i++) { uint64_t b = lo + i; if (b < 1024) d[b >> 5] = (d[b >> 5] & ~(1u << (b & 31))) | (((v.d[i >> 5] >> (i & 31)) & 1) << (b & 31)); }
}
static inline PcWideT pc_wide_from(pc_u128 v) { PcWideT r; memset(&r, 0, sizeof r); pc_wr_bits(r.d, 0, 128, v); return r; }

/* ---------- floats ---------- */
static inline float pc_as_f(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static inline uint32_t pc_fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static inline double pc_as_d(uint64_t b) { double f; memcpy(&f, &b, 8); return f; }
static inline uint64_t pc_dbits(double f) { uint64_t b; memcpy(&b, &f, 8); return b; }
static inline __attribute__((always_inline)) int pc_bits_of(int f) { return 1 + PC_EB[f] + PC_MB[f]; }
static inline __attribute__((always_inline)) uint64_t pc_emax(int f) { return (1ULL << PC_EB[f]) - 1; }
static inline uint64_t pc_maxbits(int f) {
  if (PC_IEEE[f]) return ((pc_emax(f) - 1) << PC_MB[f]) | PC_MASK(PC_MB[f]);
  return PC_MASK(PC_EB[f] + PC_MB[f]) - (PC_NANONLY[f] ? 1 : 0);
}
static inline __attribute__((always_inline)) uint64_t pc_canon(int f) { return PC_NANONLY[f] ? PC_MASK(PC_EB[f] + PC_MB[f]) : PC_IEEE[f] ? (pc_emax(f) << PC_MB[f]) | (1ULL << (PC_MB[f] - 1)) : 0; }
static inline uint64_t pc_signbit(uint64_t b, int f) { return (b >> (pc_bits_of(f) - 1)) & 1; }
static inline int pc_isnan(uint64_t b, int f) {
  uint64_t e = (b >> PC_MB[f]) & pc_emax(f), m = b & PC_MASK(PC_MB[f]);
  if (PC_IEEE[f]) return e == pc_emax(f) && m != 0;
  if (PC_NANONLY[f]) return e == pc_emax(f) && m == PC_MASK(PC_MB[f]);
  return 0;
}
static inline int pc_isinf(uint64_t b, int f) { return PC_IEEE[f] && ((b >> PC_MB[f]) & pc_emax(f)) == pc_emax(f) && (b & PC_MASK(PC_MB[f])) == 0; }
static inline int pc_issnan(uint64_t b, int f) { return PC_IEEE[f] && pc_isnan(b, f) && !((b >> (PC_MB[f] - 1)) & 1); }
static inline int pc_isqnan(uint64_t b, int f) { return pc_isnan(b, f) && !pc_issnan(b, f); }
/* exact value as a double (every format here fits); NaN -> NAN */
static inline double pc_decode(uint64_t b, int f) {
  if (f == PC_F64) return pc_as_d(b);
  if (f == PC_F32) return (double)pc_as_f((uint32_t)b);
  double s = pc_signbit(b, f) ? -1.0 : 1.0;
  if (pc_isnan(b, f)) return NAN;
  if (pc_isinf(b, f)) return s * INFINITY;
  int bias = (1 << (PC_EB[f] - 1)) - 1;
  uint64_t e = (b >> PC_MB[f]) & pc_emax(f), m = b & PC_MASK(PC_MB[f]);
  if (e == 0) return s * ldexp((double)m, 1 - bias - PC_MB[f]);
  return s * ldexp((double)(m | (1ULL << PC_MB[f])), (int)e - bias - PC_MB[f]);
}
/* ---- MODE (one uint64_t, the MODE register; see pcode/state.py): FP_ROUND [1:0] f32, [3:2] f16/f64 (0 nearest even, 1 +inf,
 * 2 -inf, 3 toward zero); FP_DENORM [5:4] f32, [7:6] f16/f64 (bit 0: keep input denormals, bit 1: keep output denormals).
 * bf16 and the small formats are tied to no MODE field: nearest even, denormals kept. */
#define PC_MODE_DEFAULT 0xf0
static inline __attribute__((always_inline)) int pc_grp(int f) { return f == PC_F32 ? 0 : (f == PC_F16 || f == PC_F64) ? 2 : -1; }
/* the default behaviour for format f (nearest even, denormals kept): the inline fast paths */
static inline __attribute__((always_inline)) int pc_plain(uint64_t m, int f) { int g = pc_grp(f); return g < 0 || ((m >> g) & 0x33) == 0x30; }
static inline __attribute__((always_inline)) int pc_rmode(uint64_t m, int f) { int g = pc_grp(f); return g < 0 ? 0 : (int)((m >> g) & 3); }
static inline __attribute__((always_inline)) int pc_fisdenorm(uint64_t a, int f) { return ((a >> PC_MB[f]) & pc_emax(f)) == 0 && (a & PC_MASK(PC_MB[f])) != 0; }
static inline __attribute__((always_inline)) uint64_t pc_ftz(uint64_t b, int f) { return pc_fisdenorm(b, f) ? b & (1ULL << (pc_bits_of(f) - 1)) : b; }
static inline __attribute__((always_inline)) uint64_t pc_fin(uint64_t b, int f, uint64_t m) { int g = pc_grp(f); return g < 0 || ((m >> (4 + g)) & 1) ? b : pc_ftz(b, f); }
static inline __attribute__((always_inline)) uint64_t pc_fout(uint64_t b, int f, uint64_t m) { int g = pc_grp(f); return g < 0 || ((m >> (5 + g)) & 1) ? b : pc_ftz(b, f); }
/* round a double to format f with rounding mode rm (0 nearest even, 1 +inf, 2 -inf, 3 toward zero) */
static inline uint64_t pc_encode(double x, int f, uint64_t rm) {
  if (f == PC_F64) return isnan(x) ? pc_canon(f) : pc_dbits(x);
  int neg = signbit(x) != 0;
  uint64_t s = (uint64_t)neg << (pc_bits_of(f) - 1);
  if (isnan(x)) return pc_canon(f);
  if (isinf(x)) return s | (PC_IEEE[f] ? pc_emax(f) << PC_MB[f] : PC_NANONLY[f] ? pc_canon(f) : pc_maxbits(f));
  double a = fabs(x);
  if (a == 0) return s;
  int e2, bias = (1 << (PC_EB[f] - 1)) - 1, mb = PC_MB[f];
  frexp(a, &e2);
  int ee = e2 - 1, E = ee + bias < 1 ? 1 : ee + bias;
  double q = ldexp(a, mb - (E - bias)), r = floor(q), rem = q - r;
  int up = rm == 0 ? (rem > 0.5 || (rem == 0.5 && fmod(r, 2.0) != 0)) : rem > 0 && ((rm == 1 && !neg) || (rm == 2 && neg));
  if (up) r += 1;
  uint64_t ri = (uint64_t)r, bits = ee + bias < 1 ? ri : (((uint64_t)E << mb) + (ri - (1ULL << mb)));
  if (bits > pc_maxbits(f)) {
    if (!(rm == 0 || (rm == 1 && !neg) || (rm == 2 && neg)) || !(PC_IEEE[f] || PC_NANONLY[f])) return s | pc_maxbits(f);
    return s | (PC_IEEE[f] ? pc_emax(f) << PC_MB[f] : pc_canon(f));
  }
  return s | bits;
}
static inline uint64_t pc_nan_move(uint64_t b, int src, int dst) {
  uint64_t s = pc_signbit(b, src) << (pc_bits_of(dst) - 1), pay = b & PC_MASK(PC_MB[src]);
  if (!PC_IEEE[dst]) return PC_NANONLY[dst] ? (pc_canon(dst) | s) : 0;
  if (!PC_IEEE[src]) return s | pc_canon(dst);
  if (PC_MB[dst] >= PC_MB[src]) pay <<= PC_MB[dst] - PC_MB[src];
  else pay = (pay >> (PC_MB[src] - PC_MB[dst])) | (1ULL << (PC_MB[dst] - 1));
  return s | (pc_emax(dst) << PC_MB[dst]) | pay;
}
/* value conversion: the source's input-denormal rule, rounding and output-denormal rule of the destination's group */
static inline uint64_t pc_cvt(uint64_t b, int src, int dst, uint64_t m) {
  if (pc_isnan(b, src)) return pc_nan_move(b, src, dst);
  return pc_fout(pc_encode(pc_decode(pc_fin(b, src, m), src), dst, pc_rmode(m, dst)), dst, m);
}
static inline uint64_t pc_fres(double r, int f) { return isnan(r) ? pc_canon(f) : pc_encode(r, f, 0); }
static inline uint64_t pc_fres_m(double r, int f, uint64_t m) { return isnan(r) ? pc_canon(f) : pc_fout(pc_encode(r, f, pc_rmode(m, f)), f, m); }
/* a + b rounded to odd (53 bits): lets one later rounding to <= 51 bits be exact */
static inline double pc_add_odd(double a, double b) {
  double s = a + b, bb = s - a, err = (a - (s - bb)) + (b - bb);
  if (err != 0 && isfinite(s) && !(pc_dbits(s) & 1)) s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
  return s;
}
/* ---- non-default MODE (slow path): one operation in rounding mode rm. The operands and the result are volatile, so the
 * operation stays between the two fesetround calls whatever the optimiser assumes about the floating-point environment. */
enum { PC_OADD, PC_OSUB, PC_OMUL, PC_ODIV, PC_OFMA, PC_OSQRT, PC_OLDEXP };
static const int PC_FE[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
static __attribute__((noinline)) double pc_dop(int op, double a, double b, double c, int rm) {
  int old = fegetround(); fesetround(PC_FE[rm & 3]);
  volatile double x = a, y = b, z = c, r;
  switch (op) {
    case PC_OADD: r = x + y; break; case PC_OSUB: r = x - y; break; case PC_OMUL: r = x * y; break; case PC_ODIV: r = x / y; break;
    case PC_OFMA: r = fma(x, y, z); break; case PC_OSQRT: r = sqrt(x); break; default: r = ldexp(x, (int)y);
  }
  double out = r;
  fesetround(old);
  return out;
}
static __attribute__((noinline)) float pc_sop(int op, float a, float b, float c, int rm) {
  int old = fegetround(); fesetround(PC_FE[rm & 3]);
  volatile float x = a, y = b, z = c, r;
  switch (op) {
    case PC_OADD: r = x + y; break; case PC_OSUB: r = x - y; break; case PC_OMUL: r = x * y; break; case PC_ODIV: r = x / y; break;
    case PC_OFMA: r = fmaf(x, y, z); break; default: r = sqrtf(x);
  }
  float out = r;
  fesetround(old);
  return out;
}
/* + - * / fma sqrt under MODE m: inputs flushed, rounded per the group's mode, output flushed. f16/bf16 compute in double:
 * exact for + - *, and a double rounded in the same direction (round-to-odd for a nearest-even fma) rounds once more exactly. */
static __attribute__((noinline)) uint64_t pc_fop_slow(int op, uint64_t a, uint64_t b, uint64_t c, int f, uint64_t m) {
  a = pc_fin(a, f, m); b = pc_fin(b, f, m); c = pc_fin(c, f, m);
  int rm = pc_rmode(m, f);
  if (f == PC_F32) { float v = pc_sop(op, pc_as_f((uint32_t)a), pc_as_f((uint32_t)b), pc_as_f((uint32_t)c), rm); return isnan(v) ? pc_canon(f) : pc_fout(pc_fbits(v), f, m); }
  if (f == PC_F64) { double v = pc_dop(op, pc_as_d(a), pc_as_d(b), pc_as_d(c), rm); return isnan(v) ? pc_canon(f) : pc_fout(pc_dbits(v), f, m); }
  double x = pc_decode(a, f), y = pc_decode(b, f), z = pc_decode(c, f), v;
  if (op == PC_OFMA && rm == 0) { double p = x * y; v = (isnan(p) || isnan(z) || isinf(p) || isinf(z) || p == 0 || z == 0) ? p + z : pc_add_odd(p, z); }
  else v = pc_dop(op, x, y, z, rm);
  return pc_fres_m(v, f, m);
}
/* nearest even with denormals flushed (f32/f64 only; LLVM's kernel-descriptor default for f32): what pc_fop_slow computes with
 * rm 0, i.e. the native operation between pc_fin and pc_fout, kept inline so the emulator's lane loops stay vectorisable */
static inline __attribute__((always_inline)) int pc_ftz_near(uint64_t m, int f) { return (f == PC_F32 || f == PC_F64) && pc_rmode(m, f) == 0; }
#define PC_FBIN(name, OP, K) \
  static inline __attribute__((always_inline)) uint64_t pc_##name(uint64_t a, uint64_t b, int f, uint64_t m) { \
    int ftz = !pc_plain(m, f); uint64_t r; \
    if (__builtin_expect(ftz, 0)) { if (!pc_ftz_near(m, f)) return pc_fop_slow(K, a, b, 0, f, m); a = pc_fin(a, f, m); b = pc_fin(b, f, m); } \
    if (f == PC_F32) { float x = pc_as_f((uint32_t)a) OP pc_as_f((uint32_t)b); r = isnan(x) ? pc_canon(f) : pc_fbits(x); } \
    else if (f == PC_F64) { double x = pc_as_d(a) OP pc_as_d(b); r = isnan(x) ? pc_canon(f) : pc_dbits(x); } \
    else return pc_fres(pc_decode(a, f) OP pc_decode(b, f), f); \
    return ftz ? pc_fout(r, f, m) : r; }
PC_FBIN(fadd, +, PC_OADD)
PC_FBIN(fsub, -, PC_OSUB)
PC_FBIN(fmul, *, PC_OMUL)
PC_FBIN(fdiv, /, PC_ODIV)
static inline __attribute__((always_inline)) uint64_t pc_ffma(uint64_t a, uint64_t b, uint64_t c, int f, uint64_t m) {
  int ftz = !pc_plain(m, f); uint64_t r;
  if (__builtin_expect(ftz, 0)) {
    if (!pc_ftz_near(m, f)) return pc_fop_slow(PC_OFMA, a, b, c, f, m);
    a = pc_fin(a, f, m); b = pc_fin(b, f, m); c = pc_fin(c, f, m);
  }
  if (f == PC_F32) { float x = fmaf(pc_as_f((uint32_t)a), pc_as_f((uint32_t)b), pc_as_f((uint32_t)c)); r = isnan(x) ? pc_canon(f) : pc_fbits(x); }
  else if (f == PC_F64) { double x = fma(pc_as_d(a), pc_as_d(b), pc_as_d(c)); r = isnan(x) ? pc_canon(f) : pc_dbits(x); }
  else {
    double p = pc_decode(a, f) * pc_decode(b, f), cc = pc_decode(c, f);        /* exact: <= 2*11 significant bits */
    if (isnan(p) || isnan(cc) || isinf(p) || isinf(cc) || p == 0 || cc == 0) return pc_fres(p + cc, f);
    return pc_fres(pc_add_odd(p, cc), f);
  }
  return ftz ? pc_fout(r, f, m) : r;
}
static inline int pc_fcmp(uint64_t a, uint64_t b, int f, int op, uint64_t m) {   /* op: 0 == 1 != 2 < 3 > 4 <= 5 >= 6 <> (ordered) */
  double x = pc_decode(pc_fin(a, f, m), f), y = pc_decode(pc_fin(b, f, m), f);
  switch (op) { case 0: return x == y; case 1: return x != y; case 2: return x < y; case 3: return x > y; case 4: return x <= y;
                case 5: return x >= y; default: return x < y || x > y; }
}
static inline uint64_t pc_fneg(uint64_t a, int f) { return a ^ (1ULL << (pc_bits_of(f) - 1)); }
static inline uint64_t pc_fabs(uint64_t a, int f) { return a & PC_MASK(pc_bits_of(f) - 1); }
static inline __attribute__((always_inline)) uint64_t pc_fsqrt(uint64_t a, int f, uint64_t m) {
  int ftz = !pc_plain(m, f);
  if (__builtin_expect(ftz, 0)) { if (f != PC_F32 || !pc_ftz_near(m, f)) return pc_fop_slow(PC_OSQRT, a, 0, 0, f, m); a = pc_fin(a, f, m); }
  if (f == PC_F32) { float r = sqrtf(pc_as_f((uint32_t)a)); uint64_t b = isnan(r) ? pc_canon(f) : pc_fbits(r); return ftz ? pc_fout(b, f, m) : b; }
  return pc_fres(sqrt(pc_decode(a, f)), f);
}
/* one-argument functions: computed in double (libm for sin, cos, log2, 2^x), then rounded once per the MODE */
#define PC_FUN1(name, EXPR) static inline uint64_t pc_##name(uint64_t a, int f, uint64_t m) { double x = pc_decode(pc_fin(a, f, m), f); return pc_fres_m(EXPR, f, m); }
PC_FUN1(ftrunc, trunc(x))
PC_FUN1(ffloor, floor(x))
PC_FUN1(ffract, pc_plain(m, f) ? x - floor(x) : pc_dop(PC_OSUB, x, floor(x), 0, pc_rmode(m, f)))
PC_FUN1(fsin, sin(x))
PC_FUN1(fcos, cos(x))
PC_FUN1(flog2, log2(x))
PC_FUN1(fexp2, pow(2.0, x))
static inline uint64_t pc_fldexp(uint64_t a, int64_t n, int f, uint64_t m) {
  if (pc_isnan(a, f)) return pc_canon(f);
  a = pc_fin(a, f, m);
  if (f == PC_F64) {
    int k = (int)(n > 4000 ? 4000 : n < -4000 ? -4000 : n);
    return pc_fout(pc_dbits(pc_plain(m, f) ? ldexp(pc_as_d(a), k) : pc_dop(PC_OLDEXP, pc_as_d(a), k, 0, pc_rmode(m, f))), f, m);
  }
  return pc_fout(pc_encode(ldexp(pc_decode(a, f), (int)(n > 400 ? 400 : n < -400 ? -400 : n)), f, pc_rmode(m, f)), f, m);
}
static inline uint64_t pc_fmant(uint64_t a, int f, uint64_t m) {
  int e; a = pc_fin(a, f, m); double x = pc_decode(a, f);
  if (isnan(x)) return pc_canon(f);
  if (isinf(x) || x == 0) return a;
  return pc_encode(frexp(x, &e), f, 0);
}
static inline uint64_t pc_fexpfield(uint64_t a, int f) { return (a >> PC_MB[f]) & pc_emax(f); }
static inline uint64_t pc_fquiet(uint64_t a, int f) { return pc_isnan(a, f) && PC_IEEE[f] ? a | (1ULL << (PC_MB[f] - 1)) : a; }
static inline int pc_fiseven(uint64_t a, int f) { double x = pc_decode(a, f); return isfinite(x) && fmod(x, 2.0) == 0; }
/* float -> integer of n bits: NaN -> 0, truncation toward zero, saturating */
static inline uint64_t pc_f2i(uint64_t a, int f, int n, int sgn) {
  double x = pc_decode(a, f);
  if (isnan(x)) return 0;
  x = trunc(x);
  double lo = sgn ? -ldexp(1.0, n - 1) : 0.0, hi = sgn ? ldexp(1.0, n - 1) - 1 : ldexp(1.0, n) - 1;
  if (x <= lo) return (uint64_t)(int64_t)lo & PC_MASK(n);
  if (x >= hi) return (sgn ? (uint64_t)(int64_t)hi : (uint64_t)hi) & PC_MASK(n);
  return (sgn ? (uint64_t)(int64_t)x : (uint64_t)x) & PC_MASK(n);
}
/* float -> normalized 16-bit integer (snorm: [-1,1] * 32767, unorm: [0,1] * 65535), nearest even */
static inline uint64_t pc_f2norm(uint64_t a, int f, int sgn) {
  double x = pc_decode(a, f);
  if (isnan(x)) return 0;
  double lo = sgn ? -1.0 : 0.0;
  x = x < lo ? lo : x > 1.0 ? 1.0 : x;
  return (uint64_t)(int64_t)nearbyint(x * (sgn ? 32767.0 : 65535.0)) & 0xffff;
}
/* integer -> float (through a double: exact up to 2^53), rounded per the MODE */
static inline uint64_t pc_i2f(int64_t v, int f, uint64_t m) { return pc_fout(pc_encode((double)v, f, pc_rmode(m, f)), f, m); }
static inline uint64_t pc_u2f(uint64_t v, int f, uint64_t m) { return pc_fout(pc_encode((double)v, f, pc_rmode(m, f)), f, m); }
/* stochastic rounding: truncate |x| + rnd/2^32 units in the last place of the result (overflow as in round-to-nearest) */
static inline uint64_t pc_encode_sr(double x, int f, uint32_t rnd) {
  if (isnan(x) || isinf(x) || x == 0) return pc_encode(x, f, 0);
  uint64_t s = (uint64_t)signbit(x) << (pc_bits_of(f) - 1);
  int e2, bias = (1 << (PC_EB[f] - 1)) - 1, mb = PC_MB[f];
  double a = fabs(x);
  frexp(a, &e2);
  int ee = e2 - 1, E = ee + bias < 1 ? 1 : ee + bias;
  double q = ldexp(a, mb - (E - bias)), r = floor(q), rem = q - r;
  if (rem != 0 && rem >= 1.0 - ldexp((double)rnd, -32)) r += 1;
  uint64_t ri = (uint64_t)r, bits = ee + bias < 1 ? ri : (((uint64_t)E << mb) + (ri - (1ULL << mb)));
  if (bits > pc_maxbits(f)) return s | (PC_IEEE[f] ? pc_emax(f) << PC_MB[f] : PC_NANONLY[f] ? pc_canon(f) : pc_maxbits(f));
  return s | bits;
}
static inline uint64_t pc_sr_to(uint64_t a, int f, uint64_t rnd, uint64_t scale, int dst) {
  if (pc_isnan(a, f)) return pc_nan_move(a, f, dst);
  return pc_encode_sr(ldexp(pc_decode(a, f), 127 - (int)scale), dst, (uint32_t)rnd);
}
static inline uint64_t pc_scale_from(uint64_t a, int f, uint64_t scale, int dst) { return pc_encode(ldexp(pc_decode(a, f), (int)scale - 127), dst, 0); }
static inline uint64_t pc_scale_to(uint64_t a, int f, uint64_t scale, int dst) {
  if (pc_isnan(a, f)) return pc_nan_move(a, f, dst);
  return pc_encode(ldexp(pc_decode(a, f), 127 - (int)scale), dst, 0);
}
/* floor(2/PI * 2^1201) as 38 little-endian dwords; generated by mockgpu.pcode.constants (test_constants.py regenerates and diffs) */
static const uint32_t PC_TWO_OVER_PI[38] = {
  0x608df8f6u, 0xba10ac06u, 0xbf623f1au, 0x25d4d7f6u, 0x73ef14a5u, 0xe2f67a0eu,
  0x758fd7cbu, 0xd45aea4fu, 0x7ecd3cbfu, 0x136e9e8cu, 0xfd9e4f96u, 0xda3eda6cu,
  0x2316b414u, 0x301fde5eu, 0x2fffbc0bu, 0x50763ff1u, 0xbf177bf2u, 0x73e93908u,
  0xac7306a6u, 0xfc827323u, 0xe04d68beu, 0x8909d338u, 0x6bea5d76u, 0x4e7dd104u,
  0xd6396253u, 0x2439fc3bu, 0x5dd413a3u, 0xa5c00c92u, 0xdc74849bu, 0x8ac36e48u,
  0xc757bd77u, 0x2083fca2u, 0x2b327887u, 0xbb81b6c5u, 0xafa3ea69u, 0x2a53f84eu,
  0x06dc9c88u, 0x000145f3u};
/* 53 bits of 2/PI after skipping `shift` fraction bits (V_TRIG_PREOP_F64, see corrections.FIXES) */
static inline uint64_t pc_two_over_pi_segment(uint64_t shift) {
  uint64_t r = 0;
  for (int i = 0; i < 53; i++) {               /* result bit i is fraction bit 1200 - shift - 52 + i of 2/PI (0 past the table) */
    int64_t b = 1201 - 53 - (int64_t)shift + i;
    if (b >= 0 && b < 1201) r |= (uint64_t)((PC_TWO_OVER_PI[b >> 5] >> (b & 31)) & 1) << i;
  }
  return r;
}
static inline uint64_t pc_float32(uint64_t s, uint64_t e, uint64_t m) { return ((s & 1) << 31) | ((e & 0xff) << 23) | (m & 0x7fffff); }
static inline uint64_t pc_popcount(uint64_t x) { return (uint64_t)__builtin_popcountll(x); }
static inline uint64_t pc_ff1(uint64_t x) { return x ? (uint64_t)__builtin_ctzll(x) : 0xffffffffULL; }
#endif
