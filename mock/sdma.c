/* The SDMA engine's fast path (mock/sdma.py SDMAQueue): the packets tinygrad's copies use, executed in C, by the queue's Python
 * step holding the GIL and by the device thread's idle wait without it (mock/idle.c), so a copy submitted while tinygrad's
 * Python runs starts at once and runs beside it. A packet runs here only when it completes here: NOP, COPY_LINEAR between
 * ranges that do not overlap, FENCE, WRITE, TIMESTAMP, a POLL_REGMEM whose compare holds, each address inside the GPU's
 * mapped ranges (the snapshot `spans`, taken at map version `version`), and TRAP, whose context goes to `trap_ctx` for Python
 * to raise the KFD event (SDMAQueue.take_traps, from each round and from WAIT_EVENTS). Anything else stops the run at that
 * packet, and the Python queue executes it: a poll that must wait, an unknown or malformed packet, an address outside the
 * ranges, memory that faults (mock/copy.c's guard: the packet is run again by Python, which reports it), a map changed since
 * the snapshot, a TRAP while 16 are untaken. The Python handlers are the reference and the only place errors are reported. */
#include <stdint.h>
#include <string.h>
#include <time.h>

int mock_guard(void (*fn)(void *), void *arg);   /* mock/copy.c */

typedef struct {   /* one queue; layout mirrored in mock/sdma.py (_Fast) */
  uint64_t ring, ring_size, rptr_addr;          /* the ring (host address == GPU VA, bytes) and where the read pointer is published */
  const uint64_t *doorbell;                     /* the write pointer in bytes (tinygrad's doorbell store) */
  uint64_t rptr;                                /* the next byte to execute: the queue's read pointer, Python's too */
  const uint64_t *spans; uint64_t nspans;       /* the GPU's mapped ranges as sorted start, end pairs */
  uint64_t version; const uint64_t *live;       /* the map version of `spans`, and where the map's current version is */
  uint32_t op_nop, op_copy, op_fence, op_poll, op_timestamp, op_write, op_trap, sub_copy, sub_timestamp, count_mask, budget;
  uint32_t trap_ctx[16]; uint64_t traps, traps_taken;   /* the contexts of the TRAPs run (the last 16), how many; taken by Python */
} SdmaQ;

/* COPY_LINEAR totals of every queue's C copies (mock/sdma.py copy_totals adds the Python ones) */
uint64_t mock_sdma_copies, mock_sdma_bytes, mock_sdma_ns;

static int in_spans(const SdmaQ *q, uint64_t a, uint64_t n) {
  if (a + n < a) return 0;
  uint64_t lo = 0, hi = q->nspans;   /* the first span ending after a */
  while (lo < hi) { uint64_t m = (lo + hi) / 2; if (q->spans[2 * m + 1] <= a) lo = m + 1; else hi = m; }
  return lo < q->nspans && q->spans[2 * lo] <= a && a + n <= q->spans[2 * lo + 1];
}
static uint32_t ring_dw(const SdmaQ *q, uint64_t pos) { return *(const volatile uint32_t *)(uintptr_t)(q->ring + pos % q->ring_size); }
static uint64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec; }
static int compare(uint32_t func, uint32_t v, uint32_t ref) {   /* mock/pm4.py COMPARE */
  switch (func) { case 0: return 1; case 1: return v < ref; case 2: return v <= ref; case 3: return v == ref; case 4: return v != ref;
                  case 5: return v >= ref; default: return v > ref; }
}

