/* gen_cfi_seeds.c — writes the cfi target's seeds (tests/fuzz/corpus/cfi/)
 * from real ELF objects: each object's unwind tables as fuzz_cfi.c reads
 * them (its header: where the segment and the code were, then the bytes of
 * the read-only segment from .eh_frame_hdr to the segment's end).
 *   gen_cfi_seeds OUTDIR ELF...           (tests/fuzz/gen-corpus.sh runs it) */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n;

    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(1);
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void put(unsigned char *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static int seed(const char *outdir, const char *path)
{
    size_t size;
    unsigned char *elf = slurp(path, &size);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
    const Elf64_Phdr *hdr = NULL, *seg = NULL, *code = NULL;

    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phoff > size ||
        (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum) {
        fprintf(stderr, "gen_cfi_seeds: %s: not a 64-bit ELF object\n", path);
        return -1;
    }
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(elf + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_GNU_EH_FRAME)
            hdr = &ph[i];
    for (unsigned i = 0; hdr && i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        if ((ph[i].p_flags & PF_X) && !code)
            code = &ph[i];
        if (hdr->p_vaddr >= ph[i].p_vaddr && hdr->p_vaddr < ph[i].p_vaddr + ph[i].p_filesz)
            seg = &ph[i];
    }
    if (!hdr || !seg || !code || seg->p_offset + seg->p_filesz > size) {
        fprintf(stderr, "gen_cfi_seeds: %s: no .eh_frame_hdr in a loaded segment\n", path);
        return -1;
    }
    size_t from = seg->p_offset + (hdr->p_vaddr - seg->p_vaddr);
    size_t len = seg->p_offset + seg->p_filesz - from;
    unsigned char head[32];
    put(head, hdr->p_vaddr, 8);
    put(head + 8, 0, 4);                       /* .eh_frame_hdr at the start */
    put(head + 12, hdr->p_memsz, 4);
    put(head + 16, code->p_vaddr, 8);
    put(head + 24, code->p_memsz, 4);
    put(head + 28, 5, 4);                      /* a few bytes into each FDE */

    const char *base = strrchr(path, '/');
    char out[4096];
    snprintf(out, sizeof out, "%s/%s", outdir, base ? base + 1 : path);
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(head, 1, sizeof head, f) != sizeof head ||
        fwrite(elf + from, 1, len, f) != len || fclose(f) != 0) {
        perror(out);
        exit(1);
    }
    free(elf);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: gen_cfi_seeds OUTDIR ELF...\n");
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (seed(argv[1], argv[i]) < 0)
            rc = 1;
    return rc;
}
