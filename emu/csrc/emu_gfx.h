/* emu_gfx.h: the graphics-flavoured encodings whose pseudocode is prose or absent (PROSE_C in gen_c.py, docs/emu.md
 * "Graphics encodings"): LDS direct loads (LDSDIR / RDNA4 VDSDIR) and exports (EXP / VEXPORT). VINTERP runs pcode's C through
 * a generated handler (gen_gfx.py). */
#include <stdio.h>

/* LDS_DIRECT_LOAD / DS_DIRECT_LOAD: one LDS value at byte address M0[15:0], type M0[18:16] (0 u8, 1 u16, 2 b32, 4 i8, 5 i16),
 * zero/sign-extended and written to VDST of every active lane */
static const int8_t LDS_DIRECT_BYTES[8] = {1, 2, 4, 0, 1, 2, 0, 0};
static void h_lds_direct_load(Wave *w, const Inst *in) {
  uint32_t m0 = w->s[125], ty = (m0 >> 16) & 7; int n = LDS_DIRECT_BYTES[ty];
  uint64_t ex = rd_exec(w);
  if (!n) { set_status(w, ST_INVALID, MSG_LDS_DIRECT_TYPE); return; }
  PC_STATE(s, w); s.laneId = ex ? (uint64_t)__builtin_ctzll(ex) : 0;
  uint64_t v = l_rd(&s, m0 & 0xffff, n);
  if (s.fault) return;
  if (ty >= 4) v = (uint64_t)(int64_t)sext(v, 8 * n);
  uint32_t *d = w->v + (in->vdst - 256) * MAXLANES;
  while (ex) { int L = __builtin_ctzll(ex); ex &= ex - 1; d[L] = (uint32_t)v; }
}
/* EXP / VEXPORT: every target (MRT, Z, NULL, position, primitive) is a graphics pipeline output; a compute wave has none */
static void h_export(Wave *w, const Inst *in) {
  char msg[160];
  snprintf(msg, sizeof(msg), "EXP target=%d en=0x%x done=%d: %s", in->target, in->en, in->done, MSG_EXPORT);
  set_status(w, ST_UNSUPPORTED, msg);
}
