/*
 * client.h — the client subcommands: ringd members | owner | info | watch | join | leave.
 *
 * They talk to the local agent over its query socket in RESP, exactly as any application
 * would, so the CLI is also the first user of the public API.
 */
#ifndef RD_CLIENT_H
#define RD_CLIENT_H

/** Runs a client subcommand; argv[0] is its name. Returns the process exit code. */
int rd_client_main(int argc, char **argv);
/** Prints the client subcommands' usage. */
void rd_client_usage(void);

#endif
