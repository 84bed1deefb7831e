/* Runtime of the PTX engine's generated C (mockgpu.mock.ptx.cgen): the launch context, bit casts, the IEEE helpers that PTX
   defines differently from C, and the grid loop with bar.sync rounds. Semantics are documented in docs/ptx.md. */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>

typedef struct {
  const uint64_t *args; uint64_t nargs;          /* raw 64-bit parameter values, in .param order */
  uint32_t grid[3], block[3];
  const uint64_t *ranges; uint64_t nranges;      /* sorted [start, end) pairs the kernel may touch: the mapped granules (strict: the allocations) */
  uint64_t *sites;                               /* per global access site: the range it hit last (set by run_grid) */
  uint8_t *smem; uint64_t smem_bytes;
  uint64_t left;                                 /* watchdog: backward branches left in this launch */
  uint32_t f_kind, f_space, f_size, f_line;      /* fault: kind 1 read 2 write 3 watchdog 4 divergent barrier 5 host OOM */
  uint64_t f_addr;
  uint32_t f_tid[3], f_ctaid[3];
  const uint64_t *mranges; uint64_t nmranges;    /* strict mode only: the mapped granules (reads there outside `ranges` are noted in v_*) */
  uint64_t v_count, v_addr;                      /* strict mode: reads outside the allocations inside their granules; the first one: */
  uint32_t v_size, v_line, v_tid[3], v_ctaid[3];
} PtxCtx;

typedef int (*ptx_thread_fn)(PtxCtx *c, uint32_t tx, uint32_t ty, uint32_t tz, uint32_t bx, uint32_t by, uint32_t bz, int *resume, uint64_t *save);

static inline float b2f(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }
static inline double b2d(uint64_t x) { double d; memcpy(&d, &x, 8); return d; }
static inline uint32_t f2b(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }
static inline uint64_t d2b(double d) { uint64_t x; memcpy(&x, &d, 8); return x; }
static inline float h2f(uint16_t x) { _Float16 h; memcpy(&h, &x, 2); return (float)h; }
static inline uint16_t f2h(float f) { _Float16 h = (_Float16)f; uint16_t x; memcpy(&x, &h, 2); return x; }
static inline uint16_t d2h(double d) { _Float16 h = (_Float16)d; uint16_t x; memcpy(&x, &h, 2); return x; }
#define TOH(v) _Generic((v), double: d2h, default: f2h)(v)

/* max/min: a NaN operand yields the other one; +0 is larger than -0 */
static inline double pmax(double a, double b) { if (a != a) return b; if (b != b) return a; if (a == b) return signbit(a) ? b : a; return a > b ? a : b; }
static inline double pmin(double a, double b) { if (a != a) return b; if (b != b) return a; if (a == b) return signbit(a) ? a : b; return a < b ? a : b; }
static inline float pmaxf(float a, float b) { return (float)pmax(a, b); }
static inline float pminf(float a, float b) { return (float)pmin(a, b); }
/* float -> integer: NaN -> 0, saturating at the destination's range (v already rounded to an integral value) */
static inline int64_t f2s(double v, int bits) {
  double hi = ldexp(1.0, bits - 1);
  if (v != v) return 0;
  if (v >= hi) return (int64_t)((((uint64_t)1) << (bits - 1)) - 1);
  if (v < -hi) return -(int64_t)(((uint64_t)1) << (bits - 1));
  return (int64_t)v;
}
static inline uint64_t f2u(double v, int bits) {
  if (v != v || v <= 0) return 0;
  if (v >= ldexp(1.0, bits)) return bits == 64 ? UINT64_MAX : ((((uint64_t)1) << bits) - 1);
  return (uint64_t)v;
}

static int lookup(PtxCtx *c, uint64_t a, uint64_t n, uint64_t *site) {
  uint64_t lo = 0, hi = c->nranges;
  while (lo < hi) { uint64_t m = (lo + hi) / 2; if (c->ranges[2*m] <= a) lo = m + 1; else hi = m; }
  if (lo == 0) return 0;
  const uint64_t *r = &c->ranges[2*(lo-1)];
  if (a + n < a || a + n > r[1]) return 0;
  site[0] = r[0]; site[1] = r[1];
  return 1;
}
static inline int inrange(PtxCtx *c, uint64_t a, uint64_t n, int s) {
  uint64_t *site = &c->sites[2*s];
  return (a >= site[0] && a + n <= site[1] && a + n >= a) || lookup(c, a, n, site);
}

