/*
 * sweep.c — rd_sweep: the membership core measured in the simulator over a grid of cluster
 * sizes and packet loss rates. Not a test: nothing here asserts; it reports numbers.
 *
 *   rd_sweep [--n LIST] [--loss LIST] [--seed S] [--csv FILE] [--quick] [--jobs J]
 *            [--window S] [--warmup S] [--join-max S] [--crashes K] [--mem-gb G]
 *            [--starve MEAN/MAX] [--all] [--verbose]
 *
 *   --n LIST      cluster sizes, comma separated (default 10,30,100,300,1000,3000,10000)
 *   --loss LIST   loss on every UDP packet in percent, comma separated (default
 *                 0,5,10,20,30)
 *   --seed S      the seed of every cell (default 1). A cell replays bit for bit from
 *                 `rd_sweep --seed S --n N --loss L` (same options otherwise) and prints
 *                 the same digest.
 *   --csv FILE    write the results there (default: stdout, after the progress lines)
 *   --quick       N <= 300, loss 0 and 10% only, short windows: under a minute
 *   --jobs J      cells run in J child processes at once (default 2)
 *   --window S    steady-state window in simulated seconds (default: 15 member-hours of
 *                 exposure, 54000/N s, kept within 30..900 s; with --quick within 20..60 s)
 *   --warmup S    simulated seconds between agreement and the window (default 20 + N/33)
 *   --join-max S  give up waiting for agreement after S simulated seconds (default 60)
 *   --crashes K   crash-detection samples per cell (default 5 for N <= 300, else 1;
 *                 2 with --quick)
 *   --mem-gb G    memory the sweep may use at once (default: 80% of MemAvailable); a cell
 *                 that cannot fit is skipped and says so, it is never faked
 *   --starve MEAN/MAX  every member starved of CPU from agreement on (warm-up, window and
 *                 crashes): it runs in 1 ms slices with gaps of MEAN ms on average and
 *                 MAX ms at most between them (sim_set_starve); the CSV's note says so
 *   --all         also run the cells skipped for CPU time: N >= 10000 with loss (each
 *                 takes half an hour of CPU or more; see README)
 *   --verbose     one line per phase of each cell on stderr (virtual and CPU time)
 *
 * One cell = one simulated cluster, one seed, in four phases:
 *
 *   1. join: member 0 starts, then every other member starts at the same virtual instant
 *      joining through it, with the loss on every UDP packet from the start (full-state
 *      syncs ride TCP in the agent, so the simulator never drops them). Every 50 ms of
 *      virtual time: `ring` = all members have one checksum and it covers all N members
 *      (alive or suspect); `agree` = that, and every member sees all N alive (the
 *      sim_converged() of the unit tests). In ms and in gossip rounds (200 ms).
 *   2. warm-up: 20 s + 30 ms per member. A mass join leaves every member with N pieces of
 *      news to retransmit 4*ceil(log10(N+1)) times each, ~20 per packet, which keeps gossip
 *      going at ~17 packets/s for about N/33 s after agreement (measured: 30-40 s at
 *      N = 1000, --verbose shows it); that tail is not the steady state.
 *   3. steady state, `window` s: UDP packets and bytes sent per member per second (lost
 *      ones included: they were sent), full-state sync bytes per member per second,
 *      suspicion events, and false deaths: "dead" events, at any member, about a member
 *      that was up. fp_per_member_hour = those events / (N x window in hours);
 *      fp_victims = distinct members that somebody wrongly declared dead.
 *   4. crash: a member (N/2, then N/2+1, ...) stops; `detect` = time until every other
 *      member sees it dead. With several samples, the crashed member is restarted (a new
 *      life, joining member 0), given time to be alive everywhere (at most 30 s) and 5 s
 *      more, before the next crash. detect_ms is the median, detect_max_ms the worst.
 *
 * Each cell runs in its own child process (fork): cells use both cores, a cell's peak
 * memory and CPU time are its own (wait4), and no cell's result depends on another's. The
 * simulator is deterministic, so the digest (a hash of counters and final state) is the
 * same on every replay of the same cell with the same code and options.
 *
 * Memory: every simulated member keeps a full table of every member it knows (a 64-byte
 * record, its slots in the index, queue and heaps, and the table's growth slack: ~140
 * bytes a member, with all members' names in one shared pool) and ~80 KB of fixed queues,
 * so a cell needs about N^2 x 140 bytes, plus N^2 x 9 bytes for the simulator's per-link
 * loss and cut matrices. A cell that does not fit the budget is skipped, not faked.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

#define LIST_MAX        32
#define JOBS_MAX        16
#define CRASHES_MAX     16
#define STEP_MS         50     /* how often conditions are checked, virtual ms */
#define JOIN_MAX_MS     60000  /* default --join-max */
#define DETECT_MAX_MS   120000 /* give up on a crash detection after this long */
#define REJOIN_MAX_MS   30000  /* a restarted member's time to be alive everywhere */
#define WARMUP_BASE_MS  20000
#define WARMUP_PER_N_MS 30
#define SLOW_N          10000   /* with loss, cells this big are skipped unless --all */
#define EXPOSURE_S      54000.0 /* member-seconds in the window: 15 member-hours */
#define GOSSIP_ROUND_MS 200.0
#define PROBE_PERIOD_MS 1000.0
/* A member's table: per known member, the 64-byte record and its index, queue, heap and
 * probe slots, with the table's growth slack (140 bytes in all, measured); and per member
 * its fixed queues (outgoing messages, relays, packet scratch, the simulator's socket
 * buffer: 80 KB). Used only to decide whether a cell can run here; it overestimates
 * ru_maxrss (in the CSV) by 10-20%. */
