// Identity realms (after azimuth's identity operator): a Realm is an OpenID Connect issuer `slipway up`
// serves at /realms/<name>; RealmUsers are its users (with their groups); an OIDCClient is a client
// registered in a realm (a Cluster naming a realm gets one, and its API server trusts the issuer); a
// Platform is a cluster seen from the realm: members of its root group are the cluster's admins.
import { Type } from "@sinclair/typebox";
import { Condition, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "../columns.ts";
import { dnsLabelErrors, duplicate, immutable, invalid } from "../field-errors.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase } from "./group.ts";

export const REALM_PHASES = ["Pending", "Ready", "Failed"] as const;
export type RealmPhase = (typeof REALM_PHASES)[number];

/** Usernames and groups reach workload clusters with this prefix (kube-apiserver's --oidc-username-prefix / --oidc-groups-prefix). */
export const OIDC_PREFIX = "oidc:";
/** The shortest password a RealmUser may be given. */
export const MIN_PASSWORD_LENGTH = 8;
const GROUP_PATTERN = /^[a-z0-9]([a-z0-9._/-]{0,126}[a-z0-9])?$/;

const PhaseStatus = {
  phase: Type.Optional(StringEnum(REALM_PHASES, { description: "Pending, Ready or Failed." })),
  message: Type.Optional(Type.String({ description: "Why it is not Ready." })),
  conditions: Type.Optional(Type.Array(Condition, { description: "Ready." })),
  observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
};

export const RealmSchema = objectSchema(SLIPWAY_API_VERSION, "Realm", "An OpenID Connect issuer served by Slipway at /realms/<name>.", {
  spec: Type.Optional(
    Struct(
      {
        displayName: Type.Optional(Type.String({ maxLength: 200, description: "Name shown on the realm's sign-in page." })),
        adminGroup: Type.Optional(Type.String({ description: "Group whose members are cluster-admin on every platform (cluster) of the realm." })),
      },
      { description: "How the realm presents itself and who administers its platforms." },
    ),
  ),
  status: Type.Optional(
    Struct(
      { ...PhaseStatus, issuerUrl: Type.Optional(Type.String({ description: "The issuer URL (discovery at <issuerUrl>/.well-known/openid-configuration)." })) },
      { description: "The observed state of the realm." },
    ),
  ),
});
export type RealmObject = ObjectOf<typeof RealmSchema>;

export const RealmUserSchema = objectSchema(SLIPWAY_API_VERSION, "RealmUser", "A user of a realm, with the groups it is in.", {
  spec: Struct(
    {
      realm: Type.String({ minLength: 1, description: "The Realm the user belongs to. Cannot be changed." }),
      username: Type.Optional(Type.String({ description: "The name the user signs in with (default: metadata.name). Cannot be changed." })),
      email: Type.Optional(Type.String({ description: "The user's e-mail address." })),
      groups: Type.Optional(Type.Array(Type.String(), { description: "Groups the user is in (the ID token's groups claim)." })),
      password: Type.Optional(
        Type.String({ description: `Write-only: a new password (at least ${MIN_PASSWORD_LENGTH} characters); it is hashed (argon2id) when written and never stored.` }),
      ),
      passwordHash: Type.Optional(Type.String({ description: "The argon2id hash of the password, set by Slipway from spec.password." })),
    },
    { description: "Who the user is." },
  ),
});
export type RealmUserObject = ObjectOf<typeof RealmUserSchema>;

export const OIDCClientSchema = objectSchema(SLIPWAY_API_VERSION, "OIDCClient", "A client registered in a realm.", {
  spec: Struct(
    {
      realm: Type.String({ minLength: 1, description: "The Realm the client is registered in. Cannot be changed." }),
      redirectUris: Type.Optional(Type.Array(Type.String(), { description: "Further redirect URIs (loopback URIs on any port are always allowed, as for native apps)." })),
    },
    { description: "Where the client is registered." },
  ),
  status: Type.Optional(
    Struct(
      {
        ...PhaseStatus,
        clientId: Type.Optional(Type.String({ description: "The client id (the audience of the ID tokens issued to it)." })),
        issuerUrl: Type.Optional(Type.String({ description: "The realm's issuer URL." })),
        issuerCertificateAuthority: Type.Optional(Type.String({ description: "PEM of the CA the issuer's serving certificate is signed by." })),
      },
      { description: "The observed state of the client." },
    ),
  ),
});
export type OIDCClientObject = ObjectOf<typeof OIDCClientSchema>;

export const PlatformSchema = objectSchema(SLIPWAY_API_VERSION, "Platform", "A cluster as its realm sees it: members of its root group administer it.", {
  spec: Struct(
    {
      realm: Type.String({ minLength: 1, description: "The Realm of the platform. Cannot be changed." }),
      clusterName: Type.String({ minLength: 1, description: "The Cluster (in this namespace) the platform is. Cannot be changed." }),
    },
    { description: "Which cluster in which realm." },
  ),
  status: Type.Optional(
    Struct(
      {
        ...PhaseStatus,
        rootGroup: Type.Optional(Type.String({ description: "The realm group whose members are cluster-admin on the cluster." })),
      },
      { description: "The observed state of the platform." },
    ),
  ),
});
export type PlatformObject = ObjectOf<typeof PlatformSchema>;

/** The root group of the platform of cluster `namespace/cluster`. */
export function platformRootGroup(namespace: string, cluster: string): string {
  return `platforms/${namespace}/${cluster}`;
}

function groupErrors(field: string, value: string): FieldError[] {
  return GROUP_PATTERN.test(value) ? [] : [invalid(field, value, "must be lower-case letters, digits, '.', '_', '-' or '/', starting and ending with a letter or digit, at most 128 characters")];
}

function validateRealm(realm: RealmObject): FieldError[] {
  const errors = dnsLabelErrors("metadata.name", realm.metadata.name ?? "");
  if (realm.spec?.adminGroup !== undefined) errors.push(...groupErrors("spec.adminGroup", realm.spec.adminGroup));
  return errors;
}

function validateRealmUser(user: RealmUserObject, old?: RealmUserObject): FieldError[] {
  const { spec } = user;
  const errors: FieldError[] = [...dnsLabelErrors("spec.realm", spec.realm)];
  if (spec.username !== undefined) errors.push(...dnsLabelErrors("spec.username", spec.username));
  if (spec.email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(spec.email)) errors.push(invalid("spec.email", spec.email, "must be an e-mail address"));
  const seen = new Set<string>();
  (spec.groups ?? []).forEach((group, i) => {
    errors.push(...groupErrors(`spec.groups[${i}]`, group));
    if (seen.has(group)) errors.push(duplicate(`spec.groups[${i}]`, group));
    seen.add(group);
  });
  if (spec.passwordHash !== undefined && !spec.passwordHash.startsWith("$argon2id$")) errors.push(invalid("spec.passwordHash", "(hidden)", "is set by Slipway from spec.password"));
  if (old) {
    errors.push(...immutable("spec.realm", spec.realm, old.spec.realm), ...immutable("spec.username", spec.username, old.spec.username));
  }
  return errors;
}

function validateOIDCClient(client: OIDCClientObject, old?: OIDCClientObject): FieldError[] {
  const errors = dnsLabelErrors("spec.realm", client.spec.realm);
  (client.spec.redirectUris ?? []).forEach((uri, i) => {
    let ok = false;
    try {
      const parsed = new URL(uri);
      ok = (parsed.protocol === "https:" || parsed.protocol === "http:") && parsed.hash === "";
    } catch {
      ok = false;
    }
    if (!ok) errors.push(invalid(`spec.redirectUris[${i}]`, uri, "must be an absolute http(s) URL without a fragment"));
  });
  if (old) errors.push(...immutable("spec.realm", client.spec.realm, old.spec.realm, "a client belongs to the realm it was registered in"));
  return errors;
}

function validatePlatform(platform: PlatformObject, old?: PlatformObject): FieldError[] {
  const errors = [...dnsLabelErrors("spec.realm", platform.spec.realm)];
  if (old) errors.push(...immutable("spec.realm", platform.spec.realm, old.spec.realm), ...immutable("spec.clusterName", platform.spec.clusterName, old.spec.clusterName));
  return errors;
}

const phaseColumn = fieldColumn("PHASE", ".status.phase", "Pending, Ready or Failed.");

export const realmKind: KindDefinition<RealmObject> = {
  ...slipwayKindBase,
  namespaced: false,
  kind: "Realm",
  plural: "realms",
  singular: "realm",
  shortNames: [],
  schema: RealmSchema,
  description: "An OpenID Connect issuer served by Slipway at /realms/<name> (cluster-scoped); users sign in to it with `slipway login`.",
  printerColumns: [fieldColumn("NAME", ".metadata.name", "Name of the realm."), phaseColumn, fieldColumn("ISSUER", ".status.issuerUrl", "The issuer URL."), ageColumn],
  validate: validateRealm,
};

export const realmUserKind: KindDefinition<RealmUserObject> = {
  ...slipwayKindBase,
  namespaced: false,
  subresources: { status: false },
  kind: "RealmUser",
  plural: "realmusers",
  // Its password hash is encrypted at rest, and the default view role does not read it.
  sensitive: true,
  singular: "realmuser",
  shortNames: [],
  schema: RealmUserSchema,
  description: "A user of a realm (cluster-scoped), with its groups; its password is kept only as an argon2id hash.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the object."),
    fieldColumn("REALM", ".spec.realm", "The realm."),
    computedColumn<RealmUserObject>("GROUPS", ".spec.groups", "Groups the user is in.", (o) => (o.spec.groups ?? []).join(",")),
    ageColumn,
  ],
  validate: validateRealmUser,
};

