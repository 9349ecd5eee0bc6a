/* cfi.c — fast stack walks from cached DWARF unwind rules, keyed by address.
 *
 * libunwind's unw_backtrace costs ~15 ns a frame here; most of that is
 * finding and interpreting the CFI again. For x86-64 code almost every
 * frame's rule is one of "CFA = rsp+k" or "CFA = rbp+k", "return address at
 * CFA-8", "caller's rbp unchanged or saved at CFA+j". This file computes that
 * rule once per return address from the object's .eh_frame_hdr/.eh_frame (in
 * memory, inside dl_iterate_phdr so the object cannot go away meanwhile),
 * caches it in a process-wide table, and walks with a few loads per frame.
 * A return address at the signal trampoline is stepped through by reading
 * the interrupted registers the kernel saved (sigframe.h); one without any
 * DWARF rule (no FDE covers it, or no object) by the frame pointer
 * (FP_RULE). Anything else
 * (DWARF expressions, missing tables, a stack we do not know) makes the walk
 * return -1 and the caller uses libunwind for that stack. Every read of the
 * stack is checked against the bounds of the stack being walked.
 *
 * Most walks never get that far: a walk is known by where it starts and the
 * stack words it read (below: known walks), and a walk that is not known
 * reuses what it shares with the thread's previous one (the memo). */
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "common/partition.h"
#include "preload/internal.h"
#include "preload/sigframe.h"

/* A rule, packed in 64 bits: kind (4), rbp how (2), rbx how (2), rbp
 * offset (16, signed, from CFA), rbx offset (16, signed), CFA offset (24).
 * R_SIGNAL: the address after this one is the signal trampoline (the frame
 * is the kernel's signal frame). R_RBX: CFA = rbx + offset, as in glibc's
 * lazy-binding trampoline; followed only where rbx is known, i.e. after a
 * signal frame (the ucontext has it) — where a handler interrupting lazy
 * binding needs it. Elsewhere rbx is not tracked. */
enum { R_EMPTY = 0, R_RSP, R_RBP, R_END, R_UNSUPPORTED, R_SIGNAL, R_RBX };
enum { S_SAME = 0, S_AT, S_LOST };  /* a callee-saved register's rule */
#define CFA_MAX (1 << 24)

#define CACHE_BITS 16
#define CACHE_SLOTS (1u << CACHE_BITS)

struct entry {
    uint64_t key;                  /* ip | gen << 48; 0 = empty (atomic)  */
    uint64_t rule;
};

static struct entry *cache;        /* mmap'd, CACHE_SLOTS entries         */

static inline uint64_t pack(unsigned kind, unsigned rbp_how, int rbp_off, unsigned rbx_how,
                            int rbx_off, uint32_t cfa_off)
{
    return (uint64_t)kind | (uint64_t)rbp_how << 4 | (uint64_t)rbx_how << 6 |
           (uint64_t)(uint16_t)(int16_t)rbp_off << 8 | (uint64_t)(uint16_t)(int16_t)rbx_off << 24 |
           (uint64_t)cfa_off << 40;
}
#define RULE_KIND(r) ((unsigned)(r) & 15)
#define RULE_RBP_HOW(r) ((unsigned)((r) >> 4) & 3)
#define RULE_RBX_HOW(r) ((unsigned)((r) >> 6) & 3)
#define RULE_RBP_OFF(r) ((uint64_t)(int64_t)(int16_t)((r) >> 8))
#define RULE_RBX_OFF(r) ((uint64_t)(int64_t)(int16_t)((r) >> 24))
#define RULE_CFA_OFF(r) ((r) >> 40)
#define END_RULE pack(R_END, 0, 0, 0, 0, 0)
/* Where DWARF has no rule for an address — code without .eh_frame, such as
 * V8's builtins embedded in node, or JIT code outside any object — the
 * frame pointer chain: CFA = rbp + 16, the return address below it, the
 * caller's rbp at CFA - 16 (what such code keeps; libunwind does the same).
 * The walk's checks still hold: every CFA above the last, inside the stack
 * (a frame that does not keep rbp ends the walk there, or adds one wrong
 * frame where rbp happens to point up the stack). An address whose FDE
 * says the return address is undefined (_start, clone) still ends it. */
#define FP_RULE pack(R_RBP, S_AT, -16, S_LOST, 0, 16)

