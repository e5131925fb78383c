// MachinePool: a set of identical worker machines with a replica count. Owned by the Cluster.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, countColumn, fieldColumn } from "../columns.ts";
import { immutable, invalid, notSupported } from "../field-errors.ts";
import { formatSelector, labelSelectorErrors, labelSelectorSchema, selectorMatches, type LabelSelector } from "../selector.ts";
import { upgradeErrors } from "./versions.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";
import { DEFAULT_IMAGE, Taint, nodeLabelErrors, nodeLabels, taintErrors } from "./nodes.ts";
import { LABEL_CLUSTER, MAX_WORKER_REPLICAS } from "./cluster.ts";
import { LABEL_ROLE, ROLE_WORKER } from "./machine.ts";
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
  "Scaling",
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

/** The kinds a pool's template may reference: a provider's pool infrastructure (sim: a scale set; ssh: a set of hosts), and the bootstrap configuration. */
export const POOL_INFRASTRUCTURE_KINDS = ["SimMachinePool", "HostMachinePool"] as const;
export const POOL_BOOTSTRAP_KINDS = ["BootstrapConfig"] as const;

const LocalReference = (description: string) =>
  Struct(
    {
      apiVersion: Type.String({ minLength: 1, description: "API version of the object (slipway.dev/v1alpha1)." }),
      kind: Type.String({ minLength: 1, description: "Kind of the object." }),
      name: Type.String({ minLength: 1, description: "Name of the object, in the pool's namespace." }),
    },
    { description },
  );

export const MachinePoolTemplateSchema = Struct(
  {
    infrastructureRef: LocalReference(`The pool's infrastructure: a ${POOL_INFRASTRUCTURE_KINDS.join(" or ")} (a cloud scale set, or a set of hosts). The pool adopts it and takes its replicas and readiness from it.`),
    bootstrap: Struct(
      {
        configRef: LocalReference(`How the machines join: a ${POOL_BOOTSTRAP_KINDS.join(" or ")}. The pool adopts it.`),
        dataSecretName: Type.Optional(Type.String({ description: "Secret holding the bootstrap data, copied by the pool controller from the configuration's status." })),
      },
      { description: "The machines' bootstrap." },
    ),
  },
  { description: "Cluster API's MachinePool template: the objects that make the pool's instances. Without it, the pool makes its machines one by one." },
);
export type MachinePoolTemplate = Static<typeof MachinePoolTemplateSchema>;

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
    // Cluster API's MachinePool fields: how machines are chosen, counted as available, and listed.
    selector: Type.Optional(
      labelSelectorSchema("Label selector of the pool's machines (default: the cluster and pool labels every machine of the pool carries); it must select them, and cannot change."),
    ),
    minReadySeconds: Type.Optional(
      Type.Integer({ minimum: 0, default: 0, description: "Seconds a machine's node must have been Ready for the machine to count as available." }),
    ),
    providerIDList: Type.Optional(
      Type.Array(Type.String(), { description: "Provider IDs of the pool's instances, as their nodes carry them (spec.providerID), sorted. Kept by the pool controller." }),
    ),
    template: Type.Optional(MachinePoolTemplateSchema),
  },
  { description: "The machines wanted. A change of machineType, image, labels, taints or version rolls the machines (see strategy)." },
);
export type MachinePoolSpec = Static<typeof MachinePoolSpecSchema>;

const count = (description: string) => Type.Optional(Type.Integer({ minimum: 0, description }));

const NodeReference = Struct(
  {
    apiVersion: Type.String({ description: "v1." }),
    kind: Type.String({ description: "Node." }),
    name: Type.String({ description: "Name of the node." }),
    uid: Type.Optional(Type.String({ description: "UID of the node, once its machine has read it." })),
  },
  { description: "A node of the workload cluster." },
);

export const MachinePoolStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(MACHINE_POOL_PHASES, { description: "Where the pool is in its life cycle." })),
    replicas: count("Machines that exist."),
    readyReplicas: count("Machines whose node is Ready."),
    updatedReplicas: count("Machines made from the current template (machine type, image, labels, taints)."),
    availableReplicas: count("Machines whose node has been Ready for at least spec.minReadySeconds."),
    unavailableReplicas: count("Machines still needed for every wanted machine to be available: spec.replicas - availableReplicas (not below 0), whether they exist yet or not."),
    nodeRefs: Type.Optional(Type.Array(NodeReference, { description: "The nodes the pool's machines became, by name." })),
    bootstrapReady: Type.Optional(Type.Boolean({ description: "True when every machine of the pool has its bootstrap data (kubeadm join configuration)." })),
    infrastructureReady: Type.Optional(Type.Boolean({ description: "True when the cluster's infrastructure in the pool's connection is Ready." })),
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

/** The labels every machine of the pool carries (besides its template hash): its cluster, its pool, its role. */
export function poolMachineLabels(pool: MachinePoolObject): Record<string, string> {
  return { ...poolSelectorLabels(pool), [LABEL_ROLE]: ROLE_WORKER };
}

/** The default spec.selector's labels, as Cluster API defaults a selector from the cluster and owner names. */
function poolSelectorLabels(pool: MachinePoolObject): Record<string, string> {
  return { [LABEL_CLUSTER]: pool.spec.clusterName, [LABEL_POOL]: pool.metadata.name ?? "" };
}

