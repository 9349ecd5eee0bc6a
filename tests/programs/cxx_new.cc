// cxx_new.cc — every replaceable global operator new and delete, called a
// known number of times with known sizes through new/delete expressions and
// explicit operator calls; nothrow new returning NULL; std::bad_alloc thrown
// through the hook and caught, with allocations after it. Each call is
// logged (testprog.h) under the name vheap records for it. Built twice:
// cxx_new against libstdc++ (whose operator new calls malloc: not to be
// counted twice) and cxx_new_jemalloc with -ljemalloc (whose operator new
// never calls malloc).
#include "testprog.h"

#include <malloc.h>
#include <new>

static size_t us(const void *p) { return malloc_usable_size(const_cast<void *>(p)); }

struct Obj { char b[40]; };
#if __cpp_aligned_new
struct alignas(64) Wide { char c[200]; };   // over-aligned: operator new(size, align)
#endif

// What a delete expression of a complete object calls.
#if __cpp_sized_deallocation
#define DEL_OBJ "operator_delete_sized"
#define DEL_WIDE "operator_delete_sized_aligned"
#else
#define DEL_OBJ "operator_delete"
#define DEL_WIDE "operator_delete_aligned"
#endif

static void *volatile sink;         // where thrown-away results go
static volatile size_t huge_v = (size_t)1 << 62;   // too big for any allocator

USER static void cxxnew_expressions()
{
    Obj *o = new Obj;
    tp_alloc("operator_new", o, sizeof(Obj), us(o), NULL);
    int *a = new int[25];
    tp_alloc("operator_new_array", a, 25 * sizeof(int), us(a), NULL);
    Obj *n = new (std::nothrow) Obj;
    TP_CHECK(n);
    tp_alloc("operator_new_nothrow", n, sizeof(Obj), us(n), NULL);
    int *na = new (std::nothrow) int[7];
    TP_CHECK(na);
    tp_alloc("operator_new_array_nothrow", na, 7 * sizeof(int), us(na), NULL);
#if __cpp_aligned_new
    Wide *w = new Wide;
    tp_alloc("operator_new_aligned", w, sizeof(Wide), us(w), "align=64");
    Wide *wa = new Wide[2];           // trivially destructible: no array cookie
    tp_alloc("operator_new_array_aligned", wa, 2 * sizeof(Wide), us(wa), "align=64");
    Wide *nw = new (std::nothrow) Wide;
    TP_CHECK(nw);
    tp_alloc("operator_new_aligned_nothrow", nw, sizeof(Wide), us(nw), "align=64");
    Wide *nwa = new (std::nothrow) Wide[3];
    TP_CHECK(nwa);
    tp_alloc("operator_new_array_aligned_nothrow", nwa, 3 * sizeof(Wide), us(nwa), "align=64");
#endif
    tp_delete(DEL_OBJ, o);
    tp_delete_array("operator_delete_array", a);
    tp_delete(DEL_OBJ, n);
    tp_delete_array("operator_delete_array", na);
#if __cpp_aligned_new
    tp_delete(DEL_WIDE, w);
    tp_delete_array("operator_delete_array_aligned", wa);
    tp_delete(DEL_WIDE, nw);
    tp_delete_array("operator_delete_array_aligned", nwa);
#endif
}

