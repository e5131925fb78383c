// Connection: a cloud account and region to build in.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, fieldColumn } from "../columns.ts";
import { immutable, invalid, notSupported } from "../field-errors.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase } from "./group.ts";

/** Objects (Infrastructures, Machines) made for a cluster in one connection carry its name under this label. */
export const LABEL_CONNECTION = "slipway.dev/connection";

/**
 * The providers a control plane has installed (its provider registry), as Connection admission checks
 * `spec.provider` against them.
 */
export interface InstalledProviders {
  names(): readonly string[];
}

export const ConnectionSpecSchema = Struct(
  {
    provider: Type.String({
      minLength: 1,
      description: "Provider to build with, one of those installed in the control plane: sim (the built-in emulated cloud), … Cannot be changed after creation.",
    }),
    region: Type.String({ minLength: 1, description: "Region to build in. Cannot be changed after creation." }),
    credentialsRef: Type.Optional(
      Struct(
        { name: Type.String({ minLength: 1, description: "Name of the Secret." }) },
        { description: "Secret in the same namespace holding the provider's credentials." },
      ),
    ),
    endpoint: Type.Optional(Type.String({ description: "URL of the cloud's API, overriding the provider's default." })),
  },
  { description: "Where to build: provider, region and credentials." },
);
export type ConnectionSpec = Static<typeof ConnectionSpecSchema>;

export const ConnectionStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(["Pending", "Ready", "Failed"], { description: "Pending, Ready (credentials and region checked) or Failed." })),
    conditions: Type.Optional(Type.Array(Condition, { description: "Current conditions, e.g. Ready." })),
    message: Type.Optional(Type.String({ description: "Why the connection is not Ready." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
    regionZones: Type.Optional(Type.Array(Type.String(), { description: "Availability zones of the region." })),
  },
  { description: "The observed state of the connection." },
);
export type ConnectionStatus = Static<typeof ConnectionStatusSchema>;

export const ConnectionSchema = objectSchema(SLIPWAY_API_VERSION, "Connection", "A cloud account and region to build in.", {
  spec: ConnectionSpecSchema,
  status: Type.Optional(ConnectionStatusSchema),
});
export type ConnectionObject = ObjectOf<typeof ConnectionSchema>;

function endpointErrors(endpoint: string | undefined): FieldError[] {
  if (endpoint === undefined) return [];
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return [invalid("spec.endpoint", endpoint, "must be an absolute URL, e.g. https://cloud.example.com:8443")];
  }
  return url.protocol === "http:" || url.protocol === "https:" ? [] : [invalid("spec.endpoint", endpoint, "must be an http or https URL")];
}

/**
 * A new Connection must name an installed provider. An update is not checked (the provider cannot change),
 * so a Connection made before its provider was removed can still be edited and deleted.
 */
function providerErrors(connection: ConnectionObject, old: ConnectionObject | undefined, installed: InstalledProviders): FieldError[] {
  if (old) return [];
  const names = installed.names();
  return names.includes(connection.spec.provider) ? [] : [notSupported("spec.provider", connection.spec.provider, names)];
}

/**
 * The Connection kind. `connectionKind` checks everything but the provider's name; the control plane
 * serves `connectionKindFor(its providers)`, which also refuses a provider it has not installed.
 */
export const connectionKind: KindDefinition<ConnectionObject> = {
  ...slipwayKindBase,
  kind: "Connection",
  plural: "connections",
  singular: "connection",
  shortNames: ["conn"],
  schema: ConnectionSchema,
  description: "A cloud account and region to build in.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the connection."),
    fieldColumn("PROVIDER", ".spec.provider", "Cloud provider."),
    fieldColumn("REGION", ".spec.region", "Region to build in."),
    fieldColumn("PHASE", ".status.phase", "Pending, Ready or Failed."),
    ageColumn,
  ],
  validate(connection, old) {
    const errors = endpointErrors(connection.spec.endpoint);
    if (old) {
      // Resources already built belong to the old provider and region; moving them is not supported.
      errors.push(
        ...immutable("spec.provider", connection.spec.provider, old.spec.provider),
        ...immutable("spec.region", connection.spec.region, old.spec.region),
      );
    }
    return errors;
  },
};

export function connectionKindFor(installed: InstalledProviders): KindDefinition<ConnectionObject> {
  return {
    ...connectionKind,
    validate: (connection, old) => [...providerErrors(connection, old, installed), ...(connectionKind.validate?.(connection, old) ?? [])],
  };
}
