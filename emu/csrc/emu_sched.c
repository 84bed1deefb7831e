/* emu_sched.c: instruction fetch and decode cache, wave and workgroup setup (docs/contracts/kfd.md 6.5), the scheduler of resident
 * workgroups and their waves (see "scheduling" below), watchdog and the entry point called from Python with the GIL released. */

#if HAS_VOPD
static void h_vopd(Wave *w, const Inst *in) {
  uint32_t ox[MAXLANES], oy[MAXLANES];
  uint64_t ex = rd_exec(w);
  VHalf hx = VOPD_HALF[in->opx], hy = VOPD_HALF[in->opy];
  if (!hx || !hy) { set_status(w, ST_UNSUPPORTED, MSG_VOPD_HALF); return; }
  hx(w, in, 0, ox, ex); if (w->c->status) return;
  hy(w, in, 1, oy, ex); if (w->c->status) return;
  uint32_t *dx = w->v + (in->vdstx - 256) * MAXLANES, *dy = w->v + (in->vdsty - 256) * MAXLANES;
  if (ex == 0xffffffffull && w->c->wave_size == 32) { memcpy(dx, ox, 128); memcpy(dy, oy, 128); return; }
  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; dx[L] = ox[L]; dy[L] = oy[L]; }
}
#endif

#include "emu_xlat.h"

static void h_denied(Wave *w, const Inst *in) { (void)in; set_status(w, ST_UNSUPPORTED, w->c->a->deny_msg); }

static Inst *decode_at(Wave *w) {
  Ctx *c = w->c; uint64_t pc = w->pc, addr = c->code_addr + pc;
  if ((pc & 3) || addr < c->code_addr || addr + 4 > c->code_end || addr < pc) {
    set_fault(w, K_FETCH, SP_CODE, addr, 4, -1, c->code_end - c->code_addr, "instruction fetch outside the code's mapped range");
    record_inst(c, w, pc, 0, 0, -1, -1); return 0;
  }
  uint64_t idx = pc >> 2;
  if (idx >= c->icache_n) {
    uint64_t n = c->icache_n ? c->icache_n : 1024;
    while (n <= idx) n *= 2;
    Inst *ni = realloc(c->icache, n * sizeof(Inst));
    if (!ni) { set_status(w, ST_NOMEM, "out of memory growing the decode cache"); return 0; }
    memset(ni + c->icache_n, 0, (n - c->icache_n) * sizeof(Inst));
    c->icache = ni; c->icache_n = n;
  }
  uint32_t words[4] = {0, 0, 0, 0};
  uint64_t avail = (c->code_end - addr) / 4;
  int ndw = avail > 4 ? 4 : (int)avail;
  memcpy(words, (const void *)(uintptr_t)addr, ndw * 4);
  Inst *in = &c->icache[idx];
  memset(in, 0, sizeof(*in));
  memcpy(in->raw, words, sizeof(words));
  int r = emu_decode(words, ndw, in);
  if (r <= 0) {
    c->status = ST_INVALID;
    strcpy(c->a->f_msg, r < 0 ? "instruction runs past the end of the code's mapped range" : "no encoding of this arch matches");
    record_inst(c, w, pc, words, ndw * 4, r < 0 ? in->fmt : -1, in->op);
    in->fn = 0; return 0;
  }
  if (NAGPR) emu_acc_fix(in, c->acc_off);
  uint32_t vr = emu_vrows(in); if (vr > c->vrows) c->vrows = vr;
  int op = in->fmt >= 0 && HANDLERS[in->fmt] ? in->op : 0;
  in->hid = HBASE[in->fmt] + (in->opx ? in->opx : op);
  in->fn = HANDLERS[in->fmt][op];
  if (!in->fn) in->fn = h_unsupported;
  if (c->a->deny && c->a->deny[in->hid]) in->fn = h_denied;
  return in;
}

static inline Inst *fetch(Wave *w) {
  Ctx *c = w->c; uint64_t idx = w->pc >> 2;
  if (LIKELY(!(w->pc & 3) && idx < c->icache_n && c->icache[idx].fn)) return &c->icache[idx];
  return decode_at(w);
}

