/* emu_buffer.h: buffer instructions through a resource descriptor (V#). The C twin of mockgpu/emu/buffer.py (Desc,
 * map_access): the generated VS_* macros give the V# fields of this arch, buf_setup decodes them once per instruction,
 * buf_lane forms a lane's address, and MEM accesses of the pseudocode (space SP_BUFFER) go through buf_map, which applies
 * the swizzle and the range check (out of range: loads read 0, stores and atomics are dropped; in range but unmapped: a
 * global fault like any other). */

struct Buf {
  uint64_t base;                 /* V# base + SGPR offset */
  uint32_t stride, nrec, elem, idx_stride, add_tid, oob, fmt;
  uint32_t ioff, idxen, offen; int vaddr;
  uint32_t idx, off; uint64_t addr;   /* current lane: record index, offset, linear address the pseudocode starts from */
};

/* RDNA4 buffer pseudocode computes its address with this built-in; buf_lane put it in ADDR (scalar S_BUFFER_LOAD* also
 * calls it and is not modelled through it) */
#define PC_EXT_CalcBufferAddr(s, ...) buf_calc_addr(s)
static inline uint64_t buf_calc_addr(PcState *s) {
  if (((Wave *)s->user)->c->space == SP_BUFFER) return s->ADDR;
  s->fault = 2; s->fault_msg = "CalcBufferAddr outside a vector buffer instruction (scalar buffer loads are not modelled)"; return 0;
}

static int buf_setup(Wave *w, const Inst *in, Buf *b, int rsrc, int soffset, int ioff, int idxen, int offen, int vaddr, int tfe) {
  if (UNLIKELY(tfe)) { set_status(w, ST_UNSUPPORTED, "buffer instruction with TFE (fail status VGPR) is not modelled"); return 0; }
  if (UNLIKELY(rsrc + 3 >= NSREG)) { set_status(w, ST_UNSUPPORTED, "buffer resource descriptor register out of range"); return 0; }
  const uint32_t *d = w->s + rsrc;
  uint32_t so = (uint32_t)scalar_src(w, in, soffset, 32, 0);
  b->base = ((uint64_t)VS_BASE_ADDRESS(d) | (uint64_t)VS_BASE_ADDRESS_HI(d) << 32) + so;
  b->stride = VS_STRIDE(d); b->nrec = VS_NUM_RECORDS(d); b->elem = VS_ELEM(d); b->idx_stride = 8u << VS_INDEX_STRIDE(d);
  b->add_tid = VS_ADD_TID_ENABLE(d); b->oob = VS_OOB_SELECT(d); b->fmt = VS_FMT(d);
  b->ioff = (uint32_t)ioff; b->idxen = (uint32_t)idxen; b->offen = (uint32_t)offen; b->vaddr = vaddr;
  return !w->c->status;
}

/* lane L: index = VGPR index (idxen) + lane (ADD_TID_ENABLE), offset = instruction offset + VGPR offset (offen; the VGPR
 * after the index when both are enabled); returns the linear address of offset 0 of the access */
static inline uint64_t buf_lane(Wave *w, Buf *b, int L) {
  const uint32_t *va = w->v + (b->vaddr & 255) * MAXLANES;
  b->idx = (b->idxen ? va[L] : 0) + (b->add_tid ? (uint32_t)L : 0);
  b->off = b->ioff + (b->offen ? w->v[((b->vaddr + (int)b->idxen) & 255) * MAXLANES + L] : 0);
  b->addr = b->base + (uint64_t)b->idx * b->stride + b->off;
  return b->addr;
}

/* the pseudocode's address a (linear from buf_lane's) -> the physical address; 0 when out of range */
static inline int buf_map(const Buf *b, uint64_t a, uint64_t *p) {
  uint32_t off = b->off + (uint32_t)(a - b->addr), idx = b->idx;
  uint64_t rel = b->elem ? ((uint64_t)(idx / b->idx_stride) * b->stride + (uint64_t)(off / b->elem) * b->elem) * b->idx_stride
                           + (uint64_t)(idx % b->idx_stride) * b->elem + off % b->elem
                         : (uint64_t)idx * b->stride + off;
  *p = b->base + rel;
  switch (b->oob) {
    case 0: return idx < b->nrec && off < b->stride;
    case 1: return idx < b->nrec;
    case 2: return b->nrec != 0;
    case 3: return rel < b->nrec;
    default: return b->add_tid ? 1 : b->stride == 0 ? off < b->nrec : idx < b->nrec;
  }
}
static uint64_t b_rd(PcState *s, uint64_t a, int n) {
  uint64_t p; if (!buf_map(((Wave *)s->user)->c->buf, a, &p)) return 0;
  return g_rd(s, p, n);
}
static void b_wr(PcState *s, uint64_t a, int n, uint64_t v) {
  uint64_t p; if (buf_map(((Wave *)s->user)->c->buf, a, &p)) g_wr(s, p, n, v);
}
