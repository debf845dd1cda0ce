#!/usr/bin/python3
"""ring_spec.py -- the ring of proto/PROTOCOL.md ("The ring"), written from that text alone.

A second implementation is what proves the specification complete: if this file, which
shares no code with lib/ring.c, rebuilds the agent's ring from its RING reply to the same
checksum and places every key on the same member, then the document says everything a
client needs. It uses Debian's python3-xxhash (XXH3-64, seed 0) and, to talk to an agent,
Debian's python3-redis.

    ring_spec.py vectors PROTOCOL.md
        checks the test vectors the document states, read from the document itself: the
        point-count table, the hash, point and key examples, rings A and B, ring A's sorted
        points, the checksum example's bytes, and the scaling example.
    ring_spec.py check [--socket PATH] [--file RING.json] [--keys N] [--batch B] [--seed S]
        reads the definition from the agent's RING (or from a file written by `dump`),
        rebuilds the ring, checks its checksum and point total, then asks the agent (MOWNER,
        B keys a request) for the owners of N keys and counts the differences; with no
        member in a zone, also OWNERS key 3 for the first 1,000 keys. Exit 0 when all agree.
    ring_spec.py dump --socket PATH FILE
        writes the agent's RING reply as JSON.

Limits of what it covers: mode "ringd" only (another mode is reported, exit 2); the diff
of two rings ("What moved") is not implemented.
"""
import argparse
import bisect
import json
import random
import re
import sys

import xxhash

L = 1 << 24  # RD_RING_MAX_POINTS: most points in one ring
WEIGHT_ONE = 1000


def xxh3(data):
    return xxhash.xxh3_64_intdigest(bytes(data), seed=0)


# ---------------------------------------------------------------- the construction


