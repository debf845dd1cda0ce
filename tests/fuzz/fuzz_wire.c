/*
 * fuzz_wire.c — libFuzzer target for the gossip decoder (proto/wire.h).
 *
 * Feeds arbitrary bytes to rd_wire_decode(): it must never crash, over-read (the fuzzer's
 * input buffer is exactly `size` bytes, so ASan sees one byte past it) or trip UBSan.
 * Whatever it accepts must re-encode, and decode again to the same packet. A small member
 * cap is used so that the "too many members" path is reached as well as full decodes.
 * Build and run: see README.md beside this file.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rd_err.h"
#include "wire.h"

#define CAP 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok) abort();
}

static bool addr_same(const struct rd_addr *a, const struct rd_addr *b)
{
    return a->family == b->family && rd_addr_equal(a, b);
}

static bool same_packet(const struct rd_packet *a, const struct rd_packet *b)
{
    if (strcmp(a->from, b->from) != 0 || a->nmsgs != b->nmsgs || a->nmembers != b->nmembers)
        return false;
    for (size_t i = 0; i < a->nmsgs; i++) {
        const struct rd_msg *x = &a->msgs[i], *y = &b->msgs[i];
        if (x->type != y->type || x->flags != y->flags || x->seq != y->seq ||
            x->checksum != y->checksum || strcmp(x->target, y->target) != 0 ||
            !addr_same(&x->target_addr, &y->target_addr))
            return false;
    }
    for (size_t i = 0; i < a->nmembers; i++) {
        const struct rd_member *x = &a->members[i], *y = &b->members[i];
        if (strcmp(x->name, y->name) != 0 || !addr_same(&x->addr, &y->addr) ||
            x->incarnation != y->incarnation || x->status != y->status || x->weight != y->weight ||
            strcmp(x->zone, y->zone) != 0 || strcmp(x->tags, y->tags) != 0 ||
            strcmp(x->accuser, y->accuser) != 0)
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rd_member members[CAP], again[CAP];
    static char buf[RD_WIRE_HEADER_WORST + RD_PACKET_MAX_MSGS * RD_WIRE_MSG_WORST +
                    CAP * RD_WIRE_MEMBER_MAX];
    struct rd_packet p, q;
    const char *why = NULL;

    int rc = rd_wire_decode((const char *)data, size, &p, members, CAP, &why);
    check(why != NULL);
    if (rc != 0) {
        check((rc == RD_EPROTO || rc == RD_E2BIG) && strcmp(why, "ok") != 0);
        check(p.nmsgs == 0 && p.nmembers == 0);
        return 0;
    }
    for (size_t i = 0; i < p.nmembers; i++)
        check(rd_member_valid(&p.members[i]));

    /* accepted: it must survive the trip back through the encoder */
    size_t len = 0;
    check(rd_wire_encode(&p, buf, sizeof buf, &len) == 0);
    check(len <= size); /* re-encoding is minimal, and skipped extras are gone */
    check(rd_wire_decode(buf, len, &q, again, CAP, &why) == 0);
    check(same_packet(&p, &q));
    return 0;
}
