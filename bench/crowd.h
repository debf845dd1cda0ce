/*
 * crowd.h — a host with no CPU to spare, and processes of several kinds run beside each
 * other on it, for the benchmarks that measure a loop's lateness there (bench_handoff,
 * bench_maplock).
 *
 * Every kind runs at the same time as the others, so all see the same load: a comparison
 * within one run stays fair however much the machine's speed moves between runs. Each
 * process hands its result back through a pipe as plain bytes. Header-only, like
 * bench_util.h, so that each benchmark stays one executable.
 */
#ifndef RD_BENCH_CROWD_H
#define RD_BENCH_CROWD_H

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/** The value of `--name N` in argv, or dflt. */
static inline unsigned crowd_arg(int argc, char **argv, const char *name, unsigned dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return (unsigned)strtoul(argv[i + 1], NULL, 10);
    return dflt;
}

/** Starts n busy loops at the caller's nice value; returns their pids (crowd_stop frees). */
static inline pid_t *crowd_start(unsigned n)
{
    pid_t *pids = calloc(n + 1, sizeof *pids);
    if (!pids) abort();
    for (unsigned i = 0; i < n; i++)
        if ((pids[i] = fork()) == 0)
            for (;;) {
            }
    sleep(2); /* the busy loops take the cores before anything is measured */
    return pids;
}

static inline void crowd_stop(pid_t *pids, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        kill(pids[i], SIGKILL);
    for (unsigned i = 0; i < n; i++)
        waitpid(pids[i], NULL, 0);
    free(pids);
}

/**
 * Runs run(kind, result) in `procs` processes of each of `kinds` kinds, all at once, and
 * waits for them. Process p of kind k leaves its `size` bytes at out + (k * procs + p) * size;
 * one that hands back nothing leaves zeros there.
 */
static inline void crowd_run(int kinds, unsigned procs, void (*run)(int kind, void *result),
                             size_t size, void *out)
{
    pid_t *kids = calloc((size_t)kinds * procs, sizeof *kids);
    int *fds = calloc((size_t)kinds * procs, sizeof *fds);
    void *mine = malloc(size);
    if (!kids || !fds || !mine) abort();
    for (unsigned p = 0; p < procs; p++)
        for (int k = 0; k < kinds; k++) {
            size_t i = (size_t)k * procs + p;
            int pipefd[2];
            if (pipe(pipefd) != 0) abort();
            if ((kids[i] = fork()) == 0) {
                close(pipefd[0]);
                memset(mine, 0, size);
                run(k, mine);
                ssize_t w = write(pipefd[1], mine, size);
                _exit(w == (ssize_t)size ? 0 : 1);
            }
            close(pipefd[1]);
            fds[i] = pipefd[0];
        }
    for (size_t i = 0; i < (size_t)kinds * procs; i++) {
        char *slot = (char *)out + i * size;
        if (read(fds[i], slot, size) != (ssize_t)size) memset(slot, 0, size);
        close(fds[i]);
        waitpid(kids[i], NULL, 0);
    }
    free(mine);
    free(fds);
    free(kids);
}

#endif
