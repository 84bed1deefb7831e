/* emu_core.h: machine state of the mockgpu AMD emulator (hand-written; see docs/emu.md).
 * Included by the generated translation unit after EMU_INST_FIELDS (the decoded fields, from the wheel's encoding tables)
 * and before pcode_rt.h, so the memory/register macros of contract 1 are defined here. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <stdio.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
/* MAXLANES, NSREG (scalar encodings 0..127), the special registers SREG_* (VCC, TTMPs, EXEC), the status/kind/space/wait codes,
 * NGWS, GDS_BYTES, the inline constants, apertures and error texts (MSG_*) come from mockgpu.emu.facts (gen_c emits them first) */
/* NVREG (VGPR slots per lane, a power of two: 256, or 512 for the gfx90a+ unified ArchVGPR + AccVGPR file), NAGPR, ENC_M0,
 * ENC_NULL (-1: none) and the DPP16 source-lane table DPP16_SRC are defined by the generated translation unit from the ArchSpec */

/* SP_BUFFER: through a V# (emu_buffer.h), faults as global; SP_VGPR: a computed VGPR index (VGPR[lane][reg], e.g. V_MOVREL* M0
 * + operand) past the file, address = the index */
/* wave states: W_WAIT blocks on dispatch-wide state (Wave.wait_*: GWS semaphore/barrier, ordered count), W_SLEEP yields
 * for one scheduling round (S_SLEEP) */
enum { W_RUN = 0, W_BARRIER = 1, W_DONE = 2, W_WAIT = 3, W_SLEEP = 4 };

typedef struct Ctx Ctx;
typedef struct Wave Wave;
typedef struct Inst Inst;
typedef struct Buf Buf;
typedef void (*Handler)(Wave *w, const Inst *in);

struct Inst {
  Handler fn;
  int32_t fmt, hid, size, dpp_kind, has_lit, valid;   /* dpp_kind: 0 none, 1 DPP16, 2 DPP8, 3 DPP8 with FI */
  uint32_t lit, raw[4];
  EMU_INST_FIELDS
};

typedef struct { uint64_t start, end; } MRange;
/* one store into the watched range (run(watch=...)): its access, lane, wave, workgroup and instruction */
typedef struct { uint64_t addr, pc; int32_t size, lane, wave, len, fmt, op; uint32_t wg[3], raw[4], pad; } WatchRec;

