/* emu_prose.h: the hand-written semantics. Only entries whose pseudocode is prose or absent (see PROSE_C in gen_c.py and
 * the list in docs/emu.md): program end, barrier, waits (execution is in order, so waits complete immediately), hardware
 * registers, traps. */
static void h_nop(Wave *w, const Inst *in) { (void)w; (void)in; }
static void h_unsupported(Wave *w, const Inst *in) { (void)in; set_status(w, ST_UNSUPPORTED, MSG_NO_SEMANTICS); }
/* the ops that only raise (S_CODE_END, ...) are generated from gen_c.PROSE_STOP */
/* S_TRAP / S_SETHALT / S_SENDMSGHALT stop the dispatch with a structured report (ST_TRAP; f_kind TR_*, f_addr the trap id):
 * tinygrad's runtime installs no trap handler (TBA/TMA read 0), and nothing resumes a halted wave */
static void wave_stop(Wave *w, int kind, uint64_t id, const char *msg) {
  Ctx *c = w->c;
  if (c->status) return;
  set_status(w, ST_TRAP, msg); c->a->f_kind = kind; c->a->f_addr = id;
}
static void h_trap(Wave *w, const Inst *in) { wave_stop(w, TR_TRAP, in->simm16 & 0xff, MSG_TRAP); }
static void h_sethalt(Wave *w, const Inst *in) { if (in->simm16 & 1) wave_stop(w, TR_HALT, 0, MSG_SETHALT); }
/* S_SETKILL 1: the wave is terminated (no register capture); the rest of the dispatch continues */
static void h_setkill(Wave *w, const Inst *in) { if (in->simm16 & 1) w->state = W_DONE; }
/* S_SENDMSG: SIMM16[7:0] is the message (gfx11+ numbering). Compute waves send MSG_DEALLOC_VGPRS (3) before S_ENDPGM: the
 * emulator frees nothing, so it is a no-op; the rest are graphics or host-interrupt messages that are not modelled */
static void sendmsg(Wave *w, uint32_t msg) {
  char buf[96];
  if (msg == 3) return;
  snprintf(buf, sizeof(buf), MSG_SENDMSG, (int)msg);
  set_status(w, ST_UNSUPPORTED, buf);
}
static void h_sendmsg(Wave *w, const Inst *in) { sendmsg(w, in->simm16 & 0xff); }
static void h_sendmsghalt(Wave *w, const Inst *in) { sendmsg(w, in->simm16 & 0xff); wave_stop(w, TR_HALT, 0, MSG_SENDMSGHALT); }
/* S_SENDMSG_RTN_B32/B64: SSRC0 is the message (enum MSG). REALTIME is an emulated deterministic clock: the wave-instructions
 * the dispatch executed so far, this one included; TBA/TMA are 0 (no trap handler); DOORBELL/DDID are 0 (a Dispatch carries
 * neither the queue's doorbell nor a dispatch id). SAVE_WAVE and TBA_TO_PC belong to a trap handler's context save. */
static void sendmsg_rtn(Wave *w, const Inst *in, int bits) {
  char buf[96];
  uint64_t v;
  switch (in->src0) {
    case 128: case 129: case 130: case 133: v = 0; break;
    case 131: v = w->c->icount; break;
    default: snprintf(buf, sizeof(buf), MSG_SENDMSG_RTN, (int)in->src0);
      set_status(w, ST_UNSUPPORTED, buf); return;
  }
  sdst_write(w, in->sdst, v, bits);
}
static void h_sendmsg_rtn32(Wave *w, const Inst *in) { sendmsg_rtn(w, in, 32); }
static void h_sendmsg_rtn64(Wave *w, const Inst *in) { sendmsg_rtn(w, in, 64); }
/* S_MEMTIME / S_MEMREALTIME (gfx9 SMEM): SDATA[1:0] = the emulated clock of GET_REALTIME (deterministic) */
static void h_memtime(Wave *w, const Inst *in) { sdst_write(w, in->sdata, w->c->icount, 64); }
static void h_barrier(Wave *w, const Inst *in) { (void)in; w->state = W_BARRIER; }
/* S_SLEEP: the wave yields until the scheduler's next round over its workgroup (the other waves run first), so spin loops
 * that sleep see what other waves write; S_WAKEUP has nothing to wake early and is a no-op */
