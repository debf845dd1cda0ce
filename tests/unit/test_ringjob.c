/*
 * test_ringjob.c — a ring build off the loop (agent/ringjob.h) gives what a build on it gives.
 *
 * A real libuv loop and a real builder thread: the job's ring and diff must equal
 * rd_ring_rebuild()'s and rd_ring_diff_top()'s of the same list, though the strings it was
 * made from are overwritten while it runs; its end is reported on the loop's thread; a job
 * of the same placement says so instead of diffing, and one that cannot build says why.
 * A job the thread has not taken gives way to a newer one, or is given up unrun; a job
 * given up while it builds stops, and stopping the builder reports it before it returns.
 * A job is outgrown once the membership has gained or lost more than a 64th of the larger
 * list it was taken from, and not before.
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

/* What the done callbacks saw. */
struct seen {
    int calls;
    bool on_loop; /* it ran on the thread that runs the loop */
    pthread_t loop_thread;
    struct rd_ring_job *last;
};
static struct seen seen;

static void on_done(struct rd_ring_job *job)
{
    seen.calls++;
    seen.on_loop = pthread_equal(pthread_self(), seen.loop_thread);
    seen.last = job;
}

/* A loop with a builder on it; its thread started when `start`. */
static void open_builder(uv_loop_t *loop, struct rd_ring_builder *b, bool start)
{
    assert_int_equal(uv_loop_init(loop), 0);
    assert_int_equal(rd_ring_builder_init(b, loop), 0);
    if (start) assert_int_equal(rd_ring_builder_start(b), 0);
    seen = (struct seen){.loop_thread = pthread_self()};
}