#define BYTES_PER_MEMBER 140.0
#define BYTES_PER_CORE   80e3
#define BYTES_PER_LINK   9.0 /* the simulator's loss (double) and cut (bool) matrices */
#define NONE             UINT64_MAX

struct cell {
    size_t n;
    double loss_pct;
    uint64_t seed;
    double window_s;
    uint64_t warmup_ms;
    int crashes;
    uint32_t starve_mean_ms, starve_max_ms; /* 0: not starved */
    bool skipped;
    char note[160];
    /* results */
    uint64_t ring_ms, agree_ms; /* NONE: not within --join-max */
    uint64_t packets, bytes, sync_bytes, suspects, fp_events, fp_victims, fp_total;
    uint64_t detect_ms[CRASHES_MAX]; /* NONE: not within DETECT_MAX_MS */
    uint64_t digest;
    double wall_s, cpu_s;
    long peak_rss_kb;
};

struct options {
    size_t ns[LIST_MAX], nn;
    double losses[LIST_MAX];
    size_t nloss;
    uint64_t seed;
    const char *csv;
    bool quick;
    int jobs;
    double window_s, warmup_s;
    uint64_t join_max_ms;
    int crashes;
    double mem_bytes;
    uint32_t starve_mean_ms, starve_max_ms;
    bool all;
};

static bool verbose;
static char replay_opts[160]; /* the options, besides --seed --n --loss, that shape a cell */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- measuring one cell */

/* Every up member has one checksum, and the ring it describes holds all N members. */
static bool ring_agreed(struct sim *sim, size_t n)
{
    size_t first = SIZE_MAX;
    uint64_t sum = 0;
    for (size_t i = 0; i < sim_size(sim); i++) {
        if (sim_state(sim, i) != SIM_UP) continue;
        uint64_t c = rd_swim_checksum(sim_swim(sim, i));
        if (first == SIZE_MAX) {
            first = i;
            sum = c;
        } else if (c != sum) {
            return false;
        }
    }
    if (first == SIZE_MAX) return false;
    /* equal checksums mean equal rings: one member's count speaks for all */
    size_t counts[4];
    rd_swim_counts(sim_swim(sim, first), counts);
    return counts[RD_ALIVE] + counts[RD_SUSPECT] == n;
}

struct seen {
    size_t about;
    int status;
};

