// owners.js — node-redis and ioredis as an application uses them, against one agent.
//
//   node owners.js LIBRARY MODE SOCKET < keys > owners
//
// LIBRARY is "node-redis" or "ioredis"; MODE is "default" (the library's default options),
// "resp2" (node-redis with RESP: 2) or "pipeline" (ioredis's pipeline()). Reads one key per
// line, asks OWNER for every key (all in flight at once, so the library pipelines them),
// then MOWNER for all of them, and checks the two agree. Prints the owners, one per line,
// and on stderr the protocol the connection ended up speaking and the library name it
// recorded with CLIENT SETINFO (CLIENT INFO's resp= and lib-name=), after checking that
// CLIENT INFO's pid= is this process.
// Options are the libraries' defaults but for what the mode names. Exits 1 with the reason
// on any error, or when nothing is answered within DEADLINE_MS.
//
//   node owners.js LIBRARY subscribe[-resp2] SOCKET MEMBER > messages
//
// The library's subscribe() on the channels members and ring (node-redis with default
// options, or with RESP: 2 for subscribe-resp2; ioredis with its defaults), printing each
// message's payload on its own line until a member event saying MEMBER is alive and a ring
// event have both come (exit 0), or DEADLINE_MS passed (exit 1).
"use strict";

const fs = require("fs");

const DEADLINE_MS = 30000;

async function nodeRedis(mode, path, keys) {
  const { createClient } = require("redis");
  const options = { socket: { path } };
  if (mode === "resp2") options.RESP = 2;
  const client = createClient(options);
  client.on("error", (err) => fail(err));
  await client.connect();
  await client.sendCommand(["CLIENT", "SETNAME", "node-redis-test"]);
  const name = await client.sendCommand(["CLIENT", "GETNAME"]);
  if (name !== "node-redis-test") fail(new Error("CLIENT GETNAME gave " + name));
  const owners = await Promise.all(keys.map((k) => client.sendCommand(["OWNER", k])));
  const mowner = await client.sendCommand(["MOWNER", ...keys]);
  const info = await client.sendCommand(["CLIENT", "INFO"]);
  await client.quit();
  return { owners, mowner, info: String(info) };
}

async function ioredis(mode, path, keys) {
  const Redis = require("ioredis");
  const client = new Redis({ path });
  client.on("error", (err) => fail(err));
  let owners;
  if (mode === "pipeline") {
    const p = client.pipeline();
    for (const k of keys) p.call("OWNER", k);
    const results = await p.exec();
    owners = results.map(([err, v]) => {
      if (err) fail(err);
      return v;
    });
  } else {
    owners = await Promise.all(keys.map((k) => client.call("OWNER", k)));
  }
  const mowner = await client.call("MOWNER", ...keys);
  const info = await client.call("CLIENT", "INFO");
  await client.quit();
  return { owners, mowner, info: String(info) };
}

// Resolves once both events came to onMessage(channel, payload).
function waitEvents(member, start) {
  return new Promise((resolve) => {
    let gotMember = false, gotRing = false;
    start((channel, payload) => {
      process.stdout.write(payload + "\n");
      const e = JSON.parse(payload);
      if (channel === "members" && e.type === "member" && e.member === member && e.status === "alive")
        gotMember = true;
      if (channel === "ring" && e.type === "ring") gotRing = true;
      if (gotMember && gotRing) resolve();
    });
  });
}

async function subscribeNodeRedis(mode, path, member) {
  const { createClient } = require("redis");
  const options = { socket: { path } };
  if (mode === "subscribe-resp2") options.RESP = 2;
  const client = createClient(options);
  client.on("error", (err) => fail(err));
  await client.connect();
  let listener;
  const done = waitEvents(member, (onMessage) => (listener = onMessage));
  await client.subscribe(["members", "ring"], (payload, channel) => listener(channel, payload));
  await done;
  await client.unsubscribe();
  await client.quit();
}

async function subscribeIoredis(mode, path, member) {
  const Redis = require("ioredis");
  const client = new Redis({ path });
  client.on("error", (err) => fail(err));
  const done = waitEvents(member, (onMessage) => client.on("message", onMessage));
  await client.subscribe("members", "ring");
  await done;
  await client.unsubscribe();
  await client.quit();
}

function fail(err) {
  process.stderr.write("owners.js: " + (err && err.stack ? err.stack : err) + "\n");
  process.exit(1);
}

async function main() {
  // The libraries retry a failed handshake forever with their default options: give up.
  setTimeout(() => fail("no answer within " + DEADLINE_MS + " ms"), DEADLINE_MS).unref();
  const [lib, mode, path] = process.argv.slice(2);
  if (!lib || !mode || !path) fail("usage: node owners.js LIBRARY MODE SOCKET < keys");
  if (mode.startsWith("subscribe")) {
    const sub = { "node-redis": subscribeNodeRedis, ioredis: subscribeIoredis }[lib];
    if (!sub) fail("unknown library " + lib);
    await sub(mode, path, process.argv[5]);
    process.exit(0);
  }
  const keys = fs.readFileSync(0, "utf8").split("\n").filter((k) => k.length > 0);
  const run = { "node-redis": nodeRedis, ioredis }[lib];
  if (!run) fail("unknown library " + lib);
  const { owners, mowner, info } = await run(mode, path, keys);
  if (owners.length !== keys.length) fail("got " + owners.length + " owners");
  for (let i = 0; i < keys.length; i++)
    if (owners[i] !== mowner[i])
      fail("OWNER " + keys[i] + " gave " + owners[i] + ", MOWNER " + mowner[i]);
  // the peer's pid is the kernel's (SO_PEERCRED); the library said who it is (SETINFO)
  if (!new RegExp(" pid=" + process.pid + "\n").test(info)) fail("CLIENT INFO: " + info);
  const resp = /resp=(\d)/.exec(info), libName = / lib-name=(\S*)/.exec(info);
  process.stderr.write("resp=" + (resp ? resp[1] : "?") + "\n");
  process.stderr.write("lib-name=" + (libName ? libName[1] : "?") + "\n");
  process.stdout.write(owners.join("\n") + "\n");
}

main().catch(fail);
