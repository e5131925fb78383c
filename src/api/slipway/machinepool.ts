// MachinePool: a set of identical worker machines with a replica count. Owned by the Cluster.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { KindDefinition } from "../registry.ts";
import { ageColumn, fieldColumn, readyOfDesired } from "../columns.ts";
import { immutable } from "../field-errors.ts";
import { upgradeErrors } from "./versions.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";
import { DEFAULT_IMAGE, Taint, nodeLabelErrors, nodeLabels, taintErrors } from "./nodes.ts";
import { MAX_WORKER_REPLICAS } from "./cluster.ts";
import { RolloutStrategy, rolloutStrategyErrors } from "./rollout.ts";
import { MaxUnhealthy, maxUnhealthyErrors } from "./health.ts";

/** As Cluster API's MachinePool phases. */
export const MACHINE_POOL_PHASES = [
  "Pending",
  "Provisioning",
  "Provisioned",
  "Running",
  "ScalingUp",
  "ScalingDown",
  "Deleting",
  "Failed",
] as const;
export type MachinePoolPhase = (typeof MACHINE_POOL_PHASES)[number];

/** A pool's machines (and the pool made from a Cluster's worker pool) carry the worker pool's name under this label. */
export const LABEL_POOL = "slipway.dev/pool";
/** On a pool's machines: the hash of the pool template (controllers/rollout/hash.ts) the machine was made from. */
export const LABEL_TEMPLATE_HASH = "slipway.dev/template-hash";
/**
 * On a pool a Cluster declares: its replicas are set from outside (an autoscaler, `kubectl scale`), not
 * from the Cluster's spec.workers (Cluster API's marker of an externally scaled pool; any value).
 */
export const ANNOTATION_REPLICAS_MANAGED_BY = "cluster.x-k8s.io/replicas-managed-by";
/** On a pool a Cluster declares: the replicas the cluster last set, to tell a direct edit from a change of the Cluster's spec. */
export const ANNOTATION_DECLARED_REPLICAS = "slipway.dev/declared-replicas";
export const FINALIZER_MACHINE_POOL = "slipway.dev/machinepool";

export const MachinePoolSpecSchema = Struct(
  {
    clusterName: Type.String({ minLength: 1, description: "Cluster (in this namespace) the pool belongs to." }),
    connection: Type.String({ minLength: 1, description: "Connection the machines are built in." }),
    machineType: Type.String({ minLength: 1, description: "Machine type of the machines." }),
    image: Type.Optional(Type.String({ default: DEFAULT_IMAGE, description: "Operating-system image of the machines." })),
    replicas: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_WORKER_REPLICAS, default: 1, description: "Number of machines wanted (0 to 1000)." }),
    ),
    labels: Type.Optional(nodeLabels("Labels the nodes are registered with.")),
    taints: Type.Optional(Type.Array(Taint, { description: "Taints the nodes are registered with." })),
    strategy: Type.Optional(RolloutStrategy),
    maxUnhealthy: Type.Optional(MaxUnhealthy),
    version: Type.Optional(
      Type.String({ description: "Kubernetes version of the machines' kubelets (default: the cluster's). A change rolls the machines; no downgrade, one minor version at a time." }),
    ),
  },
  { description: "The machines wanted. A change of machineType, image, labels, taints or version rolls the machines (see strategy)." },
);
export type MachinePoolSpec = Static<typeof MachinePoolSpecSchema>;

const count = (description: string) => Type.Optional(Type.Integer({ minimum: 0, description }));

export const MachinePoolStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(MACHINE_POOL_PHASES, { description: "Where the pool is in its life cycle." })),
    replicas: count("Machines that exist."),
    readyReplicas: count("Machines whose node is Ready."),
    updatedReplicas: count("Machines made from the current template (machine type, image, labels, taints)."),
    availableReplicas: count("Machines whose node has been Ready for the minimum time."),
    unavailableReplicas: count("Machines wanted that are not yet available."),
    conditions: Type.Optional(Type.Array(Condition, { description: "Current conditions, e.g. Ready." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
    selector: Type.Optional(Type.String({ description: "Label selector of the pool's machines, as /scale reports it." })),
    remediation: Type.Optional(
      Struct(
        {
          attempts: Type.Integer({ minimum: 0, description: "Failed machines replaced since every machine was last Ready; each waits longer (10 s doubling to 5 min)." }),
          lastTime: Type.String({ description: "When the last failed machine was replaced." }),
        },
        { description: "Replacements of failed machines, for their backoff." },
      ),
    ),
    reason: Type.Optional(Type.String({ description: "Why the pool is failing, e.g. CreateMachineFailed." })),
    message: Type.Optional(Type.String({ description: "Human-readable details of the reason." })),
  },
  { description: "The observed state of the pool." },
);
export type MachinePoolStatus = Static<typeof MachinePoolStatusSchema>;

export const MachinePoolSchema = objectSchema(SLIPWAY_API_VERSION, "MachinePool", "A set of identical worker machines.", {
  spec: MachinePoolSpecSchema,
  status: Type.Optional(MachinePoolStatusSchema),
});
export type MachinePoolObject = ObjectOf<typeof MachinePoolSchema>;

export const machinePoolKind: KindDefinition<MachinePoolObject> = {
  ...slipwayKindBase,
  kind: "MachinePool",
  plural: "machinepools",
  singular: "machinepool",
  shortNames: ["mp"],
  schema: MachinePoolSchema,
  description: "A set of identical worker machines with a replica count.",
  subresources: { status: true, scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas", labelSelectorPath: ".status.selector" } },
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the pool."),
    fieldColumn("CLUSTER", ".spec.clusterName", "Cluster the pool belongs to."),
    {
      name: "REPLICAS",
      type: "string",
      jsonPath: ".status.readyReplicas",
      description: "Ready/desired machines.",
      value: (o) => {
        const pool = o as MachinePoolObject;
        return readyOfDesired(pool.status?.readyReplicas, pool.spec.replicas ?? 1);
      },
    },
    fieldColumn("PHASE", ".status.phase", "Where the pool is in its life cycle."),
    fieldColumn("MACHINETYPE", ".spec.machineType", "Machine type of the machines."),
    ageColumn,
    fieldColumn("CONNECTION", ".spec.connection", "Connection the machines are built in.", { priority: 1 }),
  ],
  defaults: specDefaults(MachinePoolSpecSchema),
  // Every field of the spec is applied by the pool controller: replicas by scaling, machineType, image,
  // labels and taints by rolling the machines, strategy by how they roll, maxUnhealthy by how many failed
  // machines are replaced at once. The cluster and the connection
  // cannot change: a pool does not move.
  validate(pool, old) {
    const errors = [
      ...nodeLabelErrors("spec.labels", pool.spec.labels),
      ...taintErrors("spec.taints", pool.spec.taints),
      ...rolloutStrategyErrors("spec.strategy", pool.spec.strategy),
      ...maxUnhealthyErrors("spec.maxUnhealthy", pool.spec.maxUnhealthy),
    ];
    if (old) {
      errors.push(
        ...immutable("spec.clusterName", pool.spec.clusterName, old.spec.clusterName, "a pool cannot move to another cluster"),
        ...immutable("spec.connection", pool.spec.connection, old.spec.connection, "a pool cannot move to another connection; make a new pool there and remove this one"),
        ...upgradeErrors("spec.version", pool.spec.version, old.spec.version),
      );
    }
    return errors;
  },
};
