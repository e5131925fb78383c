// What a cluster declares about its nodes (labels and taints), shared by Cluster and MachinePool.
import { Type, type Static } from "@sinclair/typebox";
import { MapOf, StringEnum, Struct } from "../meta.ts";
import type { FieldError } from "../registry.ts";
import { duplicate, invalid } from "../field-errors.ts";

/** Operating-system image of machines that do not name one. */
export const DEFAULT_IMAGE = "ubuntu-22.04";

export const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

export function nodeLabels(description: string) {
  return MapOf(Type.String({ description: "Label value." }), description);
}

export const Taint = Struct(
  {
    key: Type.String({ minLength: 1, description: "Taint key, e.g. dedicated or example.com/gpu." }),
    value: Type.Optional(Type.String({ description: "Taint value." })),
    effect: StringEnum(TAINT_EFFECTS, { description: "NoSchedule, PreferNoSchedule or NoExecute." }),
  },
  { description: "A taint the nodes are registered with; only pods that tolerate it are scheduled there." },
);
export type Taint = Static<typeof Taint>;

const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a qualified name ([prefix/]name) as Kubernetes label, annotation and taint keys must be. */
export function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return "prefix part must be a lowercase RFC 1123 subdomain";
  }
  if (name.length > 63 || !NAME_PART.test(name)) {
    return "name part must be at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
  }
  return undefined;
}

function labelValueProblem(value: string): string | undefined {
  if (value === "") return undefined;
  return value.length <= 63 && NAME_PART.test(value)
    ? undefined
    : "must be at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
}

export function nodeLabelErrors(field: string, labels: Record<string, string> | undefined): FieldError[] {
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries(labels ?? {})) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) errors.push(invalid(field, key, keyProblem));
    const valueProblem = labelValueProblem(value);
    if (valueProblem) errors.push(invalid(`${field}[${key}]`, value, valueProblem));
  }
  return errors;
}

export function taintErrors(field: string, taints: Taint[] | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  (taints ?? []).forEach((taint, i) => {
    const keyProblem = qualifiedNameProblem(taint.key);
    if (keyProblem) errors.push(invalid(`${field}[${i}].key`, taint.key, keyProblem));
    const valueProblem = taint.value === undefined ? undefined : labelValueProblem(taint.value);
    if (valueProblem) errors.push(invalid(`${field}[${i}].value`, taint.value, valueProblem));
    const id = `${taint.key}:${taint.effect}`;
    if (seen.has(id)) errors.push(duplicate(`${field}[${i}]`, id));
    seen.add(id);
  });
  return errors;
}
