// The HTTP API's paths, shared by the server and the client so the two cannot drift apart. Each resource
// kind's collection is named by its descriptor.
import { InvalidParameterError } from "./errors.ts";
export const API_PREFIX = "/v1";
export const ADMIN_PREFIX = "/admin/v1";

/** The path of a region's collection (a resource kind's path segment), or of one resource in it. */
export function resourcePath(region: string, collection: string, id?: string): string {
  const base = `${API_PREFIX}/regions/${encodeURIComponent(region)}/${collection}`;
  return id === undefined ? base : `${base}/${encodeURIComponent(id)}`;
}

/** Query string of a tag filter: one `tag=key=value` pair per tag. */
export function tagQuery(tags: Record<string, string> | undefined): string[] {
  return Object.entries(tags ?? {}).map(([key, value]) => `tag=${encodeURIComponent(`${key}=${value}`)}`);
}

/** Parses `tag` query values ("key=value", one or many) back into a tag map. */
export function parseTagQuery(raw: unknown): Record<string, string> | undefined {
  const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  if (values.length === 0) return undefined;
  const tags: Record<string, string> = {};
  for (const value of values) {
    const text = String(value);
    const at = text.indexOf("=");
    if (at <= 0) throw new InvalidParameterError(`tag filter "${text}" must read key=value`, { details: { field: "tag" } });
    tags[text.slice(0, at)] = text.slice(at + 1);
  }
  return tags;
}
