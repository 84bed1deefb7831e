/* emu_xlat.h: what the interpreter (emu_sched.c) and the kernels the translator compiles (mockgpu.emu.translate) share: the
 * record of the instruction that stopped a dispatch, the timeout check, and XSTEP, one translated instruction. A translated
 * kernel is `int xk_run(Ctx *c, Wave *w)`: it runs the wave from w->pc through the instructions it holds exactly as run_wave
 * does (same counting, watchdog, timeout and fault records), and returns 0 at a pc it does not hold (the interpreter runs that
 * instruction), 1 when the wave left W_RUN or the dispatch stopped (c->status). */
static void record_inst(Ctx *c, Wave *w, uint64_t pc, const uint32_t *raw, int nbytes, int fmt, int op) {
  EmuArgs *a = c->a;
  a->f_pc = pc; a->f_wave = w ? w->id : -1; a->f_fmt = fmt; a->f_op = op; a->f_len = nbytes;
  a->f_wg[0] = c->wg[0]; a->f_wg[1] = c->wg[1]; a->f_wg[2] = c->wg[2];
  memset(a->f_raw, 0, sizeof(a->f_raw));
  if (raw) memcpy(a->f_raw, raw, nbytes > 16 ? 16 : nbytes);
}

static double elapsed(Ctx *c) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - c->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - c->t0.tv_nsec);
}

/* The GIL, for a dispatch with a policy (api.run(hold_gil=...): emu_run is called holding it; Ctx.gil on the calling thread
 * only). While the policy says so (the mock GPUs': a Python thread spins on a signal, mockgpu.mock.device.host_spins) the
 * dispatch keeps the GIL, so tinygrad's thread spinning on the dispatch's signal sleeps instead of taking a core from the
 * emulator, and it may use threads_held threads; otherwise it runs released, as any foreign call, on `threads`. gil_poll, at
 * workgroup boundaries and time checks: a released dispatch takes the GIL back (waiting at most Python's switch interval) and
 * asks the policy again GIL_FIRST after the start, then after twice as long each time up to every GIL_PERIOD (tinygrad usually
 * starts waiting a few ms after a submission); a held one gives the other Python threads a turn every GIL_TURN (released and
 * taken back: the spinning thread runs until the switch interval ends its turn), then asks. Asking while held, with the
 * spinning thread waiting for the GIL longer than a switch interval, would hand it over too (the policy's Python code meets
 * the eval breaker): a turn of up to 5 ms for the calling thread each time, which is why a held dispatch asks only after a
 * turn (docs/emu.md "The GIL"). The turns let a thread that writes what a kernel polls get to run. */
#define GIL_FIRST 0.001
#define GIL_PERIOD 0.01
#define GIL_TURN 0.1
#define GIL_ICOUNT (1u << 14)   /* wave-instructions between two looks at the clock */
static void gil_start(Ctx *c, Gil *g) {
  c->gil = g; c->gil_at = GIL_ICOUNT;
  if (!(g->held = c->a->gil_hold())) g->ts = c->a->gil_save();
  g->period = GIL_FIRST; g->next = elapsed(c) + (g->held ? GIL_TURN : GIL_FIRST);
}
static __attribute__((noinline, cold)) void gil_poll(Ctx *c) {
  Gil *g = c->gil; EmuArgs *a = c->a;
  c->gil_at = c->icount + GIL_ICOUNT;
  if (elapsed(c) < g->next) return;
  if (g->held) g->ts = a->gil_save();   /* the other threads' turn */
  a->gil_restore(g->ts);
  if (!(g->held = a->gil_hold())) { g->ts = a->gil_save(); g->period = 2 * g->period < GIL_PERIOD ? 2 * g->period : GIL_PERIOD; }
  g->next = elapsed(c) + (g->held ? GIL_TURN : g->period);
}
static void gil_end(Ctx *c) { if (c->gil && !c->gil->held) c->a->gil_restore(c->gil->ts); }

/* the translated kernel this thread runs: the dispatch's, or the one adopted mid-dispatch (a multi-core dispatch shares it) */
static inline void *cur_xlat(Ctx *c) { return c->par ? __atomic_load_n(&c->par->xlat, __ATOMIC_ACQUIRE) : c->a->xlat; }
/* A long dispatch that started interpreted asks, at each time check of the calling thread, for a translation of the pcs it
 * decoded so far (translate.Translator.running: compiled in the background once the kernel is hot, or at once in sync
 * mode): every thread runs it from its next wave step on. Those pcs are in every thread's decode cache (the calling thread
 * decoded them; a multi-core dispatch's threads start with the pre-scan's decode of everything reachable). */
