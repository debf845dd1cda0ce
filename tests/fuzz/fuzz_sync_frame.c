/*
 * fuzz_sync_frame.c — libFuzzer target for the TCP sync framing (proto/wire.h's frame
 * reader) and the decoding of what it frames, as agent/sync.c does it.
 *
 * The input is both the byte stream and how the network cuts it up:
 *
 *   byte 0          k - 1 (k = 1 + byte % 8): how many chunk sizes follow
 *   bytes 1..k      chunk sizes, used in turn (0 is an empty read; all zero means 1 each)
 *   the rest        the stream a peer sends
 *
 * The stream is fed to one reader in those chunks and to a second reader in one piece.
 * Both must hand out the same frames, at the same stream offsets, and fail at the same
 * byte: how reads are cut must never change what is read. Every frame is decoded with
 * rd_wire_decode into a member scratch sized from its length, exactly as sync.c sizes it;
 * ASan and UBSan watch all of it. Build: see README.md beside this file.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rd_err.h"
#include "wire.h"

#define MAX_SIZES 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok) abort();
}

/* Decodes one frame's packet the way sync.c does: scratch for as many records as its
 * length can hold, at most RD_MAX_MEMBERS. */
static void decode_frame(const char *body, uint32_t len)
{
    size_t cap = len / RD_WIRE_MEMBER_MIN + 1;
    if (cap > RD_MAX_MEMBERS) cap = RD_MAX_MEMBERS;
    struct rd_member *members = malloc(cap * sizeof *members);
    check(members != NULL);
    struct rd_packet pkt;
    const char *reason = NULL;
    int rc = rd_wire_decode(body, len, &pkt, members, cap, &reason);
    check(rc == 0 || rc == RD_EPROTO || rc == RD_E2BIG);
    check(reason != NULL);
    if (rc == 0) {
        check(pkt.nmembers <= cap);
        for (size_t i = 0; i < pkt.nmembers; i++)
            check(rd_member_valid(&pkt.members[i]));
    }
    free(members);
}

/* Feeds the whole-piece reader from stream[*pos..len) until it has a frame or an error, or
 * has taken everything (RD_EAGAIN). */
static int whole_next(struct rd_wire_frame_reader *r, const char *stream, size_t len, size_t *pos)
{
    size_t used = 0;
    int rc = rd_wire_frame_feed(r, stream + *pos, len - *pos, &used);
    check(used <= len - *pos);
    *pos += used;
    check(rc != RD_EAGAIN || *pos == len);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t k = 1 + data[0] % MAX_SIZES;
    if (size < 1 + k) return 0;
    size_t sizes[MAX_SIZES], sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += sizes[i] = data[1 + i];
    if (sum == 0)
        for (size_t i = 0; i < k; i++)
            sizes[i] = 1;
    const char *stream = (const char *)data + 1 + k;
    size_t len = size - 1 - k;

    struct rd_wire_frame_reader cut, whole;
    rd_wire_frame_reader_init(&cut);
    rd_wire_frame_reader_init(&whole);
    size_t pos = 0, wpos = 0;
    int failed = 0;
    for (size_t turn = 0; pos < len && failed == 0; turn++) {
        size_t chunk = sizes[turn % k];
        if (chunk > len - pos) chunk = len - pos;
        size_t off = 0;
        do {
            size_t used = 0;
            int rc = rd_wire_frame_feed(&cut, stream + pos + off, chunk - off, &used);
            check(used <= chunk - off);
            off += used;
            if (rc == RD_EAGAIN) {
                check(off == chunk); /* it waits only once it took everything */
                break;
            }
            if (rc < 0) {
                check(rc == RD_E2BIG || rc == RD_ENOMEM);
                check(rd_wire_frame_feed(&cut, stream, len, &used) == rc && used == 0);
                if (rc == RD_E2BIG) /* the other reader refuses the same prefix */
                    check(whole_next(&whole, stream, len, &wpos) == rc && wpos == pos + off);
                failed = rc;
                break;
            }
            check(cut.body_len >= 1 && cut.body_len <= RD_WIRE_FRAME_MAX);
            int wrc = whole_next(&whole, stream, len, &wpos);
            if (wrc == RD_ENOMEM) {
                failed = wrc;
                break;
            }
            check(wrc == 0 && wpos == pos + off && whole.body_len == cut.body_len);
            check(memcmp(whole.body, cut.body, cut.body_len) == 0);
            decode_frame(cut.body, cut.body_len);
        } while (off < chunk);
        pos += chunk;
    }
    /* All of the stream was read in pieces: in one piece, no further frame is whole. */
    if (failed == 0 && wpos < len) check(whole_next(&whole, stream, len, &wpos) == RD_EAGAIN);
    rd_wire_frame_reader_free(&cut);
    rd_wire_frame_reader_free(&whole);
    return 0;
}