/** The pool's label selector (spec.selector, or its default for a pool written before it existed). */
export function poolSelector(pool: MachinePoolObject): LabelSelector {
  return pool.spec.selector ?? { matchLabels: poolSelectorLabels(pool) };
}

/** spec.selector as /scale reports it (status.selector), e.g. `slipway.dev/cluster=demo,slipway.dev/pool=demo-w`. */
export function poolSelectorString(pool: MachinePoolObject): string {
  return formatSelector(poolSelector(pool));
}

function referenceErrors(field: string, ref: { apiVersion: string; kind: string } | undefined, kinds: readonly string[]): FieldError[] {
  if (!ref) return [];
  if (ref.apiVersion !== SLIPWAY_API_VERSION) return [invalid(`${field}.apiVersion`, ref.apiVersion, `must be ${SLIPWAY_API_VERSION}`)];
  return kinds.includes(ref.kind) ? [] : [notSupported(`${field}.kind`, ref.kind, kinds)];
}

function templateErrors(pool: MachinePoolObject, old: MachinePoolObject | undefined): FieldError[] {
  const template = pool.spec.template;
  const errors = [
    ...referenceErrors("spec.template.infrastructureRef", template?.infrastructureRef, POOL_INFRASTRUCTURE_KINDS),
    ...referenceErrors("spec.template.bootstrap.configRef", template?.bootstrap.configRef, POOL_BOOTSTRAP_KINDS),
  ];
  const before = old?.spec.template;
  if (before && template) {
    errors.push(
      ...immutable("spec.template.infrastructureRef", template.infrastructureRef, before.infrastructureRef, "a pool keeps its scale set"),
      ...immutable("spec.template.bootstrap.configRef", template.bootstrap.configRef, before.bootstrap.configRef, "a pool keeps its bootstrap configuration"),
    );
  } else if (old && Boolean(before) !== Boolean(template)) {
    errors.push(invalid("spec.template", template ?? null, before ? "cannot be removed" : "cannot be added to a pool that makes its machines one by one"));
  }
  return errors;
}

function selectorErrors(pool: MachinePoolObject): FieldError[] {
  const selector = pool.spec.selector;
  if (!selector) return [];
  const errors = labelSelectorErrors("spec.selector", selector);
  const labels = poolMachineLabels(pool);
  if (errors.length === 0 && !selectorMatches(selector, labels)) {
    const carried = Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(", ");
    errors.push(invalid("spec.selector", formatSelector(selector), `must select the pool's machines, which carry ${carried}`));
  }
  return errors;
}

const fillSpecDefaults = specDefaults<MachinePoolObject>(MachinePoolSpecSchema);

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
    countColumn<MachinePoolObject>("DESIRED", ".spec.replicas", "Machines wanted.", (p) => p.spec.replicas ?? 1),
    countColumn<MachinePoolObject>("REPLICAS", ".status.replicas", "Machines that exist.", (p) => p.status?.replicas),
    countColumn<MachinePoolObject>("READY", ".status.readyReplicas", "Machines whose node is Ready.", (p) => p.status?.readyReplicas),
    countColumn<MachinePoolObject>("AVAILABLE", ".status.availableReplicas", "Machines whose node has been Ready for spec.minReadySeconds.", (p) => p.status?.availableReplicas),
    countColumn<MachinePoolObject>("UPDATED", ".status.updatedReplicas", "Machines made from the current template.", (p) => p.status?.updatedReplicas),
    fieldColumn("PHASE", ".status.phase", "Where the pool is in its life cycle."),
    ageColumn,
    fieldColumn("MACHINETYPE", ".spec.machineType", "Machine type of the machines.", { priority: 1 }),
    fieldColumn("CONNECTION", ".spec.connection", "Connection the machines are built in.", { priority: 1 }),
  ],
  defaults(pool) {
    fillSpecDefaults(pool);
    pool.spec.selector ??= { matchLabels: poolSelectorLabels(pool) };
  },
  // Every field of the spec is applied by the pool controller: replicas by scaling, machineType, image,
  // labels and taints by rolling the machines, strategy by how they roll, maxUnhealthy by how many failed
  // machines are replaced at once. The cluster and the connection
  // cannot change: a pool does not move.
  validate(pool, old) {
    const errors = [
      ...nodeLabelErrors("spec.labels", pool.spec.labels),
      ...taintErrors("spec.taints", pool.spec.taints),
      ...rolloutStrategyErrors("spec.strategy", pool.spec.strategy),
      ...selectorErrors(pool),
      ...maxUnhealthyErrors("spec.maxUnhealthy", pool.spec.maxUnhealthy),
      ...templateErrors(pool, old),
    ];
    if (old) {
      errors.push(
        ...immutable("spec.clusterName", pool.spec.clusterName, old.spec.clusterName, "a pool cannot move to another cluster"),
        ...immutable("spec.connection", pool.spec.connection, old.spec.connection, "a pool cannot move to another connection; make a new pool there and remove this one"),
        ...upgradeErrors("spec.version", pool.spec.version, old.spec.version),
        // As a Deployment's: machines chosen by another selector would be other machines.
        ...(old.spec.selector ? immutable("spec.selector", pool.spec.selector, old.spec.selector, "the pool's machines are chosen by it") : []),
      );
    }
    return errors;
  },
};