static void run_wave(Ctx *c, Wave *w) {
  uint64_t *opc = c->a->op_counts;
  XlatFn xf = (XlatFn)cur_xlat(c);   /* a translated kernel (translate.py): runs what it holds, the interpreter the rest */
  while (w->state == W_RUN) {
    if (xf && xf(c, w)) { if (c->status) return; continue; }
    w->pc0 = w->pc;
    Inst *in = fetch(w);
    if (UNLIKELY(!in)) return;
    if (UNLIKELY(++c->icount > c->budget)) {
      c->icount--; c->status = ST_WATCHDOG; record_inst(c, w, w->pc, in->raw, in->size, in->fmt, in->op); return;
    }
    if (opc) opc[in->hid]++;
    w->pc += (uint64_t)in->size;
    in->fn(w, in);
    if (UNLIKELY(c->status)) { record_inst(c, w, w->pc0, in->raw, in->size, in->fmt, in->opx ? in->opx : in->op); return; }
    if (UNLIKELY(c->icount >= c->next_time_check)) { if (time_check(c, w, in)) return; xf = (XlatFn)cur_xlat(c); }
  }
}

static void init_wave(Ctx *c, Wave *w, int id) {
  EmuArgs *a = c->a;
  memset(w->s, 0, sizeof(w->s));
  w->scc = 0; w->pc = 0; w->pc0 = 0; w->state = W_RUN; w->id = id; w->c = c; w->mode = a->mode;
  uint32_t n = (a->rsrc2 >> 1) & 31, k = 0;
  for (; k < n; k++) w->s[k] = k < a->nuser ? a->user_sgprs[k] : 0;
  if (a->tgid_in_ttmp) { w->s[SREG_TGID_X] = c->wg[0]; w->s[SREG_TGID_YZ] = c->wg[1] | c->wg[2] << 16; }
  else {
    if (a->rsrc2 >> 7 & 1) w->s[k++] = c->wg[0];
    if (a->rsrc2 >> 8 & 1) w->s[k++] = c->wg[1];
    if (a->rsrc2 >> 9 & 1) w->s[k++] = c->wg[2];
    if (a->rsrc2 >> 10 & 1) w->s[k++] = c->nwaves;
    if (a->rsrc2 & 1) w->s[k++] = 0;
  }
  uint32_t bx = a->block[0], by = a->block[1], nt = bx * by * a->block[2], t0 = id * c->wave_size;
  uint32_t x = t0 % bx, y = t0 / bx % by, z = t0 / (bx * by);   /* lane 0's thread ids; the others count on (no divisions per lane) */
  uint64_t exec = 0;
  if (x + c->wave_size <= bx && t0 + c->wave_size <= nt) {   /* the whole wave in one row of x: a vectorised loop (locals: no aliasing; */
    uint32_t *v = w->v, yz = y << 10 | z << 20;                 /* a constant count: -O2 leaves a loop over a runtime one scalar) */
    if (c->wave_size == 32) for (uint32_t L = 0; L < 32; L++) v[L] = (x + L) | yz;
    else for (uint32_t L = 0; L < 64; L++) v[L] = (x + L) | yz;
    wr_exec(w, c->wave_mask); return;
  }
  for (uint32_t L = 0; L < c->wave_size; L++) {
    if (t0 + L >= nt) { w->v[L] = 0; continue; }
    exec |= 1ull << L;
    w->v[L] = x | y << 10 | z << 20;
    if (++x == bx) { x = 0; if (++y == by) { y = 0; z++; } }
  }
  wr_exec(w, exec);
}

/* ---------------- scheduling: workgroups become resident in dispatch order (z/y/x), at most `maxres` at once ----------------
 * A resident workgroup runs its waves round robin, each until S_BARRIER / S_ENDPGM / S_SLEEP or a blocking GWS / ordered-count
 * instruction (W_WAIT). The resident workgroups run oldest first; the next workgroup is launched only when none of them can
 * make progress (so without GWS, workgroups run one after another). All resident waves blocked and nothing left to launch
 * (or the resident limit reached) is a deadlock: ST_DEADLOCK with the first blocked wave's instruction. */
/* the running workgroup becomes `s`: its memory, id and the icount at which its budget (EmuArgs.budget wave-instructions per
 * workgroup: the watchdog) runs out; after its pass, save_slot keeps what it executed */
