"""redis_py_owners.py — redis-py as an application uses it, against one agent.

    python3 redis_py_owners.py MODE SOCKET < keys > owners

MODE is "default" (Redis(unix_socket_path=...), nothing else), "client_name" (client_name=,
then the name is read back with CLIENT GETNAME and found in CLIENT LIST) or "pipeline"
(one pipeline of every OWNER; transaction=False, since ringd has no MULTI). Reads one key
per line, prints the owner of each, one per line, after checking that MOWNER agrees.
Exits 1 with the reason on any error.
"""
import sys

import redis


def main():
    mode, path = sys.argv[1], sys.argv[2]
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
    if mode == "pipeline":
        p = r.pipeline(transaction=False)
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
