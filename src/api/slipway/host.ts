// Host: a machine one already has, reached over SSH, that an `ssh` Connection builds clusters on. The
// host's Connection is named by the label slipway.dev/connection. Slipway records the host key it saw
// at first contact and accepts no other afterwards, reads the host's facts, and claims the host for one
// cluster at a time (status.clusterRef); deleting the cluster cleans the host and releases it.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, MapOf, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "../columns.ts";
import { immutable, invalid } from "../field-errors.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";

/** The key of the SSH private key in the Secret, as in Kubernetes' `kubernetes.io/ssh-auth` Secrets. */
export const SSH_PRIVATE_KEY = "ssh-privatekey";
export const FINALIZER_HOST = "slipway.dev/host";

export const HostSpecSchema = Struct(
  {
    address: Type.String({ minLength: 1, description: "IP address or DNS name Slipway connects to over SSH." }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: 22, description: "SSH port (default 22)." })),
    user: Type.Optional(
      Type.String({ minLength: 1, default: "root", description: "User Slipway logs in as: root, or a user allowed to run `sudo -n` (default root)." }),
    ),
    sshKeySecretRef: Struct(
      {
        name: Type.String({ minLength: 1, description: "Name of the Secret (in the host's namespace)." }),
        key: Type.Optional(Type.String({ minLength: 1, default: SSH_PRIVATE_KEY, description: `Key of the private key in the Secret (default ${SSH_PRIVATE_KEY}).` })),
      },
      { description: "Secret holding the SSH private key Slipway logs in with." },
    ),
  },
  { description: "Where the host is and how Slipway logs in." },
);
export type HostSpec = Static<typeof HostSpecSchema>;

export const HostFactsSchema = Struct(
  {
    os: Type.String({ description: "Operating system (os-release PRETTY_NAME)." }),
    kernel: Type.String({ description: "Kernel release." }),
    architecture: Type.String({ description: "Machine architecture (uname -m)." }),
    cpus: Type.Integer({ description: "Processors." }),
    memoryMiB: Type.Integer({ description: "Memory in MiB." }),
    hostname: Type.Optional(Type.String({ description: "Host name (uname -n, lower case): the name its node registers under when it joins a pool of hosts." })),
  },
  { description: "What the host is, as read from it." },
);

export const HostClaimSchema = Struct(
  {
    token: Type.String({ description: "Idempotency token of the claim: a retried claim with it gets this host again." }),
    tags: MapOf(Type.String(), "Tags naming the cluster and the owning object."),
    claimedAt: Type.String({ description: "When the host was claimed." }),
    releasing: Type.Optional(Type.Boolean({ description: "True while the host is being cleaned to be released." })),
  },
  { description: "The claim on the host of the cluster that holds it." },
);
export type HostClaim = Static<typeof HostClaimSchema>;

export const HostStatusSchema = Struct(
  {
    hostKeyFingerprint: Type.Optional(
      Type.String({ description: "SHA256 fingerprint of the host key seen at first contact; any other key is refused. To trust a new key, set the annotation slipway.dev/trust-host-key to its fingerprint." }),
    ),
    facts: Type.Optional(HostFactsSchema),
    clusterRef: Type.Optional(Struct({ name: Type.String({ description: "Name of the Cluster (in this namespace)." }) }, { description: "The cluster the host is used by." })),
    claim: Type.Optional(HostClaimSchema),
    lastCheckTime: Type.Optional(Type.String({ description: "When Slipway last logged in to the host." })),
    conditions: Type.Optional(Type.Array(Condition, { description: "Reachable (logged in with the pinned host key) and Claimed." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
  },
  { description: "The observed state of the host." },
);
export type HostStatus = Static<typeof HostStatusSchema>;

export const HostSchema = objectSchema(SLIPWAY_API_VERSION, "Host", "A machine reached over SSH that clusters are built on.", {
  spec: HostSpecSchema,
  status: Type.Optional(HostStatusSchema),
});
export type HostObject = ObjectOf<typeof HostSchema>;

/** A condition's status column: `.status.conditions[?(@.type=="T")].status`. */
function conditionStatus(o: unknown, type: string): string | undefined {
  return (o as HostObject).status?.conditions?.find((c) => c.type === type)?.status;
}

function addressErrors(address: string): FieldError[] {
  if (/^[A-Za-z0-9.:-]+$/.test(address) && !address.startsWith("-")) return [];
  return [invalid("spec.address", address, "must be an IP address or a DNS name")];
}

export const hostKind: KindDefinition<HostObject> = {
  ...slipwayKindBase,
  kind: "Host",
  plural: "hosts",
  singular: "host",
  shortNames: [],
  schema: HostSchema,
  description: "A machine reached over SSH that clusters are built on.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the host."),
    fieldColumn("ADDRESS", ".spec.address", "Address Slipway connects to."),
    computedColumn("REACHABLE", '.status.conditions[?(@.type=="Reachable")].status', "True when Slipway logs in with the pinned host key.", (o) => conditionStatus(o, "Reachable")),
    fieldColumn("OS", ".status.facts.os", "Operating system."),
    fieldColumn("CLUSTER", ".status.clusterRef.name", "Cluster using the host."),
    ageColumn,
    fieldColumn("FINGERPRINT", ".status.hostKeyFingerprint", "Pinned host key.", { priority: 1 }),
  ],
  defaults: specDefaults(HostSpecSchema),
  validate(host, old) {
    const errors = addressErrors(host.spec.address);
    // A cluster's node runs on the host: moving the Host elsewhere under it would strand the node.
    const cluster = old?.status?.clusterRef?.name;
    if (old && cluster) {
      const why = `the host is used by cluster ${cluster}`;
      errors.push(
        ...immutable("spec.address", host.spec.address, old.spec.address, why),
        ...immutable("spec.port", host.spec.port, old.spec.port, why),
        ...immutable("spec.user", host.spec.user, old.spec.user, why),
      );
    }
    return errors;
  },
};
