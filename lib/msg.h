/*
 * msg.h — the gossip messages as plain C structs.
 *
 * The membership core speaks in these; proto/wire.c turns them into bytes and back.
 * Keeping them here, free of any encoding, is what lets the core run unchanged in the
 * agent, in unit tests and in the simulator. Every array has a fixed bound so that a
 * decoder of untrusted bytes never has to allocate more than these structs.
 *
 * One packet = one UDP datagram (or one TCP frame for a full-state sync):
 *   sender name, up to RD_PACKET_MAX_MSGS control messages, then member records
 *   (piggybacked news; for SYNC, the sender's whole member table).
 */
#ifndef RD_MSG_H
#define RD_MSG_H

#include "member.h"

/** Largest UDP datagram ringd sends: below any path MTU, as memberlist assumes. */
#define RD_DATAGRAM_MAX 1400
/** Bytes of every datagram and sync frame kept for the envelope (proto/envelope.h). */
#define RD_ENVELOPE_RESERVE 44
/** What the core may fill: the datagram less the envelope, sealed or not. */
#define RD_PACKET_BUDGET (RD_DATAGRAM_MAX - RD_ENVELOPE_RESERVE)
/** Control messages in one packet. */
#define RD_PACKET_MAX_MSGS 4
/** Member records in one UDP packet; the core sends at most this many, decoders refuse more. */
#define RD_PACKET_MAX_MEMBERS 32
/** Member records in one SYNC frame: the largest cluster ringd accepts. */
#define RD_MAX_MEMBERS 16384

enum rd_msg_type {
    RD_MSG_PING = 1,     /**< direct probe of `target`; answer with ACK(seq) */
    RD_MSG_ACK = 2,      /**< answer to PING(seq), or relayed answer to PING_REQ(seq) */
    RD_MSG_PING_REQ = 3, /**< please probe `target` at `target_addr` for me, answer ACK/NACK(seq) */
    RD_MSG_NACK = 4,     /**< I relayed PING_REQ(seq) but the target did not answer in time */
    RD_MSG_SYNC =
        5, /**< full state follows in `members`; answer with ours if flags & RD_SYNC_REPLY */
};

/** SYNC flag: the receiver should answer with its own full state. */
#define RD_SYNC_REPLY 0x01
/** SYNC flag: the sender has not joined yet: it adopts the cluster's ring parameters where
 *  it did not set its own (proto/PROTOCOL.md, "Ring parameters"). */
#define RD_SYNC_JOIN 0x02
/** SYNC flag: the sender's vnodes was set by its operator, so it never adopts another. */
#define RD_SYNC_VNODES_SET 0x04
/** SYNC flag: the sender's ring mode was set by its operator, so it never adopts another. */
#define RD_SYNC_MODE_SET 0x08

/** NACK flag: the helper's ping was refused (nothing listens at the target's address). */
#define RD_NACK_REFUSED 0x01

/** The ring parameters every SYNC carries: all agents of a cluster must build alike. */
struct rd_ring_params {
    uint8_t spec;    /**< version of the ring specification, 1.. */
    uint8_t mode;    /**< enum rd_ring_mode (ring.h): 0 ringd, 1 ketama */
    uint16_t vnodes; /**< points per member at weight 1, 1..RD_RING_VNODES_MAX */
};

/*
 * Worst-case encoded sizes, which the core uses to fill a packet up to RD_PACKET_BUDGET
 * without knowing the encoding (proto/wire.c's tests prove that they are upper bounds).
 */
/** Packet header with the longest sender name and the widest array headers. */
#define RD_WIRE_HEADER_MAX 80
/** One control message, worst case. */
#define RD_WIRE_MSG_MAX 112
/** One member record: this much plus the lengths of its four strings. */
#define RD_WIRE_MEMBER_BASE 48

/** One control message. Fields unused by a type are zero. */
struct rd_msg {
    uint8_t type;                 /**< enum rd_msg_type */
    uint8_t flags;                /**< RD_SYNC_* for SYNC, RD_NACK_REFUSED for NACK */
    uint32_t seq;                 /**< probe sequence number (PING, ACK, PING_REQ, NACK) */
    uint64_t checksum;            /**< sender's membership checksum (PING, ACK, SYNC) */
    char target[RD_NAME_MAX + 1]; /**< PING, PING_REQ: the member being probed */
    struct rd_addr target_addr;   /**< PING_REQ: where to probe it */
    struct rd_ring_params ring;   /**< SYNC: the sender's ring parameters */
};

/**
 * One packet. `members` points at storage owned by whoever filled the packet (the core's
 * scratch when sending, the decoder's caller when receiving) and is valid until that
 * owner's next call.
 */
struct rd_packet {
    char from[RD_NAME_MAX + 1]; /**< sender's member name */
    size_t nmsgs;
    struct rd_msg msgs[RD_PACKET_MAX_MSGS];
    size_t nmembers;
    const struct rd_member *members;
    size_t wire_len; /**< bytes it took on the wire (rd_wire_decode sets it; 0: unknown) */
};

#endif
