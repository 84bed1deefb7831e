/* The DMA engines' bulk copy (mock/uaccess.py move): memcpy between two ranges of this process that returns -1 instead of
 * crashing when either turns out not to be memory (the CPU unmapped or protected it while the GPU still maps it). A fault
 * inside a copy jumps back out of it; the handler is installed only while a copy runs (the first to start installs it, the
 * last to end puts the previous one back, unless someone replaced it meanwhile), so Python's faulthandler, which pytest
 * installs, keeps reporting every other crash, and a fault of another thread meanwhile reaches it too: the handler restores
 * it and returns, and the faulting instruction runs again. Called through ctypes.PyDLL: the GIL stays held (a copy of a few
 * MB takes well under a millisecond; handing the GIL back and forth around it cost more than the copy). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

static __thread sigjmp_buf *volatile jump;   /* set while this thread copies */
static struct sigaction prev[2];    /* SIGSEGV's and SIGBUS's handlers before the copies in progress */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int copying;                 /* copies in progress (guarded by lock) */

static void on_fault(int sig, siginfo_t *si, void *uc) {
  (void)si; (void)uc;
  if (jump) siglongjmp(*jump, 1);
  sigaction(sig, &prev[sig == SIGBUS], 0);
}

static void enter(void) {
  pthread_mutex_lock(&lock);
  if (!copying++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault; sa.sa_flags = SA_SIGINFO | SA_NODEFER;   /* NODEFER: the jump out leaves no signal blocked */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &prev[0]); sigaction(SIGBUS, &sa, &prev[1]);
  }
  pthread_mutex_unlock(&lock);
}

static void leave(void) {
  pthread_mutex_lock(&lock);
  if (!--copying)
    for (int i = 0; i < 2; i++) {
      struct sigaction cur;
      int sig = i ? SIGBUS : SIGSEGV;
      if (!sigaction(sig, 0, &cur) && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault) sigaction(sig, &prev[i], 0);
    }
  pthread_mutex_unlock(&lock);
}

/* fn(arg) with a fault inside it caught: 0, or -1 if a fault stopped it (what it did before the fault stays done). Also the
 * SDMA fast path's guard (mock/sdma.c) */
int mock_guard(void (*fn)(void *), void *arg) {
  sigjmp_buf here;
  volatile int r = 0;
  enter();
  if (!sigsetjmp(here, 0)) {
    jump = &here;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);   /* the handler sees `jump` before fn starts, and until it ends */
    fn(arg);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } else r = -1;
  jump = 0;
  leave();
  return r;
}

typedef struct { void *dst; const void *src; size_t n; } Copy;
static void copy(void *arg) { Copy *c = arg; memcpy(c->dst, c->src, c->n); }

/* copy n bytes from src to dst (non-overlapping): 0, or -1 if a fault stopped it (some bytes may have been copied) */
int mock_copy(void *dst, const void *src, size_t n) {
  Copy c = {dst, src, n};
  return mock_guard(copy, &c);
}