static void use_slot(Ctx *c, Slot *s) {
  c->m = s->m; c->wg[0] = s->wg[0]; c->wg[1] = s->wg[1]; c->wg[2] = s->wg[2];
  c->wg_base = c->icount - s->used;
  c->budget = c->wg_base + c->a->budget < c->wg_base ? UINT64_MAX : c->wg_base + c->a->budget;
}
static void save_slot(Ctx *c, Slot *s) { s->used = c->icount - c->wg_base; }

static __attribute__((noinline, cold)) int wait_ready(Ctx *c, Wave *w) {
  uint32_t r = w->wait_arg;
  switch (w->wait_kind) {
    case WK_SEMA:
      if (c->gws_rel[r] != w->wait_tag) return 1;
      if ((int32_t)c->gws_cnt[r] > 0) { c->gws_cnt[r]--; return 1; }
      return 0;
    case WK_BARRIER: return c->gws_flag[r] != w->wait_tag;
    default:
      if (ordered_blocker(c, w, r) != UINT64_MAX) return 0;
      ordered_op(w, &c->icache[w->wait_pc >> 2]); return 1;
  }
}

static int wg_pass(Ctx *c, Slot *s) {   /* 1: every wave ended; 0: none can run now (or an error) */
  Wave *ws = s->m.waves;
  for (;;) {
    uint32_t done = 0, barrier = 0, ran = 0;
    for (uint32_t i = 0; i < c->nwaves; i++) {
      Wave *w = &ws[i];
      if (UNLIKELY(w->state >= W_WAIT) && (w->state == W_SLEEP || wait_ready(c, w))) w->state = W_RUN;
      if (w->state == W_RUN) { ran = 1; c->cur = w; run_wave(c, w); if (c->status) return 0; }
      done += w->state == W_DONE; barrier += w->state == W_BARRIER;
    }
    c->progress |= ran;
    if (done == c->nwaves) return 1;
    if (barrier + done == c->nwaves) { for (uint32_t i = 0; i < c->nwaves; i++) if (ws[i].state == W_BARRIER) ws[i].state = W_RUN; }
    else if (!ran) return 0;
  }
}

/* zeroed wave state starting a cache line (VGPRs, LDS, scratch): a VGPR row is 256 bytes, and at calloc's 16-byte alignment each
 * 32-lane half spanned three lines and the lane loops' 32-byte accesses split across two (translated matmul, in-process: ~280 M/s
 * at every multiple of 64 tried, ~235 at 16 or 48 bytes into a line). calloc underneath keeps a large block's pages lazily
 * zeroed, so a kernel touches only the rows it uses; the block's own pointer sits just before the aligned start (slot_free) */