/* PyEval_SaveThread, PyEval_RestoreThread and the GIL policy (EmuArgs.gil_*) */
typedef void *(*GilSave)(void); typedef void (*GilRestore)(void *); typedef int (*GilHold)(void);
typedef void *(*XlatPoll)(const uint32_t *pcs, uint64_t n, double seconds);
/* what the caller (Python) passes in and reads back; layout mirrored in cbackend.py */
typedef struct {
  uint64_t code_addr;
  const MRange *ranges; int64_t nranges;      /* where global accesses may go: the mapped granules, or the allocations in strict mode */
  const MRange *mranges; int64_t nmranges;    /* strict mode only: the mapped granules (reads there outside `ranges` are noted in v_*) */
  uint32_t grid[3], block[3];
  uint32_t user_sgprs[32]; uint32_t nuser;
  uint32_t rsrc1, rsrc2, rsrc3, mode;   /* mode: the MODE register every wave starts with (ArchSpec.initial_mode of RSRC1) */
  uint32_t wave_size, lds_bytes, scratch_per_lane, tgid_in_ttmp, resident;   /* resident: max workgroups resident at once */
  uint32_t poison;              /* 0, or 0x100 | b: every handler's PcState starts as byte b before its set-up (PC_STATE) */
  uint64_t budget; double timeout;
  uint64_t *op_counts;          /* NULL or [EMU_NHANDLERS] */
  uint32_t *cap_sgpr;           /* NULL or [128]: wg 0 / wave 0 at S_ENDPGM */
  uint32_t *cap_vgpr;           /* [NVREG * 64] (reg-major) */
  uint64_t cap_misc[7];         /* exec, vcc, scc, m0, pc, captured, mode */
  /* results; the fault record f_kind..f_info and the read record v_addr..v_pad stay contiguous (run_parallel copies them whole) */
  uint64_t instructions, waves, workgroups;
  int32_t status, f_kind, f_space, f_size, f_lane, f_wave, f_fmt, f_op, f_len, f_pad;
  uint64_t f_addr, f_pc, f_limit;
  uint32_t f_wg[3], f_raw[4];
  char f_msg[160];
  int64_t f_info[6];            /* ST_DEADLOCK: wait kind, GWS id / ordered index, counter, blocked waves, resident workgroups, waited-for wave */
  /* strict mode: reads outside the allocations but inside their mapped granules (the first one in detail) */
  uint64_t v_count, v_addr, v_pc;
  int32_t v_size, v_lane, v_wave, v_len, v_fmt, v_op;
  uint32_t v_wg[3], v_raw[4], v_pad;
  /* store watch (0 = off): the caller carves [w_lo, w_hi) out of `ranges`, so every access to it misses the fast paths and
   * reaches gptr_miss, which allows it when it lies inside [w_alo, w_ahi) (the span that held the range); g_wr / image stores
   * count each write into it and record the first and the last (watch_note) */
  uint64_t w_lo, w_hi, w_alo, w_ahi, w_count;
  WatchRec w_first, w_last;
  uint64_t lds_rd, lds_wr;      /* LDS traffic: bytes read / written (every lane's access; l_rd / l_wr) */
  /* the translator (emu_xlat.h, translate.py): a translated kernel and the pcs it holds; the pcs this dispatch decoded */
  void *xlat; const uint32_t *xlat_pcs; uint32_t xlat_n, trace_cap; uint32_t *trace_pcs; uint64_t trace_n;
  /* multi-core dispatch (emu_sched.c run_parallel): the most threads the dispatch may use; how many it used */
  uint32_t threads, threads_used;
  /* the GIL policy (emu_xlat.h gil_poll; NULL gil_hold: none, the caller released the GIL): emu_run is called holding the GIL;
   * while gil_hold() (asked holding it) returns 1 the dispatch keeps it and may use threads_held threads, else it releases it */
  GilSave gil_save; GilRestore gil_restore; GilHold gil_hold; uint32_t threads_held, gil_pad;
  /* a translation adopted mid-dispatch (emu_xlat.h xlat_poll; NULL: none asked): called at the calling thread's time checks with
   * the pcs decoded so far and the dispatch's seconds, it returns a translated kernel holding only such pcs, or NULL */
  XlatPoll xlat_poll;
  /* ops this arch does not have as the library models them (arch.unmodelled_ops): deny[hid] != 0 stops the wave with deny_msg */
  const uint8_t *deny; const char *deny_msg;
} EmuArgs;

typedef struct {
  uint32_t *vgpr;   /* waves x NVREG x 64 (+ slack for multi-dword operands of the last register) */
  uint8_t *lds, *scratch;
  Wave *waves;
} WgMem;

/* multi-core dispatch (emu_sched.c run_parallel): threads claim runs of `chunk` workgroups in index order from `next` (alone in
 * its cache line: every claim writes it, while every wave reads `xlat` and every workgroup `stop`); `stop` is the lowest index of
 * a workgroup that stopped the dispatch (UINT64_MAX: none): no thread runs past it, one running a higher one leaves it */
typedef struct Par {
  _Alignas(64) uint64_t next;
  _Alignas(64) uint64_t stop, total, chunk; uint32_t started, nmax, home; void *ks;
  void *xlat;   /* ks, started of nmax: run_parallel's workers; xlat: the translated kernel they run (adopted mid-dispatch by the calling thread) */
} Par;
/* the calling thread's hold on the GIL during a dispatch with a GIL policy (emu_xlat.h) */
typedef struct Gil { void *ts; int held; double next, period; } Gil;

typedef struct {    /* a resident workgroup (emu_sched.c) */
  uint32_t wg[3], live;
  uint64_t ordinal0;  /* creation ordinal of its wave 0: linear workgroup index x waves per workgroup */
  uint64_t used;      /* wave-instructions its waves executed (the watchdog's budget is per workgroup) */
  WgMem m;
} Slot;

