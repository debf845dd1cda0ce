/*
 * test_ringjob.c — a ring build off the loop (agent/ringjob.h) gives what a build on it gives.
 *
 * A real libuv loop and its real thread pool: the job's ring and diff must equal
 * rd_ring_rebuild()'s and rd_ring_diff_top()'s of the same list, though the strings it was
 * made from are overwritten while it runs; its end is reported on the loop's thread; a job
 * of the same placement says so instead of diffing, and one that cannot build says why.
 * A job is given up as the agent gives it up: withdrawn while the pool's one thread is busy,
 * it never runs; abandoned while it builds, it stops. Either way its end is reported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rd_err.h"
#include "ring.h"
#include "ringjob.h"

#define MEMBERS 200
#define VNODES  64

static char names[MEMBERS + 1][16], zones[MEMBERS + 1][8];
static struct rd_ring_member members[MEMBERS + 1];

static void make_members(void)
{
    for (int i = 0; i <= MEMBERS; i++) {
        snprintf(names[i], sizeof names[i], "node-%d", i);
        snprintf(zones[i], sizeof zones[i], "z%d", i % 3);
        members[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, zones[i], NULL};
    }
}

/* What the job's done callback saw. */
static struct {
    int calls;
    bool on_loop; /* it ran on the thread that runs the loop */
    pthread_t loop_thread;
} seen;

static void on_done(struct rd_ring_job *job)
{
    (void)job;
    seen.calls++;
    seen.on_loop = pthread_equal(pthread_self(), seen.loop_thread);
}

