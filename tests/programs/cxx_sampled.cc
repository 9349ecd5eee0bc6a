// cxx_sampled.cc — operator new and new[] from three functions, with sizes
// from a fixed sequence, most deleted at once and some kept, for
// tests/integration/sample.sh: under VHEAP_SAMPLE the estimates of C++
// allocations must match the full capture as C's do (the operator's own
// malloc, which libstdc++'s makes, counts down bytes of its own: points
// that fall there are lost, which leaves the operator's odds alone).
// Prints "stack NAME bytes=B calls=C" per function, as growd does.
//   usage: cxx_sampled [ROUNDS]   (default 100000)
#include <cstdio>
#include <cstdlib>

struct tally {
    const char *name;
    unsigned long long bytes, calls;
};
static tally t_obj = { "new_obj", 0, 0 }, t_arr = { "new_arr", 0, 0 },
             t_big = { "new_big", 0, 0 };
static unsigned long long seed = 1;
static void *keep[4096];
static void *volatile sink;        // seen by no one: keeps new/delete pairs from being elided

static size_t next_size(size_t lo, size_t span)
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (size_t)(seed >> 33) % span;
}

struct Obj { char b[48]; };

extern "C" __attribute__((noinline)) void new_obj(int i)
{
    Obj *o = new Obj;
    sink = o;
    t_obj.bytes += sizeof(Obj);
    t_obj.calls++;
    if (i % 64 == 0) {
        delete static_cast<Obj *>(keep[i % 4096]);   // deleting NULL is fine
        keep[i % 4096] = o;
    } else {
        delete o;
    }
}

extern "C" __attribute__((noinline)) void new_arr(void)
{
    size_t n = next_size(16, 2000);
    char *p = new char[n];
    p[0] = 1;
    sink = p;
    t_arr.bytes += n;
    t_arr.calls++;
    delete[] p;
}

extern "C" __attribute__((noinline)) void new_big(void)
{
    size_t n = next_size(20000, 200000);
    char *p = new char[n];
    p[n - 1] = 1;
    sink = p;
    t_big.bytes += n;
    t_big.calls++;
    delete[] p;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    for (long r = 0; r < rounds; r++) {
        new_obj((int)r);
        new_arr();
        if (r % 16 == 0)
            new_big();
    }
    const tally *all[] = { &t_obj, &t_arr, &t_big };
    for (const tally *t : all)
        printf("stack %s bytes=%llu calls=%llu\n", t->name, t->bytes, t->calls);
    return 0;
}
