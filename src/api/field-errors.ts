// Field errors for the kinds' static validation, worded as the Kubernetes API words them, and the name
// rules several kinds share.
import { isDeepStrictEqual } from "node:util";
import type { FieldError } from "./registry.ts";

function show(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) return "null";
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function invalid(field: string, value: unknown, detail: string): FieldError {
  return { field, reason: "FieldValueInvalid", message: `Invalid value: ${show(value)}: ${detail}` };
}

export function required(field: string, detail = "Required value"): FieldError {
  return { field, reason: "FieldValueRequired", message: detail };
}

/** The value names an object that does not exist. */
export function notFound(field: string, value: unknown, detail: string): FieldError {
  return { field, reason: "FieldValueNotFound", message: `Not found: ${show(value)}: ${detail}` };
}

export function duplicate(field: string, value: unknown): FieldError {
  return { field, reason: "FieldValueDuplicate", message: `Duplicate value: ${show(value)}` };
}

export function notSupported(field: string, value: unknown, supported: readonly unknown[]): FieldError {
  return {
    field,
    reason: "FieldValueNotSupported",
    message: `Unsupported value: ${show(value)}: supported values: ${supported.map(show).join(", ")}`,
  };
}

/** An error if `value` differs from `old` (an update may not change the field), with why when given. */
export function immutable(field: string, value: unknown, old: unknown, why?: string): FieldError[] {
  return isDeepStrictEqual(value, old) ? [] : [invalid(field, value, why ? `field is immutable: ${why}` : "field is immutable")];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** RFC 1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit. */
export function dnsLabelErrors(field: string, value: string, maxLength = 63): FieldError[] {
  const errors: FieldError[] = [];
  if (value.length > maxLength) errors.push(invalid(field, value, `must be no more than ${maxLength} characters`));
  if (!DNS_LABEL.test(value)) {
    errors.push(
      invalid(
        field,
        value,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
      ),
    );
  }
  return errors;
}

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * Errors of an object's metadata.name: an RFC 1123 subdomain of at most 253 characters, or for kinds
 * whose names become DNS labels (namespaces) a label of at most 63.
 */
export function objectNameErrors(name: string | undefined, format: "subdomain" | "label" = "subdomain"): FieldError[] {
  if (!name) return [required("metadata.name", "Required value: name or generateName is required")];
  const max = format === "label" ? 63 : 253;
  if (name.length <= max && (format === "label" ? DNS_LABEL : SUBDOMAIN).test(name)) return [];
  return [
    {
      field: "metadata.name",
      reason: "FieldValueInvalid",
      message: `Invalid value: "${name}": a lowercase RFC 1123 ${format} must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (at most ${max} characters)`,
    },
  ];
}

/**
 * Errors of a name that only has to be a path segment, as Kubernetes checks the names of RBAC objects
 * (which may hold colons, e.g. system:discovery): not "." or "..", no "/" or "%".
 */
export function pathSegmentNameErrors(name: string | undefined): FieldError[] {
  if (!name) return [required("metadata.name", "Required value: name or generateName is required")];
  const invalid = (why: string): FieldError[] => [{ field: "metadata.name", reason: "FieldValueInvalid", message: `Invalid value: "${name}": ${why}` }];
  if (name === "." || name === "..") return invalid(`may not be '${name}'`);
  for (const illegal of ["/", "%"]) if (name.includes(illegal)) return invalid(`may not contain '${illegal}'`);
  return [];
}