struct Ctx {
  EmuArgs *a;
  uint64_t code_addr, code_end;     /* the mapped range holding the code */
  uint64_t hit_lo, hit_hi;          /* last global range hit */
  uint64_t prev[3][2];              /* the ranges hit before it, most recent first ([lo, hi)): kernels go round a few buffers */
  Inst *icache; uint64_t icache_n;  /* indexed by pc/4 */
  uint64_t icount, budget, next_time_check;   /* budget: the icount at which the running workgroup's budget runs out (use_slot) */
  uint64_t wg_base;                 /* icount minus what the running workgroup executed before (use_slot) */
  struct Par *par; uint64_t wg_idx; /* multi-core dispatch: the shared work counter, this thread's workgroup (emu_sched.c) */
  Gil *gil; uint64_t gil_at;        /* the calling thread only, with a GIL policy: its hold, the icount of the next gil_poll */
  struct timespec t0;
  uint32_t wg[3], nwaves, lds_bytes, scratch_lane, wave_size;
  uint32_t vrows, scratch_hi;          /* VGPR rows / scratch bytes per lane this dispatch may have written (decoded register fields +
                                     * the widest operand, VGPR[] writes; scratch writes): zeroed in each launched wave */
  uint64_t wave_mask;
  int acc_off;                      /* unified slot of AccVGPR 0: (RSRC3.ACCUM_OFFSET + 1) * 4 when the arch has AccVGPRs */
  int poison;                       /* EmuArgs.poison: PC_STATE fills each PcState with this byte first (0x100 | b), 0: off */
  int atomic;                       /* set by atomic handlers: faults are reported as "atomic" */
  int space;                        /* SP_GLOBAL / SP_LDS / SP_SCRATCH / SP_BUFFER: where the pseudocode's MEM goes */
  Buf *buf;                         /* the executing buffer instruction's descriptor and lane (SP_BUFFER) */
  int status;
  int vshadow_n;                    /* VINTERP: its sources with op_sel/neg applied, read by the pseudocode as VGPR[lane][NVREG + k] */
  uint32_t vshadow[2][MAXLANES];
  Wave *cur;
  WgMem m;                          /* the running workgroup's memory (a copy of its Slot's) */
  Slot *slots; uint32_t *res;       /* slots[maxres]; res[0..nres): resident slot indices in dispatch order */
  uint32_t nslots, nres, maxres, progress;
  uint32_t gws_cnt[NGWS], gws_flag[NGWS], gws_rel[NGWS];   /* GWS state of the dispatch: counter (signed), barrier flag, release-all generation */
  uint32_t gds[GDS_BYTES / 4];      /* the ordered-count dwords */
};

struct Wave {
  uint32_t s[NSREG];
  uint32_t scc;
  uint64_t pc;        /* byte offset from code_addr of the next instruction */
  uint64_t pc0;       /* byte offset of the executing instruction */
  uint32_t *v;        /* v[reg * 64 + lane] */
  uint8_t *scratch;   /* lane * scratch_per_lane */
  Ctx *c;
  int id, state;
  uint32_t mode;      /* the MODE register (hwreg 1): float rounding/denormals (passed to every pc_* call as PcState.MODE) */
  /* (after the fields the handlers use, which share one cache line) */
  int wait_kind;      /* W_WAIT: WK_*, on resource / index wait_arg; wait_tag: barrier flag or release-all generation seen */
  uint32_t wait_arg, wait_tag;
  uint64_t wait_pc;   /* the blocked instruction (it has completed its issue: pc is past it) */
  uint64_t ordinal, released;   /* creation order in the dispatch; ordered-count indices whose turn this wave released */
};

/* Every handler's pseudocode state: declared and set up here, then each generated handler sets the members its entry reads
 * (gen_c.py; the members no machine state feeds are zeroed there, gen_c.STATE_ZERO). Poison mode (MOCKGPU_EMU_POISON, docs/emu.md
 * "Pseudocode state") first fills the whole state with a byte, so a member read before anything set it changes results. The fill
 * is a call: a memset in the handler would keep gcc from holding the state in registers, and the fast lane loops stop vectorising. */
