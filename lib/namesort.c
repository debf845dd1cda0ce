/*
 * namesort.c — member names into bytewise order (see namesort.h).
 */
#include "namesort.h"

#include <string.h>

/* A run of at most this many names is sorted by insertion: below it, a radix pass's 8 KB
 * of counts costs more than the comparisons. */
#define INSERTION_MAX 32

struct item {
    uint64_t word; /* the name's bytes [depth, depth + 8) as a big-endian word */
    uint32_t idx;  /* its index in names[] */
    uint32_t len;  /* its length */
};

struct sort {
    const char *const *names;
    struct item *items, *tmp; /* [n] each */
    bool equal;               /* two names are equal */
};

size_t rd_namesort_scratch(size_t n)
{
    return 2 * n * sizeof(struct item);
}

/* Bytes [depth, depth + 8) of a name of `len` bytes, zero past its end, as a big-endian
 * word: words compare as the bytes do, and a name that ends sorts before one that goes on. */
static uint64_t word_at(const char *name, uint32_t len, size_t depth)
{
    uint64_t w = 0;
    size_t left = len > depth ? len - depth : 0;
    memcpy(&w, name + depth, left < sizeof w ? left : sizeof w);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* Whether a word holds the end of its name: then two equal such words are equal names. */
static bool ends_in(uint64_t word)
{
    return (word & 0xff) == 0;
}

/* Orders two names that agree on their first `depth` bytes and whose words there are a
 * and b: < 0, 0 or > 0 as strcmp() would. */
static int compare(const struct sort *s, const struct item *a, const struct item *b, size_t depth)
{
    if (a->word != b->word) return a->word < b->word ? -1 : 1;
    if (ends_in(a->word)) return 0;
    return strcmp(s->names[a->idx] + depth + 8, s->names[b->idx] + depth + 8);
}

static void insertion_sort(struct sort *s, struct item *it, size_t n, size_t depth)
{
    for (size_t k = 1; k < n; k++) {
        struct item x = it[k];
        size_t j = k;
        int c = 1;
        while (j > 0 && (c = compare(s, &it[j - 1], &x, depth)) > 0) {
            it[j] = it[j - 1];
            j--;
        }
        if (j > 0 && c == 0) s->equal = true;
        it[j] = x;
    }
}

/* Sorts it[0..n) by word, stably: one LSD radix pass per byte of the word, skipping the
 * bytes that every word shares. The result ends in it[]; tmp[0..n) is scratch. */
static void radix_by_word(struct item *it, struct item *tmp, size_t n)
{
    uint32_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t k = 0; k < n; k++)
        for (unsigned b = 0; b < 8; b++)
            count[b][(it[k].word >> (8 * b)) & 0xff]++;
    struct item *from = it, *to = tmp;
    for (unsigned b = 0; b < 8; b++) {
        unsigned shift = 8 * b;
        if (count[b][(it[0].word >> shift) & 0xff] == n) continue; /* one value here */
        uint32_t at = 0;
        for (unsigned v = 0; v < 256; v++) {
            uint32_t c = count[b][v];
            count[b][v] = at;
            at += c;
        }
        for (size_t k = 0; k < n; k++)
            to[count[b][(from[k].word >> shift) & 0xff]++] = from[k];
        struct item *t = from;
        from = to;
        to = t;
    }
    if (from != it) memcpy(it, from, n * sizeof *it);
}

/* Sorts items [lo, hi), whose names agree on their first `depth` bytes. */
static void sort_range(struct sort *s, size_t lo, size_t hi, size_t depth)
{
    struct item *it = s->items + lo;
    size_t n = hi - lo;
    for (size_t k = 0; k < n; k++)
        it[k].word = word_at(s->names[it[k].idx], it[k].len, depth);
    if (n <= INSERTION_MAX) {
        insertion_sort(s, it, n, depth);
        return;
    }
    radix_by_word(it, s->tmp + lo, n);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && it[b].word == it[a].word; b++)
            ;
        if (b - a < 2) continue;
        if (ends_in(it[a].word))
            s->equal = true; /* the same name, kept in input order */
        else
            sort_range(s, lo + a, lo + b, depth + 8);
    }
}

bool rd_namesort(const char *const *names, size_t n, uint32_t *order, void *scratch)
{
    if (n == 0) return false;
    struct sort s = {names, scratch, (struct item *)scratch + n, false};
    for (size_t k = 0; k < n; k++)
        s.items[k] = (struct item){0, (uint32_t)k, (uint32_t)strlen(names[k])};
    sort_range(&s, 0, n, 0);
    for (size_t k = 0; k < n; k++)
        order[k] = s.items[k].idx;
    return s.equal;
}