static void h_sleep(Wave *w, const Inst *in) { (void)in; w->state = W_SLEEP; }
static void h_endpgm(Wave *w, const Inst *in) {
  (void)in;
  Ctx *c = w->c; EmuArgs *a = c->a;
  w->state = W_DONE;
  if (w->id == 0 && c->wg[0] == 0 && c->wg[1] == 0 && c->wg[2] == 0 && a->cap_sgpr) {
    memcpy(a->cap_sgpr, w->s, sizeof(w->s));
    memcpy(a->cap_vgpr, w->v, NVREG * MAXLANES * sizeof(uint32_t));
    a->cap_misc[0] = rd_exec(w); a->cap_misc[1] = rd_vcc(w); a->cap_misc[2] = w->scc; a->cap_misc[3] = w->s[ENC_M0];
    a->cap_misc[4] = w->pc0; a->cap_misc[5] = 1; a->cap_misc[6] = w->mode;
  }
}
/* hardware registers: S_GETREG/S_SETREG simm16 = {size-1[15:11], offset[10:6], id[5:0]}. MODE is the wave's MODE register
 * (FP_ROUND [3:0], FP_DENORM [7:4], DX10_CLAMP [8], IEEE [9], ...; every float op follows it), the only one S_SETREG
 * writes (other writes are ignored); S_GETREG also reads HW_ID1 (wave id in the workgroup), SH_MEM_BASES (the apertures),
 * SHADER_CYCLES (the emulated clock); the rest read as 0 */
static inline uint32_t hwreg_mask(const Inst *in) { uint32_t size = ((in->simm16 >> 11) & 31) + 1; return size >= 32 ? 0xffffffffu : (1u << size) - 1; }
static void h_getreg(Wave *w, const Inst *in) {
  uint32_t id = in->simm16 & 63, off = (in->simm16 >> 6) & 31, v = 0;
  if ((int)id == EMU_HWREG_MODE) v = w->mode;
  else if (id == 23) v = (uint32_t)w->id;  /* HW_REG_HW_ID1: WAVE_ID */
  else if ((int)id == EMU_HWREG_SH_MEM_BASES) v = SH_MEM_BASES;   /* RDNA3: the flat apertures (csrc/emu_ops.h) */
  /* the cycle counter (RDNA3: 20 bits; RDNA4: 64 bits as LO/HI) is the emulated clock of S_SENDMSG_RTN GET_REALTIME */
  else if ((int)id == EMU_HWREG_SHADER_CYCLES) v = (uint32_t)(w->c->icount & 0xfffff);
  else if ((int)id == EMU_HWREG_SHADER_CYCLES_LO) v = (uint32_t)w->c->icount;
  else if ((int)id == EMU_HWREG_SHADER_CYCLES_HI) v = (uint32_t)(w->c->icount >> 32);
  sdst_write(w, in->sdst, (v >> off) & hwreg_mask(in), 32);
}
static void setreg(Wave *w, const Inst *in, uint32_t v) {
  uint32_t off = (in->simm16 >> 6) & 31, m = hwreg_mask(in) << off;
  if ((in->simm16 & 63) == EMU_HWREG_MODE) w->mode = (w->mode & ~m) | ((v << off) & m);
}
static void h_setreg(Wave *w, const Inst *in) { setreg(w, in, (uint32_t)scalar_src(w, in, in->sdst, 32, 0)); }   /* S0 is in the sdst field */
static void h_setreg_imm(Wave *w, const Inst *in) { setreg(w, in, in->lit); }
static void h_round_mode(Wave *w, const Inst *in) { w->mode = (w->mode & ~0xfu) | (in->simm16 & 0xf); }           /* MODE.FP_ROUND */
static void h_denorm_mode(Wave *w, const Inst *in) { w->mode = (w->mode & ~0xf0u) | (in->simm16 & 0xf) << 4; }   /* MODE.FP_DENORM */

/* ---------- DS_SWIZZLE_B32: lane i receives DATA0 of lane j (0 if j is inactive); offset = offset1:offset0 selects the
 * pattern (RDNA3/RDNA4 ISA guide; the wheel's text stops after the first case): >= 0xe000 FFT, >= 0xc000 rotate within 32
 * lanes (offset[10]: the other direction), offset[15] quad permute, else and/or/xor masks within each half of 32 ---------- */
