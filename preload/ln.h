/* ln.h — the natural logarithm of the sampling countdown's draw, without
 * libm: libm.so was the shim's only reason to load it (one `log` a sample),
 * and loading a library costs a short run about 0.1 ms (issue 28). */
#ifndef VH_LN_H
#define VH_LN_H

#include <stdint.h>
#include <string.h>

/* ln(x) for a normal, positive, finite x, within 2 ulp of libm's: x =
 * m * 2^e with m in [sqrt(1/2), sqrt(2)), and ln(m) = 2 atanh(s) with
 * s = (m - 1) / (m + 1), |s| <= 0.172, its odd series summed to s^23
 * (the next term is below 2^-60 of the sum). */
static inline double vh_ln(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;   /* m in [1, 2) */
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 0.0;
    for (int k = 23; k >= 3; k -= 2)
        sum = (sum + 1.0 / k) * s2;
    return 2.0 * (s + s * sum) + (double)e * 0.6931471805599453;
}

#endif
