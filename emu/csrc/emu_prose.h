/* emu_prose.h: the hand-written semantics. Only entries whose pseudocode is prose or absent (see PROSE_C in gen_c.py and
 * the list in docs/emu.md): program end, barrier, waits (execution is in order, so waits complete immediately), hardware
 * registers, traps. */
static void h_nop(Wave *w, const Inst *in) { (void)w; (void)in; }
static void h_unsupported(Wave *w, const Inst *in) { (void)in; set_status(w, ST_UNSUPPORTED, "instruction has no semantics in this build"); }
static void h_code_end(Wave *w, const Inst *in) { (void)in; set_status(w, ST_INVALID, "executed S_CODE_END (padding after the kernel's last instruction)"); }
static void h_trap(Wave *w, const Inst *in) { (void)in; set_status(w, ST_UNSUPPORTED, "S_TRAP executed: traps are reported as errors, no trap handler is modelled"); }
static void h_barrier(Wave *w, const Inst *in) { (void)in; w->state = W_BARRIER; }
static void h_endpgm(Wave *w, const Inst *in) {
  (void)in;
  Ctx *c = w->c; EmuArgs *a = c->a;
  w->state = W_DONE;
  if (w->id == 0 && c->wg[0] == 0 && c->wg[1] == 0 && c->wg[2] == 0 && a->cap_sgpr) {
    memcpy(a->cap_sgpr, w->s, sizeof(w->s));
    memcpy(a->cap_vgpr, w->v, 256 * MAXLANES * sizeof(uint32_t));
    a->cap_misc[0] = rd_exec(w); a->cap_misc[1] = rd_vcc(w); a->cap_misc[2] = w->scc; a->cap_misc[3] = w->s[125];
    a->cap_misc[4] = w->pc0; a->cap_misc[5] = 1;
  }
}
/* S_GETREG_B32: simm16 = {size-1[15:11], offset[10:6], id[5:0]}; modelled registers read as the hardware's reset values
 * (MODE: round-to-nearest, denormals on; HW_ID: wave id in the workgroup), the rest as 0 */
static void h_getreg(Wave *w, const Inst *in) {
  uint32_t id = in->simm16 & 63, off = (in->simm16 >> 6) & 31, size = ((in->simm16 >> 11) & 31) + 1, v = 0;
  if (id == 1) v = 0xf0;                   /* HW_REG_MODE: FP_DENORM = 3 for f32 and f64/f16 */
  else if (id == 23) v = (uint32_t)w->id;  /* HW_REG_HW_ID1: WAVE_ID */
  v = (v >> off) & (size >= 32 ? 0xffffffffu : (1u << size) - 1);
  sdst_write(w, in->sdst, v, 32);
}
static void h_setreg(Wave *w, const Inst *in) { (void)w; (void)in; }   /* MODE writes (rounding, denormals) are not modelled */