static __attribute__((noinline, cold)) void pc_poison(PcState *s, int b) { memset(s, b, sizeof(*s)); }
#define PC_STATE(s, w) PC_STATE_IF(s, w, 1)
/* poisoned only if p: a translated kernel's direct steps (p 0, emu_xlat.h) leave a poisoned dispatch to the handlers, so their
 * state never has its address taken and lives in registers */
#define PC_STATE_IF(s, w, p) PcState s; if ((p) && UNLIKELY((w)->c->poison)) pc_poison(&s, (w)->c->poison & 0xff); \
  s.user = (w); s.fault = 0; s.MODE = (w)->mode

/* a wave32 mask is its low SGPR alone: read as one 32-bit load, the store of the write before it forwards to it (a 64-bit load
 * spanning that 32-bit store waits for the store to complete: a carry step reading the mask the one before wrote spent ~1/5
 * of its time there, tinygrad's translated matmul 207 -> 242 M/s, one-off in-process A/B) */
static inline uint64_t rd_exec(const Wave *w) { uint64_t lo = w->s[SREG_EXEC_LO]; return w->c->wave_size == 64 ? (uint64_t)w->s[SREG_EXEC_HI] << 32 | lo : lo; }
static inline void wr_exec(Wave *w, uint64_t v) { w->s[SREG_EXEC_LO] = (uint32_t)v; w->s[SREG_EXEC_HI] = w->c->wave_size == 64 ? (uint32_t)(v >> 32) : 0; }
static inline uint64_t rd_vcc(const Wave *w) { uint64_t lo = w->s[SREG_VCC_LO]; return w->c->wave_size == 64 ? (uint64_t)w->s[SREG_VCC_HI] << 32 | lo : lo; }
static inline void wr_vcc(Wave *w, uint64_t v) { w->s[SREG_VCC_LO] = (uint32_t)v; if (w->c->wave_size == 64) w->s[SREG_VCC_HI] = (uint32_t)(v >> 32); }

/* ---------------- faults ---------------- */
static void set_fault(Wave *w, int kind, int space, uint64_t addr, int size, int lane, uint64_t limit, const char *msg) {
  Ctx *c = w->c; EmuArgs *a = c->a;
  if (c->status) return;
  c->status = ST_FAULT;
  a->f_kind = c->atomic && kind != K_FETCH ? K_ATOMIC : kind; a->f_space = space; a->f_addr = addr; a->f_size = size;
  a->f_lane = lane; a->f_limit = limit;
  if (msg) { strncpy(a->f_msg, msg, sizeof(a->f_msg) - 1); a->f_msg[sizeof(a->f_msg) - 1] = 0; }
}
static void set_status(Wave *w, int st, const char *msg) {
  Ctx *c = w->c;
  if (c->status) return;
  c->status = st;
  if (msg) { strncpy(c->a->f_msg, msg, sizeof(c->a->f_msg) - 1); c->a->f_msg[sizeof(c->a->f_msg) - 1] = 0; }
}

/* ---------------- global memory: every access is checked against the registered ranges first ---------------- */
static int range_find(Ctx *c, uint64_t addr, uint64_t n) {
  for (int i = 0; i < 3; i++)   /* an earlier hit: it and the last one swap places (x * y + 1 reads two buffers and writes a third) */
    if (addr >= c->prev[i][0] && addr + n <= c->prev[i][1] && addr + n > addr) {
      uint64_t l = c->prev[i][0], h = c->prev[i][1]; c->prev[i][0] = c->hit_lo; c->prev[i][1] = c->hit_hi; c->hit_lo = l; c->hit_hi = h; return 1;
    }
  const MRange *r = c->a->ranges; int64_t lo = 0, hi = c->a->nranges - 1;
  while (lo <= hi) {
    int64_t mid = (lo + hi) >> 1;
    if (r[mid].end <= addr) lo = mid + 1;
    else if (r[mid].start > addr) hi = mid - 1;
    else {
      if (addr + n > r[mid].end || addr + n < addr) return 0;
      memmove(c->prev[1], c->prev[0], sizeof(c->prev) - sizeof(c->prev[0])); c->prev[0][0] = c->hit_lo; c->prev[0][1] = c->hit_hi;
      c->hit_lo = r[mid].start; c->hit_hi = r[mid].end; return 1;
    }
  }
  return 0;
}
/* every address in [lo, hi + n) inside one registered range (the wave-level check of plain dword loads/stores, gen_c._plain_fast) */
static inline int lanes_in_range(Wave *w, uint64_t lo, uint64_t hi, int n) {
  Ctx *c = w->c;
  if (hi + n < hi) return 0;
  if (lo >= c->hit_lo && hi + n <= c->hit_hi) return 1;
  return range_find(c, lo, hi + n - lo);
}
/* the copies of the plain dword fast path when every lane of the wave is active (gen_c._plain_fast): lanes four at a time,
 * each lane's n dwords moved as one vector and transposed to/from the n VGPR rows (lane-by-lane scalar copies into rows 256
 * bytes apart took two thirds of the translated matmul). Stores write the lanes in lane order, as the per-lane loop does. */