static __attribute__((noinline, cold)) void xlat_poll(Ctx *c) {
  uint64_t n = 0;
  uint32_t *pcs = malloc((c->icache_n ? c->icache_n : 1) * sizeof(uint32_t));
  if (!pcs) return;
  for (uint64_t i = 0; i < c->icache_n; i++) if (c->icache[i].fn) pcs[n++] = (uint32_t)(i << 2);
  void *fn = c->a->xlat_poll(pcs, n, elapsed(c));
  free(pcs);
  if (!fn) return;
  c->a->xlat = fn; c->a->xlat_poll = 0;
  if (c->par) __atomic_store_n(&c->par->xlat, fn, __ATOMIC_RELEASE);
}

/* every 2^20 wave-instructions: the wall-clock limit (run(timeout=)), the GIL policy, a translation to adopt, and in a
 * multi-core dispatch whether a lower workgroup stopped it (this thread's workgroup is then abandoned: ST_ABANDONED, never
 * reported). 1: the dispatch stopped */
static __attribute__((noinline, cold)) int time_check(Ctx *c, Wave *w, const Inst *in) {
  c->next_time_check = c->icount + (1u << 20);
  if (c->gil) gil_poll(c);
  if (c->a->xlat_poll && !cur_xlat(c)) xlat_poll(c);
  if (c->par && c->wg_idx > __atomic_load_n(&c->par->stop, __ATOMIC_RELAXED)) { c->status = ST_ABANDONED; return 1; }
  if (c->a->timeout > 0 && elapsed(c) > c->a->timeout) { c->status = ST_TIMEOUT; record_inst(c, w, w->pc, in->raw, in->size, in->fmt, in->op); return 1; }
  return 0;
}

typedef int (*XlatFn)(Ctx *c, Wave *w);
/* run(op_counts=True): a translated block counts its first m steps' handlers (h: their hids) as the interpreter counts each */
static inline __attribute__((always_inline)) void xcount(Ctx *c, const uint32_t *h, int m) {
  uint64_t *o = c->a->op_counts;
  if (UNLIKELY(o)) for (int i = 0; i < m; i++) o[h[i]]++;
}
/* the interpreter's compiled handler of the instruction at w->pc0 (its decode-cache entry, filled before the dispatch): what a
 * translator variant runs for every case but its fast path, out of line, so a translated kernel compiles only the fast paths */
#define XHANDLER(W) do { const Inst *ic_ = &(W)->c->icache[(W)->pc0 >> 2]; ic_->fn((W), ic_); } while (0)
/* while this is non-zero a block's direct steps (translate.py kernel_source) run their first-mode fast loops over its lanes unchecked (gen_c._xvalu) */
static inline __attribute__((always_inline)) int XFAST(Wave *w) {   /* the active lanes when they are lanes 0..n-1 (n > 0), else 0 */
  uint64_t e = rd_exec(w);
  return w->c->poison || (w->mode & 0xff) != EMU_FAST_MODE || w->c->wave_size != EMU_FAST_LANES || !e || (e & (e + 1)) ? 0 : __builtin_popcountll(e);
}
/* lanes per chunk of a fused run (translate.py kernel_source): one 256-bit vector of 32-bit lanes (translated matmul, one-off,
 * the first version of fused runs: 165, 190, 179, 173 M/s for 4, 8, 16, 32) */
#define XCHUNK 8
/* source i of a translator variant (mockgpu.emu.gen_c._xvalu): lane L of its VGPR row (xr) or the one scalar value */
#define XSRC32(i, L) (xr##i ? xlo##i[L] : (uint32_t)xv##i)
#define XSRC64(i, L) (xr##i ? ((uint64_t)xhi##i[L] << 32 | xlo##i[L]) : xv##i)
/* one translated instruction at byte offset PC (next: NEXT) with its decoded constant I, executing CALL; a jump (w->pc not
 * NEXT) re-enters the kernel's dispatch switch */
#define XSTEP(PC, NEXT, I, CALL) \
  w->pc0 = PC; \
  if (UNLIKELY(++c->icount > c->budget)) { c->icount--; c->status = ST_WATCHDOG; record_inst(c, w, PC, (I).raw, (I).size, (I).fmt, (I).op); return 1; } \
  if (UNLIKELY(c->a->op_counts)) c->a->op_counts[(I).hid]++; \
  w->pc = NEXT; CALL; \
  if (UNLIKELY(c->status)) { record_inst(c, w, PC, (I).raw, (I).size, (I).fmt, (I).opx ? (I).opx : (I).op); return 1; } \
  if (UNLIKELY(c->icount >= c->next_time_check) && time_check(c, w, &(I))) return 1; \
  if (UNLIKELY(w->pc != NEXT || w->state != W_RUN)) { if (w->state != W_RUN) return 1; continue; }
