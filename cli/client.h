/*
 * client.h — the client subcommands: ringd members | owner | info | watch | join | leave |
 * keys.
 *
 * They talk to the local agent over its query socket in RESP, exactly as any application
 * would, so the CLI is also the first user of the public API.
 */
#ifndef RD_CLI_CLIENT_H
#define RD_CLI_CLIENT_H

#include <stddef.h>

/**
 * Runs a client subcommand; argv[0] is its name, and options may come anywhere. Returns 0,
 * or an RD_E* code with one line in err for the user: RD_EINVAL for a bad command line
 * (exit status 2); anything else means the agent could not be reached or said no (exit
 * status 1): RD_EIO unreachable, RD_EREFUSED an -ERR reply (its text in err), RD_ENOENT an
 * empty ring, RD_EPROTO a reply that makes no sense. err is left empty when stdout could
 * not be written, since the output itself is what failed.
 */
int rd_client_run(int argc, char **argv, char *err, size_t errlen);

#endif