typedef uint32_t emu_v4u __attribute__((vector_size(16)));
#if defined(__clang__)
#define EMU_SHUF4(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define EMU_SHUF4(a, b, i, j, k, l) __builtin_shuffle(a, b, (emu_v4u){i, j, k, l})
#endif
/* transposes the 4x4 dwords of x0..x3 (rows) in place: x_k becomes the k-th dword of each */
#define EMU_TR4X4(x0, x1, x2, x3) do { \
    emu_v4u a0_ = EMU_SHUF4(x0, x1, 0, 4, 1, 5), a1_ = EMU_SHUF4(x0, x1, 2, 6, 3, 7); \
    emu_v4u b0_ = EMU_SHUF4(x2, x3, 0, 4, 1, 5), b1_ = EMU_SHUF4(x2, x3, 2, 6, 3, 7); \
    x0 = EMU_SHUF4(a0_, b0_, 0, 1, 4, 5); x1 = EMU_SHUF4(a0_, b0_, 2, 3, 6, 7); \
    x2 = EMU_SHUF4(a1_, b1_, 0, 1, 4, 5); x3 = EMU_SHUF4(a1_, b1_, 2, 3, 6, 7); } while (0)
/* lane L's address: A[L], or with A 0 (a constant at every call site) base + va[L] (the lanes' addresses share their high dword) */
#define PLAIN_ADDR(L) ((void *)(uintptr_t)(A ? A[L] : base + va[L]))
/* lane L's n dwords at its address -> d[k * MAXLANES + L] (d: the first destination row), lanes 0..nl-1; n and nl are constants
 * at every call site (four named vectors, not an array: gcc kept an array on the stack) */
static inline __attribute__((always_inline)) void plain_ld_full(uint32_t *d, uint64_t base, const uint32_t *va, const uint64_t *A, int nl, int n) {
  if (n == 1) { for (int L = 0; L < nl; L++) memcpy(d + L, PLAIN_ADDR(L), 4); return; }
  for (int L = 0; L < nl; L += 4) {
    emu_v4u x0 = {0, 0, 0, 0}, x1 = x0, x2 = x0, x3 = x0;
    memcpy(&x0, PLAIN_ADDR(L), 4 * n); memcpy(&x1, PLAIN_ADDR(L + 1), 4 * n); memcpy(&x2, PLAIN_ADDR(L + 2), 4 * n); memcpy(&x3, PLAIN_ADDR(L + 3), 4 * n);
    EMU_TR4X4(x0, x1, x2, x3);
    memcpy(d + L, &x0, 16); memcpy(d + MAXLANES + L, &x1, 16);
    if (n > 2) memcpy(d + 2 * MAXLANES + L, &x2, 16);
    if (n > 3) memcpy(d + 3 * MAXLANES + L, &x3, 16);
  }
}
/* d[k * MAXLANES + L] -> lane L's n dwords at its address, lanes 0..nl-1 in order */
static inline __attribute__((always_inline)) void plain_st_full(const uint32_t *d, uint64_t base, const uint32_t *va, const uint64_t *A, int nl, int n) {
  if (n == 1) { for (int L = 0; L < nl; L++) memcpy(PLAIN_ADDR(L), d + L, 4); return; }
  for (int L = 0; L < nl; L += 4) {
    emu_v4u x0, x1, x2 = {0, 0, 0, 0}, x3 = x2;
    memcpy(&x0, d + L, 16); memcpy(&x1, d + MAXLANES + L, 16);
    if (n > 2) memcpy(&x2, d + 2 * MAXLANES + L, 16);
    if (n > 3) memcpy(&x3, d + 3 * MAXLANES + L, 16);
    EMU_TR4X4(x0, x1, x2, x3);
    memcpy(PLAIN_ADDR(L), &x0, 4 * n); memcpy(PLAIN_ADDR(L + 1), &x1, 4 * n); memcpy(PLAIN_ADDR(L + 2), &x2, 4 * n); memcpy(PLAIN_ADDR(L + 3), &x3, 4 * n);
  }
}
#undef PLAIN_ADDR
/* strict mode: `[addr, addr+n)` misses the allocations; a read inside their mapped granules is noted and performed (the
 * hardware allows it), anything else faults (writes and atomics outside an allocation in strict mode, or unmapped) */
