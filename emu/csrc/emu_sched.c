/* emu_sched.c: instruction fetch and decode cache, wave and workgroup setup (contract-kfd.md 6.5), the wave scheduler
 * (each wave runs until S_BARRIER / S_ENDPGM; a barrier releases when every live wave of the workgroup reached it),
 * watchdog and the entry point called from Python with the GIL released. */

#if HAS_VOPD
static void h_vopd(Wave *w, const Inst *in) {
  uint32_t ox[MAXLANES], oy[MAXLANES];
  uint64_t ex = rd_exec(w);
  VHalf hx = VOPD_HALF[in->opx], hy = VOPD_HALF[in->opy];
  if (!hx || !hy) { set_status(w, ST_UNSUPPORTED, "VOPD half has no compiled pseudocode"); return; }
  hx(w, in, 0, ox, ex); if (w->c->status) return;
  hy(w, in, 1, oy, ex); if (w->c->status) return;
  uint32_t *dx = w->v + (in->vdstx - 256) * MAXLANES, *dy = w->v + (in->vdsty - 256) * MAXLANES;
  if (ex == 0xffffffffull && w->c->wave_size == 32) { memcpy(dx, ox, 128); memcpy(dy, oy, 128); return; }
  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; dx[L] = ox[L]; dy[L] = oy[L]; }
}
#endif

static void record_inst(Ctx *c, Wave *w, uint64_t pc, const uint32_t *raw, int nbytes, int fmt, int op) {
  EmuArgs *a = c->a;
  a->f_pc = pc; a->f_wave = w ? w->id : -1; a->f_fmt = fmt; a->f_op = op; a->f_len = nbytes;
  a->f_wg[0] = c->wg[0]; a->f_wg[1] = c->wg[1]; a->f_wg[2] = c->wg[2];
  memset(a->f_raw, 0, sizeof(a->f_raw));
  if (raw) memcpy(a->f_raw, raw, nbytes > 16 ? 16 : nbytes);
}

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
  int op = in->fmt >= 0 && HANDLERS[in->fmt] ? in->op : 0;
  in->hid = HBASE[in->fmt] + (in->opx ? in->opx : op);
  in->fn = HANDLERS[in->fmt][op];
  if (!in->fn) in->fn = h_unsupported;
  return in;
}

static inline Inst *fetch(Wave *w) {
  Ctx *c = w->c; uint64_t idx = w->pc >> 2;
  if (LIKELY(!(w->pc & 3) && idx < c->icache_n && c->icache[idx].fn)) return &c->icache[idx];
  return decode_at(w);
}

static double elapsed(Ctx *c) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - c->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - c->t0.tv_nsec);
}

static void run_wave(Ctx *c, Wave *w) {
  uint64_t *opc = c->a->op_counts;
  while (w->state == W_RUN) {
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
    if (UNLIKELY(c->icount >= c->next_time_check)) {
      c->next_time_check = c->icount + (1u << 20);
      if (c->a->timeout > 0 && elapsed(c) > c->a->timeout) { c->status = ST_TIMEOUT; record_inst(c, w, w->pc, in->raw, in->size, in->fmt, in->op); return; }
    }
  }
}

static void init_wave(Ctx *c, Wave *w, int id) {
  EmuArgs *a = c->a;
  memset(w->s, 0, sizeof(w->s));
  w->scc = 0; w->pc = 0; w->pc0 = 0; w->state = W_RUN; w->id = id; w->c = c; w->mode = a->mode;
  uint32_t n = (a->rsrc2 >> 1) & 31, k = 0;
  for (; k < n; k++) w->s[k] = k < a->nuser ? a->user_sgprs[k] : 0;
  if (a->tgid_in_ttmp) { w->s[108 + 9] = c->wg[0]; w->s[108 + 7] = c->wg[1] | c->wg[2] << 16; }
  else {
    if (a->rsrc2 >> 7 & 1) w->s[k++] = c->wg[0];
    if (a->rsrc2 >> 8 & 1) w->s[k++] = c->wg[1];
    if (a->rsrc2 >> 9 & 1) w->s[k++] = c->wg[2];
    if (a->rsrc2 >> 10 & 1) w->s[k++] = c->nwaves;
    if (a->rsrc2 & 1) w->s[k++] = 0;
  }
  uint32_t bx = a->block[0], by = a->block[1], nt = bx * by * a->block[2];
  uint64_t exec = 0;
  for (uint32_t L = 0; L < c->wave_size; L++) {
    uint32_t tid = id * c->wave_size + L;
    if (tid >= nt) { w->v[L] = 0; continue; }
    exec |= 1ull << L;
    w->v[L] = (tid % bx) | ((tid / bx) % by) << 10 | (tid / (bx * by)) << 20;
  }
  wr_exec(w, exec);
}