int vh_cfi_init(void)
{
    if (cache)
        return 0;
    void *p = vh_sys_mmap(NULL, CACHE_SLOTS * sizeof(struct entry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    cache = p;
    return 0;
}

/* ---- reading DWARF ----------------------------------------------------------- */
#define DW_EH_PE_omit 0xff
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_format 0x0f       /* mask: how the value is stored        */
#define DW_EH_PE_base 0x70         /* mask: what it is relative to         */

/* Call frame instructions (DWARF 5, section 6.4.2; the GNU ones from
 * GCC's dwarf2.def). The first three carry an operand in their low 6
 * bits: the opcode is in the high 2. */
enum {
    DW_CFA_advance_loc = 0x40,
    DW_CFA_offset = 0x80,
    DW_CFA_restore = 0xc0,
    DW_CFA_high_mask = 0xc0,
    DW_CFA_low_mask = 0x3f,
    DW_CFA_nop = 0x00,
    DW_CFA_set_loc = 0x01,
    DW_CFA_advance_loc1 = 0x02,
    DW_CFA_advance_loc2 = 0x03,
    DW_CFA_advance_loc4 = 0x04,
    DW_CFA_offset_extended = 0x05,
    DW_CFA_restore_extended = 0x06,
    DW_CFA_undefined = 0x07,
    DW_CFA_same_value = 0x08,
    DW_CFA_register = 0x09,
    DW_CFA_remember_state = 0x0a,
    DW_CFA_restore_state = 0x0b,
    DW_CFA_def_cfa = 0x0c,
    DW_CFA_def_cfa_register = 0x0d,
    DW_CFA_def_cfa_offset = 0x0e,
    DW_CFA_def_cfa_expression = 0x0f,
    DW_CFA_expression = 0x10,
    DW_CFA_offset_extended_sf = 0x11,
    DW_CFA_def_cfa_sf = 0x12,
    DW_CFA_def_cfa_offset_sf = 0x13,
    DW_CFA_val_offset = 0x14,
    DW_CFA_val_offset_sf = 0x15,
    DW_CFA_val_expression = 0x16,
    DW_CFA_GNU_args_size = 0x2e,
    DW_CFA_GNU_negative_offset_extended = 0x2f,
};

/* The DWARF expression operations of the one expression understood
 * (plt_cfa). */
enum {
    DW_OP_and = 0x1a,
    DW_OP_plus = 0x22,
    DW_OP_shl = 0x24,
    DW_OP_ge = 0x2a,
    DW_OP_lit0 = 0x30,
    DW_OP_lit3 = 0x33,
    DW_OP_lit10 = 0x3a,
    DW_OP_lit11 = 0x3b,
    DW_OP_lit15 = 0x3f,
    DW_OP_breg7 = 0x77,            /* rsp + sleb offset */
    DW_OP_breg16 = 0x80,           /* rip + sleb offset */
};

struct rd {
    const uint8_t *p, *end;
    int bad;
};

static uint64_t uleb(struct rd *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t sleb(struct rd *r)
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    while (r->p < r->end) {
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= (int64_t)(~(uint64_t)0 << shift);   /* sign-extend */
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

/* Whether n more bytes are left to read. Every length read from the
 * tables is bounded so before it moves a pointer: forming r->p + n past
 * the object is undefined even if never read. */
static inline int has(const struct rd *r, uint64_t n)
{
    return n <= (uint64_t)(r->end - r->p);
}

/* The next n bytes: where they start, r past them; NULL (r->bad) if
 * fewer are left. */
static const uint8_t *take(struct rd *r, uint64_t n)
{
    if (!has(r, n)) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

/* r confined to its next n bytes, as a CIE's or FDE's length says (r->bad
 * if fewer are left). */
static void narrow(struct rd *r, uint64_t n)
{
    const uint8_t *at = take(r, n);
    if (at) {
        r->end = r->p;
        r->p = at;
    }
}

static uint64_t fixed(struct rd *r, unsigned n)
{
    const uint8_t *at = take(r, n);
    uint64_t v = 0;
    if (at)
        memcpy(&v, at, n);         /* little-endian */
    return v;
}

/* An encoded pointer; `datarel` is the .eh_frame_hdr base. */
static uint64_t pointer(struct rd *r, uint8_t enc, uint64_t datarel)
{
    if (enc == DW_EH_PE_omit)
        return 0;
    uint64_t at = (uintptr_t)r->p, v;
    switch (enc & DW_EH_PE_format) {
    case DW_EH_PE_absptr: v = fixed(r, 8); break;
    case DW_EH_PE_uleb128: v = uleb(r); break;
    case DW_EH_PE_udata2: v = fixed(r, 2); break;
    case DW_EH_PE_udata4: v = fixed(r, 4); break;
    case DW_EH_PE_udata8: v = fixed(r, 8); break;
    case DW_EH_PE_sleb128: v = (uint64_t)sleb(r); break;
    case DW_EH_PE_sdata2: v = (uint64_t)(int64_t)(int16_t)fixed(r, 2); break;
    case DW_EH_PE_sdata4: v = (uint64_t)(int64_t)(int32_t)fixed(r, 4); break;
    case DW_EH_PE_sdata8: v = fixed(r, 8); break;
    default: r->bad = 1; return 0;
    }
    switch (enc & DW_EH_PE_base) {
    case 0: break;
    case DW_EH_PE_pcrel: v += at; break;
    case DW_EH_PE_datarel: v += datarel; break;
    default: r->bad = 1; return 0;
    }
    if (enc & DW_EH_PE_indirect) {
        r->bad = 1;                /* not used for FDE ranges */
        return 0;
    }
    return v;
}

/* The CFA / rbp / return-address rules while interpreting. */
struct state {
    int cfa_reg;
    int64_t cfa_off;
    int rbp_how;                   /* S_SAME, S_AT */
    int64_t rbp_off;
    int rbx_how;                   /* S_SAME, S_AT, S_LOST */
    int64_t rbx_off;
    int ra_ok;                     /* return address at CFA-8 */
    int ra_undef;                  /* outermost frame */
    int unsupported;
};

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int has_aug_data;
    int signal;
    const uint8_t *insns, *end;
};

#define DW_RBX 3
#define DW_RBP 6
#define DW_RSP 7

static void set_reg(struct state *s, uint64_t reg, int how, int64_t off, uint64_t ra_reg)
{
    if (reg == DW_RBP) {
        s->rbp_how = how;
        s->rbp_off = off;
    } else if (reg == DW_RBX) {
        s->rbx_how = how;
        s->rbx_off = off;
    } else if (reg == ra_reg) {
        s->ra_ok = how == S_AT && off == -8;
        s->ra_undef = 0;
    }
}

/* DW_CFA_restore: back to the CIE's rule. */
static void restore_reg(struct state *s, const struct state *init, uint64_t reg, uint64_t ra_reg)
{
    if (reg == DW_RBP) {
        s->rbp_how = init->rbp_how;
        s->rbp_off = init->rbp_off;
    } else if (reg == DW_RBX) {
        s->rbx_how = init->rbx_how;
        s->rbx_off = init->rbx_off;
    } else if (reg == ra_reg) {
        s->ra_ok = init->ra_ok;
        s->ra_undef = init->ra_undef;
    }
}

/* The one CFA expression worth knowing: the lazy-binding PLT's,
 * "rsp + 8 + ((rip & 15) >= K ? 8 : 0)" (K = 11, or 10 with IBT): 8 more
 * once the entry pushed its index. A signal can land in a PLT entry; a rule
 * is per address, so rip is `target` and the rule is a plain rsp offset. */
#define PLT_K_AT 6                 /* where litK is in the expression       */
static int plt_cfa(const uint8_t *e, uint64_t len, uint64_t target, struct state *s)
{
    static const uint8_t expr[11] = { DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and,
                                      0 /* litK */, DW_OP_ge, DW_OP_lit3, DW_OP_shl,
                                      DW_OP_plus };
    if (len != sizeof expr || memcmp(e, expr, PLT_K_AT) != 0 ||
        memcmp(e + PLT_K_AT + 1, expr + PLT_K_AT + 1, sizeof expr - PLT_K_AT - 1) != 0 ||
        (e[PLT_K_AT] != DW_OP_lit10 && e[PLT_K_AT] != DW_OP_lit11) || target == UINT64_MAX)
        return -1;
    s->cfa_reg = DW_RSP;
    s->cfa_off = 8 + ((target & 15) >= (uint64_t)(e[PLT_K_AT] - DW_OP_lit0) ? 8 : 0);
    return 0;
}

/* A factored offset times the CIE's data alignment, wrapping (the range
 * checks after the run reject what makes no sense; overflow must not be
 * undefined behaviour on a damaged table). */
static inline int64_t factored(uint64_t v, const struct cie *c)
{
    return (int64_t)(v * (uint64_t)c->data_align);
}

/* Register reg is found by a rule the walk does not follow (in another
 * register, as an expression, as a value): a walk that needs it, through
 * rbp or the return address, is unsupported; rbx is lost. */
static void beyond(struct state *s, const struct cie *c, uint64_t reg)
{
    if (reg == DW_RBP || reg == c->ra_reg)
        s->unsupported = 1;
    else if (reg == DW_RBX)
        s->rbx_how = S_LOST;
}

/* The extended forms of the register rules (DW_CFA_offset's and
 * DW_CFA_restore's, whose short forms run() decodes): how a register other
 * than the CFA is found. 0 if op is none of them. */
static int reg_op(struct rd *r, const struct cie *c, struct state *s, const struct state *init,
                  uint8_t op)
{
    uint64_t reg;
    int64_t off;
    switch (op) {
    case DW_CFA_offset_extended:
        reg = uleb(r);
        off = factored(uleb(r), c);
        set_reg(s, reg, S_AT, off, c->ra_reg);
        break;
    case DW_CFA_offset_extended_sf:
        reg = uleb(r);
        off = factored((uint64_t)sleb(r), c);
        set_reg(s, reg, S_AT, off, c->ra_reg);
        break;
    case DW_CFA_restore_extended:
        restore_reg(s, init, uleb(r), c->ra_reg);
        break;
    case DW_CFA_undefined:
        reg = uleb(r);
        if (reg == c->ra_reg)
            s->ra_undef = 1;
        else if (reg == DW_RBP)
            s->rbp_how = S_SAME;     /* value lost; keep walking */
        else if (reg == DW_RBX)
            s->rbx_how = S_LOST;
        break;
    case DW_CFA_same_value:
        reg = uleb(r);
        if (reg == DW_RBP)
            s->rbp_how = S_SAME;
        else if (reg == DW_RBX)
            s->rbx_how = S_SAME;
        else if (reg == c->ra_reg)
            s->unsupported = 1;
        break;
    case DW_CFA_register:
        reg = uleb(r);
        uleb(r);
        beyond(s, c, reg);
        break;
    case DW_CFA_val_offset:
    case DW_CFA_val_offset_sf:
        reg = uleb(r);
        if (op == DW_CFA_val_offset)
            uleb(r);
        else
            sleb(r);
        beyond(s, c, reg);
        break;
    case DW_CFA_GNU_negative_offset_extended:
        reg = uleb(r);
        off = factored(0 - uleb(r), c);
        set_reg(s, reg, S_AT, off, c->ra_reg);
        break;
    default:
        return 0;
    }
    return 1;
}

/* The rules of the CFA itself, and the expressions (only the PLT's CFA
 * expression is understood). 0 if op is none of them. */
static int cfa_op(struct rd *r, const struct cie *c, struct state *s, uint8_t op,
                  uint64_t target)
{
    uint64_t reg;
    switch (op) {
    case DW_CFA_def_cfa:
        s->cfa_reg = (int)uleb(r);
        s->cfa_off = (int64_t)uleb(r);
        break;
    case DW_CFA_def_cfa_sf:
        s->cfa_reg = (int)uleb(r);
        s->cfa_off = factored((uint64_t)sleb(r), c);
        break;
    case DW_CFA_def_cfa_register: s->cfa_reg = (int)uleb(r); break;
    case DW_CFA_def_cfa_offset: s->cfa_off = (int64_t)uleb(r); break;
    case DW_CFA_def_cfa_offset_sf: s->cfa_off = factored((uint64_t)sleb(r), c); break;
    case DW_CFA_def_cfa_expression: {
        uint64_t len = uleb(r);
        const uint8_t *e = take(r, len);
        if (e && plt_cfa(e, len, target, s) < 0)
            s->unsupported = 1;
        break;
    }
    case DW_CFA_expression:
    case DW_CFA_val_expression: {
        reg = uleb(r);
        uint64_t len = uleb(r);
        /* One running past the FDE is unsupported, as one for rbp. */
        if (!has(r, len))
            s->unsupported = 1;
        else
            take(r, len);
        beyond(s, c, reg);
        break;
    }
    default:
        return 0;
    }
    return 1;
}

/* Runs CFA instructions from `r` while loc <= target. `init` is the state
 * after the CIE's initial instructions (for DW_CFA_restore). Returns 0. */
static void run(struct rd *r, const struct cie *c, struct state *s, const struct state *init,
                uint64_t loc, uint64_t target, uint64_t datarel)
{
    struct state stack[8];
    int depth = 0;
    while (r->p < r->end && !r->bad && !s->unsupported) {
        uint8_t op = *r->p++;
        uint64_t delta = 0;
        int64_t off;
        switch (op & DW_CFA_high_mask) {
        case DW_CFA_advance_loc:
            delta = (op & DW_CFA_low_mask) * c->code_align;
            goto advance;
        case DW_CFA_offset:
            off = factored(uleb(r), c);
            set_reg(s, op & DW_CFA_low_mask, S_AT, off, c->ra_reg);
            continue;
        case DW_CFA_restore:
            restore_reg(s, init, op & DW_CFA_low_mask, c->ra_reg);
            continue;
        }
        switch (op) {
        case DW_CFA_nop: break;
        case DW_CFA_set_loc: {
            uint64_t nloc = pointer(r, c->fde_enc, datarel);
            if (nloc > target)
                return;
            loc = nloc;
            break;
        }
        case DW_CFA_advance_loc1: delta = fixed(r, 1) * c->code_align; goto advance;
        case DW_CFA_advance_loc2: delta = fixed(r, 2) * c->code_align; goto advance;
        case DW_CFA_advance_loc4: delta = fixed(r, 4) * c->code_align; goto advance;
        case DW_CFA_remember_state:
            if (depth == 8)
                s->unsupported = 1;
            else
                stack[depth++] = *s;
            break;
        case DW_CFA_restore_state:
            if (depth == 0)
                s->unsupported = 1;
            else
                *s = stack[--depth];
            break;
        case DW_CFA_GNU_args_size: uleb(r); break;
        default:
            if (!reg_op(r, c, s, init, op) && !cfa_op(r, c, s, op, target))
                s->unsupported = 1;
            break;
        }
        continue;
    advance:
        if (loc + delta > target)
            return;
        loc += delta;
    }
}

static int parse_cie(const uint8_t *p, const uint8_t *limit, struct cie *c)
{
    struct rd r = { p, limit, 0 };
    uint64_t len = fixed(&r, 4);
    if (len == 0xffffffffu)
        len = fixed(&r, 8);
    narrow(&r, len);
    if (r.bad)
        return -1;
    if (fixed(&r, 4) != 0)         /* CIE id */
        return -1;
    unsigned version = (unsigned)fixed(&r, 1);
    if (version != 1 && version != 3)
        return -1;
    const char *aug = (const char *)r.p;
    while (r.p < r.end && *r.p)
        r.p++;
    if (r.p >= r.end)
        return -1;
    r.p++;
    c->code_align = uleb(&r);
    c->data_align = sleb(&r);
    c->ra_reg = version == 1 ? fixed(&r, 1) : uleb(&r);
    c->fde_enc = DW_EH_PE_absptr;
    c->has_aug_data = 0;
    c->signal = 0;
    if (aug[0] == 'z') {
        c->has_aug_data = 1;
        /* r goes past the augmentation data; its fields are read by `ad`,
         * bounded (as ever) by the CIE's end, not by their length. */
        const uint8_t *data = take(&r, uleb(&r));
        if (r.bad)
            return -1;
        struct rd ad = { data, r.end, 0 };
        for (const char *a = aug + 1; *a; a++) {
            switch (*a) {
            case 'R': c->fde_enc = (uint8_t)fixed(&ad, 1); break;
            case 'L': fixed(&ad, 1); break;
            case 'P': {
                uint8_t enc = (uint8_t)fixed(&ad, 1);
                pointer(&ad, enc & (uint8_t)~DW_EH_PE_indirect, 0);   /* skip; value unused */
                break;
            }
            case 'S': c->signal = 1; break;
            case 'B': break;
            default: return -1;
            }
        }
        if (ad.bad)
            return -1;
    } else if (aug[0]) {
        return -1;
    }
    if (r.bad)
        return -1;
    c->insns = r.p;
    c->end = r.end;
    return 0;
}

/* Field i of the .eh_frame_hdr search table (int32s, maybe unaligned). */
static inline int64_t table_at(const uint8_t *table, uint64_t i)
{
    int32_t v;
    memcpy(&v, table + 4 * i, 4);
    return v;
}

struct query {
    uint64_t ip;                   /* address inside the call instruction */
    uint64_t rule;
    int found;                     /* the object containing ip was seen */
};

/* The FDE whose range may hold ip, by the binary search table of the
 * .eh_frame_hdr at hdr (reads bounded by end). NULL when the table is of
 * no use, and then with *rule = FP_RULE if ip lies before every FDE. */
static const uint8_t *fde_of(const uint8_t *hdr, const uint8_t *end, uint64_t ip,
                             uint64_t *rule)
{
    struct rd r = { hdr, end, 0 };
    uint64_t base = (uintptr_t)hdr;
    if (fixed(&r, 1) != 1)
        return NULL;
    uint8_t frame_enc = (uint8_t)fixed(&r, 1);
    uint8_t count_enc = (uint8_t)fixed(&r, 1);
    uint8_t table_enc = (uint8_t)fixed(&r, 1);
    pointer(&r, frame_enc, base);
    uint64_t count = pointer(&r, count_enc, base);
    if (r.bad || table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || count == 0 ||
        count > (uint64_t)(r.end - r.p) / 8)
        return NULL;
    /* Entries of two int32s; the encodings before them may leave the
     * table unaligned. */
    const uint8_t *table = r.p;
    /* The last entry whose start is <= ip. */
    size_t k = VH_PARTITION_POINT(i, count, base + table_at(table, 2 * i) <= ip);
    if (!k) {
        *rule = FP_RULE;         /* before any FDE: no info */
        return NULL;
    }
    return (const uint8_t *)(base + table_at(table, 2 * (k - 1) + 1));
}

/* The rule a state the CFA program left means, or R_UNSUPPORTED's. */
static uint64_t state_rule(struct state *s)
{
    uint64_t unsupported = pack(R_UNSUPPORTED, 0, 0, 0, 0, 0);
    if (s->unsupported)
        return unsupported;
    if (s->ra_undef)
        return END_RULE;
    if (!s->ra_ok || (s->cfa_reg != DW_RSP && s->cfa_reg != DW_RBP && s->cfa_reg != DW_RBX) ||
        s->cfa_off < 8 || s->cfa_off >= CFA_MAX ||
        (s->rbp_how == S_AT && (s->rbp_off < -32768 || s->rbp_off >= 0)))
        return unsupported;
    if (s->rbx_how == S_AT && (s->rbx_off < -32768 || s->rbx_off >= 0))
        s->rbx_how = S_LOST;
    return pack(s->cfa_reg == DW_RSP ? R_RSP : s->cfa_reg == DW_RBP ? R_RBP : R_RBX,
                (unsigned)s->rbp_how, (int)s->rbp_off, (unsigned)s->rbx_how, (int)s->rbx_off,
                (uint32_t)s->cfa_off);
}

/* The rule at ip from the FDE at fde, inside the segment [seg_start,
 * seg_end); base: the .eh_frame_hdr's address (datarel pointers). */
static uint64_t fde_rule(const uint8_t *fde, const uint8_t *seg_start, const uint8_t *seg_end,
                         uint64_t base, uint64_t ip)
{
    uint64_t unsupported = pack(R_UNSUPPORTED, 0, 0, 0, 0, 0);
    struct rd f = { fde, seg_end, 0 };
    uint64_t len = fixed(&f, 4);
    if (len == 0xffffffffu)
        len = fixed(&f, 8);
    narrow(&f, len);
    if (f.bad || len < 8)
        return unsupported;
    const uint8_t *cie_ptr_at = f.p;
    uint32_t cie_off = (uint32_t)fixed(&f, 4);
    if (cie_off == 0)
        return unsupported;        /* that is a CIE, not an FDE */
    struct cie c;
    /* The CIE pointer counts back from itself; one reaching before the
     * segment would be a pointer below the object (undefined to form). */
    if (cie_off > (uint64_t)(cie_ptr_at - seg_start))
        return unsupported;
    const uint8_t *cie = cie_ptr_at - cie_off;
    if (parse_cie(cie, seg_end, &c) < 0 || c.signal)
        return unsupported;
    uint64_t start = pointer(&f, c.fde_enc, base);
    uint64_t range = pointer(&f, c.fde_enc & DW_EH_PE_format, 0);
    if (f.bad)
        return unsupported;
    if (ip < start || ip >= start + range)
        return FP_RULE;            /* a gap without unwind info */
    if (c.has_aug_data && !take(&f, uleb(&f)))
        return unsupported;
    struct state s = { .cfa_reg = DW_RSP, .cfa_off = 8, .rbp_how = S_SAME, .rbx_how = S_SAME };
    struct rd ci = { c.insns, c.end, 0 };
    run(&ci, &c, &s, &s, 0, UINT64_MAX, base);
    struct state init = s;
    run(&f, &c, &s, &init, start, ip, base);
    return ci.bad || f.bad ? unsupported : state_rule(&s);
}

/* Computes the rule for q->ip from this object's .eh_frame_hdr, if ip is
 * inside it. Runs under ld.so's lock: the object cannot be unloaded. */
static int rule_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct query *q = arg;
    const ElfW(Phdr) *hdr_ph = NULL;
    int inside = 0, tramp_fits = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t s = info->dlpi_addr + ph->p_vaddr;
            if (q->ip >= s && q->ip < s + ph->p_memsz) {
                inside = 1;
                tramp_fits = (ph->p_flags & PF_R) &&
                             q->ip + 1 + VH_SIGTRAMP_LEN <= s + ph->p_memsz;
            }
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            hdr_ph = ph;
        }
    }
    if (!inside)
        return 0;
    /* The return address (q->ip + 1) at the rt_sigreturn trampoline: the
     * bytes are checked, not the FDE (glibc marks its own with 'S', other
     * restorers may have none). Read only inside the segment. */
    if (tramp_fits && vh_sigtramp_is((const void *)(uintptr_t)(q->ip + 1))) {
        q->found = 1;
        q->rule = pack(R_SIGNAL, 0, 0, 0, 0, 0);
        return 1;
    }
    /* Reads of the tables stay inside the segment that holds them: the
     * object's other pages may be a gap (PROT_NONE) or another object. */
    const uint8_t *seg_start = NULL, *seg_end = NULL;
    for (int i = 0; hdr_ph && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && hdr_ph->p_vaddr >= ph->p_vaddr &&
            hdr_ph->p_vaddr < ph->p_vaddr + ph->p_memsz) {
            seg_start = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
            seg_end = seg_start + ph->p_memsz;
        }
    }
    q->found = 1;
    q->rule = pack(R_UNSUPPORTED, 0, 0, 0, 0, 0);
    if (!hdr_ph || !seg_end)
        return 1;
    const uint8_t *hdr = (const uint8_t *)(info->dlpi_addr + hdr_ph->p_vaddr);
    const uint8_t *end = hdr_ph->p_memsz < (uint64_t)(seg_end - hdr) ? hdr + hdr_ph->p_memsz
                                                                     : seg_end;
    /* .eh_frame follows the header in the same segment: the FDE's reads are
     * bounded by its end */
    const uint8_t *fde = fde_of(hdr, end, q->ip, &q->rule);
    if (fde && fde >= seg_start && fde < seg_end)
        q->rule = fde_rule(fde, seg_start, seg_end, (uintptr_t)hdr, q->ip);
    return 1;
}

