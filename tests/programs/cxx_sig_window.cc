// cxx_sig_window.cc — `cxx_sig_window ROUNDS PERIOD_US`: a timer signal whose
// handler reports a block (custom-heap API: no malloc in the handler) while
// the thread loops over new/delete, so that many signals land inside the
// real operator new or delete, where the shim passes the operator's own
// malloc and free through. The handler's events are not the operator's: each
// must be recorded or counted as nested, never silently passed, and the
// operators themselves must be counted once each.
// stdout: the USER range, "handled N", "heap H", "news N", "deletes N".
#include "testprog.h"
#include "tp_signal.h"

#include "preload/vheap.h"

static int heap;
static unsigned long handled;      // atomic

USER static void on_usr1(int)
{
    unsigned long k = __atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
    // A made-up block: the shim never touches custom-heap memory.
    vheap_alloc(heap, (const void *)(uintptr_t)(0x100000000000ull + 64 * k), 64, 64);
}

static char *volatile sink;

USER static void churn(long rounds)
{
    for (long i = 0; i < rounds; i++) {
        char *p = new char[24 + (i & 255)];
        sink = p;
        delete[] p;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cxx_sig_window ROUNDS PERIOD_US\n");
        return 2;
    }
    long rounds = atol(argv[1]);
    long period_ns = atol(argv[2]) * 1000;
    TP_CHECK(rounds > 0 && period_ns > 0 && period_ns < 1000000000);
    heap = vheap_heap_create("signals", 0, NULL, 0);   // the lookup, here
    tp_handle(SIGUSR1, on_usr1, SA_RESTART);
    timer_t tm = tp_thread_timer(SIGUSR1, period_ns);
    churn(rounds);
    tp_thread_timer_stop(tm, SIGUSR1);
    tp_range();
    tp_note("handled %lu", __atomic_load_n(&handled, __ATOMIC_RELAXED));
    tp_note("heap %d", heap);
    tp_note("news %ld", rounds);
    tp_note("deletes %ld", rounds);
    tp_flush();
    return 0;
}
