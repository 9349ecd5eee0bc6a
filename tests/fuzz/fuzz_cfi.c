/* fuzz_cfi.c — libFuzzer target: the shim's .eh_frame_hdr / .eh_frame
 * parser and CFA interpreter (preload/cfi.c, compiled in here), which runs
 * inside every profiled program on the unwind tables of whatever objects it
 * loaded. The input is an object's read-only segment as ld.so would present
 * it: a header (below), then the segment's bytes from its .eh_frame_hdr on.
 * rule_cb runs on it as dl_iterate_phdr would call it, for addresses in a
 * code segment the header places (those the table's FDEs start at, shifted
 * by the header's offset, and the offset itself) and one in the data. Checks:
 * no read outside the segment (ASan: the bytes are a heap block of exactly
 * that size), a rule for every address inside the object, every rule one
 * the walker can follow (kind, CFA offset in [8, CFA_MAX), saved-register
 * offsets below the CFA), and the same rule for the same address twice.
 *
 * Header, little-endian: u64 segment vaddr, u32 .eh_frame_hdr offset in the
 * bytes, u32 PT_GNU_EH_FRAME size, u64 code vaddr, u32 code size, u32 the
 * addresses' offset. tests/fuzz/gen_cfi_seeds.c writes real objects' seeds. */
#include "preload/cfi.c"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

uint32_t vh_module_gen;            /* state.c's, not linked here */

#define HDR_LEN 32u
#define MAX_IPS 24u

struct input {
    uint64_t seg_vaddr, code_vaddr;
    uint32_t hdr_off, hdr_size, code_size, ip_off;
};

static uint64_t le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    memcpy(&v, p, n);
    return v;
}

/* What the walker can follow: the checks walk_plain relies on. */
static void check_rule(uint64_t ip, uint64_t rule)
{
    unsigned kind = RULE_KIND(rule);
    FZ_CHECK(kind >= R_RSP && kind <= R_RBX, "ip %#lx: rule kind %u", (unsigned long)ip, kind);
    if (kind != R_RSP && kind != R_RBP && kind != R_RBX)
        return;
    uint64_t cfa = RULE_CFA_OFF(rule);
    FZ_CHECK(cfa >= 8 && cfa < CFA_MAX, "ip %#lx: CFA offset %lu", (unsigned long)ip,
             (unsigned long)cfa);
    FZ_CHECK(RULE_RBP_HOW(rule) <= S_AT && RULE_RBX_HOW(rule) <= S_LOST,
             "ip %#lx: register rules %u %u", (unsigned long)ip, RULE_RBP_HOW(rule),
             RULE_RBX_HOW(rule));
    if (RULE_RBP_HOW(rule) == S_AT)
        FZ_CHECK((int64_t)RULE_RBP_OFF(rule) < 0, "ip %#lx: rbp saved at CFA%+ld",
                 (unsigned long)ip, (long)(int64_t)RULE_RBP_OFF(rule));
    if (RULE_RBX_HOW(rule) == S_AT)
        FZ_CHECK((int64_t)RULE_RBX_OFF(rule) < 0, "ip %#lx: rbx saved at CFA%+ld",
                 (unsigned long)ip, (long)(int64_t)RULE_RBX_OFF(rule));
}

static void probe(struct dl_phdr_info *info, uint64_t ip, int inside)
{
    struct query q = { ip, END_RULE, 0 }, again = { ip, END_RULE, 0 };
    rule_cb(info, sizeof *info, &q);
    rule_cb(info, sizeof *info, &again);
    FZ_CHECK(q.found == inside, "ip %#lx: found %d, inside %d", (unsigned long)ip, q.found,
             inside);
    FZ_CHECK(q.rule == again.rule, "ip %#lx: rules %#lx then %#lx", (unsigned long)ip,
             (unsigned long)q.rule, (unsigned long)again.rule);
    if (q.found)
        check_rule(ip, q.rule);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HDR_LEN + 1)
        return 0;
    struct input in = {
        .seg_vaddr = le(data, 8), .hdr_off = (uint32_t)le(data + 8, 4),
        .hdr_size = (uint32_t)le(data + 12, 4), .code_vaddr = le(data + 16, 8),
        .code_size = (uint32_t)le(data + 24, 4), .ip_off = (uint32_t)le(data + 28, 4),
    };
    size_t len = size - HDR_LEN;
    /* Exactly the segment's bytes: ASan reports any read past either end. */
    uint8_t *seg = malloc(len);
    if (!seg)
        return 0;
    memcpy(seg, data + HDR_LEN, len);
    /* ELF keeps PT_GNU_EH_FRAME 4-aligned (its table is int32s). */
    in.hdr_off = in.hdr_off % (uint32_t)len & ~3u;
    /* Addresses as the object had them: the segment at its vaddr, the code
     * segment (never read: not readable) wherever the header puts it, as
     * long as the two do not overlap and nothing wraps. */
    uint64_t seg_end = in.seg_vaddr + len;
    uint64_t code_end = in.code_vaddr + in.code_size;
    if (seg_end < in.seg_vaddr || code_end < in.code_vaddr ||
        (in.code_vaddr < seg_end && in.seg_vaddr < code_end) ||
        in.seg_vaddr > (uintptr_t)seg) {
        free(seg);
        return 0;
    }
    ElfW(Phdr) ph[3] = {
        { .p_type = PT_LOAD, .p_flags = PF_R, .p_vaddr = in.seg_vaddr, .p_memsz = len,
          .p_filesz = len },
        { .p_type = PT_LOAD, .p_flags = PF_X, .p_vaddr = in.code_vaddr,
          .p_memsz = in.code_size, .p_filesz = in.code_size },
        { .p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_vaddr = in.seg_vaddr + in.hdr_off,
          .p_memsz = in.hdr_size },
    };
    struct dl_phdr_info info = { .dlpi_addr = (uintptr_t)seg - in.seg_vaddr,
                                 .dlpi_name = "fuzz", .dlpi_phdr = ph, .dlpi_phnum = 3 };
    uint64_t bias = info.dlpi_addr;

    /* The addresses the table's FDEs start at (what real walks ask for),
     * read here as the table says, spread over it. */
    uint64_t ips[MAX_IPS];
    unsigned n = 0;
    ips[n++] = bias + in.code_vaddr + in.ip_off;
    const uint8_t *h = seg + in.hdr_off;
    size_t room = len - in.hdr_off;
    if (room >= 12 && h[0] == 1 && h[3] == (DW_EH_PE_datarel | DW_EH_PE_sdata4) &&
        h[1] == (DW_EH_PE_pcrel | DW_EH_PE_sdata4) && h[2] == DW_EH_PE_udata4) {
        uint64_t count = le(h + 8, 4), fit = (room - 12) / 8;
        if (count > fit)
            count = fit;
        for (uint64_t i = 0; i < count && n < MAX_IPS - 1; i += count / (MAX_IPS - 2) + 1) {
            int32_t start = (int32_t)le(h + 12 + 8 * i, 4);
            ips[n++] = (uintptr_t)h + (uint64_t)(int64_t)start + (in.ip_off & 63);
        }
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t vaddr = ips[i] - bias;
        int inside = (vaddr >= in.code_vaddr && vaddr < code_end) ||
                     (vaddr >= in.seg_vaddr && vaddr < seg_end);
        probe(&info, ips[i], inside);
    }
    /* One inside the readable segment: the trampoline test reads there. */
    probe(&info, (uintptr_t)seg + in.ip_off % len, 1);
    free(seg);
    return 0;
}
