// The OpenAPI v2 (Swagger 2.0) document: every kind's schema in one document, as JSON or in the protobuf
// form kubectl asks for (gnostic's openapi_v2.Document). kubectl validates on the client with it whenever
// it cannot hand validation to the server — always for a `v1 List`, the shape `kubectl get -o yaml` of
// several objects produces — so backups made with kubectl apply back. Built from the same schemas as the
// v3 documents; paths are left out (kubectl reads only the definitions from this document).
import protobuf from "protobufjs";
import { stringify as toYaml } from "yaml";
import type { Registry } from "../api/registry.ts";
import { schemaName, toOpenApiSchema } from "./openapi.ts";

type Json = Record<string, unknown>;

/** What clients send in Accept to get the protobuf form… */
export const OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/** …and the type it is answered with (Go's mime parser, like Fastify's, takes no "@"). */
export const OPENAPI_V2_PROTOBUF_RESPONSE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/** Keywords Swagger 2.0 shares with OpenAPI 3.0 schemas, kept as they are. */
const KEPT = ["type", "format", "title", "description", "default", "required", "enum", "maximum", "minimum", "maxLength", "minLength", "pattern", "maxItems", "minItems"];

/** An OpenAPI 3.0 schema in Swagger 2.0 terms: unions (which 2.0 cannot say) accept anything, as kube-openapi does. */
export function toSwaggerSchema(schema: Json): Json {
  const out: Json = {};
  for (const key of KEPT) if (schema[key] !== undefined) out[key] = schema[key];
  for (const [key, value] of Object.entries(schema)) if (key.startsWith("x-")) out[key] = value;
  if (schema.properties) {
    out.properties = Object.fromEntries(Object.entries(schema.properties as Record<string, Json>).map(([name, sub]) => [name, toSwaggerSchema(sub)]));
  }
  if (schema.items && typeof schema.items === "object") out.items = toSwaggerSchema(schema.items as Json);
  const additional = schema.additionalProperties;
  if (additional !== undefined) out.additionalProperties = typeof additional === "object" && additional !== null ? toSwaggerSchema(additional as Json) : additional;
  return out;
}

export function openApiV2Document(registry: Registry): Json {
  const definitions: Json = {};
  for (const gv of registry.groupVersions()) {
    for (const def of registry.inGroupVersion(gv.group, gv.version)) {
      definitions[schemaName(def)] = {
        ...toSwaggerSchema(toOpenApiSchema(def.schema)),
        description: def.description,
        "x-kubernetes-group-version-kind": [{ group: def.group, kind: def.kind, version: def.version }],
      };
    }
  }
  return { swagger: "2.0", info: { title: "Slipway", version: "v0.1.0" }, paths: {}, definitions };
}

// The part of gnostic's OpenAPIv2.proto (package openapi.v2) a document of schemas needs, with its field numbers.
const GNOSTIC = protobuf.Root.fromJSON({
  nested: {
    openapi: {
      nested: {
        v2: {
          nested: {
            Document: {
              fields: { swagger: { type: "string", id: 1 }, info: { type: "Info", id: 2 }, paths: { type: "Paths", id: 8 }, definitions: { type: "Definitions", id: 9 } },
            },
            Info: { fields: { title: { type: "string", id: 1 }, version: { type: "string", id: 2 } } },
            Paths: { fields: {} },
            Definitions: { fields: { additionalProperties: { rule: "repeated", type: "NamedSchema", id: 1 } } },
            NamedSchema: { fields: { name: { type: "string", id: 1 }, value: { type: "Schema", id: 2 } } },
            Any: { fields: { yaml: { type: "string", id: 2 } } },
            NamedAny: { fields: { name: { type: "string", id: 1 }, value: { type: "Any", id: 2 } } },
            TypeItem: { fields: { value: { rule: "repeated", type: "string", id: 1 } } },
            ItemsItem: { fields: { schema: { rule: "repeated", type: "Schema", id: 1 } } },
            Properties: { fields: { additionalProperties: { rule: "repeated", type: "NamedSchema", id: 1 } } },
            AdditionalPropertiesItem: { oneofs: { oneof: { oneof: ["schema", "boolean"] } }, fields: { schema: { type: "Schema", id: 1 }, boolean: { type: "bool", id: 2 } } },
            Schema: {
              fields: {
                format: { type: "string", id: 2 },
                title: { type: "string", id: 3 },
                description: { type: "string", id: 4 },
                default: { type: "Any", id: 5 },
                maximum: { type: "double", id: 7 },
                minimum: { type: "double", id: 9 },
                maxLength: { type: "int64", id: 11 },
                minLength: { type: "int64", id: 12 },
                pattern: { type: "string", id: 13 },
                maxItems: { type: "int64", id: 14 },
                minItems: { type: "int64", id: 15 },
                required: { rule: "repeated", type: "string", id: 19 },
                enum: { rule: "repeated", type: "Any", id: 20 },
                additionalProperties: { type: "AdditionalPropertiesItem", id: 21 },
                type: { type: "TypeItem", id: 22 },
                items: { type: "ItemsItem", id: 23 },
                properties: { type: "Properties", id: 25 },
                vendorExtension: { rule: "repeated", type: "NamedAny", id: 31 },
              },
            },
          },
        },
      },
    },
  },
});
const DocumentMessage = GNOSTIC.lookupType("openapi.v2.Document");

