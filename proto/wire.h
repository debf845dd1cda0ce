/*
 * wire.h — the gossip wire format: struct rd_packet <-> bytes.
 *
 * One packet is one UDP datagram, or the body of one TCP frame for a full-state SYNC.
 * A 4-byte header that any version can read, then a msgpack body of positional arrays:
 *
 *      0        1        2        3
 *   +--------+--------+--------+--------+
 *   |  'R'   |  'D'   | version| flags  |   version = 1, flags = 0
 *   +--------+--------+--------+--------+
 *   | msgpack body (rest of the datagram, nothing after it):
 *   |   packet = array(3+) [ from: str, msgs: array(0..4) of msg, members: array of member ]
 *   |   msg    = array(6+) [ type: uint, flags: uint, seq: uint, checksum: uint,
 *   |                        target: str (may be empty), target_addr: bin(0|6|18) ]
 *   |   member = array(8+) [ name: str, addr: bin(0|6|18), incarnation: uint, status: uint,
 *   |                        weight: uint, zone: str, tags: str, accuser: str (may be empty) ]
 *   |   addr   = bin(0)  no address
 *   |            bin(6)  IPv4 (4 bytes) + port (2 bytes, big-endian)
 *   |            bin(18) IPv6 (16 bytes) + port (2 bytes, big-endian)
 *   +-----------------------------------
 *
 * Why it is shaped so:
 * - The raw header comes first so that a future version, or encryption and compression
 *   (the reserved flag bits), can change everything after it while an old agent still
 *   recognises the packet and drops it with a clear reason ("unsupported version",
 *   "unknown flags") instead of a parse error deep in the body.
 * - msgpack, because it is compact, self-describing and has a decoder in every language,
 *   so another implementation or a debugging tool can read ringd's traffic.
 * - Positional arrays, not maps: no field names on the wire (a UDP packet has 1400 bytes
 *   and every member record counts), and a decoder that reads fields in one fixed order.
 * - Forward compatibility: a packet, msg or member array may carry up to
 *   RD_WIRE_EXTRA_MAX trailing elements this version does not know (uint, str, bin, or
 *   arrays of those, nested at most RD_WIRE_EXTRA_DEPTH deep); they are skipped. So a
 *   later version can add a field at the end of a record and still talk to this one, and
 *   only a change this version must not misread bumps `version`.
 * - Bounded decode: the decoder is a cursor over the caller's bytes that reads exactly the
 *   msgpack subset above, checks every declared length and count against the bytes left
 *   and against the limits before using it, allocates nothing, and writes only into the
 *   caller's fixed structs. msgpack-c's unpacker is not used for decoding because its zone
 *   allocation follows counts declared by the sender. The encoder does use msgpack-c's
 *   packer, writing into the caller's fixed buffer.
 */
#ifndef RD_WIRE_H
#define RD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "msg.h"

/** Version this code writes; the decoder rejects any other ("unsupported version"). */
#define RD_WIRE_VERSION 1
/** Bytes before the msgpack body: 'R', 'D', version, flags. */
#define RD_WIRE_MAGIC_LEN 4
/** Header flag: the rest is sealed (proto/envelope.h); rd_wire_decode() refuses it. */
#define RD_WIRE_FLAG_SEALED 0x01

/** Most unknown trailing elements skipped at the end of one packet, msg or member array. */
#define RD_WIRE_EXTRA_MAX 8
/** Deepest nesting of arrays inside one skipped trailing element (1 = flat array). */
#define RD_WIRE_EXTRA_DEPTH 2

/*
 * Worst-case encoded sizes, in bytes, derived from the layout. They hold for any packet
 * rd_wire_encode() accepts, whatever its integer values: every uint is counted at the
 * widest msgpack form its C type (or its checked range) can need, every str and bin at
 * its header for the longest allowed body.
 *
 * lib/msg.h carries the budget the membership core fills datagrams with, without knowing
 * the encoding (RD_WIRE_HEADER_MAX, RD_WIRE_MSG_MAX, RD_WIRE_MEMBER_BASE); wire.c asserts
 * at compile time that those are at least these, and tests/unit/test_wire.c checks
 * encoded packets against both.
 */

/**
 * Header + packet array + `from` + both array headers: 4 (magic, version, flags)
 * + 1 (fixarray 3) + 2 + RD_NAME_MAX (str8 from) + 3 (array16 msgs) + 3 (array16 members)
 * = 77.
 */
#define RD_WIRE_HEADER_WORST (RD_WIRE_MAGIC_LEN + 1 + (2 + RD_NAME_MAX) + 3 + 3)

/** Bytes of a bin8 address at its longest: header + IPv6 + port. */
#define RD_WIRE_ADDR_MAX (2 + 16 + 2)

/**
 * A SYNC's ring parameters: 1 (fixarray 3) + 2 (spec, uint8) + 2 (mode, uint8) + 3 (vnodes,
 * uint16) = 8.
 */