#define FAULT(k, s, a, n, l) do { c->f_kind = (k); c->f_space = (s); c->f_addr = (a); c->f_size = (n); c->f_line = (l); c->left = left; return 1; } while (0)
/* strict mode: a read that misses the allocations but stays inside their mapped granules is performed (as on a GPU) and noted */
static int mapped_read(PtxCtx *c, uint64_t a, uint64_t n, int k, uint32_t l, const uint32_t *tid, const uint32_t *cta) {
  uint64_t lo = 0, hi = c->nmranges;
  if (k != 1 || !hi) return 0;
  while (lo < hi) { uint64_t m = (lo + hi) / 2; if (c->mranges[2*m] <= a) lo = m + 1; else hi = m; }
  if (lo == 0 || a + n < a || a + n > c->mranges[2*(lo-1)+1]) return 0;
  if (!c->v_count++) { c->v_addr = a; c->v_size = (uint32_t)n; c->v_line = l; memcpy(c->v_tid, tid, 12); memcpy(c->v_ctaid, cta, 12); }
  return 1;
}
#define GCHK(a, n, k, l, s) do { if (!inrange(c, (a), (n), (s))) { uint32_t t_[3] = {tx, ty, tz}, b_[3] = {bx, by, bz}; \
  if (!mapped_read(c, (a), (n), (k), (l), t_, b_)) FAULT(k, 1, a, n, l); } } while (0)
#define SCHK(a, n, k, l) do { if ((a) + (n) > c->smem_bytes || (a) + (n) < (a)) FAULT(k, 2, a, n, l); } while (0)
#define BACK(l) do { if (!left--) FAULT(3, 0, 0, 0, l); } while (0)

/* The grid: blocks in x, y, z order; inside a block every thread runs until bar.sync or ret, then the next one (a round).
   Rounds repeat until every thread has returned; all waiting threads must wait at the same bar.sync. */
static inline __attribute__((always_inline)) int run_grid(PtxCtx *c, ptx_thread_fn fn, int nregs, int has_bar, int nsites) {
  uint32_t bx = c->block[0], by = c->block[1], nt = c->block[0] * c->block[1] * c->block[2];
  int *resume = has_bar ? calloc(nt, sizeof(int)) : NULL;
  uint64_t *save = has_bar ? calloc((uint64_t)nt * (nregs ? nregs : 1), 8) : NULL;
  uint64_t *sites = calloc(2 * (nsites ? nsites : 1), 8);   /* [0, 0): every site misses once */
  int rc = 0, zero = 0;
  c->sites = sites;
  if (!sites || (has_bar && (!resume || !save))) { c->f_kind = 5; rc = 1; goto out; }
  for (uint32_t gz = 0; gz < c->grid[2]; gz++) for (uint32_t gy = 0; gy < c->grid[1]; gy++) for (uint32_t gx = 0; gx < c->grid[0]; gx++) {
    if (c->smem_bytes) memset(c->smem, 0, c->smem_bytes);
    if (has_bar) memset(resume, 0, nt * sizeof(int));
    for (;;) {
      for (uint32_t t = 0; t < nt; t++) {
        int *rs = has_bar ? &resume[t] : &zero;
        if (*rs < 0) continue;
        if (fn(c, t % bx, (t / bx) % by, t / (bx * by), gx, gy, gz, rs, has_bar ? &save[(uint64_t)t * nregs] : NULL)) {
          c->f_tid[0] = t % bx; c->f_tid[1] = (t / bx) % by; c->f_tid[2] = t / (bx * by);
          c->f_ctaid[0] = gx; c->f_ctaid[1] = gy; c->f_ctaid[2] = gz; rc = 1; goto out;
        }
        if (!has_bar) zero = 0;
      }
      if (!has_bar) break;
      int at = -1;
      for (uint32_t t = 0; t < nt; t++) if (resume[t] >= 0) {
        if (at < 0) at = resume[t];
        else if (resume[t] != at) {
          c->f_kind = 4; c->f_space = 0; c->f_line = (uint32_t)resume[t]; c->f_addr = (uint64_t)at; c->f_size = 0;
          c->f_tid[0] = t % bx; c->f_tid[1] = (t / bx) % by; c->f_tid[2] = t / (bx * by);
          c->f_ctaid[0] = gx; c->f_ctaid[1] = gy; c->f_ctaid[2] = gz; rc = 1; goto out;
        }
      }
      if (at < 0) break;
    }
  }
out:
  free(resume); free(save); free(sites); c->sites = NULL;
  return rc;
}