const yamlAny = (value: unknown) => ({ yaml: toYaml(value) });

function schemaMessage(schema: Json): Json {
  const message: Json = {};
  for (const key of ["format", "title", "description", "pattern", "maximum", "minimum", "maxLength", "minLength", "maxItems", "minItems"]) {
    if (schema[key] !== undefined) message[key] = schema[key];
  }
  if (typeof schema.type === "string") message.type = { value: [schema.type] };
  if (schema.default !== undefined) message.default = yamlAny(schema.default);
  if (Array.isArray(schema.required) && schema.required.length > 0) message.required = schema.required;
  if (Array.isArray(schema.enum)) message.enum = schema.enum.map(yamlAny);
  if (schema.properties) {
    message.properties = {
      additionalProperties: Object.entries(schema.properties as Record<string, Json>).map(([name, sub]) => ({ name, value: schemaMessage(sub) })),
    };
  }
  if (schema.items) message.items = { schema: [schemaMessage(schema.items as Json)] };
  const additional = schema.additionalProperties;
  if (typeof additional === "boolean") message.additionalProperties = { boolean: additional };
  else if (additional && typeof additional === "object") message.additionalProperties = { schema: schemaMessage(additional as Json) };
  const extensions = Object.entries(schema).filter(([key]) => key.startsWith("x-"));
  if (extensions.length > 0) message.vendorExtension = extensions.map(([name, value]) => ({ name, value: yamlAny(value) }));
  return message;
}

/** The document in gnostic's protobuf encoding. */
export function encodeOpenApiV2(document: Json): Uint8Array {
  const definitions = Object.entries(document.definitions as Record<string, Json>).map(([name, schema]) => ({ name, value: schemaMessage(schema) }));
  const message = DocumentMessage.fromObject({ swagger: document.swagger, info: document.info, paths: {}, definitions: { additionalProperties: definitions } });
  return DocumentMessage.encode(message).finish();
}

const rendered = new WeakMap<Registry, { json: string; protobuf: Buffer }>();

/** The document of a registry in both forms, rendered on first use (many APIs never serve it) and kept. */
export function renderedOpenApiV2(registry: Registry): { json: string; protobuf: Buffer } {
  let forms = rendered.get(registry);
  if (!forms) {
    const document = openApiV2Document(registry);
    forms = { json: JSON.stringify(document), protobuf: Buffer.from(encodeOpenApiV2(document)) };
    rendered.set(registry, forms);
  }
  return forms;
}

/** Decodes the protobuf form (for tests: what kubectl reads back). */
export function decodeOpenApiV2(bytes: Uint8Array): Json {
  return DocumentMessage.toObject(DocumentMessage.decode(bytes), { longs: Number, defaults: false }) as Json;
}
