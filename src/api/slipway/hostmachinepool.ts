// HostMachinePool: the ssh provider's pool infrastructure, a set of the hosts one already has (Host
// objects of the pool's Connection) instead of a cloud's scale set. Referenced from a MachinePool's
// spec.template.infrastructureRef and owned by that pool; once it has its owner, its controller claims
// through the provider's poolInfrastructure one free host per replica among those it selects (labels
// and/or names), all or nothing, bootstraps each with the pool's bootstrap data, and reports the hosts
// it holds and how many more are free. A pool scaled in or deleted has its hosts cleaned and released.
import { Type, type Static } from "@sinclair/typebox";
import { Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, countColumn, fieldColumn } from "../columns.ts";
import { invalid, required } from "../field-errors.ts";
import { SLIPWAY_API_VERSION, reportedState, slipwayKindBase, specDefaults } from "./group.ts";
import { nodeLabelErrors, nodeLabels } from "./nodes.ts";

export const FINALIZER_HOST_MACHINE_POOL = "slipway.dev/hostmachinepool";

export const HostMachinePoolSpecSchema = Struct(
  {
    hostSelector: Type.Optional(
      Struct({ matchLabels: Type.Optional(nodeLabels("The labels a Host must carry, every one, to serve the pool.")) }, { description: "Which Hosts of the pool's Connection may serve it, by their labels." }),
    ),
    hosts: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: "Names of the Hosts that may serve the pool (with hostSelector: those of them carrying its labels)." })),
  },
  { description: "The hosts the pool may claim, one per replica; at least one of hostSelector and hosts. Bootstrap data comes from the owning pool." },
);
export type HostMachinePoolSpec = Static<typeof HostMachinePoolSpecSchema>;

export const HostMachinePoolStatusSchema = Struct(
  {
    ready: Type.Optional(Type.Boolean({ description: "True when the pool holds a host for every replica of its MachinePool (the pool's infrastructureReady)." })),
    replicas: Type.Optional(Type.Integer({ minimum: 0, description: "Hosts held and not being released." })),
    desiredCapacity: Type.Optional(Type.Integer({ minimum: 0, description: "Hosts the pool is to hold." })),
    available: Type.Optional(Type.Integer({ minimum: 0, description: "Free, reachable Hosts it selects that it could claim besides those it holds." })),
    scaleSetId: Type.Optional(Type.String({ description: "ID of the set of hosts in the provider (the pool infrastructure's, as a scale set's)." })),
    connection: Type.Optional(Type.String({ description: "Connection the hosts are in (its pool's), kept to release them after the pool is gone." })),
    hostNames: Type.Optional(Type.Array(Type.String(), { description: "Hosts held, sorted." })),
    providerIDList: Type.Optional(Type.Array(Type.String(), { description: "Provider IDs of the hosts held and not being released, sorted." })),
    userDataHash: Type.Optional(Type.String({ description: "SHA-256 of the bootstrap data the hosts are bootstrapped with (the data itself is secret)." })),
    poolTemplate: Type.Optional(Type.String({ description: "The pool template (hash, and @version when the pool names one) the bootstrap data was last brought to." })),
    ...reportedState({ reason: "Why the pool is not ready, e.g. WaitingForOwner, InsufficientHosts.", conditions: "Current conditions: Ready." }),
  },
  { description: "The hosts the pool holds." },
);
export type HostMachinePoolStatus = Static<typeof HostMachinePoolStatusSchema>;

export const HostMachinePoolSchema = objectSchema(SLIPWAY_API_VERSION, "HostMachinePool", "A set of hosts backing a MachinePool.", {
  spec: Type.Optional(HostMachinePoolSpecSchema),
  status: Type.Optional(HostMachinePoolStatusSchema),
});
export type HostMachinePoolObject = ObjectOf<typeof HostMachinePoolSchema>;

const fillSpecDefaults = specDefaults<HostMachinePoolObject>(HostMachinePoolSpecSchema);

export const hostMachinePoolKind: KindDefinition<HostMachinePoolObject> = {
  ...slipwayKindBase,
  kind: "HostMachinePool",
  plural: "hostmachinepools",
  singular: "hostmachinepool",
  shortNames: ["hmp"],
  schema: HostMachinePoolSchema,
  description: "A set of Hosts backing a MachinePool (the ssh provider's pool infrastructure).",
  subresources: { status: true },
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the pool infrastructure."),
    countColumn<HostMachinePoolObject>("DESIRED", ".status.desiredCapacity", "Hosts to hold.", (o) => o.status?.desiredCapacity),
    countColumn<HostMachinePoolObject>("REPLICAS", ".status.replicas", "Hosts held.", (o) => o.status?.replicas),
    countColumn<HostMachinePoolObject>("AVAILABLE", ".status.available", "Free hosts selected besides those held.", (o) => o.status?.available),
    fieldColumn("READY", ".status.ready", "True when a host is held for every replica.", { type: "boolean" }),
    fieldColumn("MESSAGE", ".status.message", "Why it is not ready."),
    ageColumn,
  ],
  defaults(pool) {
    pool.spec ??= {};
    fillSpecDefaults(pool);
  },
  validate(pool) {
    const errors: FieldError[] = [];
    const { hostSelector, hosts } = pool.spec ?? {};
    if (hostSelector?.matchLabels === undefined && hosts === undefined) errors.push(required("spec.hostSelector", "select the pool's hosts by spec.hostSelector.matchLabels or spec.hosts"));
    errors.push(...nodeLabelErrors("spec.hostSelector.matchLabels", hostSelector?.matchLabels));
    (hosts ?? []).forEach((name, i) => {
      if ((hosts ?? []).indexOf(name) !== i) errors.push(invalid(`spec.hosts[${i}]`, name, "is named twice"));
    });
    return errors;
  },
};
