// The hash of a template, recorded on each machine made from it (as a Deployment's pods carry their
// pod-template-hash): machines whose hash differs from the wanted template's are rolled.
import { createHash } from "node:crypto";

/** JSON with object keys sorted, so that equal templates give equal text whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Ten hex digits of the template's SHA-256: short enough for a label value, long enough not to collide. */
export function templateHash(template: unknown): string {
  return createHash("sha256").update(canonicalJson(template)).digest("hex").slice(0, 10);
}