static bool all_see(struct sim *sim, void *arg)
{
    const struct seen *s = arg;
    return sim_all_see(sim, s->about, s->status);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

static uint64_t suspect_events(const struct sim *sim)
{
    uint64_t s = 0;
    for (size_t i = 0; i < sim_size(sim); i++)
        s += sim_event_count(sim, i, RD_SUSPECT);
    return s;
}

/* With --verbose: one line per phase on stderr, for sizing runs. */
static void phase(const struct cell *c, const struct sim *sim, const char *what, double cpu0)
{
    if (verbose)
        fprintf(stderr, "#   N=%zu loss=%g%%: %s at virtual %.1f s, cpu %.1f s\n", c->n,
                c->loss_pct, what, (double)(sim_now(sim) - 1000000) / 1000.0, cpu_now() - cpu0);
}

static void run_cell(struct cell *c, uint64_t join_max_ms)
{
    double cpu0 = cpu_now();
    size_t n = c->n;
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct sim *sim = sim_new(n, c->seed, &cfg);
    if (c->loss_pct > 0) sim_set_loss(sim, SIZE_MAX, SIZE_MAX, c->loss_pct / 100.0);
    sim_start_all(sim, 0, 0);

    /* 1. join: ring agreement, then full agreement (everyone alive everywhere) */
    uint64_t t0 = sim_now(sim);
    c->ring_ms = c->agree_ms = NONE;
    for (;;) {
        uint64_t el = sim_now(sim) - t0;
        if (c->ring_ms == NONE && ring_agreed(sim, n)) c->ring_ms = el;
        if (c->ring_ms != NONE && sim_converged(sim, n)) {
            c->agree_ms = el;
            break;
        }
        if (el >= join_max_ms) break;
        sim_run(sim, STEP_MS);
    }
    phase(c, sim, "joined", cpu0);
    if (c->starve_max_ms) sim_set_starve(sim, SIZE_MAX, c->starve_mean_ms, c->starve_max_ms);

    /* 2. warm-up */
    if (verbose) {
        /* the packet rate over the warm-up, 10 s at a time, to show the join's tail */
        for (uint64_t done = 0; done < c->warmup_ms;) {
            uint64_t step = c->warmup_ms - done < 10000 ? c->warmup_ms - done : 10000;
            uint64_t p = sim_packets_sent(sim);
            sim_run(sim, step);
            done += step;
            fprintf(stderr, "#   N=%zu loss=%g%%: warm-up +%3llu s: %.2f packets/member/s\n", n,
                    c->loss_pct, (unsigned long long)done / 1000,
                    (double)(sim_packets_sent(sim) - p) / (double)n / ((double)step / 1000.0));
        }
    } else {
        sim_run(sim, c->warmup_ms);
    }
    phase(c, sim, "warmed up", cpu0);

    /* 3. steady state */
    uint64_t p0 = sim_packets_sent(sim), b0 = sim_bytes_sent(sim), y0 = sim_sync_bytes(sim);
    uint64_t s0 = suspect_events(sim), f0 = sim_false_deaths(sim);
    uint64_t *before = malloc(n * sizeof *before);
    if (!before) abort();
    for (size_t i = 0; i < n; i++)
        before[i] = sim_false_deaths_about(sim, i);
    sim_run(sim, (uint64_t)(c->window_s * 1000.0));
    c->packets = sim_packets_sent(sim) - p0;
    c->bytes = sim_bytes_sent(sim) - b0;
    c->sync_bytes = sim_sync_bytes(sim) - y0;
    c->suspects = suspect_events(sim) - s0;
    c->fp_events = sim_false_deaths(sim) - f0;
    c->fp_victims = 0;
    for (size_t i = 0; i < n; i++)
        c->fp_victims += sim_false_deaths_about(sim, i) != before[i];
    free(before);
    phase(c, sim, "window done", cpu0);

    /* 4. crashes, one at a time; all but the last are restarted afterwards */
    for (int k = 0; k < c->crashes; k++) {
        size_t victim = (n / 2 + (size_t)k) % n;
        if (victim == 0) victim = 1; /* member 0 is where restarted members join */
        sim_crash(sim, victim);
        struct seen dead = {victim, RD_DEAD};
        c->detect_ms[k] = sim_run_until_pred(sim, all_see, &dead, STEP_MS, DETECT_MAX_MS);
        if (k + 1 == c->crashes) break;
        sim_start(sim, victim, 0);
        struct seen alive = {victim, RD_ALIVE};
        sim_run_until_pred(sim, all_see, &alive, STEP_MS, REJOIN_MAX_MS);
        sim_run(sim, 5000);
    }
    c->fp_total = sim_false_deaths(sim);
    phase(c, sim, "crashes done", cpu0);

    uint64_t h = c->seed;
    h = mix(h, sim_now(sim));
    h = mix(h, sim_packets_sent(sim));
    h = mix(h, sim_bytes_sent(sim));
    h = mix(h, sim_syncs(sim));
    h = mix(h, sim_sync_bytes(sim));
    h = mix(h, sim_false_deaths(sim));
    h = mix(h, suspect_events(sim));
    h = mix(h, rd_swim_checksum(sim_swim(sim, 0)));
    c->digest = h;
    sim_delete(sim);
}

/* ---------------------------------------------------------------- summaries of a cell */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Median and worst of the detection samples (a missed detection counts as infinite). */
static void detect_stats(const struct cell *c, uint64_t *median, uint64_t *worst, int *missed)
{
    uint64_t v[CRASHES_MAX];
    memcpy(v, c->detect_ms, (size_t)c->crashes * sizeof v[0]);
    qsort(v, (size_t)c->crashes, sizeof v[0], cmp_u64);
    *median = v[(c->crashes - 1) / 2];
    *worst = v[c->crashes - 1];
    *missed = 0;
    for (int k = 0; k < c->crashes; k++)
        *missed += v[k] == NONE;
}

static void status_of(const struct cell *c, char *buf, size_t len)
{
    uint64_t med, worst;
    int missed;
    detect_stats(c, &med, &worst, &missed);
    snprintf(buf, len, "%s%s%s%s", c->agree_ms == NONE ? "no-agreement+" : "",
             c->ring_ms == NONE ? "no-ring+" : "", missed ? "missed-detection+" : "",
             c->fp_total ? "false-deaths+" : "");
    size_t l = strlen(buf);
    if (l == 0)
        snprintf(buf, len, "ok");
    else
        buf[l - 1] = '\0';
}

/* ---------------------------------------------------------------- running the grid */

static double cell_bytes(size_t n)
{
    double table = (double)n * BYTES_PER_MEMBER + BYTES_PER_CORE;
    return (double)n * table + (double)n * (double)n * BYTES_PER_LINK + 64e6;
}

static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    if (!f) return 4e9;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024.0;
}