static uint8_t *gptr_miss(Wave *w, uint64_t addr, int n, int kind, int lane) {
  Ctx *c = w->c; EmuArgs *a = c->a;
  if (addr < a->w_hi && addr + n > a->w_lo && addr >= a->w_alo && addr + n <= a->w_ahi && addr + n > addr) return (uint8_t *)(uintptr_t)addr;
  if (a->nmranges && addr + n > addr) {
    const MRange *r = a->mranges; int64_t lo = 0, hi = a->nmranges - 1;
    while (lo <= hi) {
      int64_t mid = (lo + hi) >> 1;
      if (r[mid].end <= addr) lo = mid + 1;
      else if (r[mid].start > addr) hi = mid - 1;
      else {
        if (addr + n > r[mid].end) break;
        if (kind != K_READ || c->atomic) break;   /* report.raise_status names the strict-mode cause */
        if (a->v_count++ == 0) {
          const Inst *in = &c->icache[w->pc0 >> 2];
          a->v_addr = addr; a->v_size = n; a->v_lane = lane; a->v_wave = w->id; a->v_pc = w->pc0;
          a->v_len = in->size; a->v_fmt = in->fmt; a->v_op = in->opx ? in->opx : in->op;
          memcpy(a->v_wg, c->wg, sizeof(a->v_wg)); memcpy(a->v_raw, in->raw, sizeof(a->v_raw));
        }
        return (uint8_t *)(uintptr_t)addr;
      }
    }
  }
  set_fault(w, kind, SP_GLOBAL, addr, n, lane, 0, 0);
  return 0;
}
static inline uint8_t *gptr(Wave *w, uint64_t addr, int n, int kind, int lane) {
  Ctx *c = w->c;
  if (LIKELY(addr >= c->hit_lo && addr + n <= c->hit_hi && addr + n > addr)) return (uint8_t *)(uintptr_t)addr;
  if (range_find(c, addr, n)) return (uint8_t *)(uintptr_t)addr;
  return gptr_miss(w, addr, n, kind, lane);
}
/* a write of n bytes at addr (already performed) that overlaps the watched range: count it, record the first and the last */
static __attribute__((noinline)) void watch_note(Wave *w, uint64_t addr, int n, int lane) {
  Ctx *c = w->c; EmuArgs *a = c->a; const Inst *in = &c->icache[w->pc0 >> 2];
  WatchRec r = {addr, w->pc0, n, lane, w->id, in->size, in->fmt, in->opx ? in->opx : in->op, {c->wg[0], c->wg[1], c->wg[2]}, {0}, 0};
  memcpy(r.raw, in->raw, sizeof(r.raw));
  if (a->w_count++ == 0) a->w_first = r;
  a->w_last = r;
}
static inline void watch_wr(Wave *w, uint64_t addr, int n, int lane) { if (UNLIKELY(addr < w->c->a->w_hi && addr + n > w->c->a->w_lo)) watch_note(w, addr, n, lane); }
static inline uint64_t g_rd(PcState *s, uint64_t addr, int n) {
  Wave *w = (Wave *)s->user; uint8_t *p = gptr(w, addr, n, K_READ, (int)s->laneId);
  uint64_t v = 0; if (p) memcpy(&v, p, n); else s->fault = 1; return v;
}
static inline void g_wr(PcState *s, uint64_t addr, int n, uint64_t v) {
  Wave *w = (Wave *)s->user; uint8_t *p = gptr(w, addr, n, K_WRITE, (int)s->laneId);
  if (p) { memcpy(p, &v, n); watch_wr(w, addr, n, (int)s->laneId); } else s->fault = 1;
}
/* ---------------- LDS (per workgroup) and scratch (per lane), emulator-owned, bounds-checked ---------------- */
static inline uint64_t l_rd(PcState *s, uint64_t addr, int n) {
  Wave *w = (Wave *)s->user; Ctx *c = w->c; uint64_t v = 0;
  addr &= 0xffffffffu;
  if (UNLIKELY(addr + n > c->lds_bytes)) { set_fault(w, K_READ, SP_LDS, addr, n, (int)s->laneId, c->lds_bytes, 0); s->fault = 1; return 0; }
  c->a->lds_rd += (uint64_t)n; memcpy(&v, c->m.lds + addr, n); return v;
}
static inline void l_wr(PcState *s, uint64_t addr, int n, uint64_t v) {
  Wave *w = (Wave *)s->user; Ctx *c = w->c;
  addr &= 0xffffffffu;
  if (UNLIKELY(addr + n > c->lds_bytes)) { set_fault(w, K_WRITE, SP_LDS, addr, n, (int)s->laneId, c->lds_bytes, 0); s->fault = 1; return; }
  c->a->lds_wr += (uint64_t)n; memcpy(c->m.lds + addr, &v, n);
}
static inline uint64_t p_rd(PcState *s, uint64_t addr, int n) {
  Wave *w = (Wave *)s->user; Ctx *c = w->c; uint64_t v = 0;
  addr &= 0xffffffffu;
  if (UNLIKELY(addr + n > c->scratch_lane)) { set_fault(w, K_READ, SP_SCRATCH, addr, n, (int)s->laneId, c->scratch_lane, 0); s->fault = 1; return 0; }
  memcpy(&v, w->scratch + s->laneId * c->scratch_lane + addr, n); return v;
}
static inline void p_wr(PcState *s, uint64_t addr, int n, uint64_t v) {
  Wave *w = (Wave *)s->user; Ctx *c = w->c;
  addr &= 0xffffffffu;
  if (UNLIKELY(addr + n > c->scratch_lane)) { set_fault(w, K_WRITE, SP_SCRATCH, addr, n, (int)s->laneId, c->scratch_lane, 0); s->fault = 1; return; }
  if (addr + n > c->scratch_hi) c->scratch_hi = (uint32_t)(addr + n);
  memcpy(w->scratch + s->laneId * c->scratch_lane + addr, &v, n);
}
/* the check of a write of n bytes at `a` in the executing space (global, LDS, scratch) without the write: a store of several
 * dwords checks its whole access first (gen_c._mem), so a fault leaves none of it written. 0: faulted (recorded) */
