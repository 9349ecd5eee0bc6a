/* trend.c — the least-squares line of trend.h: continuous moments of a step
 * function, so every instant of the window weighs the same however many
 * events fell in it (a busy second does not outvote a quiet hour). */
#include "analyze/util/trend.h"

struct trend_fit trend__fit(const struct trend *tr, uint64_t end)
{
    struct trend copy = *tr;
    struct trend_fit f = { 0 };
    double T, mt, vt, my, vy, cov;

    if (!tr->started)
        return f;
    if (end > copy.last)
        trend__advance(&copy, end);
    T = (double)(copy.last - copy.t0) * 1e-9;
    if (T <= 0) {
        f.mean = copy.y;
        return f;
    }
    /* t uniform on [0, T]: mean T/2, variance T²/12. */
    mt = T / 2;
    vt = T * T / 12;
    my = copy.sy / T;
    vy = copy.syy / T - my * my;
    cov = copy.sty / T - mt * my;
    f.seconds = T;
    f.mean = my;
    f.slope = cov / vt;
    /* vy relative to my²: rounding leaves ~1e-16 my² where y is constant */
    if (vy > 1e-12 * my * my && vy > 0) {
        f.r2 = cov * cov / (vt * vy);
        if (f.r2 > 1)
            f.r2 = 1;
    }
    return f;
}