export const oidcClientKind: KindDefinition<OIDCClientObject> = {
  ...slipwayKindBase,
  kind: "OIDCClient",
  plural: "oidcclients",
  singular: "oidcclient",
  shortNames: [],
  schema: OIDCClientSchema,
  description: "A client registered in a realm; status.clientId and status.issuerUrl say how to reach it.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the client."),
    fieldColumn("REALM", ".spec.realm", "The realm."),
    phaseColumn,
    fieldColumn("CLIENT-ID", ".status.clientId", "The client id."),
    fieldColumn("ISSUER", ".status.issuerUrl", "The issuer URL.", { priority: 1 }),
    ageColumn,
  ],
  validate: validateOIDCClient,
};

export const platformKind: KindDefinition<PlatformObject> = {
  ...slipwayKindBase,
  kind: "Platform",
  plural: "platforms",
  singular: "platform",
  shortNames: [],
  schema: PlatformSchema,
  description: "A cluster as its realm sees it: members of status.rootGroup are bound to cluster-admin on it.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the platform."),
    fieldColumn("REALM", ".spec.realm", "The realm."),
    fieldColumn("CLUSTER", ".spec.clusterName", "The cluster."),
    phaseColumn,
    fieldColumn("ROOT-GROUP", ".status.rootGroup", "Members of this group administer the cluster."),
    ageColumn,
  ],
  validate: validatePlatform,
};