static void run_workgroup(Ctx *c) {
  Wave *ws = c->m.waves;
  for (uint32_t i = 0; i < c->nwaves; i++) {
    ws[i].v = c->m.vgpr + (uint64_t)i * NVREG * MAXLANES;
    ws[i].scratch = c->m.scratch + (uint64_t)i * c->scratch_lane * MAXLANES;
    init_wave(c, &ws[i], (int)i);
  }
  c->a->waves += c->nwaves;
  for (;;) {
    uint32_t done = 0, barrier = 0;
    for (uint32_t i = 0; i < c->nwaves; i++) {
      if (ws[i].state == W_RUN) { c->cur = &ws[i]; run_wave(c, &ws[i]); if (c->status) return; }
      done += ws[i].state == W_DONE; barrier += ws[i].state == W_BARRIER;
    }
    if (done == c->nwaves) return;
    if (barrier + done == c->nwaves) for (uint32_t i = 0; i < c->nwaves; i++) if (ws[i].state == W_BARRIER) ws[i].state = W_RUN;
  }
}

/* entry point: returns the status (ST_*); fault details are in *a */
int emu_run(EmuArgs *a, uint64_t code_end) {
  Ctx c; memset(&c, 0, sizeof(c));
  c.a = a; c.code_addr = a->code_addr; c.code_end = code_end; c.budget = a->budget;
  c.wave_size = a->wave_size; c.wave_mask = a->wave_size == 64 ? ~0ull : 0xffffffffull;
  c.lds_bytes = a->lds_bytes; c.scratch_lane = a->scratch_per_lane; c.next_time_check = 1u << 20; c.space = SP_GLOBAL;
  clock_gettime(CLOCK_MONOTONIC, &c.t0);
  uint32_t nt = a->block[0] * a->block[1] * a->block[2];
  c.nwaves = (nt + c.wave_size - 1) / c.wave_size;
  c.m.vgpr = calloc(((size_t)c.nwaves * NVREG + 16) * MAXLANES, sizeof(uint32_t));
  c.acc_off = NAGPR ? ((a->rsrc3 & 63) + 1) * 4 : 0;
  c.m.lds = calloc(c.lds_bytes ? c.lds_bytes : 1, 1);
  c.m.scratch = calloc((size_t)c.nwaves * MAXLANES * (c.scratch_lane ? c.scratch_lane : 1), 1);
  c.m.waves = calloc(c.nwaves, sizeof(Wave));
  a->status = ST_OK; a->instructions = a->waves = a->workgroups = 0;
  if (!c.m.vgpr || !c.m.lds || !c.m.scratch || !c.m.waves) { a->status = ST_NOMEM; strcpy(a->f_msg, "out of memory for wave state"); }
  else {
    for (uint32_t z = 0; z < a->grid[2] && !c.status; z++)
      for (uint32_t y = 0; y < a->grid[1] && !c.status; y++)
        for (uint32_t x = 0; x < a->grid[0] && !c.status; x++) {
          c.wg[0] = x; c.wg[1] = y; c.wg[2] = z;
          run_workgroup(&c);
          a->workgroups++;
        }
    a->status = c.status;
  }
  a->instructions = c.icount;
  free(c.m.vgpr); free(c.m.lds); free(c.m.scratch); free(c.m.waves); free(c.icache);
  return a->status;
}

/* decode one instruction without executing it (tests compare this against the wheel's DSL). Returns 1 valid, 0 no match,
 * -1 truncated; fills format index, opcode (opx for VOPD), size in bytes and whether a handler with semantics exists. */
int emu_decode_one(const uint32_t *words, int ndw, int32_t *out) {
  Inst in; memset(&in, 0, sizeof(in));
  int r = emu_decode(words, ndw, &in);
  out[0] = in.fmt; out[1] = in.opx ? in.opx : in.op; out[2] = in.size; out[3] = 0;
  if (r > 0) { Handler h = HANDLERS[in.fmt][in.op]; out[3] = h && h != h_unsupported; }
  return r;
}
