// Validates Kubernetes manifests against the API's schemas, offline: kubernetes-models
// bundles a validator generated from the Kubernetes OpenAPI spec for every built-in kind.
// Then holds ringd's DaemonSet to what deploy/kubernetes/README.md promises (policy()), and
// its SRV seed to a headless Service of the same manifests (seeds()).
//   node check.js LEAVE_TIMEOUT_MS FILE.yaml...
// Every document must name a built-in apiVersion and kind; a document this cannot check
// is an error, not a pass. YAML 1.1, as the API server reads it (0400 is octal). Exit 1 on
// any error.
"use strict";
const fs = require("fs");
const path = require("path");
const YAML = require("yaml");

// The schemas accept fields they do not know, as the API server would with a warning, and
// a misspelt field is then silently ignored. The model's type declarations list every
// field of every object, so unknown() walks them: the first interface of each .d.ts file,
// its fields at one indent, and its imports to follow nested objects and arrays of them.
const declCache = new Map();
function decl(file) {
  if (declCache.has(file)) return declCache.get(file);
  const text = fs.readFileSync(file, "utf8");
  const imports = new Map();
  for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
    const from = m[2].startsWith(".")
      ? path.resolve(path.dirname(file), m[2])
      : path.join(__dirname, "node_modules", m[2]);
    imports.set(m[1], from + ".d.ts");
  }
  const fields = new Map();
  const body = text.split(/^export interface \w+(?: extends \w+)? \{$/m)[1] || "";
  for (const line of body.split("\n")) {
    if (line === "}") break;
    const m = /^ {4}"([^"]+)"\??: (.*)$/.exec(line);
    if (!m) continue;
    const arr = /^Array<(\w+)>;$/.exec(m[2]);
    const one = /^(\w+);$/.exec(m[2]);
    const ident = arr ? arr[1] : one ? one[1] : null;
    fields.set(m[1], { file: ident && imports.get(ident), array: !!arr });
  }
  const d = { fields };
  declCache.set(file, d);
  return d;
}
function unknown(obj, file, where, out) {
  const { fields } = decl(file);
  for (const [k, v] of Object.entries(obj)) {
    const f = fields.get(k);
    if (!f) {
      out.push(`${where}/${k}: no such field`);
      continue;
    }
    if (!f.file || v === null || typeof v !== "object") continue;
    if (f.array && Array.isArray(v)) {
      v.forEach((e, i) => {
        if (e && typeof e === "object" && !Array.isArray(e))
          unknown(e, f.file, `${where}/${k}/${i}`, out);
      });
    } else if (!f.array && !Array.isArray(v)) {
      unknown(v, f.file, `${where}/${k}`, out);
    }
  }
}

// "apps/v1" -> "kubernetes-models/apps/v1", "v1" -> "kubernetes-models/v1"
function model(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
  if (!/^[a-z0-9.]+(\/[a-z0-9]+)?$/.test(apiVersion) || !/^[A-Za-z]+$/.test(kind)) return null;
  const mod = `kubernetes-models/${apiVersion}/${kind}`;
  try {
    const Kind = require(mod)[kind];
    return Kind ? { Kind, decl: require.resolve(mod).replace(/\.js$/, ".d.ts") } : null;
  } catch (e) {
    return null;
  }
}

// The agent's promises: a keyring no group or other can read (the agent refuses one), a
// grace period longer than the leave wait, one node at a time in a rollout, and
// containers that cannot write their image, gain privileges or keep capabilities.
function policy(ds, leaveMs) {
  const bad = [];
  const spec = ds.spec || {};
  const pod = (spec.template || {}).spec || {};
  if (pod.hostNetwork !== true) bad.push("hostNetwork is not true");
  const ru = (spec.updateStrategy || {}).rollingUpdate || {};
  if (ru.maxUnavailable !== 1) bad.push("rollingUpdate.maxUnavailable is not 1");
  if (!(pod.terminationGracePeriodSeconds * 1000 > leaveMs))
    bad.push(`terminationGracePeriodSeconds is not above the ${leaveMs} ms leave wait`);
  if (((pod.securityContext || {}).seccompProfile || {}).type !== "RuntimeDefault")
    bad.push("pod seccompProfile is not RuntimeDefault");
  for (const v of pod.volumes || []) {
    const mode = v.secret && v.secret.defaultMode;
    if (v.secret && (mode === undefined || mode & 0o077))
      bad.push(`secret volume ${v.name}: defaultMode lets group or others read it`);
  }
  const all = [...(pod.initContainers || []), ...(pod.containers || [])];
  for (const c of all) {
    const sc = c.securityContext || {};
    const drop = (sc.capabilities || {}).drop || [];
    if (!drop.includes("ALL")) bad.push(`${c.name}: capabilities not dropped`);
    if (sc.readOnlyRootFilesystem !== true) bad.push(`${c.name}: root filesystem writable`);
    if (sc.allowPrivilegeEscalation !== false) bad.push(`${c.name}: privilege escalation`);
    if (!c.resources || !c.resources.requests || !c.resources.limits)
      bad.push(`${c.name}: no resource requests and limits`);
  }
  for (const c of pod.containers || []) {
    const sc = c.securityContext || {};
    if (sc.runAsNonRoot !== true || !(sc.runAsUser > 0))
      bad.push(`${c.name}: not a fixed non-root uid`);
    if (((sc.capabilities || {}).add || []).length) bad.push(`${c.name}: adds capabilities`);
    if (!c.readinessProbe) bad.push(`${c.name}: no readiness probe`);
  }
  return bad;
}

