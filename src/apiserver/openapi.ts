// OpenAPI v3 documents generated from the same schemas that validate requests, so `kubectl explain`
// describes exactly what the server accepts and `kubectl apply` delegates strict field validation to it.
import { createHash } from "node:crypto";
import type { TSchema } from "@sinclair/typebox";
import type { KindDefinition, Registry } from "../api/registry.ts";

type Json = Record<string, unknown>;

/** Rewrites a TypeBox schema into OpenAPI 3.0 terms (enums instead of const unions). */
export function toOpenApiSchema(schema: TSchema | Json): Json {
  const s = JSON.parse(JSON.stringify(schema)) as Json;
  return rewrite(s);
}

function rewrite(s: Json): Json {
  const anyOf = s.anyOf as Json[] | undefined;
  if (anyOf && anyOf.every((o) => "const" in o)) {
    const { anyOf: _a, ...rest } = s;
    const type = typeof anyOf[0]?.const === "number" ? "integer" : "string";
    return { ...rest, type, enum: anyOf.map((o) => o.const) };
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(s)) {
    if (key === "properties" && value && typeof value === "object") {
      const props: Json = {};
      for (const [name, sub] of Object.entries(value as Json)) props[name] = rewrite(sub as Json);
      out[key] = props;
    } else if ((key === "items" || key === "additionalProperties") && value && typeof value === "object") {
      out[key] = rewrite(value as Json);
    } else if (key === "anyOf" || key === "allOf" || key === "oneOf") {
      out[key] = (value as Json[]).map(rewrite);
    } else if (key === "const") {
      out.enum = [value];
    } else if (key === "required" && Array.isArray(value) && value.length === 0) {
      continue;
    } else {
      out[key] = value;
    }
  }
  if (out.properties && Object.keys(out.properties as Json).length === 0 && out.additionalProperties !== undefined) {
    delete out.properties;
  }
  return out;
}

export function schemaName(def: KindDefinition): string {
  const group = def.group === "" ? "io.k8s.api.core" : def.group.split(".").reverse().join(".");
  return `${group}.${def.version}.${def.kind}`;
}

function gvk(def: KindDefinition) {
  return { group: def.group, version: def.version, kind: def.kind };
}

const QUERY = (name: string, description: string, type = "string") => ({
  name,
  in: "query",
  description,
  schema: { type, uniqueItems: true },
});

const WRITE_PARAMS = [
  QUERY("dryRun", "When present, indicates that modifications should not be persisted."),
  QUERY("fieldManager", "A name associated with the actor or entity making these changes."),
  QUERY("fieldValidation", "How unknown or duplicate fields are handled: Ignore, Warn or Strict (the default)."),
];

