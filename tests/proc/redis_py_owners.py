"""redis_py_owners.py — redis-py as an application uses it, against one agent.

    python3 redis_py_owners.py MODE SOCKET < keys > owners

MODE is "default" (Redis(unix_socket_path=...), nothing else), "client_name" (client_name=,
then the name is read back with CLIENT GETNAME and found in CLIENT LIST), "pipeline" (one
pipeline of every OWNER as redis-py makes it by default: a MULTI ... EXEC transaction) or
"pipeline_plain" (transaction=False: the commands alone). Reads one key
per line, prints the owner of each, one per line, after checking that MOWNER agrees.
Exits 1 with the reason on any error.

    python3 redis_py_owners.py subscribe SOCKET MEMBER > messages

pubsub().subscribe("members", "ring") as an application does it, printing each message's
payload on its own line until a member event saying MEMBER is alive and a ring event have
both come (exit 0), or TIMEOUT_S passed (exit 1).
"""
import json
import sys
import time

import redis


TIMEOUT_S = 40


def subscribe(path, member):
    r = redis.Redis(unix_socket_path=path, decode_responses=True)
    p = r.pubsub()
    p.subscribe("members", "ring")
    got_member = got_ring = False
    deadline = time.monotonic() + TIMEOUT_S
    while not (got_member and got_ring):
        if time.monotonic() > deadline:
            sys.exit("subscribe: no member and ring event within %d s" % TIMEOUT_S)
        m = p.get_message(timeout=1.0)
        if not m or m["type"] != "message":
            continue
        print(m["data"], flush=True)
        e = json.loads(m["data"])
        got_member |= (m["channel"] == "members" and e["type"] == "member"
                       and e["member"] == member and e["status"] == "alive")
        got_ring |= m["channel"] == "ring" and e["type"] == "ring"
    p.close()
    r.close()


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "subscribe":
        subscribe(path, sys.argv[3])
        return
    keys = [k for k in sys.stdin.read().split("\n") if k]
    kwargs = {"unix_socket_path": path, "decode_responses": True}
    if mode == "client_name":
        kwargs["client_name"] = "redis-py-test"
    r = redis.Redis(**kwargs)
    if mode == "client_name":
        if r.client_getname() != "redis-py-test":
            sys.exit("client_name: CLIENT GETNAME gave %r" % r.client_getname())
        if not any(c.get("name") == "redis-py-test" for c in r.client_list()):
            sys.exit("client_name: not in CLIENT LIST")
    if mode in ("pipeline", "pipeline_plain"):
        p = r.pipeline(transaction=mode == "pipeline")
        for k in keys:
            p.execute_command("OWNER", k)
        owners = p.execute()
    else:
        owners = [r.execute_command("OWNER", k) for k in keys]
    mowner = r.execute_command("MOWNER", *keys)
    if owners != mowner:
        sys.exit("OWNER and MOWNER disagree")
    r.close()
    sys.stdout.write("\n".join(owners) + "\n")


if __name__ == "__main__":
    main()