static void *zalloc_line(size_t n) {
  char *raw = calloc(n + 64 + sizeof(void *), 1), *p;
  if (!raw) return NULL;
  p = (char *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
  ((void **)p)[-1] = raw;
  return p;
}
static void zfree_line(void *p) { if (p) free(((void **)p)[-1]); }
static void slot_free(Slot *s) { zfree_line(s->m.vgpr); zfree_line(s->m.lds); zfree_line(s->m.scratch); free(s->m.waves); }

static __attribute__((noinline)) int launch(Ctx *c, uint64_t idx) {
  uint32_t k = 0;
  while (k < c->nslots && c->slots[k].live) k++;
  Slot *s = &c->slots[k];
  int reused = k < c->nslots;
  if (k == c->nslots) {
    s->m.vgpr = zalloc_line(((size_t)c->nwaves * NVREG + 16) * MAXLANES * sizeof(uint32_t));
    s->m.lds = zalloc_line(c->lds_bytes ? c->lds_bytes : 1);
    s->m.scratch = zalloc_line((size_t)c->nwaves * MAXLANES * (c->scratch_lane ? c->scratch_lane : 1));
    s->m.waves = calloc(c->nwaves, sizeof(Wave));
    c->nslots++;
    if (!s->m.vgpr || !s->m.lds || !s->m.scratch || !s->m.waves) { c->status = ST_NOMEM; strcpy(c->a->f_msg, "out of memory for wave state"); return 0; }
  }
  uint32_t gx = c->a->grid[0], gy = c->a->grid[1];
  s->wg[0] = (uint32_t)(idx % gx); s->wg[1] = (uint32_t)(idx / gx % gy); s->wg[2] = (uint32_t)(idx / ((uint64_t)gx * gy));
  s->live = 1; s->ordinal0 = idx * c->nwaves; s->used = 0;
  use_slot(c, s);
  for (uint32_t i = 0; i < c->nwaves; i++) {
    Wave *w = &s->m.waves[i];
    w->v = s->m.vgpr + (uint64_t)i * NVREG * MAXLANES;
    w->scratch = s->m.scratch + (uint64_t)i * c->scratch_lane * MAXLANES;
    if (reused) {   /* as a fresh wave: what earlier workgroups left in the slot's registers and scratch reads 0 (pybackend: new Wave).
                     * A wave32 wave's own lanes only: no wave32 instruction touches lanes 32-63 (lane selects and loops are bounded
                     * by the wave size), which keep calloc's zeros; the whole rows were a fifth of the elementwise kernel's time */
      if (c->wave_size == MAXLANES) memset(w->v, 0, (size_t)c->vrows * MAXLANES * sizeof(uint32_t));
      else for (uint32_t r = 0; r < c->vrows; r++) {   /* four 32-byte stores a row (memset's 128 bytes became a rep stos per row) */
        typedef uint32_t v8u __attribute__((vector_size(32)));
        v8u *p = (v8u *)(w->v + (size_t)r * MAXLANES); p[0] = p[1] = p[2] = p[3] = (v8u){0};
      }
      if (c->scratch_hi == c->scratch_lane) memset(w->scratch, 0, (size_t)c->scratch_lane * c->wave_size);
      else if (c->scratch_hi) for (uint32_t L = 0; L < c->wave_size; L++) memset(w->scratch + (size_t)L * c->scratch_lane, 0, c->scratch_hi);
    }
    init_wave(c, w, (int)i);
    w->ordinal = s->ordinal0 + i; w->released = 0;
  }
  c->a->waves += c->nwaves;
  c->res[c->nres++] = k;
  return 1;
}

static __attribute__((noinline, cold)) void deadlock(Ctx *c, uint64_t unlaunched) {
  Wave *first = 0; Slot *fs = 0; int64_t blocked = 0;
  for (uint32_t k = 0; k < c->nres; k++)
    for (uint32_t i = 0; i < c->nwaves; i++) {
      Wave *w = &c->slots[c->res[k]].m.waves[i];
      if (w->state != W_WAIT) continue;
      blocked++;
      if (!first) { first = w; fs = &c->slots[c->res[k]]; }
    }
  use_slot(c, fs);
  const Inst *in = &c->icache[first->wait_pc >> 2];
  uint32_t r = first->wait_arg;
  int64_t *f = c->a->f_info;
  f[0] = first->wait_kind; f[1] = r; f[2] = first->wait_kind == WK_ORDERED ? 0 : (int32_t)c->gws_cnt[r]; f[3] = blocked; f[4] = c->nres;
  f[5] = first->wait_kind == WK_ORDERED ? (int64_t)ordered_blocker(c, first, r) : -1;
  c->a->f_lane = -1;
  c->status = ST_DEADLOCK;
  snprintf(c->a->f_msg, sizeof(c->a->f_msg), "every resident wave is blocked: %u resident workgroups (limit %u), %llu not launched yet",
           c->nres, c->maxres, (unsigned long long)unlaunched);
  record_inst(c, first, first->wait_pc, in->raw, in->size, in->fmt, in->op);
}

static void run_grid(Ctx *c) {
  uint64_t total = (uint64_t)c->a->grid[0] * c->a->grid[1] * c->a->grid[2], next = 0;
  for (;;) {
    c->progress = 0;
    for (uint32_t k = 0; k < c->nres;) {
      Slot *s = &c->slots[c->res[k]];
      use_slot(c, s);
      int fin = wg_pass(c, s);
      save_slot(c, s);
      if (c->status) return;
      if (!fin) { k++; continue; }
      s->live = 0; c->a->workgroups++;
      memmove(c->res + k, c->res + k + 1, (c->nres - k - 1) * sizeof(uint32_t)); c->nres--;
    }
    if (c->progress) continue;
    if (UNLIKELY(c->gil && c->icount >= c->gil_at)) gil_poll(c);
    if (next < total && c->nres < c->maxres) { if (!launch(c, next++)) return; continue; }
    if (c->nres) deadlock(c, total - next);
    return;
  }
}

/* ---------------- multi-core dispatch ----------------
 * Without dispatch-wide state (GWS, the ordered count, the emulated clock) one workgroup cannot see another except through
 * memory, and the scheduler above runs them one after another in index order. run_parallel gives the workgroups to threads in
 * the same order (each thread a run of them at a time, one after another, with its own Ctx, decode cache and wave state) and makes every result the one-thread
 * run would give: the dispatch stops at the lowest workgroup that stopped (its fault record), and the counts are those of the
 * workgroups below it plus its own. prescan decides: every instruction the code can reach (fall-through and SIMM16 branches,
 * gen_c.FLOW) is decoded first, and a reachable dispatch-wide op or a jump no scan can follow (S_SETPC_B64, ...) keeps the
 * dispatch on one thread. Threads abandon a workgroup above one that stopped (time_check). */
#include <pthread.h>
#define PRESCAN_MAX (1u << 16)   /* instructions the pre-scan decodes at most (translate.TRACE_CAP) */

static int wide_op(const Inst *in) {
  int f = HFLOW[in->hid], id = in->simm16 & 63;
  if (f == FLOW_GETREG) return id == EMU_HWREG_SHADER_CYCLES || id == EMU_HWREG_SHADER_CYCLES_LO || id == EMU_HWREG_SHADER_CYCLES_HI;
  return f == FLOW_IND || f == FLOW_WIDE;
}

/* 1: no instruction reachable from pc 0 reads or writes dispatch-wide state or jumps where the scan cannot follow. Decodes
 * every reachable instruction into c's decode cache (an undecodable one ends its path: it stops any run that reaches it) */
static int prescan(Ctx *c) {
  uint64_t n = 0, cap = 64, *work = malloc(cap * sizeof(uint64_t)), steps = 0;
  Wave t; memset(&t, 0, sizeof(t)); t.c = c;
  int ok = work != 0;
  if (ok) work[n++] = 0;
  while (ok && n) {
    uint64_t pc = work[--n];
    for (;;) {
      if (++steps > PRESCAN_MAX) { ok = 0; break; }
      if (!(pc & 3) && (pc >> 2) < c->icache_n && c->icache[pc >> 2].fn) break;   /* seen */
      t.pc = pc;
      Inst *in = decode_at(&t);
      if (!in) { c->status = 0; break; }
      int f = HFLOW[in->hid];
      if (wide_op(in)) { ok = 0; break; }
      if (f == FLOW_END) break;
      if (f == FLOW_REL) {
        if (n == cap) { uint64_t *nw = realloc(work, 2 * cap * sizeof(uint64_t)); if (!nw) { ok = 0; break; } work = nw; cap *= 2; }
        work[n++] = pc + 4 + (uint64_t)((int64_t)(int16_t)in->simm16 * 4);
      }
      pc += (uint64_t)in->size;
    }
  }
  free(work);
  return ok;
}

typedef struct { uint64_t idx, count; } WgCount;   /* a finished workgroup and the wave-instructions it executed */
typedef struct {
  _Alignas(64) Ctx c; EmuArgs a; pthread_t th;
  uint64_t fidx, fcount;        /* the workgroup that stopped this thread (UINT64_MAX: none) and what it executed until then */
  WgCount *done; uint64_t ndone, cap;
  _Alignas(64) char end[1];     /* nothing of the next worker's shares a cache line with this one's */
} Worker;

static void *worker_run(void *arg);
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
/* The workers leave the calling thread's CPU (Par.home, where a new thread starts) as they start, if another is theirs: a
 * thread waiting for the GIL wakes every switch interval (the mock GPUs' 0.2 ms) and keeps its CPU's average idle time
 * below the kernel's threshold for pulling a waiting thread over (sched_migration_cost, 0.5 ms), so a worker started next
 * to the calling thread shared its CPU for milliseconds while the other idled (docs/emu.md "The GIL"). */
static uint32_t home_cpu(void) { unsigned cpu = UINT32_MAX; return syscall(SYS_getcpu, &cpu, (void *)0, (void *)0) ? UINT32_MAX : cpu; }
static void leave_home(uint32_t home) {
  unsigned long m[16] = {0}; const unsigned W = 8 * sizeof(unsigned long);
  if (home >= 16 * W || syscall(SYS_sched_getaffinity, 0, sizeof m, m) <= 0 || !(m[home / W] >> (home % W) & 1)) return;
  m[home / W] &= ~(1ul << (home % W));
  for (unsigned i = 0; i < 16; i++) if (m[i]) { syscall(SYS_sched_setaffinity, 0, sizeof m, m); return; }
}
#else
static uint32_t home_cpu(void) { return UINT32_MAX; }
static void leave_home(uint32_t home) { (void)home; }
#endif
/* with the GIL held (the calling thread, Ctx.gil): start the workers the GIL policy's thread count adds */
static void par_grow(Par *p) {
  Worker *ks = p->ks;
  for (; p->started < p->nmax; p->started++) if (pthread_create(&ks[p->started].th, 0, worker_run, &ks[p->started])) { p->nmax = p->started; break; }
}

static void *worker_run(void *arg) {
  Worker *k = arg; Ctx *c = &k->c; Par *p = c->par;
  if (k != p->ks) leave_home(p->home);
  for (uint64_t idx = 0, end = 0;; idx++) {
    if (UNLIKELY(c->gil)) {
      if (c->icount >= c->gil_at) gil_poll(c);
      if (c->gil->held && p->started < p->nmax) par_grow(p);
    }
    if (idx == end) { idx = __atomic_fetch_add(&p->next, p->chunk, __ATOMIC_RELAXED); end = idx + p->chunk; }
    if (idx >= p->total || idx > __atomic_load_n(&p->stop, __ATOMIC_RELAXED)) break;
    uint64_t i0 = c->icount;
    c->wg_idx = idx;
    int fin = 0;
    if (launch(c, idx)) {
      Slot *s = &c->slots[c->res[0]];
      use_slot(c, s);
      fin = wg_pass(c, s);
      s->live = 0; c->nres = 0;
      if (!fin && !c->status) { c->cur = &s->m.waves[0]; set_status(c->cur, ST_DEADLOCK, "a workgroup blocked in a multi-core dispatch"); }
    }
    if (!c->status && k->ndone == k->cap) {
      uint64_t cap = k->cap ? 2 * k->cap : 256;
      WgCount *nd = realloc(k->done, cap * sizeof(WgCount));
      if (nd) { k->done = nd; k->cap = cap; } else { c->status = ST_NOMEM; strcpy(c->a->f_msg, "out of memory for the workgroup counts"); }
    }
    if (c->status == ST_ABANDONED) break;
    if (c->status) {   /* this workgroup stops the dispatch unless a lower one does: no thread claims past it */
      k->fidx = idx; k->fcount = c->icount - i0;
      uint64_t cur = __atomic_load_n(&p->stop, __ATOMIC_RELAXED);
      while (idx < cur && !__atomic_compare_exchange_n(&p->stop, &cur, idx, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
      break;
    }
    c->a->workgroups++;
    k->done[k->ndone++] = (WgCount){idx, c->icount - i0};
  }
  return 0;
}

static uint64_t lin_wg(const EmuArgs *a, const uint32_t *wg) { return ((uint64_t)wg[2] * a->grid[1] + wg[1]) * a->grid[0] + wg[0]; }
/* copy the EmuArgs members from `first` up to (not including) `end`: the fault record and the strict-mode read record are each
 * one contiguous run of members (csrc/emu_core.h) */
#define COPY_RUN(dst, src, first, end) memcpy(&(dst)->first, &(src)->first, offsetof(EmuArgs, end) - offsetof(EmuArgs, first))

/* run the grid on `nth` threads (this one included), up to `nmax` while a GIL policy holds the GIL (par_grow), and merge their
 * results into c->a as run_grid would leave them. 0: no thread could be set up (out of memory), nothing ran */
static int run_parallel(Ctx *c, uint32_t nth, uint32_t nmax, uint64_t total) {
  EmuArgs *a = c->a;
  Worker *ks = calloc(nmax, sizeof(Worker));
  if (!ks) return 0;
  /* a claim per run of workgroups, short enough that the threads finish within a few workgroups of each other */
  Par par = {.next = 0, .stop = UINT64_MAX, .total = total, .chunk = total / (16 * (uint64_t)nmax), .nmax = nmax, .ks = ks, .xlat = a->xlat};
  par.chunk = par.chunk < 1 ? 1 : par.chunk > 16 ? 16 : par.chunk;
  uint32_t ready = 0;
  for (uint32_t i = 0; i < nmax; i++) {
    Worker *k = &ks[i]; Ctx *kc = &k->c;
    k->a = *a; k->fidx = UINT64_MAX;
    k->a.instructions = k->a.waves = k->a.workgroups = 0; k->a.v_count = 0; k->a.lds_rd = k->a.lds_wr = 0; k->a.cap_misc[5] = 0;
    *kc = *c; kc->a = &k->a; kc->par = &par; kc->maxres = 1; kc->nslots = kc->nres = 0; kc->cur = 0;
    kc->slots = calloc(1, sizeof(Slot)); kc->res = calloc(1, sizeof(uint32_t));
    kc->icache = malloc((c->icache_n ? c->icache_n : 1) * sizeof(Inst));
    if (i) { kc->gil = 0; k->a.xlat_poll = 0; }   /* the calling thread alone holds the GIL and asks for translations */
    if (!kc->slots || !kc->res || !kc->icache) break;
    memcpy(kc->icache, c->icache, c->icache_n * sizeof(Inst));
    ready = i + 1;
  }
  if (!ready) { free(ks[0].c.slots); free(ks[0].c.res); free(ks[0].c.icache); free(ks); return 0; }
  par.nmax = ready; par.started = 1; par.home = home_cpu();
  for (; par.started < nth && par.started < ready; par.started++) if (pthread_create(&ks[par.started].th, 0, worker_run, &ks[par.started])) break;
  worker_run(&ks[0]);
  uint32_t started = par.started;
  for (uint32_t i = 1; i < started; i++) pthread_join(ks[i].th, 0);
  Worker *best = 0;
  for (uint32_t i = 0; i < started; i++) if (ks[i].fidx != UINT64_MAX && (!best || ks[i].fidx < best->fidx)) best = &ks[i];
  uint64_t lim = best ? best->fidx : total, n = best ? best->fcount : 0, vbest = UINT64_MAX;
  for (uint32_t i = 0; i < started; i++) {
    Worker *k = &ks[i];
    for (uint64_t j = 0; j < k->ndone; j++) if (k->done[j].idx < lim) n += k->done[j].count;
    a->lds_rd += k->a.lds_rd; a->lds_wr += k->a.lds_wr;
    if (k->a.v_count) {
      a->v_count += k->a.v_count;
      uint64_t v = lin_wg(a, k->a.v_wg);
      if (v < vbest) { vbest = v; COPY_RUN(a, &k->a, v_addr, w_lo); }
    }
    if (k->a.cap_misc[5]) memcpy(a->cap_misc, k->a.cap_misc, sizeof(a->cap_misc));
    if (a->trace_pcs)   /* the pcs any thread decoded, into c's cache, where emu_run lists them for the translator */
      for (uint64_t j = 0; j < k->c.icache_n && j < c->icache_n; j++) if (k->c.icache[j].fn && !c->icache[j].fn) c->icache[j] = k->c.icache[j];
  }
  c->icount = n; a->workgroups = lim; a->waves = (best ? lim + 1 : lim) * c->nwaves;
  if (best) { c->status = best->c.status; COPY_RUN(a, &best->a, f_kind, v_count); }
  a->threads_used = started;
  a->xlat = par.xlat;   /* adopted mid-dispatch (xlat_poll), or the one it started with */
  for (uint32_t i = 0; i < nmax; i++) {
    Ctx *kc = &ks[i].c;
    for (uint32_t j = 0; j < kc->nslots; j++) slot_free(&kc->slots[j]);
    free(kc->slots); free(kc->res); free(kc->icache); free(ks[i].done);
  }
  free(ks);
  return 1;
}

/* entry point: returns the status (ST_*); fault details are in *a */
int emu_run(EmuArgs *a, uint64_t code_end) {
  Ctx c; memset(&c, 0, sizeof(c));
  c.a = a; c.code_addr = a->code_addr; c.code_end = code_end; c.budget = a->budget;
  c.wave_size = a->wave_size; c.wave_mask = a->wave_size == 64 ? ~0ull : 0xffffffffull;
  c.lds_bytes = a->lds_bytes; c.scratch_lane = a->scratch_per_lane; c.next_time_check = 1u << 20; c.space = SP_GLOBAL;
  c.poison = (int)a->poison;
  clock_gettime(CLOCK_MONOTONIC, &c.t0);
  Gil gil;
  if (a->gil_hold) gil_start(&c, &gil);
  uint32_t nt = a->block[0] * a->block[1] * a->block[2];
  uint64_t total = (uint64_t)a->grid[0] * a->grid[1] * a->grid[2];
  c.nwaves = (nt + c.wave_size - 1) / c.wave_size;
  c.maxres = a->resident < 1 ? 1 : (uint64_t)a->resident > total ? (uint32_t)total : a->resident;
  c.acc_off = NAGPR ? ((a->rsrc3 & 63) + 1) * 4 : 0;
  c.slots = calloc(c.maxres, sizeof(Slot)); c.res = calloc(c.maxres, sizeof(uint32_t));
  a->status = ST_OK; a->instructions = a->waves = a->workgroups = 0; a->f_lane = -1;   /* no lane unless a fault names one */
  if (!c.slots || !c.res) { c.status = ST_NOMEM; strcpy(a->f_msg, "out of memory for the resident workgroups"); }
  else {
    /* more than one thread only for a grid of several workgroups whose code keeps out of dispatch-wide state (prescan), when
     * no opcodes are counted and no store is watched (both record in execution order) */
    uint32_t nmax = a->gil_hold && a->threads_held > a->threads ? a->threads_held : a->threads, nth = c.gil && c.gil->held ? nmax : a->threads;
    if (nmax > total) nmax = (uint32_t)total;
    if (nth > nmax) nth = nmax;
    if (nmax > 1 && (a->op_counts || a->w_hi > a->w_lo || !prescan(&c))) nth = nmax = 1;
    if (a->xlat) {   /* the translated kernel's instructions are decoded first: faults and store records read their Inst there */
      Wave t; memset(&t, 0, sizeof(t)); t.c = &c;
      for (uint32_t i = 0; i < a->xlat_n && !c.status; i++) { t.pc = a->xlat_pcs[i]; if (!decode_at(&t)) a->xlat = 0; }
      c.status = 0;
    }
    a->threads_used = 1;
    if (nmax < 2 || !run_parallel(&c, nth, nmax, total)) run_grid(&c);
  }
  if (a->trace_pcs) {   /* the instructions this dispatch decoded (executed), for the translator */
    a->trace_n = 0;
    for (uint64_t i = 0; i < c.icache_n && a->trace_n < a->trace_cap; i++) if (c.icache[i].fn) a->trace_pcs[a->trace_n++] = (uint32_t)(i << 2);
  }
  a->status = c.status;
  a->instructions = c.icount;
  for (uint32_t k = 0; k < c.nslots; k++) slot_free(&c.slots[k]);
  free(c.slots); free(c.res); free(c.icache);
  gil_end(&c);
  return a->status;
}

/* the decoded instruction as the interpreter caches it (hid, handler, AccVGPR offsets applied): the translator emits it as a
 * constant. Returns as emu_decode; emu_inst_size() is sizeof(Inst) */
int emu_decode_inst(const uint32_t *words, int ndw, int acc_off, Inst *in) {
  memset(in, 0, sizeof(*in));
  memcpy(in->raw, words, (ndw > 4 ? 4 : ndw) * 4);
  int r = emu_decode(words, ndw, in);
  if (r <= 0) return r;
  if (NAGPR) emu_acc_fix(in, acc_off);
  int op = in->fmt >= 0 && HANDLERS[in->fmt] ? in->op : 0;
  in->hid = HBASE[in->fmt] + (in->opx ? in->opx : op);
  in->fn = HANDLERS[in->fmt][op];
  if (!in->fn) in->fn = h_unsupported;
  return r;
}
int emu_inst_size(void) { return (int)sizeof(Inst); }

/* decode one instruction without executing it (tests compare this against the wheel's DSL). Returns 1 valid, 0 no match,
 * -1 truncated; fills format index, opcode (opx for VOPD), size in bytes and whether a handler with semantics exists. */
int emu_decode_one(const uint32_t *words, int ndw, int32_t *out) {
  Inst in; memset(&in, 0, sizeof(in));
  int r = emu_decode(words, ndw, &in);
  out[0] = in.fmt; out[1] = in.opx ? in.opx : in.op; out[2] = in.size; out[3] = 0;
  if (r > 0) { Handler h = HANDLERS[in.fmt][in.op]; out[3] = h && h != h_unsupported; }
  return r;
}