typedef struct { SdmaQ *q; int stop; } Run;
/* executes packets from q->rptr: stop 0 caught up with the write pointer, 1 at a packet for Python, 2 out of budget */
static void run(void *arg) {
  Run *r = arg; SdmaQ *q = r->q;
  uint64_t start = q->rptr;
  r->stop = 1;
  if (!in_spans(q, q->ring, q->ring_size) || !in_spans(q, q->rptr_addr, 8)) return;
  for (uint32_t k = 0;; k++) {
    uint64_t pos = q->rptr, end = __atomic_load_n(q->doorbell, __ATOMIC_ACQUIRE);
    if (pos >= end) { r->stop = 0; break; }
    if (k == q->budget) { r->stop = 2; break; }
    if (__atomic_load_n(q->live, __ATOMIC_ACQUIRE) != q->version || (pos | end) & 3 || end - pos > q->ring_size) break;
    uint32_t h = ring_dw(q, pos), op = h & 0xff, sub = h >> 8 & 0xff, n, d[8] = {0};
    if (op == q->op_nop) n = 1 + (h >> 16 & 0x3fff);
    else if (op == q->op_copy) n = 7;
    else if (op == q->op_fence) n = 4;
    else if (op == q->op_poll) n = 6;
    else if (op == q->op_timestamp) n = 3;
    else if (op == q->op_trap) n = 2;
    else if (op == q->op_write && pos + 16 <= end) n = 5 + (ring_dw(q, pos + 12) & 0xfffff);
    else break;
    if (4ull * n >= q->ring_size || end - pos < 4ull * n) break;
    for (uint32_t i = 1; i < n && i < 8; i++) d[i] = ring_dw(q, pos + 4 * i);
    uint64_t a = d[1] | (uint64_t)d[2] << 32;
    if (op == q->op_copy) {
      uint64_t size = (d[1] & q->count_mask) + 1, src = d[3] | (uint64_t)d[4] << 32, dst = d[5] | (uint64_t)d[6] << 32;
      if (sub != q->sub_copy || !in_spans(q, dst, size) || !in_spans(q, src, size) || !(dst + size <= src || src + size <= dst)) break;
      uint64_t t0 = now_ns();
      memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, size);
      __atomic_fetch_add(&mock_sdma_ns, now_ns() - t0, __ATOMIC_RELAXED); __atomic_fetch_add(&mock_sdma_bytes, size, __ATOMIC_RELAXED);
      __atomic_fetch_add(&mock_sdma_copies, 1, __ATOMIC_RELAXED);
    } else if (op == q->op_fence) {
      if (!in_spans(q, a, 4)) break;
      __atomic_store_n((uint32_t *)(uintptr_t)a, d[3], __ATOMIC_RELEASE);
    } else if (op == q->op_poll) {
      uint32_t func = h >> 28 & 7;
      if (!(h >> 31) || func > 6 || !in_spans(q, a, 4) || !compare(func, __atomic_load_n((uint32_t *)(uintptr_t)a, __ATOMIC_ACQUIRE) & d[4], d[3])) break;
    } else if (op == q->op_timestamp) {
      if (sub != q->sub_timestamp || !in_spans(q, a, 8)) break;
      __atomic_store_n((uint64_t *)(uintptr_t)a, now_ns() / 10, __ATOMIC_RELEASE);   /* mock/gpu.py gpu_clock: 100 MHz */
    } else if (op == q->op_trap) {
      if (q->traps - __atomic_load_n(&q->traps_taken, __ATOMIC_ACQUIRE) >= 16) break;
      q->trap_ctx[q->traps % 16] = d[1] & 0xfffffff;
      __atomic_store_n(&q->traps, q->traps + 1, __ATOMIC_RELEASE);
    } else if (op == q->op_write) {
      if (!in_spans(q, a, 4ull * (n - 4))) break;
      for (uint32_t i = 4; i < n; i++) ((volatile uint32_t *)(uintptr_t)a)[i - 4] = ring_dw(q, pos + 4 * i);
    }
    q->rptr = pos + 4ull * n;
  }
  if (q->rptr != start) __atomic_store_n((uint64_t *)(uintptr_t)q->rptr_addr, q->rptr, __ATOMIC_RELEASE);   /* tinygrad polls it for ring space */
}

/* runs q's packets as far as C can: 0 caught up with the write pointer, 1 stopped at a packet Python must execute (or one whose
 * memory faulted: the packets before it are done), 2 stopped after `budget` packets */
int mock_sdma_run(SdmaQ *q) {
  Run r = {q, 1};
  return mock_guard(run, &r) ? 1 : r.stop;
}
