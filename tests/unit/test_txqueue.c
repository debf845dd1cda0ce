/*
 * test_txqueue.c — the dissemination queue on its own: send order, replacement, removal,
 * the move that follows a swap-remove, counts, and the structural check.
 *
 * Table-driven: each case is a list of operations on an empty queue of 8 slots, then the
 * order iteration must give, the sends left per slot and the pending count. The check runs
 * after every operation. A second table corrupts a healthy queue one way each and expects
 * the check to say so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rd_err.h"
#include "txqueue.h"

#define SLOTS 8
#define NONE  RD_TXQUEUE_NONE
#define OPS   16
#define TOP   (RD_TXQUEUE_LEVELS - 1)

enum op_kind { END = 0, PUSH, SENT, REMOVE, MOVE };

struct op {
    enum op_kind kind;
    uint32_t a, b; /* PUSH: slot, sends; SENT/REMOVE: slot; MOVE: from, to */
};

struct txq_case {
    const char *name;
    struct op ops[OPS];
    uint32_t order[SLOTS + 1]; /* expected iteration, ended by NONE */
    uint32_t left[SLOTS];      /* expected sends left per slot */
    size_t pending;
};

static const struct txq_case cases[] = {
    {"most sends left go first",
     {{PUSH, 0, 2}, {PUSH, 1, 5}, {PUSH, 2, 3}},
     {1, 2, 0, NONE},
     {2, 5, 3},
     3},
    {"newest is at the head of its level",
     {{PUSH, 0, 3}, {PUSH, 1, 3}, {PUSH, 2, 3}},
     {2, 1, 0, NONE},
     {3, 3, 3},
     3},
    {"a record just sent goes behind its new equals",
     {{PUSH, 0, 3}, {PUSH, 1, 2}, {PUSH, 2, 2}, {SENT, 0, 0}},
     {2, 1, 0, NONE},
     {2, 2, 2},
     3},
    {"sent twice walks down two levels",
     {{PUSH, 0, 4}, {PUSH, 1, 3}, {PUSH, 2, 2}, {SENT, 0, 0}, {SENT, 0, 0}},
     {1, 2, 0, NONE},
     {2, 3, 2},
     3},
    {"newer news replaces older, up",
     {{PUSH, 0, 2}, {PUSH, 1, 3}, {PUSH, 0, 5}},
     {0, 1, NONE},
     {5, 3},
     2},
    {"newer news replaces older, down",
     {{PUSH, 0, 5}, {PUSH, 1, 3}, {PUSH, 0, 1}},
     {1, 0, NONE},
     {1, 3},
     2},
    {"replacing at the same level moves to the head",
     {{PUSH, 0, 3}, {PUSH, 1, 3}, {PUSH, 0, 3}},
     {0, 1, NONE},
     {3, 3},
     2},
    {"pushing zero sends takes the slot out",
     {{PUSH, 0, 2}, {PUSH, 1, 2}, {PUSH, 0, 0}},
     {1, NONE},
     {0, 2},
     1},
    {"sends are capped below the number of levels",
     {{PUSH, 0, 1000}, {PUSH, 1, TOP}},
     {1, 0, NONE},
     {TOP, TOP},
     2},
    {"remove from the middle of a level",
     {{PUSH, 0, 3}, {PUSH, 1, 3}, {PUSH, 2, 3}, {REMOVE, 1, 0}},
     {2, 0, NONE},
     {3, 0, 3},
     2},
    {"remove the head and the tail",
     {{PUSH, 0, 3}, {PUSH, 1, 3}, {PUSH, 2, 3}, {REMOVE, 2, 0}, {REMOVE, 0, 0}},
     {1, NONE},
     {0, 3, 0},
     1},
    {"removing an unqueued slot changes nothing",
     {{PUSH, 0, 3}, {REMOVE, 5, 0}, {REMOVE, 5, 0}},
     {0, NONE},
     {3},
     1},
    {"swap-remove: the last slot takes the hole's number and its place in line",
     {{PUSH, 0, 2}, {PUSH, 1, 2}, {PUSH, 2, 2}, {PUSH, 3, 2}, {REMOVE, 1, 0}, {MOVE, 3, 1}},
     {1, 2, 0, NONE},
     {2, 2, 2, 0},
     3},
    {"swap-remove of a record alone on its level keeps the level's ends",
     {{PUSH, 0, 2}, {PUSH, 3, 6}, {REMOVE, 1, 0}, {MOVE, 3, 1}, {SENT, 1, 0}},
     {1, 0, NONE},
     {2, 5, 0, 0},
     2},
    {"moving an unqueued slot leaves both out",
     {{PUSH, 0, 2}, {REMOVE, 1, 0}, {MOVE, 3, 1}},
     {0, NONE},
     {2, 0, 0, 0},
     1},
    {"moving a slot onto itself changes nothing",
     {{PUSH, 2, 2}, {PUSH, 1, 2}, {MOVE, 2, 2}},
     {1, 2, NONE},
     {0, 2, 2},
     2},
    {"iteration crosses empty levels",
     {{PUSH, 0, 1}, {PUSH, 1, 40}, {PUSH, 2, 9}},
     {1, 2, 0, NONE},
     {1, 40, 9},
     3},
    {"a level emptied from the top is skipped",
     {{PUSH, 0, 3}, {PUSH, 1, 1}, {SENT, 0, 0}, {SENT, 0, 0}},
     {1, 0, NONE},
     {1, 1},
     2},
    {"every send used up: the queue is empty",
     {{PUSH, 0, 2},
      {PUSH, 1, 1},
      {SENT, 0, 0},
      {SENT, 1, 0},
      {SENT, 0, 0},
      {SENT, 0, 0},
      {SENT, 1, 0}},
     {NONE},
     {0, 0},
     0},
    {"an emptied queue takes news again",
     {{PUSH, 0, 1}, {SENT, 0, 0}, {PUSH, 4, 2}, {PUSH, 0, 2}},
     {0, 4, NONE},
     {2, 0, 0, 0, 2},
     2},
};