static inline int swizzle_src(uint32_t off, int i) {
  uint32_t mask = off & 31;
  if (off >= 0xe000) {
    uint32_t r = 0; for (int b = 0; b < 5; b++) r |= ((uint32_t)i >> b & 1) << (4 - b);
    return (int)((r >> __builtin_popcount(mask)) | ((uint32_t)i & mask) | ((uint32_t)i & 32));
  }
  if (off >= 0xc000) {
    int rot = (int)(off >> 5 & 31); if (off >> 10 & 1) rot = -rot;
    return (int)(((uint32_t)i & mask) | ((uint32_t)(i + rot) & ~mask & 31) | ((uint32_t)i & 32));
  }
  if (off & 0x8000) return (i & ~3) | (int)(off >> ((i & 3) * 2) & 3);
  return (int)(((((uint32_t)i & 31 & mask) | (off >> 5 & 31)) ^ (off >> 10 & 31)) | ((uint32_t)i & 32));
}
static void h_ds_swizzle(Wave *w, const Inst *in) {
  uint32_t off = (uint32_t)(in->offset0 | in->offset1 << 8), src[MAXLANES], *d = w->v + (in->vdst - 256) * MAXLANES;
  uint64_t ex = rd_exec(w);
  memcpy(src, w->v + (in->data0 - 256) * MAXLANES, sizeof(src));
  for (uint64_t e = ex; e; e &= e - 1) { int i = __builtin_ctzll(e), j = swizzle_src(off, i); d[i] = ex >> j & 1 ? src[j] : 0; }
}
/* DS_APPEND / DS_CONSUME: the LDS dword at (RDNA3: M0[15:0] +) offset gains / loses the number of active lanes; every active
 * lane receives the old value. One atomic access, checked like any DS access (fault lane: the first active one) */
static void ds_counter(Wave *w, const Inst *in, int sign) {
  uint64_t ex = rd_exec(w);
  if (!ex) return;
  Ctx *c = w->c; PC_STATE(s, w); s.laneId = (uint64_t)__builtin_ctzll(ex);
  uint64_t addr = (uint64_t)(in->offset0 | in->offset1 << 8) + (EMU_DS_COUNTER_M0 ? (w->s[ENC_M0] & 0xffff) : 0);
  c->space = SP_LDS; c->atomic = 1;
  uint32_t old = (uint32_t)l_rd(&s, addr, 4);
  if (!s.fault) l_wr(&s, addr, 4, old + (uint32_t)(sign * __builtin_popcountll(ex)));
  c->atomic = 0;
  if (s.fault) return;
  for (; ex; ex &= ex - 1) w->v[(in->vdst - 256) * MAXLANES + __builtin_ctzll(ex)] = old;
}
/* DS_READ_B64_TR_B4/B8/B16, DS_READ_B96_TR_B6 (gfx950): every active lane reads its 64 (96) bits at ADDR + OFFSET. In each
 * group of 16 lanes those hold a matrix with rows of 16 elements, row r in lanes R*r .. R*r+R-1 (E = 64/width elements per
 * lane, 16 for B6; R = 16/E lanes per row; element e of a lane at bits e*width). The result is its transpose: element j of
 * lane i is element i%E of lane R*j + i/E of the group, i.e. lane i gets column i (an inactive source lane gives 0).
 * Per-op wrappers with (width, dwords) from gen_c.DS_READ_TR; Python twin: pybackend.ds_read_tr */
static inline uint32_t tr_get(const uint32_t *d, int pos, int width) { return (uint32_t)(((d[pos / 32] | (uint64_t)d[pos / 32 + 1] << 32) >> (pos % 32)) & ((1u << width) - 1)); }
static void ds_read_tr(Wave *w, const Inst *in, int width, int ndw) {
  const int E = ndw * 32 / width, R = 16 / E;
  uint32_t src[MAXLANES][4], off = (uint32_t)(in->offset0 | in->offset1 << 8);
  uint64_t ex = rd_exec(w);
  PC_STATE(s, w); w->c->space = SP_LDS; w->c->atomic = 0;
  memset(src, 0, sizeof(src));
  for (uint64_t e = ex; e; e &= e - 1) {
    int L = __builtin_ctzll(e); uint32_t a = w->v[((in->addr - 256) & (NVREG - 1)) * MAXLANES + L] + off; s.laneId = (uint64_t)L;
    for (int k = 0; k < ndw; k++) { src[L][k] = (uint32_t)l_rd(&s, (uint64_t)a + 4u * (uint32_t)k, 4); if (UNLIKELY(s.fault)) { PC_FAULT(w, s); return; } }
  }
  for (uint64_t e = ex; e; e &= e - 1) {
    int i = __builtin_ctzll(e), g = i & ~15, li = i & 15; uint64_t out[2] = {0, 0};
    for (int j = 0; j < E; j++) {
      uint64_t x = tr_get(src[g + R * j + li / E], (li % E) * width, width); int p = j * width;
      out[p / 64] |= x << (p % 64); if (p % 64 + width > 64) out[1] |= x >> (64 - p % 64);
    }
    for (int k = 0; k < ndw; k++) w->v[((in->vdst - 256 + k) & (NVREG - 1)) * MAXLANES + i] = (uint32_t)(out[k / 2] >> (32 * (k % 2)));
  }
}
static void h_ds_append(Wave *w, const Inst *in) { ds_counter(w, in, 1); }
static void h_ds_consume(Wave *w, const Inst *in) { ds_counter(w, in, -1); }

