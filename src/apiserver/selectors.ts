// Label selectors (the full kubectl syntax) and field selectors (equality on a fixed set of fields).
import { BadRequestError } from "./errors.ts";

type LabelRequirement =
  | { op: "=" | "!="; key: string; value: string }
  | { op: "in" | "notin"; key: string; values: string[] }
  | { op: "exists" | "!exists"; key: string };

export type LabelSelector = (labels: Record<string, string> | undefined) => boolean;

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

/** Splits on commas that are not inside parentheses. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key)) throw new BadRequestError(`unable to parse requirement: invalid label key "${key}" in selector "${selector}"`);
  return key;
}

function checkValue(value: string, selector: string): string {
  if (value.length > 63 || !VALUE.test(value)) {
    throw new BadRequestError(`unable to parse requirement: invalid label value "${value}" in selector "${selector}"`);
  }
  return value;
}

function parseRequirement(term: string, selector: string): LabelRequirement {
  let m = /^(\S+?)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (m) {
    const values = m[3]!.split(",").map((v) => checkValue(v.trim(), selector));
    return { op: m[2] as "in" | "notin", key: checkKey(m[1]!, selector), values };
  }
  m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
  if (m) {
    const op = m[2] === "!=" ? "!=" : "=";
    return { op, key: checkKey(m[1]!, selector), value: checkValue(m[3]!.trim(), selector) };
  }
  if (term.startsWith("!")) return { op: "!exists", key: checkKey(term.slice(1).trim(), selector) };
  return { op: "exists", key: checkKey(term, selector) };
}

export function parseLabelSelector(selector: string | undefined): LabelSelector | undefined {
  if (!selector || selector.trim() === "") return undefined;
  const requirements = splitTop(selector).map((t) => parseRequirement(t, selector));
  return (labels) => {
    const l = labels ?? {};
    return requirements.every((r) => {
      const has = Object.prototype.hasOwnProperty.call(l, r.key);
      const v = l[r.key];
      switch (r.op) {
        case "=":
          return has && v === r.value;
        case "!=":
          return !has || v !== r.value;
        case "in":
          return has && r.values.includes(v!);
        case "notin":
          return !has || !r.values.includes(v!);
        case "exists":
          return has;
        case "!exists":
          return !has;
      }
    });
  };
}

export interface FieldRequirement {
  field: string;
  op: "=" | "!=";
  value: string;
}

export function parseFieldSelector(selector: string | undefined, supported: readonly string[]): FieldRequirement[] {
  if (!selector || selector.trim() === "") return [];
  return splitTop(selector).map((term) => {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw new BadRequestError(`invalid field selector: "${term}": expected field=value or field!=value`);
    const field = m[1]!;
    if (!supported.includes(field)) {
      throw new BadRequestError(`field label not supported: ${field}`, [
        { reason: "FieldValueNotSupported", message: `supported fields: ${supported.join(", ")}`, field: "fieldSelector" },
      ]);
    }
    return { field, op: m[2] === "!=" ? "!=" : "=", value: m[3]!.trim() };
  });
}

export function matchFields(requirements: FieldRequirement[], valueOf: (field: string) => string | undefined): boolean {
  return requirements.every((r) => {
    const v = valueOf(r.field) ?? "";
    return r.op === "=" ? v === r.value : v !== r.value;
  });
}