static void apply(struct rd_txqueue *q, const struct op *op)
{
    switch (op->kind) {
    case PUSH:
        rd_txqueue_push(q, op->a, op->b);
        break;
    case SENT:
        rd_txqueue_sent(q, op->a);
        break;
    case REMOVE:
        rd_txqueue_remove(q, op->a);
        break;
    case MOVE:
        rd_txqueue_move(q, op->a, op->b);
        break;
    case END:
        break;
    }
}

static void check_ok(const struct rd_txqueue *q, const char *name, size_t step)
{
    const char *why = NULL;
    if (rd_txqueue_check(q, SLOTS, &why) != 0) fail_msg("%s, after op %zu: %s", name, step, why);
}

static void test_cases(void **state)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct txq_case *tc = &cases[c];
        struct rd_txqueue q;
        assert_int_equal(rd_txqueue_init(&q, SLOTS), 0);
        check_ok(&q, tc->name, 0);
        for (size_t k = 0; k < OPS && tc->ops[k].kind != END; k++) {
            apply(&q, &tc->ops[k]);
            check_ok(&q, tc->name, k + 1);
        }
        uint32_t got[SLOTS + 1];
        size_t n = 0;
        for (uint32_t i = rd_txqueue_first(&q); i != NONE && n < SLOTS; i = rd_txqueue_next(&q, i))
            got[n++] = i;
        for (size_t k = 0; k <= n; k++) {
            uint32_t want = tc->order[k];
            uint32_t have = k < n ? got[k] : NONE;
            if (want != have)
                fail_msg("%s: position %zu is slot %d, expected %d", tc->name, k, (int)have,
                         (int)want);
        }
        for (uint32_t i = 0; i < SLOTS; i++)
            if (rd_txqueue_sends_left(&q, i) != tc->left[i])
                fail_msg("%s: slot %u has %u sends left, expected %u", tc->name, i,
                         rd_txqueue_sends_left(&q, i), tc->left[i]);
        if (rd_txqueue_pending(&q) != tc->pending)
            fail_msg("%s: %zu pending, expected %zu", tc->name, rd_txqueue_pending(&q),
                     tc->pending);
        rd_txqueue_free(&q);
    }
}

/* Growing keeps what is queued, in order, and the new slots start unqueued. */
static void test_grow_keeps_the_order(void **state)
{
    struct rd_txqueue q;
    assert_int_equal(rd_txqueue_init(&q, 2), 0);
    rd_txqueue_push(&q, 0, 3);
    rd_txqueue_push(&q, 1, 4);
    assert_int_equal(rd_txqueue_grow(&q, 1000), 0);
    assert_int_equal(rd_txqueue_grow(&q, 10), 0); /* never shrinks */
    assert_int_equal(q.cap, 1000);
    for (uint32_t i = 2; i < 1000; i++)
        assert_int_equal(rd_txqueue_sends_left(&q, i), 0);
    rd_txqueue_push(&q, 999, 3);
    const char *why = NULL;
    assert_int_equal(rd_txqueue_check(&q, 1000, &why), 0);
    uint32_t i = rd_txqueue_first(&q);
    assert_int_equal(i, 1);
    assert_int_equal(i = rd_txqueue_next(&q, i), 999);
    assert_int_equal(i = rd_txqueue_next(&q, i), 0);
    assert_int_equal(rd_txqueue_next(&q, i), NONE);
    rd_txqueue_free(&q);
}