/* Stops the builder, then runs the loop dry and closes it: nothing is left on it. */
static void close_builder(uv_loop_t *loop, struct rd_ring_builder *b)
{
    rd_ring_builder_stop(b);
    assert_int_equal(uv_run(loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(loop), 0);
}

static struct rd_ring_job *job_of(const struct rd_ring_member *list, size_t n,
                                  const struct rd_ring *old)
{
    struct rd_ring_job *job = rd_ring_job_new(list, n, RD_RING_MODE_RINGD, VNODES, old, 16);
    assert_non_null(job);
    job->done = on_done;
    return job;
}

static void assert_same_ring(const struct rd_ring *got, const struct rd_ring *want)
{
    assert_int_equal(rd_ring_checksum(got), rd_ring_checksum(want));
    assert_int_equal(rd_ring_point_count(got), rd_ring_point_count(want));
}

static void test_a_job_on_the_builder_builds_what_a_build_on_the_loop_builds(void **state)
{
    (void)state;
    make_members();
    struct rd_ring *old = NULL, *want = NULL;
    assert_int_equal(rd_ring_new(members, MEMBERS, VNODES, &old), 0);
    assert_int_equal(rd_ring_rebuild(old, members, MEMBERS + 1, VNODES, &want), 0);
    struct rd_ring_diff want_diff;
    assert_int_equal(rd_ring_diff_top(old, want, 16, &want_diff), 0);

    uv_loop_t loop;
    struct rd_ring_builder b;
    open_builder(&loop, &b, true);
    struct rd_ring_job *job = job_of(members, MEMBERS + 1, old);
    /* the table's strings change on the loop once the job is made: the job has its own */
    for (int i = 0; i <= MEMBERS; i++) {
        memset(names[i], 'x', sizeof names[i] - 1);
        memset(zones[i], 'y', sizeof zones[i] - 1);
    }
    assert_true(rd_ring_builder_idle(&b));
    assert_int_equal(rd_ring_job_queue(&b, job), 0);
    assert_false(rd_ring_builder_idle(&b));
    assert_int_equal(rd_ring_job_queue(&b, job), RD_EEXIST); /* one at a time */
    /* the loop stays up while the job is out, and runs dry once it is reported */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(seen.calls, 1);
    assert_true(seen.on_loop);
    assert_true(rd_ring_builder_idle(&b));
    assert_int_equal(job->rc, 0);
    assert_false(job->same);
    assert_same_ring(job->ring, want);
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

    /* the thread takes the next job as it took the first */
    make_members();
    job = job_of(members, MEMBERS, NULL);
    assert_int_equal(rd_ring_job_queue(&b, job), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(seen.calls, 2);
    assert_same_ring(job->ring, old);
    rd_ring_job_free(job);

    close_builder(&loop, &b);
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

/* The thread is not started, so the queued job waits untaken, as it waits on a host that
 * does not schedule the thread: a newer list takes its place, and only the newer is built. */
static void test_a_job_not_yet_taken_gives_way_to_a_newer_one(void **state)
{
    (void)state;
    make_members();
    uv_loop_t loop;
    struct rd_ring_builder b;
    open_builder(&loop, &b, false);
    struct rd_ring_job *stale = job_of(members, MEMBERS, NULL);
    struct rd_ring_job *newer = job_of(members, MEMBERS + 1, NULL);
    assert_int_equal(rd_ring_job_queue(&b, stale), 0);
    assert_true(rd_ring_builder_queued(&b));
    assert_ptr_equal(rd_ring_job_replace(&b, newer), stale);
    assert_int_equal(stale->cpu_ns, 0); /* never run, and its done never called */
    assert_null(stale->ring);
    rd_ring_job_free(stale);
    assert_int_equal(rd_ring_builder_start(&b), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(seen.calls, 1);
    assert_ptr_equal(seen.last, newer);
    assert_int_equal(newer->rc, 0);
    assert_int_equal(rd_ring_member_count(newer->ring), MEMBERS + 1);
    assert_false(rd_ring_builder_queued(&b));
    assert_null(rd_ring_job_replace(&b, newer)); /* nothing queued: nothing to replace */
    rd_ring_job_free(newer);
    close_builder(&loop, &b);
}

static void test_a_job_not_yet_taken_is_given_up_unrun(void **state)
{
    (void)state;
    make_members();
    uv_loop_t loop;
    struct rd_ring_builder b;
    open_builder(&loop, &b, false);
    struct rd_ring_job *job = job_of(members, MEMBERS, NULL);
    assert_int_equal(rd_ring_job_queue(&b, job), 0);
    rd_ring_builder_abandon(&b);
    assert_int_equal(seen.calls, 1); /* at once, on the loop's thread */
    assert_true(seen.on_loop);
    assert_int_equal(job->rc, RD_ECANCELED);
    assert_int_equal(job->cpu_ns, 0);
    assert_true(rd_ring_builder_idle(&b));
    rd_ring_job_free(job);
    assert_int_equal(rd_ring_builder_start(&b), 0);
    close_builder(&loop, &b);
    assert_int_equal(seen.calls, 1);
}

/* 8,000 members x 512: a build of 4M points, some 50 ms of CPU or (sanitized) far more. */
#define BIG 8000
static char big_names[BIG][16];
static struct rd_ring_member big[BIG];
static uv_sem_t running;

/* A job's work that says, on the builder thread, that it has begun. */
/* Says that it runs, then waits (up to 30 s) for the job to be given up before it builds,
 * so that the build sees the flag however late the test's thread gets the CPU. */
static void run_and_say_so(struct rd_ring_job *job)
{
    uv_sem_post(&running);
    for (int ms = 0; ms < 30000 && !atomic_load(&job->abandon); ms++)
        uv_sleep(1);
    rd_ring_job_run(job);
}

/* A big job queued on a started builder; returns once the thread runs it. */
static struct rd_ring_job *big_job_running(struct rd_ring_builder *b)
{
    for (int i = 0; i < BIG; i++) {
        snprintf(big_names[i], sizeof big_names[i], "host-%d", i);
        big[i] = (struct rd_ring_member){big_names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    struct rd_ring_job *job = rd_ring_job_new(big, BIG, RD_RING_MODE_RINGD, 512, NULL, 16);
    assert_non_null(job);
    job->done = on_done;
    job->work = run_and_say_so;
    assert_int_equal(uv_sem_init(&running, 0), 0);
    assert_int_equal(rd_ring_job_queue(b, job), 0);
    uv_sem_wait(&running);
    uv_sem_destroy(&running);
    return job;
}

static void test_a_running_job_given_up_stops(void **state)
{
    (void)state;
    make_members();
    uv_loop_t loop;
    struct rd_ring_builder b;
    open_builder(&loop, &b, true);
    struct rd_ring_job *job = big_job_running(&b);
    assert_false(rd_ring_builder_queued(&b)); /* taken: it can no longer give way */
    struct rd_ring_job *newer = job_of(members, MEMBERS, NULL);
    assert_null(rd_ring_job_replace(&b, newer));
    rd_ring_job_free(newer);
    rd_ring_builder_abandon(&b);
    assert_int_equal(seen.calls, 0); /* it ends on the thread, and is reported by the loop */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(seen.calls, 1);
    assert_true(seen.on_loop);
    assert_int_equal(job->rc, RD_ECANCELED);
    assert_null(job->ring);
    assert_true(job->cpu_ns > 0); /* it ran: given up while running, not withdrawn */
    rd_ring_job_free(job);
    close_builder(&loop, &b);
}

/* The agent's end: stopping the builder gives its job up, joins the thread, and reports the
 * job before it returns, with no loop run. */
static void test_stopping_the_builder_reports_its_job(void **state)
{
    (void)state;
    uv_loop_t loop;
    struct rd_ring_builder b;
    open_builder(&loop, &b, true);
    struct rd_ring_job *job = big_job_running(&b);
    rd_ring_builder_stop(&b);
    assert_int_equal(seen.calls, 1);
    assert_true(seen.on_loop);
    assert_int_equal(job->rc, RD_ECANCELED);
    assert_true(rd_ring_builder_idle(&b));
    rd_ring_job_free(job);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* How many of this process's threads are named ring-builder and run at nice 19
 * (/proc/self/task/.../stat: the name in parentheses, nice in field 19). */
static int builders_at_nice_19(void)
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
        const char *name = strchr(buf, '(');
        assert_non_null(name);
        bool builder = p - name - 1 == (ptrdiff_t)strlen("ring-builder") &&
                       strncmp(name + 1, "ring-builder", strlen("ring-builder")) == 0;
        count += builder && nice == RD_RING_JOB_NICE;
    }
    closedir(d);
    return count;
}

/* The builder thread, named ring-builder for top -H, builds at nice 19 and gets the caller's
 * priority back at the end, where the process may raise a priority (root here; an
 * unprivileged one is refused, RD_EIO). */
static void test_the_builder_thread_gets_its_priority_back(void **state)
{
    (void)state;
    make_members();
    uv_loop_t loop;
    struct rd_ring_builder b;
    open_builder(&loop, &b, true);
    struct rd_ring_job *job = job_of(members, MEMBERS, NULL);
    assert_int_equal(rd_ring_job_queue(&b, job), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    rd_ring_job_free(job);
    assert_int_equal(builders_at_nice_19(), 1);
    int rc = rd_ring_builder_restore_priority(&b);
    if (geteuid() == 0) assert_int_equal(rc, 0);
    assert_int_equal(builders_at_nice_19(), rc == 0 ? 0 : 1);
    if (rc != 0) assert_int_equal(rc, RD_EIO);
    close_builder(&loop, &b);
}

static void test_a_job_is_outgrown_past_a_64th_of_the_larger_list(void **state)
{
    (void)state;
    make_members();
    struct rd_ring_job *job = job_of(members, 192, NULL);
    /* grown: 192 -> 195 is 3, a 64th of 195 rounded down; one more is past it */
    assert_false(rd_ring_job_outgrown(job, 192));
    assert_false(rd_ring_job_outgrown(job, 195));
    assert_true(rd_ring_job_outgrown(job, 196));
    assert_true(rd_ring_job_outgrown(job, 1000));
    /* shrunk: a 64th of 192 is 3 */
    assert_false(rd_ring_job_outgrown(job, 189));
    assert_true(rd_ring_job_outgrown(job, 188));
    assert_true(rd_ring_job_outgrown(job, 0));
    rd_ring_job_free(job);
    /* counted from the list the job was taken from, members left out of the ring included:
     * 8 drained members of 200 are no change */
    job = job_of(members, 192, NULL);
    job->listed = 200;
    assert_false(rd_ring_job_outgrown(job, 200));
    assert_false(rd_ring_job_outgrown(job, 203));
    assert_true(rd_ring_job_outgrown(job, 204));
    rd_ring_job_free(job);
    /* under 64 members, any change is past it */
    job = job_of(members, 10, NULL);
    assert_false(rd_ring_job_outgrown(job, 10));
    assert_true(rd_ring_job_outgrown(job, 11));
    assert_true(rd_ring_job_outgrown(job, 9));
    rd_ring_job_free(job);
    /* an empty list is outgrown by any member */
    job = job_of(members, 0, NULL);
    assert_false(rd_ring_job_outgrown(job, 0));
    assert_true(rd_ring_job_outgrown(job, 1));
    rd_ring_job_free(job);
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_job_on_the_builder_builds_what_a_build_on_the_loop_builds),
        cmocka_unit_test(test_a_job_of_the_same_placement_says_so_and_diffs_nothing),
        cmocka_unit_test(test_a_job_that_cannot_build_reports_the_error),
        cmocka_unit_test(test_a_job_is_outgrown_past_a_64th_of_the_larger_list),
        cmocka_unit_test(test_a_job_not_yet_taken_gives_way_to_a_newer_one),
        cmocka_unit_test(test_a_job_not_yet_taken_is_given_up_unrun),
        cmocka_unit_test(test_a_running_job_given_up_stops),
        cmocka_unit_test(test_stopping_the_builder_reports_its_job),
        cmocka_unit_test(test_the_builder_thread_gets_its_priority_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