#define RD_WIRE_RING_WORST (1 + 2 + 2 + 3)

/**
 * One msg: 1 (fixarray 6 or 7) + 1 (type 1..5, fixint) + 2 (flags, uint8) + 5 (seq, uint32)
 * + 9 (checksum, uint64) + 2 + RD_NAME_MAX (str8 target) + 20 (address) + 8 (a SYNC's ring
 * parameters) = 112.
 */
#define RD_WIRE_MSG_WORST                                                                          \
    (1 + 1 + 2 + 5 + 9 + (2 + RD_NAME_MAX) + RD_WIRE_ADDR_MAX + RD_WIRE_RING_WORST)

/**
 * The part of one member record that does not grow with its strings: 1 (fixarray 8)
 * + 20 (address) + 9 (incarnation, uint64) + 2 (status, uint8) + 5 (weight, uint32)
 * + 4 * 2 (str8 headers of name, zone, tags, accuser) = 45. A record takes at most this
 * plus the byte lengths of its four strings.
 */
#define RD_WIRE_MEMBER_FIXED_WORST (1 + RD_WIRE_ADDR_MAX + 9 + 2 + 5 + 4 * 2)

/** One member record with every string at its longest: 45 + 64 + 32 + 255 + 64 = 460. */
#define RD_WIRE_MEMBER_MAX                                                                         \
    (RD_WIRE_MEMBER_FIXED_WORST + RD_NAME_MAX + RD_ZONE_MAX + RD_TAGS_MAX + RD_NAME_MAX)

/**
 * The smallest member record: 1 (fixarray 8) + 2 (a 1-byte name) + 2 (bin(0), no address)
 * + 1 (incarnation 0) + 1 (status) + 1 (weight 1) + 3 (empty zone, tags, accuser) = 11.
 * A receiver can size its member scratch for a frame of n bytes as n / RD_WIRE_MEMBER_MIN.
 */
#define RD_WIRE_MEMBER_MIN (1 + (1 + 1) + 2 + 1 + 1 + 1 + 3)

/** Bytes of the big-endian u32 length that precedes each packet in a TCP frame. */
#define RD_WIRE_FRAME_PREFIX 4

/**
 * Largest packet carried in one TCP frame (the length prefix not included): the largest
 * legal SYNC, which is the header, its one SYNC msg and RD_MAX_MEMBERS member records of
 * the worst case, plus the envelope around it when the frame is sealed:
 * 77 + 112 + 16384 * 460 + 44 = 7 536 873. A receiver refuses any longer frame from its
 * prefix alone; ringd never sends one (its SYNC carries one msg and at most RD_MAX_MEMBERS
 * records). It derives from the table limit and the string limits, so raising either
 * raises what one sync connection may make a receiver buffer: wire.c checks at compile
 * time that a whole frame, prefix included, still fits RD_WIRE_FRAME_BUFFER_MAX.
 */
#define RD_WIRE_FRAME_MAX                                                                          \
    (RD_WIRE_HEADER_WORST + RD_WIRE_MSG_WORST + RD_MAX_MEMBERS * RD_WIRE_MEMBER_MAX +              \
     RD_ENVELOPE_RESERVE)

/**
 * Most memory a frame reader holds for one frame: 8 MiB, the power of two its buffer grows
 * to (by doubling) for a frame of RD_WIRE_FRAME_PREFIX + RD_WIRE_FRAME_MAX bytes. A sync
 * server's memory bound is its connection limit times this (agent/sync.h).
 */
#define RD_WIRE_FRAME_BUFFER_MAX (8u * 1024u * 1024u)

/**
 * Encodes `p` into `buf[0..cap)` and stores the encoded length in `*len`.
 *
 * Checks only what bounds the size: p->nmsgs <= RD_PACKET_MAX_MSGS,
 * p->nmembers <= RD_MAX_MEMBERS (and p->members non-NULL if non-zero), msg types in
 * enum rd_msg_type, every string NUL-terminated within its limit, every address family
 * 0, 4 or 6. It does not check alphabets, statuses or weights: a packet that
 * rd_wire_decode() would reject is the caller's bug, not a wire matter. Allocates nothing
 * and never writes past `cap`. The length is at most RD_WIRE_HEADER_WORST
 * + nmsgs * RD_WIRE_MSG_WORST + the sum of rd_wire_member_size_max() over the members.
 *
 * Returns 0, RD_EINVAL if the packet is out of those bounds, or RD_E2BIG if it does not fit
 * in `cap` bytes (then buf holds a partial packet and *len is untouched).
 */
int rd_wire_encode(const struct rd_packet *p, char *buf, size_t cap, size_t *len);

