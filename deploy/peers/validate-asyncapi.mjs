// Validate an AsyncAPI document with the official parser (@asyncapi/parser, pinned here).
// Usage: node deploy/peers/validate-asyncapi.mjs docs/asyncapi.json
// Prints one JSON line per diagnostic and exits 1 when any has error severity (0).
import { readFileSync } from "node:fs";
import { Parser } from "@asyncapi/parser";

const path = process.argv[2];
if (!path) {
  console.error("usage: validate-asyncapi.mjs <document>");
  process.exit(2);
}
const { document, diagnostics } = await new Parser().parse(readFileSync(path, "utf8"));
for (const d of diagnostics) {
  console.log(JSON.stringify({ severity: d.severity, code: d.code, path: d.path.join("."), message: d.message }));
}
const errors = diagnostics.filter((d) => d.severity === 0);
if (errors.length > 0 || document === undefined) {
  console.error(`${errors.length} error(s) in ${path}`);
  process.exit(1);
}
console.error(`${path}: valid AsyncAPI ${document.version()}, ${diagnostics.length} non-error diagnostic(s)`);
