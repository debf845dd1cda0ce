/*
 * test_heap_policy.c — the agent's heap policy (agent/heap.h) does what it is for: a
 * rebuild reuses the memory freed by the one before instead of faulting in fresh pages,
 * and rd_heap_release() gives the free memory back, that of a thread building rings in its
 * own arena too; the loop's heap is grown ahead, so that the loop's allocations move no
 * program break.
 *
 * Built without the sanitizers (tests/CMakeLists.txt), with its own copy of lib/: their
 * allocator replaces glibc's, which the policy configures. Each case runs in a child
 * process so that it starts from a fresh heap. It counts page faults and resident pages,
 * never time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap.h"
#include "member.h"
#include "ring.h"

#define MEMBERS 1000
#define JOINS   20
#define VNODES  512

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static long resident_pages(void)
{
    long size = 0, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
        fclose(f);
    }
    return resident;
}

static struct rd_ring_member members[MEMBERS + JOINS];
static char names[MEMBERS + JOINS][16];

static void fill_members(void)
{
    for (size_t i = 0; i < MEMBERS + JOINS; i++) {
        snprintf(names[i], sizeof names[i], "node-%zu", i);
        members[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
}

/* In a child: the ring of MEMBERS, then JOINS one-member joins, each rebuilt from the ring
 * before and that one freed, as the agent does. Writes the page faults a join took; with
 * `release`, instead, how many resident pages rd_heap_release() gave back after them. */
static long child_run(bool policy, bool release)
{
    if (policy) rd_heap_keep_freed();
    struct rd_ring *cur = NULL;
    if (rd_ring_new(members, MEMBERS, VNODES, &cur) != 0) return -1;
    long f0 = minor_faults();
    for (size_t j = 1; j <= JOINS; j++) {
        struct rd_ring *next = NULL;
        if (rd_ring_rebuild(cur, members, MEMBERS + j, VNODES, &next) != 0) return -1;
        rd_ring_delete(cur);
        cur = next;
    }
    long faults = (minor_faults() - f0) / JOINS;
    if (!release) return faults;
    long before = resident_pages();
    rd_heap_release();
    long after = resident_pages();
    rd_ring_delete(cur);
    return before < 0 || after < 0 ? -1 : before - after;
}

/* The agent's build thread as a cluster forms: rings of 1, then a third, then all MEMBERS,
 * each built from the one before; then (once told) its step of the release. */
struct builder {
    struct rd_ring *ring;
    sem_t go, done;
    bool ok;
};

static void *build_on_a_thread(void *arg)
{
    struct builder *b = arg;
    static const size_t sizes[] = {1, MEMBERS / 3, MEMBERS};
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
        struct rd_ring *next = NULL;
        b->ok = b->ok && rd_ring_rebuild(b->ring, members, sizes[j], VNODES, &next) == 0;
        rd_ring_delete(b->ring);
        b->ring = next;
    }
    sem_post(&b->done);
    sem_wait(&b->go);
    rd_heap_shrink_own_arena();
    sem_post(&b->done);
    return NULL;
}

/* In a child, under the policy: those rings built on a thread, as the agent builds them;
 * then the release, with the thread's step or without. Writes the resident pages left, the
 * last ring's included. */
static long child_run_threaded(bool with_thread_step)
{
    rd_heap_keep_freed();
    long base = resident_pages();
    struct builder b = {.ring = NULL, .ok = true};
    pthread_t t;
    if (sem_init(&b.go, 0, 0) != 0 || sem_init(&b.done, 0, 0) != 0) return -1;
    if (pthread_create(&t, NULL, build_on_a_thread, &b) != 0) return -1;
    sem_wait(&b.done);
    rd_heap_trim_on_free();
    if (with_thread_step) {
        sem_post(&b.go);
        sem_wait(&b.done);
    }
    rd_heap_keep_freed();
    rd_heap_release();
    long left = resident_pages() - base;
    if (!with_thread_step) sem_post(&b.go);
    pthread_join(t, NULL);
    rd_ring_delete(b.ring);
    return b.ok ? left : -1;
}

/* In a child: 1 if 6 MB of the loop's allocations, made after rd_heap_grow_loop_heap() and
 * again after rd_heap_release(), left the program break where it was (no brk() growth);
 * 0 if either moved it. With `grow` false nothing is grown ahead: the control. */
