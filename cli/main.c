/*
 * main.c — ringd's entry point: `ringd agent` runs the daemon (agent/), every other
 * subcommand is a client of a running agent's query socket (client.c).
 *
 * It is the one place where RD_E* codes become exit statuses: 0 done, 2 a bad command
 * line, 1 anything else (the agent could not start, could not be reached, or said no).
 */
#include <signal.h>
#include <stdbool.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "client.h"
#include "config.h"
#include "keyring.h"
#include "rd_err.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ringd <command> [options]\n\n"
            "ringd keeps one versioned member list on every host (SWIM gossip) and answers\n"
            "\"who owns key K?\" from a consistent-hash ring over a local Unix socket (RESP).\n\n"
            "commands:\n"
            "  agent      run the agent (see ringd agent --help)\n"
            "  members    list the members this agent knows\n"
            "  owner KEY  print the member owning KEY (-n N: N replicas)\n"
            "  assign C KEY...\n"
            "             print a member per key, the set under bounded loads (C: 1.25)\n"
            "  ring       print the ring's definition: parameters, checksum, members\n"
            "  info       print this agent's view: counts, ring version and checksum\n"
            "  watch      the current state, then membership and ring changes\n"
            "  join ADDR  join a cluster through ADDR\n"
            "  leave      make the agent leave the cluster gracefully and exit\n"
            "  ready      exit 0 if the agent joined its cluster (readiness probes)\n"
            "  keys       list, install, use or remove gossip keys at run time\n"
            "             (ringd keys list | install KEY | use FP | remove FP)\n"
            "  tags       set or remove a tag of this member (ringd tags set K V | del K)\n"
            "  weight W   change this member's weight; 0 drains it\n"
            "  force-leave NAME\n"
            "             mark a dead member left everywhere (--prune: also a live one)\n"
            "  metrics    print the Prometheus metrics text (as --metrics-addr serves it)\n"
            "  keygen     print a new random gossip key (base64) for --keyring-file\n"
            "  version    print the version (--json: {\"version\": ...})\n\n"
            "Client commands take --socket PATH (or RINGD_SOCKET; default %s)\n"
            "and --json where they print (see ringd members --help).\n",
            RD_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (sodium_init() < 0) {
        fprintf(stderr, "ringd: libsodium could not start\n");
        return 1;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        bool json = false;
        for (int i = 2; i < argc; i++)
            json = json || strcmp(argv[i], "--json") == 0;
        puts(json ? "{\"version\":\"" RINGD_VERSION "\"}" : "ringd " RINGD_VERSION);
        return 0;
    }
    if (strcmp(cmd, "keygen") == 0) {
        char key[RD_KEY_BASE64_LEN + 1];
        rd_keyring_generate(key);
        puts(key);
        return 0;
    }
    if (strcmp(cmd, "agent") == 0) {
        signal(SIGHUP, SIG_IGN);  /* a reload request, even while the agent starts */
        signal(SIGUSR1, SIG_IGN); /* a dump request, likewise */
        struct rd_agent_config cfg;
        char err[512];
        int rc = rd_config_parse(&cfg, argc - 1, argv + 1, err, sizeof err);
        if (rc == 1) return 0;
        if (rc == 0) rc = rd_config_secure(&cfg, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "ringd agent: %s\n", err);
            return 2;
        }
        return rd_agent_run(&cfg) < 0 ? 1 : 0;
    }
    char err[1024] = "";
    int rc = rd_client_run(argc - 1, argv + 1, err, sizeof err);
    if (rc < 0 && err[0]) fprintf(stderr, "ringd: %s\n", err);
    return rc == 0 ? 0 : rc == RD_EINVAL ? 2 : 1;
}
