/*
 * fuzz_snapshot.c — libFuzzer target for the member snapshot decoder (agent/snapshot.h),
 * what an agent reads from --state-dir at start.
 *
 * The first byte picks a path:
 *   even: the rest is a whole file, header included: random bytes almost never carry a
 *         right XXH3, so this path covers the header checks.
 *   odd:  the rest is a body; the target puts a right header in front of it (magic,
 *         version, length, XXH3), so that the field and record checks are reached.
 * Either way it must never crash, over-read or leak. A refusal is RD_EPROTO with a reason.
 * What is accepted has a valid writer name and cluster label and at most RD_MAX_MEMBERS
 * records, each with a valid name, family 4 or 6 and a known status; and it encodes again
 * to exactly the input (the format has one encoding per table, so nothing is accepted that
 * the writer would not have written).
 * Build and run: see README.md beside this file.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "rd_err.h"
#include "snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok) abort();
}

static struct rd_snapshot_entry entries[RD_MAX_MEMBERS];
static uint8_t file[RD_SNAPSHOT_MAX_BYTES], again[RD_SNAPSHOT_MAX_BYTES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size - 1 > RD_SNAPSHOT_MAX_BYTES - RD_SNAPSHOT_HEADER_LEN) return 0;
    const uint8_t *in = data + 1;
    size_t len = size - 1;
    if (data[0] & 1) {
        memcpy(file, "RDSN", 4);
        file[4] = RD_SNAPSHOT_VERSION;
        file[5] = file[6] = file[7] = 0;
        uint64_t sum = XXH3_64bits(in, len);
        for (int i = 0; i < 4; i++)
            file[8 + i] = (uint8_t)(len >> (24 - 8 * i));
        for (int i = 0; i < 8; i++)
            file[12 + i] = (uint8_t)(sum >> (56 - 8 * i));
        memcpy(file + RD_SNAPSHOT_HEADER_LEN, in, len);
        len += RD_SNAPSHOT_HEADER_LEN;
    } else {
        memcpy(file, in, len);
    }
    /* an exact-size copy, so that an over-read is caught by AddressSanitizer */
    uint8_t *buf = malloc(len ? len : 1);
    check(buf != NULL);
    memcpy(buf, file, len);
    struct rd_snapshot_head head;
    char err[256] = "";
    int n = rd_snapshot_decode(buf, len, &head, entries, RD_MAX_MEMBERS, err, sizeof err);
    if (n < 0) {
        check(n == RD_EPROTO && err[0] != '\0');
        free(buf);
        return 0;
    }
    check((uint32_t)n == head.count && n <= RD_MAX_MEMBERS);
    check(rd_name_valid(head.self, strlen(head.self)));
    check(strlen(head.cluster) <= RD_ZONE_MAX && rd_zone_valid(head.cluster, strlen(head.cluster)));
    for (int i = 0; i < n; i++) {
        check(rd_name_valid(entries[i].name, strlen(entries[i].name)));
        check(entries[i].addr.family == 4 || entries[i].addr.family == 6);
        check(entries[i].status <= RD_LEFT);
    }
    int m = rd_snapshot_encode(&head, entries, (size_t)n, again, sizeof again);
    check(m >= 0 && (size_t)m == len && memcmp(again, buf, len) == 0);
    free(buf);
    return 0;
}