/* ---------- GWS (DS_GWS_*; no pseudocode in the wheel, GCN/RDNA ISA guides): NGWS resources per dispatch, resource id =
 * (M0[21:16] + OFFSET0[5:0]) mod 64. Each has a counter (signed), a barrier flag and a release-all generation. The value
 * INIT / SEMA_BR / BARRIER use is DATA0 of the first active lane (lane 0 when EXEC is 0). A wave that has to wait enters
 * W_WAIT; the scheduler (emu_sched.c wait_ready) resumes it when the condition holds. ---------- */
static inline uint32_t gws_id(const Wave *w, const Inst *in) { return ((w->s[ENC_M0] >> 16 & 63) + (in->offset0 & 63)) & (NGWS - 1); }
static inline uint32_t gws_data(const Wave *w, const Inst *in) {
  uint64_t ex = rd_exec(w);
  return w->v[(in->data0 - 256) * MAXLANES + (ex ? __builtin_ctzll(ex) : 0)];
}
static void wave_block(Wave *w, int kind, uint32_t arg, uint32_t tag) {
  w->state = W_WAIT; w->wait_kind = kind; w->wait_arg = arg; w->wait_tag = tag; w->wait_pc = w->pc0;
}
static void h_gws_init(Wave *w, const Inst *in) { uint32_t r = gws_id(w, in); w->c->gws_cnt[r] = gws_data(w, in); w->c->gws_flag[r] = 0; }
static void h_gws_sema_v(Wave *w, const Inst *in) { w->c->gws_cnt[gws_id(w, in)]++; }
static void h_gws_sema_br(Wave *w, const Inst *in) { w->c->gws_cnt[gws_id(w, in)] += gws_data(w, in); }
static void h_gws_release_all(Wave *w, const Inst *in) { w->c->gws_rel[gws_id(w, in)]++; }   /* frees the waves waiting in SEMA_P now */
static void h_gws_sema_p(Wave *w, const Inst *in) {
  Ctx *c = w->c; uint32_t r = gws_id(w, in);
  if ((int32_t)c->gws_cnt[r] > 0) c->gws_cnt[r]--; else wave_block(w, WK_SEMA, r, c->gws_rel[r]);
}
/* counter = waves still to arrive - 1 (INIT's value): an arriving wave decrements it and waits for the flag to change; the
 * wave that finds it <= 0 is the last: it flips the flag (releasing the others), reloads the counter with its value and goes on */
static void h_gws_barrier(Wave *w, const Inst *in) {
  Ctx *c = w->c; uint32_t r = gws_id(w, in);
  if ((int32_t)c->gws_cnt[r] <= 0) { c->gws_flag[r] ^= 1; c->gws_cnt[r] = gws_data(w, in); }
  else { c->gws_cnt[r]--; wave_block(w, WK_BARRIER, r, c->gws_flag[r]); }
}
/* ---------- DS_ORDERED_COUNT (no pseudocode in the wheel; fields as LLVM encodes them for gfx10+): OFFSET0[7:2] = ordered
 * count index, OFFSET1[0] wave_release, [1] wave_done, [4] 0 add / 1 swap, [7:6] dword count - 1; M0[15:0] the byte address
 * of the first dword in the ordered-count memory (GDS_BYTES, zero at dispatch start). A wave's turn on an index comes when
 * every wave created before it (dispatch order) has released that index or ended; then active lane i < count adds (swaps)
 * DATA0 into dword M0 + 4i and gets the old value in VDST. wave_release passes the turn on; wave_done adds nothing (a wave
 * that released can not get the turn back). ---------- */
