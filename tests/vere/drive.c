/* drive.c — runs Vere's patched allocator (pkg/noun, linked by
 * tests/vere/build-check.sh) through the shapes the hooks cover: roads
 * entered with u3m_soft_top and u3m_soft_run and left through u3m_love with
 * results and with bails, leaked nouns that the sweep (u3m_grab) frees,
 * |pack, |meld (u3_meld_all: melt and pack), and at the end a re-sync:
 * the allocator reports every block it holds (u3a_vh_resync), so the
 * capture can tell whether vheap's live set was the allocator's. Prints
 * what it did, a "drive ..." line. */
#include "noun.h"

/* manage.c's top-level road wrapper (not in a header): u3m_soft would call
 * +mook on the kernel slot, which holds this driver's state instead */
u3_noun u3m_soft_top(c3_w mil_w, c3_w pad_w, u3_funk fun_f, u3_noun arg);
/* pkg/vere/melt.c (vere.h is not needed for the rest) */
c3_w u3_meld_all(FILE* fil_u, c3_o per_o, c3_o for_o);

/* A list of n atoms, every 4th one indirect (several words). */
static u3_noun make_list(c3_w n, c3_w seed)
{
    u3_noun l = u3_nul;
    for (c3_w i = 0; i < n; i++) {
        c3_w w[6] = { seed, i, seed ^ i, 7, 11, 13 };
        l = u3nc((i % 4) ? u3i_word(i & 0x3fffffff) : u3i_words(2 + i % 5, w), l);
    }
    return l;
}

/* Nested: a road inside a road, the product copied out twice. */
static u3_noun inner(u3_noun a, u3_noun b)
{
    u3_noun l = make_list(40 + u3r_word(0, a), u3r_word(0, b));
    (void)make_list(30, 9);                 /* dies with the road */
    return u3nc(l, u3k(a));
}

static u3_noun work(u3_noun arg)
{
    u3_noun r = u3m_soft_run(u3_nul, inner, u3k(arg), u3i_word(5));
    u3_noun big = make_list(200, u3r_word(0, arg));
    u3z(big);
    return u3nc(r, make_list(20, 3));
}

static u3_noun boom(u3_noun arg)
{
    (void)make_list(100, u3r_word(0, arg)); /* left to the road */
    return u3m_bail(c3__exit);
}

int main(int argc, char* argv[])
{
    c3_w bails = 0, oks = 0, kept = 0;
    /* drive [save|restore PIER]: a checkpoint written, or restored from */
    c3_c* pir_c = argc > 2 ? argv[2] : 0;
    c3_t sav_t = pir_c && !strcmp(argv[1], "save");
    if ( pir_c ) {
        u3m_boot(pir_c, 1 << 26);           /* restore: _find_home re-syncs */
    }
    else {
        u3m_boot_lite(1 << 26);
    }
    if ( !u3a_Vh && !getenv("DRIVE_BARE") ) {
        fprintf(stderr, "drive: not under vheap\n");
        return 2;
    }
    if ( pir_c && !sav_t ) {
        /* restored: the allocator's own chunks, which _find_home's re-sync
         * must not have reported as blocks (the check compares) */
        u3p(u3a_crag) *dir_u = u3to(u3p(u3a_crag), u3R->hep.pag_p);
        printf("drive meta %p\n", u3a_into(u3R->hep.pag_p));
        if ( u3R->hep.cac_p ) {
            printf("drive meta %p\n", u3a_into(u3R->hep.cac_p));
        }
        for ( u3_post fre_p = u3R->hep.fre_p; fre_p; fre_p = u3to(u3a_dell, fre_p)->nex_p ) {
            printf("drive meta %p\n", u3a_into(fre_p));
        }
        for ( c3_w pag_w = 0; pag_w < u3R->hep.len_w; pag_w++ ) {
            if ( u3a_rest_pg < dir_u[pag_w] ) {
                printf("drive meta %p\n", u3a_into(dir_u[pag_w]));
            }
        }
    }
    /* the state lives where Vere's marking finds it: the kernel slot */
    if ( !pir_c || sav_t ) {
        u3A->roc = u3_nul;
    }
    for ( c3_w i = 0; i < 40; i++ ) {
        if ( u3a_Vh ) u3a_vh_mark("event %" PRIu64, i);
        u3_noun gon = u3m_soft_top(0, 1 << 20, (i % 5 == 3) ? boom : work, u3i_word(i));
        if ( 0 == u3h(gon) ) {
            oks++;
            u3A->roc = u3nc(u3k(u3t(gon)), u3A->roc);
        }
        else {
            bails++;
        }
        u3z(gon);
    }
    /* leaks: nouns nothing points to, a page run among them */
    for ( c3_w i = 0; i < 8; i++ ) {
        u3_noun x = make_list(300, i);
        u3k(x);
        u3z(x);
    }
    {
        c3_w w[5000];
        memset(w, 7, sizeof w);
        u3_noun big = u3i_words(5000, w);
        u3k(big);
        u3z(big);
    }
    if ( u3a_Vh ) u3a_vh_mark("sweep", 0);
    u3m_grab(u3_none);                      /* frees the leaks: sweep */
    if ( sav_t ) {
        u3m_save();
        printf("drive saved oks=%u bails=%u\n", oks, bails);
        return 0;
    }
    /* holes: keep every other result, then pack */
    {
        u3_noun l = u3A->roc, n = u3_nul;
        for ( c3_w i = 0; u3_nul != l; l = u3t(l), i++ ) {
            if ( i % 2 ) {
                n = u3nc(u3k(u3h(l)), n);
                kept++;
            }
        }
        u3z(u3A->roc);
        u3A->roc = n;
    }
    u3m_pack();
    for ( c3_w i = 0; i < 2; i++ ) {        /* |meld, as mars.c runs it */
        u3_meld_all(0, c3n, c3n);
    }
    if ( u3a_Vh ) {
        u3a_vh_mark("resync", 0);
        u3a_vh_resync();
    }
    printf("drive oks=%u bails=%u kept=%u\n", oks, bails, kept);
    return 0;
}