static void fmt_ms(char *buf, size_t len, uint64_t ms)
{
    if (ms == NONE)
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "%" PRIu64, ms);
}

static void report(const struct cell *c)
{
    if (c->skipped) {
        printf("# N=%zu loss=%g%% seed=%" PRIu64 ": skipped: %s\n", c->n, c->loss_pct, c->seed,
               c->note);
        fflush(stdout);
        return;
    }
    char ring[24], agree[24], det[24], st[96];
    uint64_t med, worst;
    int missed;
    detect_stats(c, &med, &worst, &missed);
    fmt_ms(ring, sizeof ring, c->ring_ms);
    fmt_ms(agree, sizeof agree, c->agree_ms);
    fmt_ms(det, sizeof det, med);
    status_of(c, st, sizeof st);
    printf("# N=%zu loss=%g%% seed=%" PRIu64 ": %s; ring %s ms, agree %s ms, detect %s ms, "
           "%.2f pkt/member/s, %" PRIu64 " false deaths (%" PRIu64 " members) in %.0f s; "
           "digest %016" PRIx64 "; %.0f s cpu, %.0f s wall, %.0f MB  "
           "[replay: rd_sweep --seed %" PRIu64 " --n %zu --loss %g%s]\n",
           c->n, c->loss_pct, c->seed, st, ring, agree, det,
           (double)c->packets / (double)c->n / c->window_s, c->fp_events, c->fp_victims,
           c->window_s, c->digest, c->cpu_s, c->wall_s, (double)c->peak_rss_kb / 1024.0, c->seed,
           c->n, c->loss_pct, replay_opts);
    fflush(stdout);
}

struct running {
    pid_t pid;
    int fd;
    size_t cell;
    double start;
};