static int emu_wr_check(PcState *s, uint64_t a, int n) {
  Wave *w = (Wave *)s->user; Ctx *c = w->c;
  if (c->space == SP_GLOBAL) return gptr(w, a, n, K_WRITE, (int)s->laneId) != 0;
  uint64_t lim = c->space == SP_LDS ? c->lds_bytes : c->scratch_lane;
  a &= 0xffffffffu;
  if (a + n <= lim) return 1;
  set_fault(w, K_WRITE, c->space, a, n, (int)s->laneId, lim, 0); return 0;
}
/* register files for the pseudocode's VGPR[lane][reg] / SGPR[reg] */
static inline uint32_t vgpr_rd(PcState *s, uint64_t lane, uint64_t reg) {
  Wave *w = (Wave *)s->user;
  if (UNLIKELY(lane >= MAXLANES || reg >= NVREG)) {
    if (lane < MAXLANES && reg - NVREG < (uint64_t)w->c->vshadow_n) return w->c->vshadow[reg - NVREG][lane];
    set_fault(w, K_READ, SP_VGPR, reg, 4, (int)lane, NVREG, 0); s->fault = 1; return 0;
  }
  return w->v[reg * MAXLANES + lane];
}
static inline void vgpr_wr(PcState *s, uint64_t lane, uint64_t reg, uint32_t v) {
  Wave *w = (Wave *)s->user;
  if (UNLIKELY(lane >= MAXLANES || reg >= NVREG)) { set_fault(w, K_WRITE, SP_VGPR, reg, 4, (int)lane, NVREG, 0); s->fault = 1; return; }
  if (reg >= w->c->vrows) w->c->vrows = (uint32_t)reg + 1;
  w->v[reg * MAXLANES + lane] = v;
}
static inline uint32_t sgpr_rd(PcState *s, uint64_t reg) { Wave *w = (Wave *)s->user; return reg < NSREG ? w->s[reg] : 0; }
static inline void sgpr_wr(PcState *s, uint64_t reg, uint32_t v) { Wave *w = (Wave *)s->user; if (reg < NSREG && (int)reg != ENC_NULL) w->s[reg] = v; }