static uint64_t ordered_blocker(Ctx *c, const Wave *w, uint32_t idx) {   /* earliest earlier wave holding idx, or UINT64_MAX */
  uint64_t best = UINT64_MAX;
  for (uint32_t k = 0; k < c->nres; k++) {
    const Slot *s = &c->slots[c->res[k]];
    if (s->ordinal0 > w->ordinal) break;
    for (uint32_t i = 0; i < c->nwaves; i++) {
      const Wave *v = &s->m.waves[i];
      if (v->ordinal < w->ordinal && v->state != W_DONE && !(v->released >> idx & 1) && v->ordinal < best) best = v->ordinal;
    }
  }
  return best;
}
static void ordered_op(Wave *w, const Inst *in) {
  uint32_t o1 = in->offset1, n = (o1 >> 6 & 3) + 1, base = w->s[ENC_M0] & 0xffff, *d = w->v + (in->vdst - 256) * MAXLANES;
  const uint32_t *src = w->v + (in->data0 - 256) * MAXLANES;
  uint64_t ex = rd_exec(w);
  for (uint32_t i = 0; i < n; i++) {
    if (!(ex >> i & 1)) continue;
    uint32_t *p = &w->c->gds[(base >> 2) + i], old = *p, val = src[i];
    *p = o1 >> 4 & 1 ? val : old + val; d[i] = old;
  }
  if (o1 & 1) w->released |= 1ull << (in->offset0 >> 2 & 63);
}
static void h_ds_ordered(Wave *w, const Inst *in) {
  uint32_t n = (in->offset1 >> 6 & 3) + 1, base = w->s[ENC_M0] & 0xffff;
  uint64_t ex = rd_exec(w);
  for (uint32_t i = 0; i < n; i++)   /* checked at issue: M0 and EXEC can not change while the wave waits */
    if (ex >> i & 1 && ((base & 3) || base + 4 * i + 4 > GDS_BYTES)) {
      set_fault(w, K_ATOMIC, SP_GDS, base + 4 * i, 4, (int)i, GDS_BYTES, MSG_ORDERED_GDS); return;
    }
  uint32_t idx = in->offset0 >> 2 & 63;
  if (ordered_blocker(w->c, w, idx) != UINT64_MAX) wave_block(w, WK_ORDERED, idx, 0); else ordered_op(w, in);
}
/* S_SUBVECTOR_LOOP_BEGIN / S_SUBVECTOR_LOOP_END (RDNA3 SOPK): a wave64 runs the block between them as two 32-lane passes,
 * low half first; SDST keeps the EXEC half that is not running, SIMM16 is a branch offset in dwords from the next
 * instruction (BEGIN: to the END; END: back to the block). Exact rule (docs/emu.md; pybackend.subvector_loop is the twin):
 * BEGIN: SDST = EXEC_HI, EXEC_HI = 0, branch if EXEC_LO == 0.
 * END: EXEC_HI != 0 (the high pass ended): EXEC_LO = SDST. Else (the low pass ended): if SDST != 0, SDST = EXEC_LO,
 *      EXEC_LO = 0, EXEC_HI = the old SDST and branch; SDST == 0 (no high lanes): fall through.
 * EXEC_HI reads as 0 in wave32, so there the block runs once (skipped when EXEC is 0) */
static inline void subvec_branch(Wave *w, const Inst *in) { w->pc = w->pc0 + 4 + (uint64_t)((int64_t)(int16_t)in->simm16 * 4); }
static void h_subvec_begin(Wave *w, const Inst *in) {
  uint32_t hi = w->c->wave_size == 64 ? w->s[SREG_EXEC_HI] : 0;
  w->s[SREG_EXEC_HI] = 0; sdst_write(w, in->sdst, hi, 32);
  if (!w->s[SREG_EXEC_LO]) subvec_branch(w, in);
}
static void h_subvec_end(Wave *w, const Inst *in) {
  uint32_t sd = (uint32_t)scalar_src(w, in, in->sdst, 32, 0), hi = w->c->wave_size == 64 ? w->s[SREG_EXEC_HI] : 0;
  if (hi) { w->s[SREG_EXEC_LO] = sd; return; }
  if (!sd) return;
  sdst_write(w, in->sdst, w->s[SREG_EXEC_LO], 32); w->s[SREG_EXEC_LO] = 0; w->s[SREG_EXEC_HI] = sd; subvec_branch(w, in);
}