static void run_grid(struct cell *cells, size_t ncells, const struct options *o)
{
    struct running run[JOBS_MAX];
    int nrun = 0;
    double used = 0;
    size_t next = 0;
    /* biggest cells first, so that the long ones start early and the small ones fill in */
    size_t *order = malloc(ncells * sizeof *order);
    if (!order) abort();
    for (size_t i = 0; i < ncells; i++)
        order[i] = i;
    for (size_t i = 1; i < ncells; i++)
        for (size_t k = i; k > 0 && cells[order[k]].n > cells[order[k - 1]].n; k--) {
            size_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    while (next < ncells || nrun > 0) {
        while (next < ncells && nrun < o->jobs) {
            struct cell *c = &cells[order[next]];
            double need = cell_bytes(c->n);
            if (c->skipped) {
                next++;
                continue;
            }
            if (nrun > 0 && used + need > o->mem_bytes) break; /* wait for memory */
            int fds[2];
            if (pipe(fds) < 0) {
                perror("pipe");
                exit(1);
            }
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid < 0) {
                perror("fork");
                exit(1);
            }
            if (pid == 0) {
                close(fds[0]);
                prctl(PR_SET_PDEATHSIG, SIGTERM); /* no orphans if the sweep is stopped */
                run_cell(c, o->join_max_ms);
                if (write(fds[1], c, sizeof *c) != (ssize_t)sizeof *c) _exit(1);
                _exit(0);
            }
            close(fds[1]);
            run[nrun++] = (struct running){pid, fds[0], order[next], wall_now()};
            used += need;
            next++;
        }
        if (nrun == 0) continue; /* every remaining cell was skipped */
        int status;
        struct rusage ru;
        pid_t pid = wait4(-1, &status, 0, &ru);
        if (pid < 0) {
            if (errno == EINTR) continue;
            perror("wait4");
            exit(1);
        }
        for (int k = 0; k < nrun; k++) {
            if (run[k].pid != pid) continue;
            struct cell *c = &cells[run[k].cell];
            struct cell got;
            ssize_t r = read(run[k].fd, &got, sizeof got);
            close(run[k].fd);
            if (r == (ssize_t)sizeof got && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                *c = got;
            } else {
                c->skipped = true;
                snprintf(c->note, sizeof c->note, "the run failed (wait status %d)", status);
            }
            c->wall_s = wall_now() - run[k].start;
            c->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
            c->peak_rss_kb = ru.ru_maxrss;
            used -= cell_bytes(c->n);
            run[k] = run[--nrun];
            report(c);
            break;
        }
    }
    free(order);
}

/* ---------------------------------------------------------------- output */

static void csv_ms(FILE *f, uint64_t ms, double unit)
{
    if (ms == NONE)
        fprintf(f, ",,");
    else
        fprintf(f, ",%" PRIu64 ",%.2f", ms, (double)ms / unit);
}

static void write_csv(FILE *f, const struct cell *cells, size_t ncells)
{
    fprintf(f, "n,loss_pct,seed,status,ring_ms,ring_rounds,agree_ms,agree_rounds,warmup_s,"
               "window_s,msgs_per_member_s,bytes_per_member_s,sync_bytes_per_member_s,"
               "suspects_per_member_hour,fp_events,fp_victims,fp_per_member_hour,"
               "fp_victims_per_member_hour,detect_samples,detect_ms,detect_periods,"
               "detect_max_ms,detect_missed,fp_total,peak_rss_mb,cpu_s,wall_s,digest,note\n");
    for (size_t i = 0; i < ncells; i++) {
        const struct cell *c = &cells[i];
        if (c->skipped) {
            fprintf(f, "%zu,%g,%" PRIu64 ",skipped,,,,,,,,,,,,,,,,,,,,,,,,,\"%s\"\n", c->n,
                    c->loss_pct, c->seed, c->note);
            continue;
        }
        char st[96];
        status_of(c, st, sizeof st);
        uint64_t med, worst;
        int missed;
        detect_stats(c, &med, &worst, &missed);
        double member_s = (double)c->n * c->window_s, member_h = member_s / 3600.0;
        fprintf(f, "%zu,%g,%" PRIu64 ",%s", c->n, c->loss_pct, c->seed, st);
        csv_ms(f, c->ring_ms, GOSSIP_ROUND_MS);
        csv_ms(f, c->agree_ms, GOSSIP_ROUND_MS);
        fprintf(f, ",%.1f,%.0f,%.3f,%.1f,%.1f,%.1f,%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%d",
                (double)c->warmup_ms / 1000.0, c->window_s, (double)c->packets / member_s,
                (double)c->bytes / member_s, (double)c->sync_bytes / member_s,
                (double)c->suspects / member_h, c->fp_events, c->fp_victims,
                (double)c->fp_events / member_h, (double)c->fp_victims / member_h, c->crashes);
        csv_ms(f, med, PROBE_PERIOD_MS);
        if (worst == NONE)
            fprintf(f, ",");
        else
            fprintf(f, ",%" PRIu64, worst);
        fprintf(f, ",%d,%" PRIu64 ",%.0f,%.1f,%.1f,%016" PRIx64 ",\"%s\"\n", missed, c->fp_total,
                (double)c->peak_rss_kb / 1024.0, c->cpu_s, c->wall_s, c->digest, c->note);
    }
}

