// stress_cxx.cc — C++ objects whose constructors and destructors allocate,
// at every point of a process's life the runtime runs them: static objects
// (constructed before main, destroyed after it returns), a function-local
// static (constructed on first use, destroyed at exit), thread_local
// objects (destroyed as their thread exits, and at exit for the main
// thread's), and an atexit handler. Destructors also allocate a temporary.
// Every call is logged as an "ev" line (testprog.h) in the order it was
// made; the log is written by the object destroyed last, so the test sees
// the whole life, after main, too. All allocation happens on one thread at
// a time, so the log's order is the capture's.
#include "testprog.h"

#include <malloc.h>
#include <string.h>
#include <vector>

static size_t us(void *p) { return malloc_usable_size(p); }

// new and delete are recorded as themselves (preload/hooks_cxx.c); deleting
// a complete object, and std::allocator's deallocate, are sized in C++14 on.
#if __cpp_sized_deallocation
#define DEL_SIZED "operator_delete_sized"
#else
#define DEL_SIZED "operator_delete"
#endif

// Constructed first and destroyed last (init_priority): writes the log.
struct Flusher {
    ~Flusher()
    {
        tp_note("result static destructors done");
        tp_expect();
        tp_flush();
    }
};
__attribute__((init_priority(101))) static Flusher flusher;

struct Table {
    int *slots;
    char *name;
    std::vector<double> *vals;
    int n;
    USER explicit Table(int count);
    USER ~Table();
};

Table::Table(int count) : n(count)
{
    slots = new int[count];
    tp_alloc("operator_new_array", slots, count * sizeof(int), us(slots), NULL);
    for (int i = 0; i < count; i++)
        slots[i] = i;
    name = strdup("a table");     // libc's malloc, our stack
    TP_CHECK(name);
    tp_alloc("malloc", name, 8, us(name), NULL);
    vals = new std::vector<double>(count, 1.5);
    tp_alloc("operator_new", vals, sizeof *vals, us(vals), NULL);
    tp_alloc("operator_new", vals->data(), count * sizeof(double), us(vals->data()), NULL);
}

Table::~Table()
{
    // A temporary while tearing down.
    char *tmp = static_cast<char *>(malloc(64 + n));
    TP_CHECK(tmp);
    tp_alloc("malloc", tmp, 64 + n, us(tmp), NULL);
    snprintf(tmp, 64, "%s of %d", name, n);
    TP_CHECK(slots[n - 1] == n - 1 && (*vals)[n - 1] == 1.5);
    tp_free("free", tmp, NULL);
    free(tmp);
    tp_free(DEL_SIZED, vals->data(), NULL);
    tp_delete(DEL_SIZED, vals);
    tp_delete_array("operator_delete_array", slots);
    tp_free("free", name, NULL);
    free(name);
}

// Static objects: constructed in this order before main, destroyed in the
// reverse order after it.
static Table table_a(100);
static Table table_b(333);

USER static Table &lazy()
{
    static Table t(50);           // guarded: the first caller constructs it
    return t;
}

struct PerThread {
    Table t;
    USER PerThread();
};
PerThread::PerThread() : t(7) {}
static thread_local PerThread per_thread;

USER static void at_exit_handler()
{
    void *p = malloc(4321);
    TP_CHECK(p);
    tp_alloc("malloc", p, 4321, us(p), NULL);
    tp_free("free", p, NULL);
    free(p);
}

static void *thread_main(void *)
{
    // First use constructs this thread's PerThread; it is destroyed when
    // the thread exits. The function-local static is already built.
    TP_CHECK(per_thread.t.n == 7);
    TP_CHECK(lazy().n == 50);
    return NULL;
}

int main()
{
    tp_range();
    TP_CHECK(table_a.n == 100 && table_b.n == 333);
    TP_CHECK(lazy().n == 50);
    pthread_t th;
    for (int i = 0; i < 3; i++) {      // one thread at a time: a fixed order
        TP_CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0);
        TP_CHECK(pthread_join(th, NULL) == 0);
    }
    TP_CHECK(per_thread.t.n == 7);      // the main thread's, destroyed in exit()
    TP_CHECK(atexit(at_exit_handler) == 0);
    tp_note("result main done");
    return 0;
}
