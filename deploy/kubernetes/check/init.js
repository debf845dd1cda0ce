// Prints the DaemonSet's init container script as a test can run it outside a cluster:
// every mount path replaced by ROOT/VOLUME, then a line with its added capabilities.
//   node init.js MANIFEST.yaml ROOT
"use strict";
const fs = require("fs");
const YAML = require("yaml");

const [file, root] = process.argv.slice(2);
const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"), { version: "1.1" });
const ds = docs.map((d) => d.toJS()).find((o) => o && o.kind === "DaemonSet");
const init = ds.spec.template.spec.initContainers[0];
let script = init.command[init.command.length - 1];
// a mount path only where a path starts (after a blank) and as a whole path component
const esc = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
for (const m of init.volumeMounts) {
  const re = new RegExp(`(^|\\s)${esc(m.mountPath)}(?=/|\\s|$)`, "gm");
  script = script.replace(re, `$1${root}/${m.name}`);
}
const caps = (init.securityContext.capabilities.add || []).map((c) => c.toLowerCase());
process.stdout.write(`${script}\n#caps ${caps.join(" ")}\n`);