/* No `own` marking here: nothing in this path allocates, so an allocation
 * arriving meanwhile is a signal handler's, to be counted as nested. */
static uint64_t compute_rule(uint64_t ip)
{
    struct query q = { ip, END_RULE, 0 };
    dl_iterate_phdr(rule_cb, &q);
    return q.found ? q.rule : FP_RULE;    /* not in any object: JIT code */
}

static VH_NOINLINE uint64_t lookup_shared(uint64_t ip, uint64_t key)
{
    struct entry *e = &cache[(ip ^ ip >> CACHE_BITS ^ ip >> 29) & (CACHE_SLOTS - 1)];
    uint64_t k1 = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
    if (vh_likely(k1 == key)) {
        uint64_t rule = __atomic_load_n(&e->rule, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (vh_likely(__atomic_load_n(&e->key, __ATOMIC_RELAXED) == key))
            return rule;
    }
    uint64_t rule = compute_rule(ip);
    /* Invalidate, write, publish: a reader that sees the key before and
     * after reading the rule read this rule. */
    __atomic_store_n(&e->key, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&e->rule, rule, __ATOMIC_RELAXED);
    __atomic_store_n(&e->key, key, __ATOMIC_RELEASE);
    return rule;
}

/* Each thread's own small cache in front of the shared table: a walk's new
 * frames are mostly the same few dozen call sites again (the allocator's
 * wrappers, reached from elsewhere), and 1 MiB of shared table spread over
 * random lines is mostly out of the L1 and L2 when the program is busy.
 * Only this thread writes it; a signal handler's walk on the same thread
 * may interleave with a write, so a hit is the key read before and after
 * the rule, and a write is key 0, rule, key (compiler fences suffice). */
#define LOCAL_BITS 9
#define LOCAL_SLOTS (1u << LOCAL_BITS)

static inline uint64_t lookup(struct entry *local, uint64_t ip, uint64_t gen)
{
    uint64_t key = ip | gen << 48;
    volatile struct entry *l = &local[(ip * 0x9e3779b97f4a7c15ull) >> (64 - LOCAL_BITS)];
    if (vh_likely(l->key == key)) {
        uint64_t rule = l->rule;
        if (vh_likely(l->key == key))
            return rule;
    }
    uint64_t rule = lookup_shared(ip, key);
    l->key = 0;
    l->rule = rule;
    l->key = key;
    return rule;
}

/* ---- the previous walk --------------------------------------------------------
 * Consecutive allocations of a thread mostly share the outer part of their
 * stacks. A walk is a function of its state at a frame (ip, sp, rbp), the
 * rules (fixed per module generation) and the stack words it reads; so once
 * a walk reaches a state the previous walk had, the rest is the previous
 * walk's for as long as the words it read are unchanged. Checking those is
 * independent loads, not the dependent chain of rule lookups. Only frames
 * on the thread's own stack are recorded (it stays mapped while the thread
 * lives; a signal stack may be freed between two walks), and none from a
 * signal frame on (walk_plain does those).
 *
 * The memo is a window [s, e) of a per-thread array, innermost frame first.
 * A walk that ends inside a reused run of the previous walk leaves that run
 * where it is and only writes its new inner frames in front of it (they
 * were collected in `fresh`); so the unchanged outer frames are neither
 * copied nor hashed again: each frame keeps the fold (internal.h's stack
 * hash) of itself and everything outside it, valid when the window holds a
 * whole walk that ended by itself (`folded`).
 *
 * rbp is compared only where it matters. Code built without frame pointers
 * uses rbp as an ordinary register, so two walks through the same frames
 * often meet different rbp values that no rule ever reads: a frame's value
 * counts only if it or a frame outside it computes its CFA from rbp before
 * some frame reloads rbp from the stack (`live`, worked out from the
 * outermost frame inwards; the end of the window counts as "not read",
 * because a walk leaving the window carries on from the real rbp). The
 * walk always carries the real rbp, reading a saved one only where it is
 * compared or where the reuse ends; a frame's recorded rbp where it did not
 * matter may be another walk's, which at worst costs a later reuse. */
#define MEMO 68u                   /* frames kept: a default-depth walk (65) */
#define MEMO_CAP (MEMO + 32u)      /* room to grow the window inwards        */
enum { H_OPEN = 0,                 /* not followed (a signal frame)           */
       H_NEXT,                     /* went on: ret at nsp-8, rbp from at     */
       H_ZERO,                     /* the return address at nsp-8 was 0: end */
       H_END,                      /* ended by the rule or a bad rbp slot     */
       H_GARBAGE };                /* ended by a CFA outside the stack        */

struct mframe {
    uint64_t ip, sp, rbp;          /* the state at this frame                 */
    uint64_t nsp;                  /* the caller's sp (the CFA, 8-aligned) |
                                      how (H_*) in the low 3 bits             */
    uint64_t at;                   /* where the caller's rbp was read, or 0   */
    uint64_t fold;                 /* vh_hash_step fold from here outwards    */
    uint64_t uses;                 /* ~0: this frame's CFA is rbp-based, or it
                                      is walked anew (H_OPEN); else 0         */
    uint64_t live;                 /* ~0: rbp here matters outwards; else 0   */
};
struct memo {
    uint32_t s, e;                 /* the window in f[]                       */
    uint32_t gen;                  /* module generation of that walk          */
    uint32_t folded;               /* f[].fold valid                          */
    struct mframe f[MEMO_CAP] __attribute__((aligned(64)));   /* a line each */
};

/* ---- walks the memo does not cover ------------------------------------------
 * From a signal frame on, and from a start on the signal stack: no memo,
 * but the exact PC of an interrupted frame, rbx (in the ucontext) for
 * R_RBX frames, and moves between the signal stack and the thread's. Kept
 * apart from vh_cfi_walk, the common walk, which needs none of it. */
struct wstate {
    uint64_t ip, sp, rbp, rbx;
    uint64_t lo, hi;               /* the stack sp is on                    */
    unsigned exact;                /* ip is an interrupted PC, not a return
                                      address: its rule is looked up at ip  */
    unsigned rbx_known;
};

/* Steps w through a signal frame: the handler returned into the trampoline,
 * so `uc` (its sp) points at the ucontext_t the kernel saved; the walk goes
 * on in the interrupted code, on whatever stack it ran (a handler on a
 * signal stack interrupted code on the thread's). 0, or 1 when the frame
 * cannot be read (stop there), or -1 for a stack we do not know (the walk
 * is libunwind's). */
static int cross(struct vh_tls *t, struct wstate *w, uint64_t uc)
{
    struct vh_sigregs r;
    if (vh_sigframe_regs(uc, uc, w->hi, &r) < 0)
        return 1;
    if ((r.sp < w->lo || r.sp >= w->hi) &&
        vh_stack_span(t->stack_lo, t->stack_hi, r.sp, &w->lo, &w->hi) < 0)
        return -1;
    w->ip = r.ip;
    w->sp = r.sp;
    w->rbp = r.bp;
    w->rbx = r.bx;
    w->exact = w->rbx_known = 1;
    return 0;
}

/* Walks on from *from into buf[n..want), rules through the thread's
 * cache `local`; returns the count, or -1. */
static VH_NOINLINE int walk_plain(struct vh_tls *t, struct entry *local, const struct wstate *from,
                                  uint64_t gen, uint64_t *buf, uint32_t n, uint32_t want)
{
    struct wstate w = *from;
    while (n < want && w.ip) {
        buf[n++] = w.ip;
        /* Where a saved register may be read from: at or above sp, except
         * in an interrupted frame, whose epilogue may have popped it already
         * (gcc emits no restore rule; the slot keeps the value) or whose
         * leaf code saved it in the red zone: the kernel put its frame below
         * those 128 bytes. */
        uint64_t floor_at = !w.exact ? w.sp : w.sp - w.lo >= 128 ? w.sp - 128 : w.lo;
        uint64_t rule = lookup(local, w.ip - 1 + w.exact, gen);
        unsigned kind = RULE_KIND(rule);
        w.exact = 0;
        uint64_t base;
        if (kind == R_RSP) {
            base = w.sp;
        } else if (kind == R_RBP) {
            base = w.rbp;
        } else if (kind == R_RBX && w.rbx_known) {
            base = w.rbx;
        } else if (kind == R_SIGNAL) {
            int c = cross(t, &w, w.sp);
            if (c)
                return c < 0 ? -1 : (int)n;
            continue;
        } else if (kind == R_END) {
            return (int)n;
        } else {
            return -1;
        }
        uint64_t cfa = base + RULE_CFA_OFF(rule);
        if (cfa <= w.sp || cfa > w.hi || (cfa & 7))
            return n == 1 ? -1 : (int)n;   /* garbage: stop here */
        uint64_t retaddr = ((const uint64_t *)cfa)[-1];
        if (RULE_RBX_HOW(rule) == S_AT) {
            uint64_t at = cfa + RULE_RBX_OFF(rule);
            if (at < floor_at || at + 8 > cfa)
                w.rbx_known = 0;
            else
                w.rbx = *(const uint64_t *)at;
        } else if (RULE_RBX_HOW(rule) == S_LOST) {
            w.rbx_known = 0;
        }
        if (RULE_RBP_HOW(rule) == S_AT) {
            uint64_t at = cfa + RULE_RBP_OFF(rule);
            if (at < floor_at || at + 8 > cfa)
                return (int)n;
            w.rbp = *(const uint64_t *)at;
        }
        w.sp = cfa;
        w.ip = retaddr;
    }
    return (int)n;
}

/* vh_cfi_walk met a signal handler's frame (the trampoline is buf[n-1]),
 * its ucontext at uc on the thread's stack. */
static VH_NOINLINE int walk_signal(struct vh_tls *t, struct entry *local, uint64_t uc,
                                   uint64_t gen, uint64_t *buf, uint32_t n, uint32_t want)
{
    struct wstate w = { .lo = t->stack_lo, .hi = t->stack_hi };
    int c = cross(t, &w, uc);
    return c == 0 ? walk_plain(t, local, &w, gen, buf, n, want) : c < 0 ? -1 : (int)n;
}

/* The new window: fresh[0..m) in front of the reused run old[tj, tx] left
 * in place (tl = tx - tj + 1 frames, 0 for none); folds computed when the
 * walk of n frames ended by itself. Returns the walk's fold or 0. Out of
 * line: only walks that are not known come here, and inlined at its three
 * calls it crowded the known walks' path (+1.4% instructions, sqlite). */
static VH_NOINLINE uint64_t memo_update(struct memo *M, const struct mframe *fresh, uint32_t m,
                                      uint32_t tj, uint32_t tl, uint32_t n, int ended,
                                      uint64_t gen)
{
    uint32_t at = M->s + tj;       /* the run's first frame in f[] */
    int tail_folded = tl && M->folded;
    if (m + tl > MEMO) {
        /* Deeper than the memo: its inner part, without folds. */
        tl = m < MEMO ? MEMO - m : 0;
        tail_folded = 0;
        ended = 0;
    }
    if (!tl)
        at = MEMO_CAP;
    else if (at < m) {
        memmove(&M->f[MEMO_CAP - tl], &M->f[at], (size_t)tl * sizeof M->f[0]);
        at = MEMO_CAP - tl;
    }
    uint32_t s = at - m;
    int folded = ended && m + tl == n;
    M->s = s;
    M->e = at + tl;
    M->gen = (uint32_t)gen;
    M->folded = (uint32_t)folded;
    /* Folds: the run's own, or worked out for it now. */
    uint64_t h = VH_HASH_SEED;
    if (folded && tail_folded) {
        h = M->f[at].fold;
    } else if (folded) {
        for (uint32_t i = M->e; i > at;) {
            i--;
            h = vh_hash_step(h, M->f[i].ip);
            M->f[i].fold = h;
        }
    }
    /* The new frames, outermost first, in one pass: copied in (mostly one
     * or two: no memcpy call), where rbp matters, and their folds. */
    uint64_t live = tl ? M->f[at].live : 0;
    for (uint32_t k = m; k > 0;) {
        k--;
        struct mframe *d = &M->f[s + k];
        *d = fresh[k];
        live = d->uses | (d->at ? 0 : live);
        d->live = live;
        if (folded) {
            h = vh_hash_step(h, d->ip);
            d->fold = h;
        }
    }
    return folded ? h : 0;
}

/* The common part of a reused run, apart so that its loop keeps every
 * value in a register: from f (whose state matched) on, while f < stop,
 * each frame whose caller is still the memo's next frame is written to
 * out. Returns the first frame it did not follow (vh_cfi_walk's loop takes
 * over there); *rsrc and *rbp carry the rbp as that loop does. */
static VH_NOINLINE struct mframe *follow(struct mframe *f, const struct mframe *stop,
                                         uint64_t *out, const uint64_t **rsrc, uint64_t *rbp)
{
    const uint64_t *src = *rsrc;
    uint64_t v = *rbp;
    while (f < stop) {
        uint64_t x = f->nsp;
        if ((x & 7) != H_NEXT || ((const uint64_t *)(x - H_NEXT))[-1] != f[1].ip)
            break;
        const uint64_t *at = (const uint64_t *)f->at;
        if (f[1].live) {
            uint64_t r = at ? *at : src ? *src : v;
            if (r != f[1].rbp)
                break;
            v = r;
            src = NULL;
        } else if (at) {
            src = at;
        }
        *out++ = f->ip;
        f++;
    }
    *rsrc = src;
    *rbp = v;
    return f;
}

/* ---- walks known by where they start -----------------------------------------
 * Most walks are, frame for frame, a walk that started at the same state
 * before: the same call site, reached along the same path (sqlite bench:
 * one of the last four walks from its start in 99.9% of the walks, Python
 * 90%; only 41% and 8% repeat the walk just before them, which is what a
 * memo's reuse is best at). Such a walk is known by the stack words it
 * read: each frame's return address slot with the caller's address, the
 * saved rbp slots wherever rbp matters (follow's comparisons), and the zero
 * that ended it. A walk from the same state (ip, sp, rbp where it matters,
 * module generation) is the same walk exactly when those words all still
 * hold, checked in one pass, 4 loads a word, instead of 20 instructions a
 * frame in follow() or a rule lookup in the walk; and the caller's word
 * kept with it (the stack id) spares the hash too.
 *
 * A thread's known walks are a 4-way set-associative table keyed by the
 * start, in its walk state (struct vh_walker). Their checks are written
 * one after another into a ring (`pool`), so a walk of any depth takes just
 * the room it needs. Every listed word lies on the thread's stack above the
 * start's sp (the start's frame is live while the walk runs), so reading it
 * again is safe whatever it holds. */
#define KNOWN_SET_BITS 8
#define KNOWN_SETS (1u << KNOWN_SET_BITS)
#define KNOWN_WAYS 4u
#define POOL_CHECKS 16384u         /* 256 KiB: 16 checks a known walk */
#define QUARTER (POOL_CHECKS / 4)

/* A stack word a known walk read, and the value it found. */
struct check {
    const uint64_t *at;
    uint64_t value;
};

struct known {
    uint64_t ip, sp;               /* the start; a `rel` walk's sp is how
                                      far above the start its checks read */
    uint64_t rbp, live;            /* rbp there, compared where live (~0)
                                      (`rel`: as an offset from the start) */
    uint64_t tag;                  /* the caller's word for this walk, 0 none */
    uint64_t fold;                 /* vh_hash_fold of its frames (what
                                      VH_CFI_VERIFY builds and tests check) */
    uint32_t at, nchk;             /* its checks: pool[at, at + nchk)      */
    uint16_t frames;
    uint16_t gen;                  /* module generation (16 bits, as keys) */
    uint8_t cut;                   /* the walk stopped at `frames`, the
                                      count it was asked for: it is the
                                      same walk only when asked as much   */
    uint8_t rel;                   /* known from any sp (rel_find)       */
    uint8_t nrelv;                 /* `rel`: its last checks' values are
                                      offsets from the start too         */
};

/* The walks known from starts that hash alike: mostly one start's, a call
 * site reached along a few paths in turn (sqlite: a start's walks are one
 * of its last four in 99.9% of the walks, the last one in 83%). One line
 * says which start each way holds, so a walk reads only its own. */
struct kset {
    uint64_t key[KNOWN_WAYS];      /* start_key of each way's walk, 0 none */
    uint32_t used[KNOWN_WAYS];     /* `tick` when each was last found      */
    uint32_t tick;
    uint8_t next[KNOWN_WAYS];      /* `rel` ways: the way + 1 found right
                                      after each (rel_find tries it first) */
} __attribute__((aligned(64)));

/* The checks are written one walk after another into a ring; before the
 * head enters a quarter of it, every entry with checks there is dropped,
 * so an entry found is always whole (and a find reads no ring state). */
struct vh_known {
    struct kset set[KNOWN_SETS];
    struct known e[KNOWN_SETS][KNOWN_WAYS];
    uint64_t pos;                  /* checks ever reserved: the ring's head */
    uint64_t quarter;              /* the quarter (of all ever) it is in   */
    uint64_t last_ip, last_sp;     /* the start of the last walk listed   */
    uint64_t rel_first;            /* the last walk found was a `rel` one:
                                      the next is looked for so first (a
                                      recursion's walks are, and by their
                                      start each would miss a cold set)  */
    uint32_t rel_set, rel_way;     /* the `rel` walk found or listed last  */
    struct check pool[POOL_CHECKS];
};

/* A thread's walk state: its rule cache, memo and known walks (355 KiB,
 * the pages it never touches not backed), mapped at its first event, not
 * in static TLS: glibc carves static TLS out of every thread's stack, and a
 * program's thread with a 64 KiB stack could not even be created (EINVAL)
 * while the shim's took 71 KiB of it. Without it (before the first event,
 * or if it could not be mapped) a walk is libunwind's. */
struct vh_walker {
    struct entry local[LOCAL_SLOTS];
    struct mframe fresh[MEMO] __attribute__((aligned(64)));
    struct memo memo;
    struct vh_known known;
};

/* Without walk state (-1), the walk is libunwind's, as in vh_cfi_walk. */
int vh_cfi_walk_on(struct vh_tls *t, uint64_t ip, uint64_t sp, uint64_t rbp, uint64_t lo,
                   uint64_t hi, uint64_t *buf, uint32_t want)
{
    if (sp < lo || sp >= hi || !t->walker)
        return -1;
    struct wstate w = { .ip = ip, .sp = sp, .rbp = rbp, .lo = lo, .hi = hi };
    return walk_plain(t, t->walker->local, &w,
                      __atomic_load_n(&vh_module_gen, __ATOMIC_RELAXED) & 0xffff, buf, 0, want);
}

void vh_cfi_thread(struct vh_tls *t)
{
    if (!t->walker)
        t->walker = vh_thread_map(sizeof(struct vh_walker));
}

void vh_cfi_thread_end(struct vh_tls *t)
{
    struct vh_walker *W = t->walker;
    t->walker = NULL;
    vh_thread_unmap(W, sizeof *W);
}

VH_ALWAYS_INLINE uint64_t start_key(uint64_t ip, uint64_t sp)
{
    return ((ip ^ sp) * 0x9e3779b97f4a7c15ull) | 1;
}

VH_ALWAYS_INLINE uint32_t set_of(uint64_t key)
{
    return (uint32_t)(key >> (64 - KNOWN_SET_BITS));
}

/* Room for n checks in one piece (n <= QUARTER): its index in the ring;
 * the entries whose checks were there are dropped. */
static uint32_t known_reserve(struct vh_known *K, uint32_t n)
{
    uint64_t pos = K->pos;
    if (pos % POOL_CHECKS + n > POOL_CHECKS)
        pos += POOL_CHECKS - pos % POOL_CHECKS;
    K->pos = pos + n;
    for (uint64_t q = K->quarter + 1; q <= (pos + n - 1) / QUARTER; q++) {
        uint32_t lo = (uint32_t)(q % 4) * QUARTER, hi = lo + QUARTER;
        for (uint32_t s = 0; s < KNOWN_SETS; s++)
            for (unsigned w = 0; w < KNOWN_WAYS; w++) {
                const struct known *E = &K->e[s][w];
                if (K->set[s].key[w] && E->at < hi && E->at + E->nchk > lo)
                    K->set[s].key[w] = 0;
            }
        K->quarter = q;
    }
    return (uint32_t)(pos % POOL_CHECKS);
}

/* A walk known from this start that still holds, whose caller's word is
 * of `era`: that word. */
VH_ALWAYS_INLINE uint64_t *known_find(struct vh_known *K, uint64_t ip, uint64_t sp,
                                      uint64_t rbp, uint64_t gen, uint32_t want, uint32_t era)
{
    uint64_t key = start_key(ip, sp);
    uint32_t s = set_of(key);
    struct kset *S = &K->set[s];
    for (unsigned w = 0; w < KNOWN_WAYS; w++) {
        if (S->key[w] != key)
            continue;
        struct known *E = &K->e[s][w];
        if (E->ip != ip || E->sp != sp || E->rel || E->gen != gen || ((E->rbp ^ rbp) & E->live) ||
            E->tag >> 32 != era || (E->cut ? E->frames != want : E->frames >= want))
            continue;
        const struct check *c = &K->pool[E->at], *end = c + E->nchk;
        while (c < end && *c->at == c->value)
            c++;
        if (c == end) {
            S->used[w] = ++S->tick;
            if (vh_unlikely(K->rel_first))
                K->rel_first = 0;
            return &E->tag;
        }
    }
    return NULL;
}

/* ---- cut walks known from any depth ------------------------------------
 * A walk cut at the count asked for, deep in a recursion (Vere's nock
 * interpreter: most of its walks), starts at another sp at every level, so
 * by its start it is never known (a descent of 400 levels lists 400 walks
 * of 65 frames, far more than the ring holds) although the frames it finds
 * are one of a few. Such a walk is listed relative to its start: each word
 * as its offset from the start's sp, and a saved rbp that matters (a frame
 * pointer, so an address on the stack) as an offset too; the start's rbp
 * likewise. The rules are the same at every depth (they depend on the ip
 * alone), and every CFA is sp- or rbp-based, so from sp + d with rbp + d
 * the walk reads the same words d higher and, where each still holds
 * (return addresses as they were, saved rbps d higher), finds the same
 * frames. Keyed by the ip alone; `sp` keeps how far up the checks read, so
 * a start too near the stack's base to hold them is not tried. A check's
 * `at` is its offset; the return addresses come first, the `nrelv` saved
 * rbps (values relative too) last. Such a walk lists 65 words or more,
 * where a shallow one lists a few: they are compared four at a time with
 * one branch, not one by one (a third of the time such an event cost). */
VH_ALWAYS_INLINE uint64_t rel_key(uint64_t ip)
{
    return start_key(ip, 0x52454cull);
}

/* Whether the n words (the last nv relative values) still hold from sp.
 * Walked by pointer: with an index the compiler rebuilt each address from
 * it, 35 instructions a group of four words where 16 do. */
VH_ALWAYS_INLINE int rel_holds(const struct check *c, uint32_t n, uint32_t nv, uint64_t sp)
{
    const struct check *end4 = c + (n & ~3u), *end = c + n, *endv = end + nv;
    uint64_t diff = 0;
#define REL_WORD(k) (*(const uint64_t *)(sp + (uint64_t)c[k].at) ^ c[k].value)
    for (; c < end4 && !diff; c += 4)
        diff = REL_WORD(0) | REL_WORD(1) | REL_WORD(2) | REL_WORD(3);
    for (; c < end && !diff; c++)
        diff = REL_WORD(0);
#undef REL_WORD
    for (; c < endv && !diff; c++)
        diff = *(const uint64_t *)(sp + (uint64_t)c->at) ^ (c->value + sp);
    return !diff;
}

/* Way w of set s is the `rel` walk found (or listed) now: the way found
 * last in the same set learns that w came next. A descent goes through a
 * few walks in turn (one a level, the period of its recursion), so the
 * next is nearly always the one that came after the last one before; the
 * ways tried first in order shared a long prefix with it (4 groups of
 * four words read a failed way on bench/recurse.c, 1.7 failed ways a
 * walk). Only a hint: every way tried is checked whole. */
VH_ALWAYS_INLINE void rel_seen(struct vh_known *K, uint32_t s, unsigned w)
{
    if (K->rel_set == s)
        K->set[s].next[K->rel_way] = (uint8_t)(w + 1);
    K->rel_set = s;
    K->rel_way = w;
}

static VH_NOINLINE uint64_t *rel_find(struct vh_known *K, uint64_t ip, uint64_t sp, uint64_t rbp,
                                      uint64_t hi, uint64_t gen, uint32_t want, uint32_t era)
{
    uint64_t key = rel_key(ip);
    uint32_t s = set_of(key);
    struct kset *S = &K->set[s];
    unsigned next = K->rel_set == s ? S->next[K->rel_way] : 0;
    unsigned first = next ? next - 1 : 0;
    for (unsigned i = 0; i < KNOWN_WAYS; i++) {
        unsigned w = (first + i) % KNOWN_WAYS;
        if (S->key[w] != key)
            continue;
        struct known *E = &K->e[s][w];
        if (E->ip != ip || !E->rel || E->gen != gen || E->frames != want ||
            E->tag >> 32 != era || hi - sp < E->sp || ((E->rbp + sp) ^ rbp) & E->live)
            continue;
        if (rel_holds(&K->pool[E->at], E->nchk - E->nrelv, E->nrelv, sp)) {
            S->used[w] = ++S->tick;
            K->rel_first = 1;
            rel_seen(K, s, w);
            return &E->tag;
        }
    }
    return NULL;
}

/* The checks that tell a walk from of[0]'s state is still the same, its
 * frames' [0, have - 1) into chk[*c...]: each frame's return address,
 * and the saved rbps that matter (a relative walk's, less base, into
 * relv[*nv...], listed last); *top raised to the highest stack word read.
 * -1 when the walk cannot be checked so. */
static int known_checks(const struct mframe *of, uint32_t have, uint64_t base, int rel,
                        uint64_t lo, uint64_t hi, struct check *chk, uint32_t *c,
                        struct check *relv, uint32_t *nv, uint64_t *top)
{
    const uint64_t *src = NULL;
    for (uint32_t k = 0; k + 1 < have; k++) {
        uint64_t x = of[k].nsp;
        if ((x & 7) != H_NEXT)
            return -1;             /* a frame walked anew every time */
        chk[(*c)++] = (struct check){ (const uint64_t *)(x - H_NEXT - 8 - base), of[k + 1].ip };
        *top = x - H_NEXT > *top ? x - H_NEXT : *top;
        const uint64_t *at = (const uint64_t *)of[k].at;
        if (of[k + 1].live) {
            /* Without a slot, follow compares the rbp the walk came in
             * with (the start's, compared) and the memo's own copies. */
            if (at || src) {
                uint64_t a = (uint64_t)(at ? at : src), v = of[k + 1].rbp;
                if (!rel) {
                    chk[(*c)++] = (struct check){ (const uint64_t *)a, v };
                } else if (v - lo >= hi - lo) {
                    return -1;     /* not a frame pointer: not relative */
                } else {
                    relv[(*nv)++] = (struct check){ (const uint64_t *)(a - base), v - base };
                    *top = a + 8 > *top ? a + 8 : *top;
                }
            }
            src = NULL;
        } else if (at) {
            src = at;
        }
    }
    return 0;
}

/* A cut window's folds were not kept. The record keeps one frame fewer
 * (the last one only says the walk was cut): that fold too, into
 * *rec_fold, beside (two independent chains), so stacks.c need not fold
 * the frames again. Returns the whole window's. */
static uint64_t cut_folds(const struct mframe *of, uint32_t have, uint64_t *rec_fold)
{
    uint64_t less = VH_HASH_SEED, fold = vh_hash_step(VH_HASH_SEED, of[have - 1].ip);
    for (uint32_t k = have - 1; k > 0; k--) {
        fold = vh_hash_step(fold, of[k - 1].ip);
        less = vh_hash_step(less, of[k - 1].ip);
    }
    *rec_fold = less;
    return fold;
}

/* Lists the words of the walk the window holds, all of it, from of[0] on,
 * as a walk known from of[0]'s state, in place of the set's least
 * recently found one; its word (0 until the caller stores one), or NULL
 * when the walk cannot be checked so. The walk ended by itself, or was
 * `cut` at the count it was asked for (deep recursion: most of Vere's
 * walks), where what comes after its last frame does not matter. */
static uint64_t *known_make(struct vh_known *K, const struct memo *M, uint64_t gen, int cut,
                            uint64_t lo, uint64_t hi, uint64_t *rec_fold)
{
    const struct mframe *of = &M->f[M->s];
    uint32_t have = M->e - M->s, c = 0;
    if (have > MEMO)
        return NULL;
    /* A cut walk from the ip the last walk listed started at, further in
     * and through that walk's start frame (a recursion: the frame that
     * made the last allocation is this one's caller's caller...), is
     * listed relative to its start (rel_find); any other by its start, as
     * before. Keyed by the ip alone, the walks of one call site reached
     * along many paths (Vere's allocator under every jet) shared four
     * ways: the ship's parse phase took a fifth more CPU. */
    int rel = 0;
    if (cut && of[0].ip == K->last_ip && of[0].sp < K->last_sp)
        for (uint32_t k = 1; k < have && !rel; k++)
            rel = of[k].sp == K->last_sp;
    K->last_ip = of[0].ip;
    K->last_sp = of[0].sp;
    uint64_t base = rel ? of[0].sp : 0, top = of[0].sp;
    uint64_t key = rel ? rel_key(of[0].ip) : start_key(of[0].ip, of[0].sp);
    uint32_t s = set_of(key);
    struct kset *S = &K->set[s];
    unsigned w = 0;
    for (unsigned i = 1; i < KNOWN_WAYS && S->key[w]; i++)
        if (!S->key[i] || S->used[i] < S->used[w])
            w = i;
    struct known *E = &K->e[s][w];
    S->key[w] = 0;
    /* Room for the most this walk can list (given back below). */
    uint32_t first = known_reserve(K, 2 * have);
    struct check *chk = &K->pool[first];
    struct check *relv = chk + have;   /* a cut walk's saved rbps, listed last */
    uint32_t nv = 0;
    if (known_checks(of, have, base, rel, lo, hi, chk, &c, relv, &nv, &top) < 0)
        goto fail;
    uint64_t x = of[have - 1].nsp, fold = of[0].fold;
    unsigned how = (unsigned)x & 7;
    if (rel && of[0].live && of[0].rbp - lo >= hi - lo)
        goto fail;
    if (cut) {
        fold = cut_folds(of, have, rec_fold);
    } else if (how == H_ZERO) {
        chk[c++] = (struct check){ (const uint64_t *)(x & ~(uint64_t)7) - 1, 0 };
    } else if (how != H_END && how != H_GARBAGE) {
        goto fail;
    }
    memmove(&chk[c], relv, nv * sizeof relv[0]);
    c += nv;
    K->pos -= 2 * have - c;        /* the room not taken */
    *E = (struct known){ .ip = of[0].ip, .sp = rel ? top - base : of[0].sp,
                         .rbp = of[0].rbp - base, .live = of[0].live,
                         .fold = fold, .at = first, .nchk = c,
                         .frames = (uint16_t)have, .gen = (uint16_t)gen, .cut = (uint8_t)cut,
                         .rel = (uint8_t)rel, .nrelv = (uint8_t)nv };
    S->used[w] = ++S->tick;
    if (rel)
        rel_seen(K, s, w);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    S->key[w] = key;
    return &E->tag;
fail:
    K->pos -= 2 * have;
    return NULL;
}

#ifdef VH_CFI_VERIFY
uint32_t vh_cfi_known(const uint64_t *tag, uint64_t *fold)
{
    const struct known *E =
        (const struct known *)(const void *)((const char *)tag - offsetof(struct known, tag));
    *fold = E->fold;
    return E->frames;
}
#endif

/* The walk, at memo frame f's sp, is at f's state: the same ip, and the
 * same rbp where it matters. */
VH_ALWAYS_INLINE int same_state(const struct mframe *f, uint64_t ip, uint64_t rbp)
{
    return f->ip == ip && !((f->rbp ^ rbp) & f->live);
}

/* Kept in one piece although long (issue 29's limit is ~80 lines): it is
 * the walk of every recorded call, one loop over the frames whose state
 * (ip, sp, rbp, the memo's position j and its sp, the counts n and m)
 * stays in registers from frame to frame, and whose two ways on (the
 * memo's run, a frame walked by its rule) leave through the same labels.
 * Cut in two, that state would go through memory at every frame. */
int vh_cfi_walk(struct vh_tls *t, uint64_t ip, uint64_t sp, uint64_t rbp, uint64_t *buf,
                uint32_t want, uint64_t *fold, uint64_t **tag, uint32_t era)
{
    uint64_t lo = t->stack_lo, hi = t->stack_hi;
    uint64_t gen = __atomic_load_n(&vh_module_gen, __ATOMIC_RELAXED) & 0xffff;
    uint32_t n = 0, m = 0, j = 0;
    *fold = 0;
    *tag = NULL;
    struct vh_walker *W = t->walker;
    if (sp < lo || sp >= hi || vh_unlikely(!W))
        return -1;                 /* another stack (vh_cfi_walk_on's), or no
                                      walk state: libunwind's */
    struct vh_known *K = &W->known;
    /* Relative walks are looked for only where one can be: first after
     * one was found, else at the ip of the walk listed last, further in. */
    uint64_t rel_first = K->rel_first;
    if ((rel_first && (*tag = rel_find(K, ip, sp, rbp, hi, gen, want, era))) ||
        (*tag = known_find(K, ip, sp, rbp, gen, want, era)) ||
        (!rel_first && ip == K->last_ip && sp < K->last_sp &&
         (*tag = rel_find(K, ip, sp, rbp, hi, gen, want, era))))
        return VH_WALK_KNOWN;
    K->rel_first = 0;
    struct mframe *fresh = W->fresh;
    struct memo *M = &W->memo;
    struct mframe *of = &M->f[M->s];
    uint32_t have = M->gen == gen ? M->e - M->s : 0;
    struct mframe scratch;
    int ret;
    uint64_t jsp = have ? of[0].sp : UINT64_MAX;
    while (n < want && ip) {
        /* The memo's next frame's sp, kept in a register: most new frames
         * are below it, decided by one comparison. */
        if (sp >= jsp) {
            while (j < have && of[j].sp < sp)
                j++;
            jsp = j < have ? of[j].sp : UINT64_MAX;
        }
        if (sp == jsp && same_state(&of[j], ip, rbp)) {
            /* The previous walk from here on, while its reads still hold:
             * follow() goes as far as the memo's next frame is the caller,
             * up to the memo's last frame or the one that fills buf. */
            const struct mframe *stop = &of[have - 1];
            if ((uint64_t)(stop - &of[j]) >= want - n)
                stop = &of[j] + (want - n - 1);
            /* rbp is *rsrc when rsrc is set: a saved rbp is read only where
             * it matters, or here, where the run ends. */
            const uint64_t *rsrc = NULL;
            struct mframe *f = follow(&of[j], stop, buf + n, &rsrc, &rbp);
            n += (uint32_t)(f - &of[j]);
            uint64_t x = f->nsp;
            unsigned how = (unsigned)x & 7;
            if (how == H_OPEN) {
                /* Walk that frame below, from its state. */
                for (const struct mframe *g = &of[j]; g < f && m < MEMO; g++)
                    fresh[m++] = *g;
                ip = f->ip;
                sp = f->sp;
                rbp = rsrc ? *rsrc : rbp;
                j = have;          /* nothing further back to reuse */
                jsp = UINT64_MAX;
            } else {
                buf[n++] = f->ip;
                if (f->at)
                    rsrc = (const uint64_t *)f->at;
                if (how == H_NEXT) {
                    if (n == want)
                        goto in_run;   /* truncated inside the run */
                    sp = x - H_NEXT;
                    ip = ((const uint64_t *)sp)[-1];
                } else if (how >= H_END) {
                    if (how == H_GARBAGE && n == 1)
                        return -1;
                    goto in_run;   /* ended as before */
                } else {           /* H_ZERO */
                    sp = x & ~(uint64_t)7;
                    ip = ((const uint64_t *)sp)[-1];
                    if (!ip)
                        goto in_run;
                }
                rbp = rsrc ? *rsrc : rbp;
                /* Diverged (or the memo ends): carry on from the caller's
                 * state, with the run's frames among the new ones. */
                for (const struct mframe *g = &of[j]; g <= f && m < MEMO; g++)
                    fresh[m++] = *g;
                j = (uint32_t)(f + 1 - of);
                jsp = j < have ? of[j].sp : UINT64_MAX;
                continue;
            in_run:
                *fold = memo_update(M, fresh, m, j, (uint32_t)(f - of) + 1 - j, n, n < want, gen);
                goto done;
            }
        }
        buf[n++] = ip;
        struct mframe *rec = m < MEMO ? &fresh[m++] : &scratch;
        /* fold and live are memo_update's; nsp and at are set again where
         * the frame is followed, uses once its rule is known. */
        rec->ip = ip;
        rec->sp = sp;
        rec->rbp = rbp;
        rec->nsp = H_OPEN;
        rec->at = 0;
        uint64_t rule = lookup(W->local, ip - 1, gen);
        unsigned kind = RULE_KIND(rule);
        rec->uses = kind == R_RBP || kind == R_SIGNAL ? ~0ull : 0;
        if (kind == R_END) {
            rec->nsp = H_END;
            goto ended;
        }
        if (vh_unlikely(kind != R_RSP && kind != R_RBP)) {
            if (kind != R_SIGNAL)
                return -1;
            /* A signal handler's frame: the rest is walk_plain's (and this
             * frame stays H_OPEN, walked anew every time). */
            ret = walk_signal(t, W->local, sp, gen, buf, n, want);
            if (ret >= 0)
                memo_update(M, fresh, m, 0, 0, (uint32_t)ret, 0, gen);
            return ret;
        }
        uint64_t cfa = (kind == R_RSP ? sp : rbp) + RULE_CFA_OFF(rule);
        if (cfa <= sp || cfa > hi || (cfa & 7)) {
            rec->nsp = H_GARBAGE;
            if (n == 1)
                return -1;         /* garbage: stop here */
            goto ended;
        }
        uint64_t retaddr = ((const uint64_t *)cfa)[-1];
        uint64_t at = 0;
        if (RULE_RBP_HOW(rule) == S_AT) {
            at = cfa + RULE_RBP_OFF(rule);
            if (at < sp || at + 8 > cfa) {
                rec->nsp = H_END;
                goto ended;
            }
            rbp = *(const uint64_t *)at;
        }
        rec->nsp = cfa | (retaddr ? H_NEXT : H_ZERO);
        rec->at = at;
        sp = cfa;
        ip = retaddr;
    }
ended:
    *fold = memo_update(M, fresh, m, 0, 0, n, n < want, gen);
done:
    /* A walk that ended by itself is the memo's window, all of it; a cut
     * one is when the window is as long. */
    if (*fold || (n == want && M->e - M->s == n))
        *tag = known_make(K, M, gen, n == want, lo, hi, fold);
    return (int)n;
}