/* ---------------------------------------------------------------- command line */

static void usage(void)
{
    fprintf(stderr,
            "usage: rd_sweep [--n LIST] [--loss LIST] [--seed S] [--csv FILE] [--quick]\n"
            "                [--jobs J] [--window S] [--warmup S] [--join-max S] [--crashes K]\n"
            "                [--mem-gb G] [--starve MEAN/MAX] [--verbose]\n");
    exit(2);
}

static size_t parse_list(const char *s, double *out, const char *what)
{
    size_t k = 0;
    while (*s) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || v < 0 || k == LIST_MAX) {
            fprintf(stderr, "rd_sweep: bad %s list\n", what);
            exit(2);
        }
        out[k++] = v;
        s = end;
        if (*s == '%') s++;
        if (*s == ',')
            s++;
        else if (*s) {
            fprintf(stderr, "rd_sweep: bad %s list\n", what);
            exit(2);
        }
    }
    return k;
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int main(int argc, char **argv)
{
    static const size_t default_n[] = {10, 30, 100, 300, 1000, 3000, 10000};
    static const double default_loss[] = {0, 5, 10, 20, 30};
    struct options o = {.seed = 1, .jobs = 2, .join_max_ms = JOIN_MAX_MS};
    double ns[LIST_MAX];
    size_t nn = 0, nloss = 0;
    bool n_set = false, loss_set = false;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            o.quick = true;
            continue;
        }
        if (!strcmp(a, "--verbose")) {
            verbose = true;
            continue;
        }
        if (!strcmp(a, "--all")) {
            o.all = true;
            continue;
        }
        if (!v) usage();
        i++;
        if (!strcmp(a, "--n")) {
            nn = parse_list(v, ns, "--n");
            n_set = true;
        } else if (!strcmp(a, "--loss")) {
            nloss = parse_list(v, o.losses, "--loss");
            loss_set = true;
        } else if (!strcmp(a, "--seed")) {
            o.seed = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--csv")) {
            o.csv = v;
        } else if (!strcmp(a, "--jobs")) {
            o.jobs = atoi(v);
        } else if (!strcmp(a, "--window")) {
            o.window_s = atof(v);
        } else if (!strcmp(a, "--warmup")) {
            o.warmup_s = atof(v);
        } else if (!strcmp(a, "--join-max")) {
            o.join_max_ms = (uint64_t)(atof(v) * 1000.0);
        } else if (!strcmp(a, "--crashes")) {
            o.crashes = atoi(v);
            if (o.crashes < 1 || o.crashes > CRASHES_MAX) usage();
        } else if (!strcmp(a, "--mem-gb")) {
            o.mem_bytes = atof(v) * 1e9;
        } else if (!strcmp(a, "--starve")) {
            unsigned mean, max;
            if (sscanf(v, "%u/%u", &mean, &max) != 2 || max == 0 || mean > max) usage();
            o.starve_mean_ms = mean;
            o.starve_max_ms = max;
        } else {
            usage();
        }
    }
    if (o.jobs < 1 || o.jobs > JOBS_MAX) usage();
    if (!n_set)
        for (size_t k = 0; k < sizeof default_n / sizeof *default_n; k++)
            if (!o.quick || default_n[k] <= 300) ns[nn++] = (double)default_n[k];
    if (!loss_set)
        for (size_t k = 0; k < sizeof default_loss / sizeof *default_loss; k++)
            if (!o.quick || default_loss[k] == 0 || default_loss[k] == 10)
                o.losses[nloss++] = default_loss[k];
    for (size_t k = 0; k < nn; k++) {
        if (ns[k] < 2 || ns[k] > 16384) {
            fprintf(stderr, "rd_sweep: N must be 2..16384\n");
            return 2;
        }
        o.ns[o.nn++] = (size_t)ns[k];
    }
    for (size_t k = 0; k < nloss; k++)
        if (o.losses[k] >= 100) {
            fprintf(stderr, "rd_sweep: loss is in percent, below 100\n");
            return 2;
        }
    o.nloss = nloss;
    if (o.mem_bytes <= 0) o.mem_bytes = 0.8 * mem_available();
    snprintf(replay_opts, sizeof replay_opts, "%s", o.quick ? " --quick" : "");
    if (o.window_s > 0)
        snprintf(replay_opts + strlen(replay_opts), sizeof replay_opts - strlen(replay_opts),
                 " --window %g", o.window_s);
    if (o.warmup_s > 0)
        snprintf(replay_opts + strlen(replay_opts), sizeof replay_opts - strlen(replay_opts),
                 " --warmup %g", o.warmup_s);
    if (o.join_max_ms != JOIN_MAX_MS)
        snprintf(replay_opts + strlen(replay_opts), sizeof replay_opts - strlen(replay_opts),
                 " --join-max %g", (double)o.join_max_ms / 1000.0);
    if (o.crashes)
        snprintf(replay_opts + strlen(replay_opts), sizeof replay_opts - strlen(replay_opts),
                 " --crashes %d", o.crashes);
    if (o.starve_max_ms)
        snprintf(replay_opts + strlen(replay_opts), sizeof replay_opts - strlen(replay_opts),
                 " --starve %u/%u", o.starve_mean_ms, o.starve_max_ms);

    size_t ncells = o.nn * o.nloss;
    struct cell *cells = calloc(ncells, sizeof *cells);
    if (!cells) abort();
    for (size_t a = 0; a < o.nn; a++)
        for (size_t b = 0; b < o.nloss; b++) {
            struct cell *c = &cells[a * o.nloss + b];
            c->n = o.ns[a];
            c->loss_pct = o.losses[b];
            c->seed = o.seed;
            c->window_s = o.window_s > 0 ? o.window_s
                          : o.quick      ? clamp(EXPOSURE_S / (double)c->n, 20, 60)
                                         : clamp(EXPOSURE_S / (double)c->n, 30, 900);
            c->warmup_ms = o.warmup_s > 0 ? (uint64_t)(o.warmup_s * 1000.0)
                                          : WARMUP_BASE_MS + WARMUP_PER_N_MS * (uint64_t)c->n;
            c->crashes = o.crashes ? o.crashes : o.quick ? 2 : c->n <= 300 ? 5 : 1;
            c->starve_mean_ms = o.starve_mean_ms;
            c->starve_max_ms = o.starve_max_ms;
            if (o.starve_max_ms)
                snprintf(c->note, sizeof c->note, "starved: gaps of %u ms on average, %u at most",
                         o.starve_mean_ms, o.starve_max_ms);
            double need = cell_bytes(c->n);
            if (need > o.mem_bytes) {
                c->skipped = true;
                snprintf(c->note, sizeof c->note,
                         "needs ~%.0f GB (N member tables of N records, ~140 bytes each), "
                         "%.0f GB allowed here (--mem-gb)",
                         need / 1e9, o.mem_bytes / 1e9);
            } else if (c->n >= SLOW_N && c->loss_pct > 0 && !o.all && !n_set) {
                c->skipped = true;
                snprintf(c->note, sizeof c->note,
                         "CPU: with loss, half an hour of CPU or more (the N = 10000 join "
                         "alone takes most of it): not run by default (--all or --n to run it)");
            }
        }
    printf("# rd_sweep seed %" PRIu64 ": %zu cells, %d jobs, join limit %.0f s, memory budget "
           "%.1f GB\n",
           o.seed, ncells, o.jobs, (double)o.join_max_ms / 1000.0, o.mem_bytes / 1e9);
    double t = wall_now();
    for (size_t i = 0; i < ncells; i++)
        if (cells[i].skipped) report(&cells[i]);
    run_grid(cells, ncells, &o);
    printf("# sweep done in %.0f s wall\n", wall_now() - t);
    FILE *f = stdout;
    if (o.csv) {
        f = fopen(o.csv, "w");
        if (!f) {
            perror(o.csv);
            return 1;
        }
    }
    write_csv(f, cells, ncells);
    if (o.csv && fclose(f) != 0) {
        perror(o.csv);
        return 1;
    }
    free(cells);
    return 0;
}
