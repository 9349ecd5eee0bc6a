/* weight.h — what one recorded allocation of a sampled capture stands for.
 * With VHEAP_SAMPLE = R, an allocation of s bytes was recorded with
 * probability p = 1 - exp(-s/R); counting it 1/p times and s/p bytes makes
 * every sum over recorded blocks an unbiased estimate of the program's. */
#ifndef VHEAP_WEIGHT_H
#define VHEAP_WEIGHT_H

#include <math.h>
#include <stdint.h>

/* Probability that an allocation of `size` bytes is recorded at `rate`
 * (0: every call is, 1). */
static inline double vh_sample_p(uint64_t size, uint64_t rate)
{
    if (!rate)
        return 1.0;
    return -expm1(-(double)size / (double)rate);
}

/* A block's weight in integers: the loader's counters stay integers, and a
 * free must take away exactly what its allocation added, so both compute
 * it from what the live block keeps (size, serial). Rounding is dithered
 * by a hash of the two: floor(x + u), u uniform in [0, 1), has expectation
 * x, so sums stay unbiased where rounding to nearest would not (1/p of a
 * block near R is 1.58). A zero-size block cannot be sampled; one that
 * appears anyway counts once. */
struct vh_weight {
    uint64_t count, bytes;
};

static inline uint64_t vh_clamp_u64(double x)
{
    return x >= 0x1p63 ? (uint64_t)1 << 63 : (uint64_t)x;
}

/* 1/p at most 2^40 (a 1-byte block at a rate of a terabyte): a damaged or
 * hostile header's rate cannot push a weight past what a uint64_t holds. */
static inline double vh_sample_p_clamped(uint64_t size, uint64_t rate)
{
    double p = vh_sample_p(size, rate);
    return p < 0x1p-40 ? 0x1p-40 : p;
}

static inline struct vh_weight vh_weigh(uint64_t size, uint64_t rate, uint32_t serial)
{
    double p, u;
    uint64_t x;

    if (!rate || !size)
        return (struct vh_weight){ 1, size };
    p = vh_sample_p_clamped(size, rate);
    x = ((uint64_t)serial << 32 ^ size) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    u = (double)(x >> 11) * 0x1p-53;
    return (struct vh_weight){ (uint64_t)(1.0 / p + u), vh_clamp_u64((double)size / p + u) };
}

/* The bytes a block of `size` stands for, rounded to nearest: where the
 * dither's salt is not at hand (replaying the event stream). */
static inline uint64_t vh_weigh_bytes(uint64_t size, uint64_t rate)
{
    if (!rate || !size)
        return size;
    return vh_clamp_u64((double)size / vh_sample_p_clamped(size, rate) + 0.5);
}

#endif
