// The string formats a schema may name, as OpenAPI and Kubernetes use them: TypeBox refuses every value of
// a format it does not know ("Unknown format"), so a kind that says `format: "date-time"` would refuse
// all of its writes. Registered once, on import, for every schema checked in this process.
import { FormatRegistry } from "@sinclair/typebox";
import { isIP } from "node:net";

/** RFC 3339 date-time (seconds, optional fraction, Z or an offset), as metav1.Time and MicroTime write it. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Whether a calendar date (the first 10 characters of `value`) exists: no 31 February. */
function realDate(value: string): boolean {
  const [y, m, d] = value.slice(0, 10).split("-").map(Number) as [number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

export const FORMATS: Record<string, (value: string) => boolean> = {
  "date-time": (v) => DATE_TIME.test(v) && realDate(v) && !Number.isNaN(Date.parse(v)),
  date: (v) => DATE.test(v) && realDate(v),
  byte: (v) => BASE64.test(v),
  ipv4: (v) => isIP(v) === 4,
  ipv6: (v) => isIP(v) === 6,
};

for (const [name, check] of Object.entries(FORMATS)) if (!FormatRegistry.Has(name)) FormatRegistry.Set(name, check);
