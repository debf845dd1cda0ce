/*
 * test_heap_policy.c — the agent's heap policy (agent/heap.h) does what it is for: a
 * rebuild reuses the memory freed by the one before instead of faulting in fresh pages,
 * and rd_heap_release() gives the free memory back.
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

static long in_child(bool policy, bool release)
{
    int fd[2];
    long v = -1;
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        long r = child_run(policy, release);
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
    long glibc = in_child(false, false), policy = in_child(true, false);
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
    long given = in_child(true, true);
    printf("resident pages given back by rd_heap_release: %ld\n", given);
    assert_true(given >= 1500);
}

int main(void)
{
    fill_members();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_growing_ring_reuses_freed_memory_under_the_policy),
        cmocka_unit_test(test_release_gives_the_freed_rings_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