static long child_run_loop_heap(bool grow)
{
    enum { BLOCKS = 60, BLOCK = 100 * 1024 };
    static void *blocks[BLOCKS];
    rd_heap_keep_freed();
    if (grow) rd_heap_grow_loop_heap();
    long still = 1;
    for (int round = 0; round < 2; round++) {
        void *before = sbrk(0);
        for (int i = 0; i < BLOCKS; i++) {
            blocks[i] = malloc(BLOCK);
            if (!blocks[i]) return -1;
            memset(blocks[i], 1, 64);
        }
        still = still && sbrk(0) == before;
        for (int i = 0; i < BLOCKS; i++)
            free(blocks[i]);
        if (grow)
            rd_heap_release(); /* trims the heap's top, and grows it ahead again */
        else
            malloc_trim(0);
    }
    return still;
}

/* What a child runs. */
enum run {
    JOINS_GLIBC,          /* child_run(false, false) */
    JOINS_POLICY,         /* child_run(true, false) */
    JOINS_RELEASED,       /* child_run(true, true) */
    THREAD_LOOP_STEPS,    /* child_run_threaded(false) */
    THREAD_ALL_THE_STEPS, /* child_run_threaded(true) */
    LOOP_HEAP_GROWN,      /* child_run_loop_heap(true) */
    LOOP_HEAP_AS_IS,      /* child_run_loop_heap(false) */
};

static long child_run_mode(enum run run)
{
    switch (run) {
    case JOINS_GLIBC:
        return child_run(false, false);
    case JOINS_POLICY:
        return child_run(true, false);
    case JOINS_RELEASED:
        return child_run(true, true);
    case THREAD_LOOP_STEPS:
        return child_run_threaded(false);
    case THREAD_ALL_THE_STEPS:
        return child_run_threaded(true);
    case LOOP_HEAP_GROWN:
        return child_run_loop_heap(true);
    case LOOP_HEAP_AS_IS:
        return child_run_loop_heap(false);
    }
    return -1;
}

static long in_child(enum run mode)
{
    int fd[2];
    long v = -1;
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        long r = child_run_mode(mode);
        _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    assert_int_equal(read(fd[0], &v, sizeof v), (ssize_t)sizeof v);
    close(fd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return v;
}

/* A ring of 1,000 x 512 is about 2,000 pages. Under glibc's defaults every larger ring is
 * mapped afresh, so each join faults all of them in; under the policy it reuses freed
 * memory and faults in little more than the growth. */
static void test_a_growing_ring_reuses_freed_memory_under_the_policy(void **state)
{
    (void)state;
    long glibc = in_child(JOINS_GLIBC), policy = in_child(JOINS_POLICY);
    printf("page faults a join at %d x %d: glibc's defaults %ld, the agent's policy %ld\n", MEMBERS,
           VNODES, glibc, policy);
    assert_true(policy >= 0 && glibc >= 0);
    assert_true(policy < 300);
    assert_true(policy * 5 < glibc);
}

/* What the churn left free (the rings before, the builds' scratch) goes back when the
 * agent says so: at least one ring's worth of resident pages. */
static void test_release_gives_the_freed_rings_back(void **state)
{
    (void)state;
    long given = in_child(JOINS_RELEASED);
    printf("resident pages given back by rd_heap_release: %ld\n", given);
    assert_true(given >= 1500);
}

/* Rings built on a thread come from that thread's arena, whose free top malloc_trim()
 * leaves alone: the thread's own step gives back the last build's scratch, which lies
 * there. */
static void test_release_shrinks_the_build_threads_arena(void **state)
{
    (void)state;
    long without = in_child(THREAD_LOOP_STEPS), with = in_child(THREAD_ALL_THE_STEPS);
    printf("resident pages left after the release, one ring in use: %ld without the build thread's "
           "step, %ld with it\n",
           without, with);
    assert_true(without > 0 && with > 0);
    /* the last build's scratch: about 1,700 pages (a ring at 1,000 x 512 is about 2,100) */
    assert_true(with + 1000 < without);
}

/* The loop's heap is grown ahead at start and after each release (heap.h): the loop's
 * allocations while the membership changes take no brk(), which waits for any holder of the
 * heap's locks. Without the growth the same allocations move the break: the control. */
static void test_the_loops_heap_is_grown_ahead(void **state)
{
    (void)state;
    assert_int_equal(in_child(LOOP_HEAP_GROWN), 1);
    assert_int_equal(in_child(LOOP_HEAP_AS_IS), 0);
}

int main(void)
{
    fill_members();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_growing_ring_reuses_freed_memory_under_the_policy),
        cmocka_unit_test(test_release_gives_the_freed_rings_back),
        cmocka_unit_test(test_release_shrinks_the_build_threads_arena),
        cmocka_unit_test(test_the_loops_heap_is_grown_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