static void test_a_job_on_the_pool_builds_what_a_build_on_the_loop_builds(void **state)
{
    (void)state;
    make_members();
    struct rd_ring *old = NULL, *want = NULL;
    assert_int_equal(rd_ring_new(members, MEMBERS, VNODES, &old), 0);
    assert_int_equal(rd_ring_rebuild(old, members, MEMBERS + 1, VNODES, &want), 0);
    struct rd_ring_diff want_diff;
    assert_int_equal(rd_ring_diff_top(old, want, 16, &want_diff), 0);

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    seen.calls = 0;
    seen.loop_thread = pthread_self();
    struct rd_ring_job *job =
        rd_ring_job_new(members, MEMBERS + 1, RD_RING_MODE_RINGD, VNODES, old, 16);
    assert_non_null(job);
    /* the table's strings change on the loop once the job is made: the job has its own */
    for (int i = 0; i <= MEMBERS; i++) {
        memset(names[i], 'x', sizeof names[i] - 1);
        memset(zones[i], 'y', sizeof zones[i] - 1);
    }
    job->done = on_done;
    assert_int_equal(rd_ring_job_queue(&loop, job), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(seen.calls, 1);
    assert_true(seen.on_loop);
    assert_int_equal(job->rc, 0);
    assert_false(job->same);
    assert_int_equal(rd_ring_checksum(job->ring), rd_ring_checksum(want));
    assert_int_equal(rd_ring_point_count(job->ring), rd_ring_point_count(want));
    assert_int_equal(job->diff_rc, 0);
    assert_true(job->diff.moved == want_diff.moved);
    assert_int_equal(job->diff.npairs, want_diff.npairs);
    assert_int_equal(job->diff.nmoves, want_diff.nmoves);
    for (size_t k = 0; k < want_diff.nmoves; k++) {
        assert_string_equal(job->diff.moves[k].from, want_diff.moves[k].from);
        assert_string_equal(job->diff.moves[k].to, want_diff.moves[k].to);
        assert_true(job->diff.moves[k].fraction == want_diff.moves[k].fraction);
    }
    assert_true(job->run_ns > 0);
    assert_true(job->cpu_ns > 0);
    rd_ring_job_free(job);

    assert_int_equal(uv_loop_close(&loop), 0);
    rd_ring_diff_destroy(&want_diff);
    rd_ring_delete(old);
    rd_ring_delete(want);
}

static void test_a_job_of_the_same_placement_says_so_and_diffs_nothing(void **state)
{
    (void)state;
    make_members();
    struct rd_ring *old = NULL;
    assert_int_equal(rd_ring_new(members, MEMBERS, VNODES, &old), 0);
    struct rd_ring_job *job =
        rd_ring_job_new(members, MEMBERS, RD_RING_MODE_RINGD, VNODES, old, 16);
    assert_non_null(job);
    rd_ring_job_run(job); /* on this thread, as the agent's first build runs */
    assert_int_equal(job->rc, 0);
    assert_true(job->same);
    assert_int_equal(job->diff.nmoves, 0);
    assert_int_equal(rd_ring_checksum(job->ring), rd_ring_checksum(old));
    rd_ring_job_free(job);
    rd_ring_delete(old);
}

/* Holds the pool's one thread until `release` is posted, saying first that it holds it. */
static uv_sem_t holding, release;
static uv_work_t hold;

static void hold_the_thread(uv_work_t *req)
{
    (void)req;
    uv_sem_post(&holding);
    uv_sem_wait(&release);
}

static void held(uv_work_t *req, int status)
{
    (void)req;
    assert_int_equal(status, 0);
}

/* A loop whose pool thread is held; `job` queued behind, its end recorded in `seen`. */
static void queue_behind_a_held_thread(uv_loop_t *loop, struct rd_ring_job *job)
{
    assert_int_equal(uv_loop_init(loop), 0);
    assert_int_equal(uv_sem_init(&holding, 0), 0);
    assert_int_equal(uv_sem_init(&release, 0), 0);
    assert_int_equal(uv_queue_work(loop, &hold, hold_the_thread, held), 0);
    uv_sem_wait(&holding);
    assert_non_null(job);
    job->done = on_done;
    seen.calls = 0;
    seen.loop_thread = pthread_self();
    assert_int_equal(rd_ring_job_queue(loop, job), 0);
}

/* Runs the loop dry: the job ends once, given up, on the loop's thread. */
static void assert_given_up(uv_loop_t *loop, struct rd_ring_job *job)
{
    assert_int_equal(uv_run(loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(seen.calls, 1);
    assert_true(seen.on_loop);
    assert_int_equal(job->rc, RD_ECANCELED);
    assert_null(job->ring);
    assert_int_equal(uv_loop_close(loop), 0);
    uv_sem_destroy(&holding);
    uv_sem_destroy(&release);
}

static void test_a_queued_job_is_withdrawn_unrun(void **state)
{
    (void)state;
    make_members();
    uv_loop_t loop;
    struct rd_ring_job *job =
        rd_ring_job_new(members, MEMBERS, RD_RING_MODE_RINGD, VNODES, NULL, 16);
    queue_behind_a_held_thread(&loop, job);
    assert_true(rd_ring_job_withdraw(job));
    uv_sem_post(&release);
    assert_given_up(&loop, job);
    assert_int_equal(job->cpu_ns, 0); /* it never ran */
    rd_ring_job_free(job);
}

/* 8,000 members x 512: a build of 4M points, some 50 ms of CPU or (sanitized) far more. */
#define BIG 8000

static void test_a_running_job_abandoned_stops(void **state)
{
    (void)state;
    static char big_names[BIG][16];
    static struct rd_ring_member big[BIG];
    for (int i = 0; i < BIG; i++) {
        snprintf(big_names[i], sizeof big_names[i], "host-%d", i);
        big[i] = (struct rd_ring_member){big_names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    uv_loop_t loop;
    struct rd_ring_job *job = rd_ring_job_new(big, BIG, RD_RING_MODE_RINGD, 512, NULL, 16);
    queue_behind_a_held_thread(&loop, job);
    /* the thread takes the job as soon as it lets go: then the job is running */
    uv_sem_post(&release);
    uv_sleep(5);
    rd_ring_job_abandon(job);
    assert_given_up(&loop, job);
    rd_ring_job_free(job);
}

/* How many of this process's threads run at nice 19 (/proc/self/task/.../stat, field 19). */
static int threads_at_nice_19(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        const char *p = strrchr(buf, ')'); /* the name may hold spaces: fields follow it */
        assert_non_null(p);
        long nice = 0;
        /* after ')': state is field 3, nice field 19 */
        assert_int_equal(sscanf(p + 2,
                                "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
                                "%*d %*d %ld",
                                &nice),
                         1);
        count += nice == RD_RING_JOB_NICE;
    }
    closedir(d);
    return count;
}

/* The pool thread builds at nice 19 and gets the caller's priority back at the end, where
 * the process may raise a priority (root here; an unprivileged one is refused, RD_EIO). */
static void test_the_pool_thread_gets_its_priority_back(void **state)
{
    (void)state;
    make_members();
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct rd_ring_job *job =
        rd_ring_job_new(members, MEMBERS, RD_RING_MODE_RINGD, VNODES, NULL, 16);
    assert_non_null(job);
    job->done = on_done;
    assert_int_equal(rd_ring_job_queue(&loop, job), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    rd_ring_job_free(job);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(threads_at_nice_19(), 1);
    int rc = rd_ring_pool_restore_priority();
    if (geteuid() == 0) assert_int_equal(rc, 0);
    assert_int_equal(threads_at_nice_19(), rc == 0 ? 0 : 1);
    if (rc != 0) assert_int_equal(rc, RD_EIO);
}

static void test_a_job_that_cannot_build_reports_the_error(void **state)
{
    (void)state;
    make_members();
    struct rd_ring_member twice[2] = {members[0], members[0]}; /* one name twice */
    struct rd_ring_job *job = rd_ring_job_new(twice, 2, RD_RING_MODE_RINGD, VNODES, NULL, 16);
    assert_non_null(job);
    rd_ring_job_run(job);
    assert_int_equal(job->rc, RD_EEXIST);
    assert_null(job->ring);
    rd_ring_job_free(job);
    /* ketama mode refuses a fractional weight, from the copy too */
    struct rd_ring_member frac = members[1];
    frac.weight = RD_WEIGHT_ONE / 2;
    job = rd_ring_job_new(&frac, 1, RD_RING_MODE_KETAMA, 0, NULL, 16);
    assert_non_null(job);
    rd_ring_job_run(job);
    assert_int_equal(job->rc, RD_EINVAL);
    rd_ring_job_free(job);
}

int main(void)
{
    rd_ring_job_pool_setup(); /* one pool thread, as in the agent */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_job_on_the_pool_builds_what_a_build_on_the_loop_builds),
        cmocka_unit_test(test_a_job_of_the_same_placement_says_so_and_diffs_nothing),
        cmocka_unit_test(test_a_job_that_cannot_build_reports_the_error),
        cmocka_unit_test(test_a_queued_job_is_withdrawn_unrun),
        cmocka_unit_test(test_a_running_job_abandoned_stops),
        cmocka_unit_test(test_the_pool_thread_gets_its_priority_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