USER static void cxxnew_explicit()
{
    void *p;
    p = ::operator new(1001);
    tp_alloc("operator_new", p, 1001, us(p), NULL);
    tp_free("operator_delete", p, NULL);
    ::operator delete(p);
    p = ::operator new[](1002);
    tp_alloc("operator_new_array", p, 1002, us(p), NULL);
    tp_free("operator_delete_array", p, NULL);
    ::operator delete[](p);
    p = ::operator new(1003, std::nothrow);
    tp_alloc("operator_new_nothrow", p, 1003, us(p), NULL);
    tp_free("operator_delete_nothrow", p, NULL);
    ::operator delete(p, std::nothrow);
    p = ::operator new[](1004, std::nothrow);
    tp_alloc("operator_new_array_nothrow", p, 1004, us(p), NULL);
    tp_free("operator_delete_array_nothrow", p, NULL);
    ::operator delete[](p, std::nothrow);
#if __cpp_sized_deallocation
    p = ::operator new(1005);
    tp_alloc("operator_new", p, 1005, us(p), NULL);
    tp_free("operator_delete_sized", p, NULL);
    ::operator delete(p, (size_t)1005);
    p = ::operator new[](1006);
    tp_alloc("operator_new_array", p, 1006, us(p), NULL);
    tp_free("operator_delete_array_sized", p, NULL);
    ::operator delete[](p, (size_t)1006);
#endif
#if __cpp_aligned_new
    const std::align_val_t al{128};
    p = ::operator new(1007, al);
    tp_alloc("operator_new_aligned", p, 1007, us(p), "align=128");
    tp_free("operator_delete_aligned", p, NULL);
    ::operator delete(p, al);
    p = ::operator new[](1008, al);
    tp_alloc("operator_new_array_aligned", p, 1008, us(p), "align=128");
    tp_free("operator_delete_array_aligned", p, NULL);
    ::operator delete[](p, al);
    p = ::operator new(1009, al, std::nothrow);
    tp_alloc("operator_new_aligned_nothrow", p, 1009, us(p), "align=128");
    tp_free("operator_delete_aligned_nothrow", p, NULL);
    ::operator delete(p, al, std::nothrow);
    p = ::operator new[](1010, al, std::nothrow);
    tp_alloc("operator_new_array_aligned_nothrow", p, 1010, us(p), "align=128");
    tp_free("operator_delete_array_aligned_nothrow", p, NULL);
    ::operator delete[](p, al, std::nothrow);
#if __cpp_sized_deallocation
    p = ::operator new(1011, al);
    tp_alloc("operator_new_aligned", p, 1011, us(p), "align=128");
    tp_free("operator_delete_sized_aligned", p, NULL);
    ::operator delete(p, (size_t)1011, al);
    p = ::operator new[](1012, al);
    tp_alloc("operator_new_array_aligned", p, 1012, us(p), "align=128");
    tp_free("operator_delete_array_sized_aligned", p, NULL);
    ::operator delete[](p, (size_t)1012, al);
#endif
#endif
    // delete of a null pointer: nothing happened, nothing recorded
    ::operator delete(nullptr);
    delete[] static_cast<int *>(nullptr);
    // kept to the end: leaks
    p = ::operator new(2001);
    tp_alloc("operator_new", p, 2001, us(p), NULL);
    p = ::operator new[](2002);
    tp_alloc("operator_new_array", p, 2002, us(p), NULL);
}

// Failed calls are failed allocations: NULL from nothrow new, std::bad_alloc
// from the others (recorded as the exception leaves the hook).
USER static void cxxnew_failures()
{
    const size_t huge = huge_v;       // not a constant: a compiler may refuse new T[huge]
    char *f = new (std::nothrow) char[huge];
    sink = f;                         // used: a compiler may not elide the call
    TP_CHECK(!f);
    tp_alloc("operator_new_array_nothrow", NULL, huge, 0, NULL);
    void *fn = ::operator new(huge, std::nothrow);
    sink = fn;
    TP_CHECK(!fn);
    tp_alloc("operator_new_nothrow", NULL, huge, 0, NULL);
    int caught = 0;
    try {
        sink = new char[huge];
    } catch (const std::bad_alloc &) {
        caught++;
    }
    TP_CHECK(caught == 1);
    tp_alloc("operator_new_array", NULL, huge, 0, NULL);
    try {
        sink = ::operator new(huge);
    } catch (const std::bad_alloc &) {
        caught++;
    }
    TP_CHECK(caught == 2);
    tp_alloc("operator_new", NULL, huge, 0, NULL);
#if __cpp_aligned_new
    void *fa = ::operator new(huge, std::align_val_t{64}, std::nothrow);
    sink = fa;
    TP_CHECK(!fa);
    tp_alloc("operator_new_aligned_nothrow", NULL, huge, 0, NULL);
    try {
        sink = ::operator new[](huge, std::align_val_t{64});
    } catch (const std::bad_alloc &) {
        caught++;
    }
    TP_CHECK(caught == 3);
    tp_alloc("operator_new_array_aligned", NULL, huge, 0, NULL);
#endif
    // Still recorded after the exceptions, C++ and C alike.
    Obj *after = new Obj;
    tp_alloc("operator_new", after, sizeof(Obj), us(after), NULL);
    void *m = malloc(77);
    TP_CHECK(m);
    tp_alloc("malloc", m, 77, us(m), NULL);
    tp_free("free", m, NULL);
    free(m);
    tp_free(DEL_OBJ, after, NULL);
    delete after;
}

int main()
{
    tp_range();
    cxxnew_expressions();
    cxxnew_explicit();
    cxxnew_failures();
    tp_expect();
    tp_flush();
    return 0;
}