/*
 * Each corruption breaks one thing in a queue of 6 used slots, 0..4 queued (level 3: 2, 1,
 * 0; level 5: 4, 3) and 5 not; the check must fail and name that thing.
 */
enum field { NEXT, PREV, LEFT, HEAD, TAIL, PENDING, TOP_LEVEL };

/* Sets one field: a slot's next, prev or left, a level's head or tail, pending, top. */
struct edit {
    enum field field;
    uint32_t at; /* the slot or the level; unused for PENDING and TOP_LEVEL */
    uint32_t value;
};

struct corruption {
    const char *name;
    size_t nedits;
    struct edit edits[2];
    const char *why; /* a part of the expected reason */
};

static const struct corruption corruptions[] = {
    {"a next link skips a slot", 1, {{NEXT, 2, 0}}, "prev link"},
    {"a prev link points the wrong way", 1, {{PREV, 0, 2}}, "prev link"},
    {"a slot on the wrong level", 1, {{LEFT, 1, 4}}, "other than its sends left"},
    {"a tail short of the end", 1, {{TAIL, 3, 1}}, "tail"},
    {"a head in the middle of its list", 1, {{HEAD, 3, 1}}, "prev link"},
    {"the pending count is off", 1, {{PENDING, 0, 6}}, "pending count"},
    {"top below a nonempty level", 1, {{TOP_LEVEL, 0, 3}}, "above the top"},
    {"a queued slot on no list", 1, {{LEFT, 5, 2}}, "on no list"},
    {"an unqueued slot with links", 1, {{NEXT, 6, 1}}, "keeps links"},
    {"a link beyond the used slots", 1, {{NEXT, 3, 7}}, "beyond the used"},
    /* 2 -> 1 -> 0 -> 2 ...: caught by the head's prev link */
    {"a list that runs in a cycle", 2, {{NEXT, 0, 2}, {PREV, 2, 0}}, "prev link"},
};

static void apply_edit(struct rd_txqueue *q, const struct edit *e)
{
    switch (e->field) {
    case NEXT:
        q->slots[e->at].next = e->value;
        break;
    case PREV:
        q->slots[e->at].prev = e->value;
        break;
    case LEFT:
        q->slots[e->at].left = e->value;
        break;
    case HEAD:
        q->head[e->at] = e->value;
        break;
    case TAIL:
        q->tail[e->at] = e->value;
        break;
    case PENDING:
        q->pending = e->value;
        break;
    case TOP_LEVEL:
        q->top = e->value;
        break;
    }
}

static void healthy(struct rd_txqueue *q)
{
    assert_int_equal(rd_txqueue_init(q, SLOTS), 0);
    for (uint32_t i = 0; i < 3; i++)
        rd_txqueue_push(q, i, 3);
    rd_txqueue_push(q, 3, 5);
    rd_txqueue_push(q, 4, 5);
}

static void test_check_finds_each_corruption(void **state)
{
    for (size_t c = 0; c < sizeof corruptions / sizeof corruptions[0]; c++) {
        struct rd_txqueue q;
        healthy(&q);
        const char *why = NULL;
        assert_int_equal(rd_txqueue_check(&q, 6, &why), 0);
        for (size_t e = 0; e < corruptions[c].nedits; e++)
            apply_edit(&q, &corruptions[c].edits[e]);
        why = NULL;
        if (rd_txqueue_check(&q, 6, &why) == 0)
            fail_msg("%s: the check passed", corruptions[c].name);
        if (!why || !strstr(why, corruptions[c].why))
            fail_msg("%s: reason \"%s\", expected one about \"%s\"", corruptions[c].name,
                     why ? why : "(none)", corruptions[c].why);
        rd_txqueue_free(&q);
    }
}

/* The slots past `used` must be empty: a table that shrank without the queue is caught. */
static void test_check_sees_a_queued_slot_past_the_table(void **state)
{
    struct rd_txqueue q;
    healthy(&q);
    const char *why = NULL;
    assert_int_equal(rd_txqueue_check(&q, 5, &why), 0);
    assert_int_equal(rd_txqueue_check(&q, 4, &why), RD_ECORRUPT);
    assert_non_null(strstr(why, "beyond the used"));
    rd_txqueue_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_grow_keeps_the_order),
        cmocka_unit_test(test_check_finds_each_corruption),
        cmocka_unit_test(test_check_sees_a_queued_slot_past_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