const LIST_PARAMS = [
  QUERY("labelSelector", "A selector to restrict the list of returned objects by their labels."),
  QUERY("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
  QUERY("limit", "Maximum number of objects to return.", "integer"),
  QUERY("continue", "Continue token of a previous paged list."),
  QUERY("resourceVersion", "Show changes after this resource version (watch)."),
  QUERY("watch", "Watch for changes and stream them as events.", "boolean"),
  QUERY("allowWatchBookmarks", "Ask for BOOKMARK events.", "boolean"),
];

const PATCH_PARAMS = [...WRITE_PARAMS, QUERY("force", "Server-side apply: take the fields other managers hold instead of failing with a conflict.", "boolean")];

function pathParam(name: string) {
  return { name, in: "path", required: true, description: `${name} of the object`, schema: { type: "string", uniqueItems: true } };
}

function operation(def: KindDefinition, action: string, verb: string, ref: string, extra: Json = {}): Json {
  return {
    description: `${verb} ${def.kind}`,
    operationId: `${verb}${def.kind}`,
    tags: [def.group || "core"],
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": gvk(def),
    responses: {
      "200": { description: "OK", content: { "application/json": { schema: { $ref: ref } } } },
      "401": { description: "Unauthorized" },
    },
    ...extra,
  };
}

function body(ref: string, types: string[]) {
  return { requestBody: { required: true, content: Object.fromEntries(types.map((t) => [t, { schema: { $ref: ref } }])) } };
}

// Every kind takes strategic merge patches (kubectl computes them from the schemas' patch strategies) and server-side apply.
const PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"];

function paths(def: KindDefinition): Json {
  const ref = `#/components/schemas/${schemaName(def)}`;
  const root = def.group === "" ? `/api/${def.version}` : `/apis/${def.group}/${def.version}`;
  const collection = def.namespaced ? `${root}/namespaces/{namespace}/${def.plural}` : `${root}/${def.plural}`;
  const nsParams = def.namespaced ? [pathParam("namespace")] : [];
  const item = {
    parameters: [...nsParams, pathParam("name")],
    get: operation(def, "get", "read", ref),
    put: operation(def, "put", "replace", ref, { parameters: WRITE_PARAMS, ...body(ref, ["application/json"]) }),
    patch: operation(def, "patch", "patch", ref, { parameters: PATCH_PARAMS, ...body(ref, PATCH_TYPES) }),
    delete: operation(def, "delete", "delete", ref, { parameters: [QUERY("propagationPolicy", "Background, Foreground or Orphan")] }),
  };
  const result: Json = {
    [collection]: {
      parameters: nsParams,
      get: operation(def, "list", "list", ref, { parameters: LIST_PARAMS }),
      post: operation(def, "post", "create", ref, { parameters: WRITE_PARAMS, ...body(ref, ["application/json"]) }),
    },
    [`${collection}/{name}`]: item,
  };
  if (def.namespaced) result[`${root}/${def.plural}`] = { get: operation(def, "list", "listAllNamespaces", ref, { parameters: LIST_PARAMS }) };
  if (def.subresources.status) {
    result[`${collection}/{name}/status`] = {
      parameters: [...nsParams, pathParam("name")],
      get: operation(def, "get", "readStatus", ref),
      put: operation(def, "put", "replaceStatus", ref, { parameters: WRITE_PARAMS, ...body(ref, ["application/json"]) }),
      patch: operation(def, "patch", "patchStatus", ref, { parameters: PATCH_PARAMS, ...body(ref, PATCH_TYPES) }),
    };
  }
  return result;
}

export function groupVersionDocument(registry: Registry, group: string, version: string): Json | undefined {
  const defs = registry.inGroupVersion(group, version);
  if (defs.length === 0) return undefined;
  const schemas: Json = {};
  let allPaths: Json = {};
  for (const def of defs) {
    schemas[schemaName(def)] = {
      ...toOpenApiSchema(def.schema),
      description: def.description,
      "x-kubernetes-group-version-kind": [gvk(def)],
    };
    allPaths = { ...allPaths, ...paths(def) };
  }
  return {
    openapi: "3.0.0",
    info: { title: "Slipway", version: "v0.1.0" },
    paths: allPaths,
    components: { schemas },
  };
}

/** The index document: one entry per group version, with a content hash for caching. */
export function openApiIndex(registry: Registry, documents: Map<string, string>): Json {
  const paths: Json = {};
  for (const gv of registry.groupVersions()) {
    const path = gv.group === "" ? `api/${gv.version}` : `apis/${gv.group}/${gv.version}`;
    const text = documents.get(path) ?? "";
    const hash = createHash("sha512").update(text).digest("hex").slice(0, 64).toUpperCase();
    paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
  }
  return { paths };
}

/** Serialises every group version's document once (the registry does not change at run time). */
export function renderOpenApi(registry: Registry): { index: string; documents: Map<string, string> } {
  const documents = new Map<string, string>();
  for (const gv of registry.groupVersions()) {
    const path = gv.group === "" ? `api/${gv.version}` : `apis/${gv.group}/${gv.version}`;
    documents.set(path, JSON.stringify(groupVersionDocument(registry, gv.group, gv.version)));
  }
  return { index: JSON.stringify(openApiIndex(registry, documents)), documents };
}
