/* The device thread's idle wait (mock/device.py, DeviceThread): called through ctypes, so the GIL is released while it
 * waits, and tinygrad's Python runs undisturbed until a doorbell (or another watched word) changes. The words are set by
 * mock_idle_set (per thread) and the wait takes no arguments: the device thread may allocate no GC-tracked object between
 * its rounds, and a ctypes call with arguments can (the argument tuple). */
#include <stdint.h>
#include <time.h>

int mock_sdma_run(void *q);   /* mock/sdma.c */
extern uint64_t mock_sdma_ns;
uint64_t mock_idle_copy_ns;   /* the part of mock_sdma_ns copied from here, outside the device thread's rounds (mock/sdma.py copy_totals) */

static __thread const uint64_t *const *w_addrs;
static __thread uint64_t *w_last;
static __thread void *const *w_sdma;
static __thread int w_n;
static __thread uint32_t w_min_us, w_max_us, w_timeout_us;

/* what this thread's next mock_idle_wait watches: the n 64-bit words at addrs[i] against last[i] (the arrays stay alive until
 * then); only words the caller owns (doorbell pages, its own counters), never guest pointers. sdma[i], if not NULL, is the
 * mock/sdma.c state of the SDMA queue whose doorbell addrs[i] is: its packets run here when it moves */
void mock_idle_set(const uint64_t *const *addrs, uint64_t *last, void *const *sdma, int n, uint32_t min_us, uint32_t max_us, uint32_t timeout_us) {
  w_addrs = addrs; w_last = last; w_sdma = sdma; w_n = n; w_min_us = min_us; w_max_us = max_us; w_timeout_us = timeout_us;
}

/* 1 as soon as a watched word differs from its value and an SDMA queue's packets behind it cannot all run in C (or another word
 * moved: the words without a queue are checked first, so an ioctl that creates or destroys a queue is seen before its doorbell),
 * 0 once timeout_us have passed. The words are read every min_us for the first millisecond after the last change (tinygrad's
 * next submission usually follows within it), then the nap doubles up to max_us (cheap when idle for long). */
int mock_idle_wait(void) {
  struct timespec t0, now;
  uint32_t nap = w_min_us;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    for (int i = 0; i < w_n; i++) if (!w_sdma[i] && __atomic_load_n(w_addrs[i], __ATOMIC_ACQUIRE) != w_last[i]) return 1;
    for (int i = 0; i < w_n; i++) {
      uint64_t v = __atomic_load_n(w_addrs[i], __ATOMIC_ACQUIRE);
      if (!w_sdma[i] || v == w_last[i]) continue;
      uint64_t ns = mock_sdma_ns;
      int r = mock_sdma_run(w_sdma[i]);
      mock_idle_copy_ns += mock_sdma_ns - ns;
      if (r) return 1;
      w_last[i] = v; nap = w_min_us; clock_gettime(CLOCK_MONOTONIC, &t0);   /* caught up with it: wait on */
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t us = (int64_t)(now.tv_sec - t0.tv_sec) * 1000000 + (now.tv_nsec - t0.tv_nsec) / 1000;
    if (us >= (int64_t)w_timeout_us) return 0;
    if (us > 1000 && nap < w_max_us) nap = nap * 2 < w_max_us ? nap * 2 : w_max_us;
    struct timespec ts = {0, (long)nap * 1000};
    nanosleep(&ts, 0);
  }
}