/**
 * Decodes the untrusted packet `buf[0..len)` into `*p`, with its member records in
 * `members[0..members_cap)`; on success p->members points at `members` and p->nmembers
 * says how many were filled. Nothing is allocated and nothing outside `*p` and
 * `members[0..members_cap)` is written; `buf` is not referenced after the call.
 *
 * Every field is validated: `from` is a valid name (rd_name_valid); a msg's type is one
 * of enum rd_msg_type and its target is empty or a valid name; a member's name, zone and
 * tags are valid, its accuser is empty or a valid name, status <= RD_LEFT and
 * 1 <= weight <= RD_WEIGHT_MAX; addresses are 0, 6 or 18 bytes; no byte follows the body.
 * Unknown trailing elements are skipped (see the file comment). Fields that the msg type
 * does not use are passed through as decoded.
 *
 * `reason` may be NULL; if not, it receives a short static string: "ok" on success, else
 * why the packet was dropped ("truncated", "bad magic", "unsupported version",
 * "unknown flags", "bad name", "trailing bytes", ...), for logs and counters.
 *
 * Returns 0; RD_E2BIG if the packet declares more than RD_PACKET_MAX_MSGS msgs or more
 * than `members_cap` members; RD_EPROTO for any other malformation. On error *p holds no
 * msgs and no members, and members[] is unspecified.
 */
int rd_wire_decode(const char *buf, size_t len, struct rd_packet *p, struct rd_member *members,
                   size_t members_cap, const char **reason);

/**
 * The encoded size of member record `m` in bytes, computed from its string lengths, its
 * address family and its integer values without encoding it: exactly what
 * rd_wire_encode() writes for it, hence an upper bound the core can budget with.
 * Always <= RD_WIRE_MEMBER_MAX for a member rd_wire_encode() accepts.
 */
size_t rd_wire_member_size_max(const struct rd_member *m);

/**
 * Reads the length prefix of a TCP frame from `buf[0..len)`: a big-endian u32, the size
 * of the packet that follows (the prefix itself not counted), stored in `*body_len` once
 * the prefix is whole, refused or not (so a caller can tell an empty frame from one too
 * large).
 *
 * Returns 0; RD_EAGAIN if fewer than RD_WIRE_FRAME_PREFIX bytes are there yet (`*body_len`
 * untouched); RD_E2BIG if the length is 0 or over RD_WIRE_FRAME_MAX (the stream cannot be
 * trusted further: close it).
 */
int rd_wire_frame_header(const char *buf, size_t len, uint32_t *body_len);

/**
 * Writes the RD_WIRE_FRAME_PREFIX-byte length prefix for a packet of `body_len` bytes
 * into `buf`, which must have room for RD_WIRE_FRAME_PREFIX bytes. Typical use:
 * rd_wire_encode(p, buf + RD_WIRE_FRAME_PREFIX, cap - RD_WIRE_FRAME_PREFIX, &n), then
 * rd_wire_frame_put_header(buf, n) and send RD_WIRE_FRAME_PREFIX + n bytes.
 */
void rd_wire_frame_put_header(char *buf, uint32_t body_len);

/**
 * Reassembles length-prefixed frames from a byte stream, without doing any I/O: the
 * transport hands over whatever bytes a read gave, in pieces of any size, and gets whole
 * frames back. It holds at most one frame (prefix and body), so what a peer can make it
 * buffer is bounded by RD_WIRE_FRAME_MAX, and memory grows only as bytes actually arrive
 * (a 4-byte prefix alone reserves nothing for the body it announces).
 *
 * The fields are public to be read: after rd_wire_frame_feed() returned 0, `body` and
 * `body_len` are the whole frame's packet, valid until the next feed or free.
 */
struct rd_wire_frame_reader {
    struct rd_buf frame; /**< prefix and body bytes of the frame being read */
    uint32_t body_len;   /**< the length the prefix announced once it is whole, else 0 */
    int error;           /**< sticky: the first error, or 0 */
    bool done;           /**< a whole frame was handed out; the next feed starts another */
    const char *body;    /**< the whole frame's packet after a feed returned 0 */
};

/** Makes `r` ready for the first frame without allocating. */
void rd_wire_frame_reader_init(struct rd_wire_frame_reader *r);

/** Frees what `r` holds; it must be initialised again before reuse. */
void rd_wire_frame_reader_free(struct rd_wire_frame_reader *r);

/**
 * Takes bytes from `data[0..len)` up to the end of the current frame and stores in *used
 * how many it took (the rest belongs to the next frame: feed it again). Returns
 * 0 when a whole frame is ready in r->body / r->body_len; RD_EAGAIN when every byte was
 * taken and the frame needs more; RD_E2BIG when the prefix announces 0 or more than
 * RD_WIRE_FRAME_MAX bytes (the stream cannot be trusted further: close it; r->body_len
 * holds the refused length); RD_ENOMEM when the frame could not be buffered. Errors are
 * sticky: every later call returns the same error and takes nothing.
 */
int rd_wire_frame_feed(struct rd_wire_frame_reader *r, const char *data, size_t len, size_t *used);

#endif
