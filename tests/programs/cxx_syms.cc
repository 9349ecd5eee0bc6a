// cxx_syms.cc — C++ allocation sites whose names must come out demangled:
// a method of a class template in a namespace, a constructor, a function
// template, an overloaded operator and a static member. Each site allocates
// a size of its own and keeps the block (leaked), and the program prints
//   site SIZE LINE
// for the line of each `new`; the test holds the names it expects.
#include <cstdio>
#include <cstdlib>

static void *volatile kept[16];
static int nkept;
static int lines[8];

// Out of line on purpose: each site must be a frame of its own.
#define NOINLINE __attribute__((noinline))

namespace ns {

template <typename T> class Widget {
public:
    NOINLINE Widget() { data_ = new T[100]; lines[0] = __LINE__; kept[nkept++] = data_; }
    NOINLINE void grow(unsigned long n) { data_ = new T[n]; lines[1] = __LINE__; kept[nkept++] = data_; }
    NOINLINE Widget &operator+=(int n) { kept[nkept++] = new char[n]; lines[2] = __LINE__; return *this; }
    NOINLINE static void *make_static(long n) { void *p = std::malloc(n); lines[3] = __LINE__; kept[nkept++] = p; return p; }

private:
    T *data_;
};

namespace detail {
template <typename T> NOINLINE T *make_buffer(unsigned long n)
{
    T *p = new T[n]; lines[4] = __LINE__;
    kept[nkept++] = p;
    return p;
}
} // namespace detail

} // namespace ns

int main()
{
    ns::Widget<int> *w = new ns::Widget<int>();   // sizeof(int) * 100 = 400 bytes
    w->grow(150);                                  // 600 bytes
    *w += 777;
    ns::Widget<int>::make_static(888);
    ns::detail::make_buffer<double>(99);           // 792 bytes
    kept[nkept++] = w;
    std::printf("site %zu %d\n", sizeof(int) * 100, lines[0]);
    std::printf("site %zu %d\n", sizeof(int) * 150, lines[1]);
    std::printf("site %d %d\n", 777, lines[2]);
    std::printf("site %d %d\n", 888, lines[3]);
    std::printf("site %zu %d\n", sizeof(double) * 99, lines[4]);
    return 0;
}