def raw_points(vnodes, weight):
    """Points per member: max(1, (vnodes * weight + 500) / 1000), rounding down."""
    return max(1, (vnodes * weight + 500) // 1000)


def point_counts(vnodes, weights):
    """Each member's count, scaled by the one factor (L - n) / T when the total T exceeds L."""
    raw = [raw_points(vnodes, w) for w in weights]
    total = sum(raw)
    if total <= L:
        return raw
    budget = L - len(weights)
    return [max(1, r * budget // total) for r in raw]


def point_encoding(name, i):
    """u8 len(name) | name | u32 big-endian i."""
    return bytes([len(name)]) + name + i.to_bytes(4, "big")


def point_position(name, i):
    return xxh3(point_encoding(name, i))


def key_position(key):
    return xxh3(key)


class Member:
    def __init__(self, name, weight, zone=b"", identity=None):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.weight = int(weight)
        zone = zone or b""
        self.zone = zone if isinstance(zone, bytes) else zone.encode()
        identity = identity or self.name
        self.identity = identity if isinstance(identity, bytes) else identity.encode()


class Ring:
    def __init__(self, members, vnodes, mode=0):
        if mode != 0:
            raise ValueError("mode %d is not the construction PROTOCOL.md's ring specifies" % mode)
        # Member order: bytewise on names, a proper prefix first (Python's bytes order).
        self.members = sorted(members, key=lambda m: m.name)
        names = [m.name for m in self.members]
        if len(set(names)) != len(names):
            raise ValueError("duplicate member name")
        self.vnodes = vnodes
        self.mode = mode
        self.counts = point_counts(vnodes, [m.weight for m in self.members])
        points = []
        for idx, (m, count) in enumerate(zip(self.members, self.counts)):
            points.extend((point_position(m.name, i), idx) for i in range(count))
        points.sort()  # by (position, member index): ties go to the smaller name
        self.positions = [p for p, _ in points]
        self.owners_of = [m for _, m in points]

    def point_total(self):
        return sum(self.counts)

    def checksum(self):
        if not self.members:
            return 0  # the empty ring's, not the hash of one zero byte
        return xxh3(self.checksum_bytes())

    def checksum_bytes(self):
        out = bytearray([self.mode])
        for m, count in zip(self.members, self.counts):
            out += bytes([len(m.name)]) + m.name
            out += count.to_bytes(4, "big") + m.weight.to_bytes(4, "big")
            out += bytes([len(m.zone)]) + m.zone
            out += bytes([len(m.identity)]) + m.identity
        return bytes(out)

    def first_point_at(self, pos):
        """Index of the first point at or clockwise after pos, wrapping to 0."""
        i = bisect.bisect_left(self.positions, pos)
        return 0 if i == len(self.positions) else i

    def owner_at(self, pos):
        if not self.positions:
            return None
        return self.members[self.owners_of[self.first_point_at(pos)]].name

    def owner(self, key):
        return self.owner_at(key_position(key))

    def owners(self, key, n):
        """Walks from the owner's point, taking each member the first time it is met."""
        if not self.positions or n == 0:
            return []
        want = min(n, len(self.members))
        start = self.first_point_at(key_position(key))
        got, seen = [], set()
        for k in range(len(self.positions)):
            idx = self.owners_of[(start + k) % len(self.positions)]
            if idx not in seen:
                seen.add(idx)
                got.append(self.members[idx].name)
                if len(got) == want:
                    break
        return got


# ---------------------------------------------------------------- the document's vectors


class Vectors:
    def __init__(self, text):
        self.text = text
        self.failures = 0
        self.checked = 0

    def expect(self, what, got, want):
        self.checked += 1
        if got != want:
            self.failures += 1
            print("FAIL %s: got %r, the document says %r" % (what, got, want))

    def section(self, title):
        m = re.search(r"^### %s\n(.*?)(?=^#{2,3} )" % re.escape(title), self.text, re.M | re.S)
        if not m:
            raise SystemExit("PROTOCOL.md has no section '### %s'" % title)
        return m.group(1)

    def row(self, body, label):
        """The value column of the test-vector row whose first column contains label."""
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and label in cells[0]:
                return cells[1]
        raise SystemExit("no test vector row '%s'" % label)


def hexval(cell):
    return int(re.search(r"0x([0-9a-f]+)", cell).group(1), 16)


def names_in(cell):
    return [n.encode() for n in re.findall(r"`([^`]+)`", cell)]


def check_vectors(path):
    v = Vectors(open(path, encoding="utf-8").read())

    # Points per member: every row of its table.
    rows = re.findall(r"^\| (\d+) \| (\d+) \([^)]*\) \| (\d+)", v.section("Points per member"), re.M)
    if len(rows) < 5:
        raise SystemExit("the points table has %d rows" % len(rows))
    for vn, w, p in rows:
        v.expect("points of vnodes %s weight %s" % (vn, w), raw_points(int(vn), int(w)), int(p))

    # The point-position example and its bytes.
    pp = v.section("Point positions")
    m = re.search(r"^((?:[0-9a-f]{2} )+[0-9a-f]{2})\s+->\s+XXH3-64 = 0x([0-9a-f]+)", pp, re.M)
    v.expect("point 0 of node-1: bytes", point_encoding(b"node-1", 0), bytes.fromhex(m.group(1)))
    v.expect("point 0 of node-1: position", point_position(b"node-1", 0), int(m.group(2), 16))
    m = re.search(r"point 256 of `node-1` is `([0-9a-f ]+)`", pp)
    v.expect("point 256 of node-1: bytes", point_encoding(b"node-1", 256), bytes.fromhex(m.group(1)))

    # The checksum example: its bytes and its hash.
    cs = v.section("Ring checksum")
    m = re.search(r"```\n(00\n(?:[0-9a-f ]+\n)+)```\s*\nto 0x([0-9a-f]+)", cs)
    example = Ring([Member("node-%d" % i, 1000) for i in (1, 2, 3)], 4)
    v.expect("checksum example: bytes", example.checksum_bytes(), bytes.fromhex(m.group(1)))
    v.expect("checksum example: value", example.checksum(), int(m.group(2), 16))
    v.expect("empty ring checksum", Ring([], 4).checksum(), 0)

    # The test-vector table.
    tv = v.section("Test vectors")
    v.expect("XXH3-64 of no bytes", xxh3(b""), hexval(v.row(tv, "XXH3-64 of no bytes")))
    v.expect("key position of user:42", key_position(b"user:42"),
             hexval(v.row(tv, "key position of `user:42`")))
    for i in (0, 1):
        v.expect("point %d of node-1" % i, point_position(b"node-1", i),
                 hexval(v.row(tv, "point %d of `node-1`" % i)))
    ring_a = Ring([Member("node-%d" % i, 1000) for i in (1, 2, 3)], 4)
    v.expect("ring A points", ", ".join(map(str, ring_a.counts)),
             v.row(tv, "ring A = "))
    v.expect("ring A checksum", ring_a.checksum(), hexval(v.row(tv, "ring A checksum")))
    v.expect("ring A owner", [ring_a.owner(b"user:42")], names_in(v.row(tv, "ring A owner")))
    v.expect("ring A OWNERS", ring_a.owners(b"user:42", 3), names_in(v.row(tv, "ring A `OWNERS")))
    ring_b = Ring([Member("node-1", 1000), Member("node-2", 2000), Member("node-3", 500)], 4)
    v.expect("ring B points", ", ".join(map(str, ring_b.counts)), v.row(tv, "ring B = "))
    v.expect("ring B checksum", ring_b.checksum(), hexval(v.row(tv, "ring B checksum")))
    v.expect("ring B owner", [ring_b.owner(b"user:42")], names_in(v.row(tv, "ring B owner")))

    # Ring A's sorted points, two columns of (#, position, member).
    pts = re.findall(r"\| (\d+) \| `0x([0-9a-f]+)` \| (node-\d) ", tv)
    pts = sorted((int(i), int(p, 16), n.encode()) for i, p, n in pts)
    v.expect("ring A point count in the table", len(pts), ring_a.point_total())
    got = [(i, ring_a.positions[i], ring_a.members[ring_a.owners_of[i]].name)
           for i in range(len(ring_a.positions))]
    v.expect("ring A sorted points", got, pts)

    # Scaling to the point limit: 41 members h0..h40 at 100.0, vnodes 4096. Only counts
    # and the checksum: hashing 16.7 million points is not needed for either.
    sc = v.section("Scaling to the point limit")
    m = re.search(r"each gets\s+([\d,]+) points \(([\d,]+) in all\); ring checksum `0x([0-9a-f]+)`", sc)
    big = [Member("h%d" % i, 100000) for i in range(41)]
    counts = point_counts(4096, [x.weight for x in big])
    v.expect("scaled count", counts[0], int(m.group(1).replace(",", "")))
    v.expect("scaled total", sum(counts), int(m.group(2).replace(",", "")))
    scaled = Ring.__new__(Ring)
    scaled.members, scaled.counts, scaled.mode = sorted(big, key=lambda x: x.name), counts, 0
    v.expect("scaled checksum", scaled.checksum(), int(m.group(3), 16))
    m = re.search(r"Adding `new` at\s+weight 1\.0.*?`h\*` get ([\d,]+) and `new` ([\d,]+)", sc, re.S)
    counts = point_counts(4096, [x.weight for x in big] + [1000])
    v.expect("scaled with new: h*", counts[0], int(m.group(1).replace(",", "")))
    v.expect("scaled with new: new", counts[-1], int(m.group(2).replace(",", "")))

    print("vectors: %d checked, %d failed" % (v.checked, v.failures))
    return 1 if v.failures else 0


# ---------------------------------------------------------------- against an agent


def text(b):
    return b.decode() if isinstance(b, bytes) else b


def definition_from_reply(reply):
    """RING's 7 elements as a dict (the JSON `dump` writes)."""
    if not isinstance(reply, list) or len(reply) != 7:
        raise SystemExit("RING: expected an array of 7, got %r" % (reply,))
    spec, mode, vnodes, version, checksum, points, members = reply
    return {
        "spec": int(spec), "mode": text(mode), "vnodes": int(vnodes), "version": int(version),
        "checksum": text(checksum), "points": int(points),
        "members": [[text(n), int(w), text(z), text(i)] for n, w, z, i in members],
    }


def connect(path):
    import redis  # Debian's python3-redis; only this mode needs it

    return redis.Redis(unix_socket_path=path)


def make_keys(n, seed):
    """Text keys and, one in four, random bytes of 0..40 bytes (the empty key included)."""
    rnd = random.Random(seed)
    keys = []
    for i in range(n):
        if i % 4 == 3:
            keys.append(bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(41))))
        else:
            keys.append(b"key:%d" % i)
    return keys


def check_agent(args):
    r = connect(args.socket) if args.socket else None
    if args.file:
        d = json.load(open(args.file))
    else:
        d = definition_from_reply(r.execute_command("RING"))
    if d["spec"] != 1:
        print("spec %d: this implementation is of spec 1" % d["spec"])
        return 2
    if d["mode"] != "ringd":
        print("mode %s: not implemented here" % d["mode"])
        return 2
    members = [Member(n, w, z, i) for n, w, z, i in d["members"]]
    ring = Ring(members, d["vnodes"])
    sum_ = "%016x" % ring.checksum()
    print("ring: %d members, vnodes %d, %d points, checksum %s (RING says %s, %d points)"
          % (len(members), d["vnodes"], ring.point_total(), sum_, d["checksum"], d["points"]))
    failed = 0
    if sum_ != d["checksum"]:
        print("FAIL checksum differs")
        failed = 1
    if ring.point_total() != d["points"]:
        print("FAIL point total differs")
        failed = 1
    if r is None:
        return failed
    keys = make_keys(args.keys, args.seed)
    differ = 0
    for start in range(0, len(keys), args.batch):
        batch = keys[start:start + args.batch]
        got = r.execute_command("MOWNER", *batch)
        for k, owner in zip(batch, got):
            if owner != ring.owner(k):
                if differ < 5:
                    print("FAIL key %r: agent %r, spec %r" % (k, owner, ring.owner(k)))
                differ += 1
    print("owners: %d keys (seed %d), %d differences" % (len(keys), args.seed, differ))
    if not any(m.zone for m in members):
        # Zone-aware replicas are a rule of their own; the plain walk applies without zones.
        wrong = 0
        for k in keys[:1000]:
            if [text(x).encode() for x in r.execute_command("OWNERS", k, 3)] != ring.owners(k, 3):
                wrong += 1
        print("owners walk: 1000 keys, OWNERS k 3, %d differences" % wrong)
        differ += wrong
    again = definition_from_reply(r.execute_command("RING"))
    if again["checksum"] != d["checksum"] and not args.file:
        print("FAIL the ring changed while checking (%s -> %s): rerun" % (d["checksum"], again["checksum"]))
        return 1
    return 1 if failed or differ else 0


def dump(args):
    d = definition_from_reply(connect(args.socket).execute_command("RING"))
    with open(args.out, "w") as f:
        json.dump(d, f, indent=1)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("vectors")
    v.add_argument("protocol")
    c = sub.add_parser("check")
    c.add_argument("--socket")
    c.add_argument("--file")
    c.add_argument("--keys", type=int, default=100000)
    c.add_argument("--batch", type=int, default=1000)
    c.add_argument("--seed", type=int, default=1)
    d = sub.add_parser("dump")
    d.add_argument("--socket", required=True)
    d.add_argument("out")
    args = p.parse_args()
    if args.cmd == "vectors":
        return check_vectors(args.protocol)
    if args.cmd == "dump":
        return dump(args)
    if not args.socket and not args.file:
        p.error("check needs --socket or --file")
    return check_agent(args)


if __name__ == "__main__":
    sys.exit(main())
