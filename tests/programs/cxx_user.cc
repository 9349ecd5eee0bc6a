// cxx_user.cc — C++ allocations the program can account for exactly:
// new/delete of objects and arrays, aligned new, std::vector growth and
// std::string growth (each capacity change is one allocation of the new
// buffer then one free of the old, at data()), and a thrown exception (its
// object's size and address only the runtime knows: logged as "*"). Each
// call is logged under the operator vheap records (preload/hooks_cxx.c).
#include "testprog.h"

#include <malloc.h>
#include <new>
#include <string>
#include <vector>

struct Obj { char b[24]; };
struct alignas(256) Wide { char c[300]; };

static size_t us(void *p) { return malloc_usable_size(p); }

// What a delete expression of a complete object calls, and std::allocator's
// deallocate (inlined here).
#if __cpp_sized_deallocation
#define DEL_SIZED "operator_delete_sized"
#define DEL_SIZED_ALIGNED "operator_delete_sized_aligned"
#else
#define DEL_SIZED "operator_delete"
#define DEL_SIZED_ALIGNED "operator_delete_aligned"
#endif

USER static void objects()
{
    Obj *o = new Obj;
    tp_alloc("operator_new", o, sizeof(Obj), us(o), NULL);
    int *arr = new int[100];
    tp_alloc("operator_new_array", arr, 100 * sizeof(int), us(arr), NULL);
    Wide *w = new Wide;                   // operator new(size, align_val_t)
    TP_CHECK(reinterpret_cast<uintptr_t>(w) % 256 == 0);
    tp_alloc("operator_new_aligned", w, sizeof(Wide), us(w), "align=256");
    tp_delete(DEL_SIZED, o);
    tp_delete_array("operator_delete_array", arr);
    tp_delete(DEL_SIZED_ALIGNED, w);
    Obj *kept = new Obj;                  // deliberately leaked
    tp_alloc("operator_new", kept, sizeof(Obj), us(kept), NULL);
}

USER static void vector_growth()
{
    std::vector<long> v;
    for (long i = 0; i < 3000; i++) {
        long *before = v.data();
        size_t cap = v.capacity();
        v.push_back(i);
        if (v.capacity() != cap) {
            tp_alloc("operator_new", v.data(), v.capacity() * sizeof(long), us(v.data()),
                     NULL);
            if (before)
                tp_free(DEL_SIZED, before, NULL);
        }
    }
    tp_free(DEL_SIZED, v.data(), NULL);   // the destructor, below
}

USER static void string_growth()
{
    std::string s;
    for (int i = 0; i < 5000; i++) {
        const char *before = s.data();
        size_t cap = s.capacity();
        s += static_cast<char>('a' + i % 26);
        if (s.capacity() != cap) {
            tp_alloc("operator_new", s.data(), s.capacity() + 1,
                     us(const_cast<char *>(s.data())), NULL);
            // Sized or not depends on where libstdc++ compiled the code
            // that frees (its own .so or this file): "*".
            if (cap > 15)                 // the short-string buffer is inline
                tp_free("*", before, NULL);
        }
    }
    std::string t(1000, 'y');
    tp_alloc("operator_new", t.data(), 1001, us(t.data()), NULL);
    tp_free("*", t.data(), NULL);
    tp_free("*", s.data(), NULL);         // destructors, in reverse order
}

struct Boom { int code; };               // allocates nothing itself

USER static void exception()
{
    try {
        tp_alloc_unknown("malloc");       // __cxa_allocate_exception
        tp_free_unknown("free");          // __cxa_free_exception, after the catch
        throw Boom{ 7 };
    } catch (const Boom &b) {
        TP_CHECK(b.code == 7);
    }
}

int main()
{
    tp_range();
    objects();
    vector_growth();
    string_growth();
    exception();
    tp_expect();
    tp_flush();
    return 0;
}