// A seed `srv:_PORT._udp.SERVICE.NAMESPACE.svc...` must name a headless Service of these
// manifests that lists agents before they are ready and has a UDP port named PORT: else
// the SRV record the agents ask for does not exist, and no agent ever joins.
function seeds(ds, services) {
  const bad = [];
  for (const c of ds.spec.template.spec.containers || []) {
    for (const arg of c.args || []) {
      const m = /^--join=srv:_([^.]+)\._udp\.([^.]+)\.([^.]+)\.svc\b/.exec(arg);
      if (!m) continue;
      const svc = services.get(`${m[3]}/${m[2]}`);
      if (!svc) {
        bad.push(`${arg}: no Service ${m[2]} in namespace ${m[3]}`);
        continue;
      }
      if (svc.clusterIP !== "None") bad.push(`${arg}: Service ${m[2]} is not headless`);
      if (svc.publishNotReadyAddresses !== true)
        bad.push(`${arg}: Service ${m[2]} hides agents that are not ready yet`);
      if (!(svc.ports || []).some((p) => p.name === m[1] && p.protocol === "UDP"))
        bad.push(`${arg}: Service ${m[2]} has no UDP port named ${m[1]}`);
    }
  }
  return bad;
}

const leaveMs = Number(process.argv[2]);
if (!(leaveMs > 0)) {
  console.log("usage: node check.js LEAVE_TIMEOUT_MS FILE.yaml...");
  process.exit(2);
}
let errors = 0;
let checked = 0;
let daemonsets = 0;
const services = new Map(); // "namespace/name" -> spec
const placed = []; // the DaemonSets, checked against the Services once all are read
for (const file of process.argv.slice(3)) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"), { version: "1.1" });
  docs.forEach((doc, i) => {
    const where = `${file}: document ${i + 1}`;
    if (doc.errors.length) {
      doc.errors.forEach((e) => console.log(`${where}: ${e.message}`));
      errors++;
      return;
    }
    const obj = doc.toJS();
    if (obj === null) return; // an empty document (a trailing ---)
    const m = model(obj.apiVersion, obj.kind);
    if (!m) {
      console.log(`${where}: no schema for apiVersion ${obj.apiVersion}, kind ${obj.kind}`);
      errors++;
      return;
    }
    const name = `${obj.kind}/${(obj.metadata && obj.metadata.name) || "?"}`;
    if (obj.kind === "DaemonSet") placed.push({ where, name, obj });
    if (obj.kind === "Service")
      services.set(`${obj.metadata.namespace || "default"}/${obj.metadata.name}`, obj.spec || {});
    try {
      new m.Kind(obj).validate();
      const extra = [];
      unknown(obj, m.decl, "data", extra);
      if (extra.length) {
        console.log(`${where} (${name}): ${extra.join(", ")}`);
        errors++;
        return;
      }
      if (obj.kind === "DaemonSet") {
        const bad = policy(obj, leaveMs);
        bad.forEach((b) => console.log(`${where} (${name}): ${b}`));
        if (bad.length) {
          errors++;
          return;
        }
      }
      checked++;
      console.log(`ok: ${file}: ${name}`);
    } catch (e) {
      console.log(`${where} (${name}): ${e.message}`);
      errors++;
    }
  });
}
for (const { where, name, obj } of placed) {
  daemonsets++;
  const bad = seeds(obj, services);
  bad.forEach((b) => console.log(`${where} (${name}): ${b}`));
  if (bad.length) {
    errors++;
    checked--; // counted valid on its own; not with the Services it needs
  }
}
if (daemonsets === 0) {
  console.log("no DaemonSet among the manifests");
  process.exit(1);
}
console.log(`${checked} valid, ${errors} invalid`);
process.exit(errors ? 1 : 0);