static uint64_t b_rd(PcState *s, uint64_t a, int n);
static void b_wr(PcState *s, uint64_t a, int n, uint64_t v);
static __attribute__((noinline)) uint64_t emu_mem_rd_slow(PcState *s, uint64_t a, int n) {
  int sp = ((Wave *)s->user)->c->space;
  return sp == SP_GLOBAL ? g_rd(s, a, n) : sp == SP_LDS ? l_rd(s, a, n) : sp == SP_BUFFER ? b_rd(s, a, n) : p_rd(s, a, n);
}
static __attribute__((noinline)) void emu_mem_wr_slow(PcState *s, uint64_t a, int n, uint64_t v) {
  int sp = ((Wave *)s->user)->c->space;
  if (sp == SP_GLOBAL) g_wr(s, a, n, v); else if (sp == SP_LDS) l_wr(s, a, n, v); else if (sp == SP_BUFFER) b_wr(s, a, n, v); else p_wr(s, a, n, v);
}
/* fast path: a global access inside the last range hit (n is a constant at every call site, so the copy is one move) */
static inline __attribute__((always_inline)) uint64_t emu_mem_rd(PcState *s, uint64_t a, int n) {
  Ctx *c = ((Wave *)s->user)->c;
  if (LIKELY(c->space == SP_GLOBAL && a >= c->hit_lo && a + (uint64_t)n <= c->hit_hi && a + (uint64_t)n > a)) {
    const void *p = (const void *)(uintptr_t)a;
    switch (n) {
      case 1: return *(const uint8_t *)p;
      case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
      case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
      case 8: { uint64_t x; memcpy(&x, p, 8); return x; }
    }
  }
  return emu_mem_rd_slow(s, a, n);
}
static inline __attribute__((always_inline)) void emu_mem_wr(PcState *s, uint64_t a, int n, uint64_t v) {
  Ctx *c = ((Wave *)s->user)->c;
  if (LIKELY(c->space == SP_GLOBAL && a >= c->hit_lo && a + (uint64_t)n <= c->hit_hi && a + (uint64_t)n > a)) {
    void *p = (void *)(uintptr_t)a;
    switch (n) {
      case 1: *(uint8_t *)p = (uint8_t)v; return;
      case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return; }
      case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return; }
      case 8: memcpy(p, &v, 8); return;
    }
  }
  emu_mem_wr_slow(s, a, n, v);
}
/* after a pc_* call left s.fault set: memory faults are already recorded; a missing hook is an unsupported operation. Called as
 * PC_FAULT(w, s), with the two members it reads by value: the (cold) fault path does not take the state's address */
static __attribute__((noinline, cold)) void pc_fault(Wave *w, int fault, const char *msg) {
  if (fault == 2) set_status(w, ST_UNSUPPORTED, msg ? msg : "pseudocode built-in not provided");
  else set_status(w, ST_FAULT, msg ? msg : "pseudocode access fault");
}
#define PC_FAULT(w, s) pc_fault((w), (s).fault, (s).fault_msg)
