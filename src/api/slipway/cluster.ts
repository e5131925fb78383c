// Cluster: the user's declaration of a Kubernetes cluster — control plane in one connection, worker
// pools in any — and the status the controllers report back.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, keyedBy, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn, readyOfDesired } from "../columns.ts";
import { dnsLabelErrors, duplicate, immutable, invalid, notSupported, required } from "../field-errors.ts";
import { InvalidCidrError, cidrsOverlap, parseCidr, type Cidr } from "../cidr.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";
import { DEFAULT_IMAGE, Taint, nodeLabelErrors, nodeLabels, taintErrors } from "./nodes.ts";
import { RolloutStrategy, rolloutStrategyErrors } from "./rollout.ts";
import { MaxUnhealthy, maxUnhealthyErrors } from "./health.ts";
import { oldestVersion, upgradeErrors } from "./versions.ts";

export const DEFAULT_KUBERNETES_VERSION = "v1.31.2";
/** Kubernetes minor versions Slipway can install (1.28 to 1.32). */
export const SUPPORTED_KUBERNETES_MINORS = { min: 28, max: 32 } as const;
/** etcd needs an odd number of members to keep a quorum. */
export const CONTROL_PLANE_REPLICAS = [1, 3, 5] as const;
export const MAX_WORKER_REPLICAS = 1000;
/** Pools per cluster: each is an object, a rollout and a line of status; a hundred is far beyond any real cluster. */
export const MAX_WORKER_POOLS = 100;
/** Cluster names go into cloud resource names, which are often limited to 63 characters. */
export const MAX_CLUSTER_NAME_LENGTH = 40;

export const CLUSTER_PHASES = ["Pending", "Validating", "Provisioning", "Running", "Updating", "Deleting", "Failed"] as const;
export type ClusterPhase = (typeof CLUSTER_PHASES)[number];

export const CLUSTER_CONDITIONS = [
  "Validated",
  "InfrastructureReady",
  "ControlPlaneInitialized",
  "ControlPlaneReady",
  "WorkersReady",
  "Ready",
] as const;
export type ClusterConditionType = (typeof CLUSTER_CONDITIONS)[number];
/** True once `kubeadm init` has completed: joining machines wait for it. */
export const CONDITION_CONTROL_PLANE_INITIALIZED = "ControlPlaneInitialized";
/** True once the network plugin is applied: no node is Ready before. */
export const CONDITION_NETWORK_PLUGIN_INSTALLED = "NetworkPluginInstalled";
/** Steps of the journal (status.steps) that concern no one child: the network plugin, and the cluster Ready. */
export const STEP_NETWORK_PLUGIN = "NetworkPlugin";
export const STEP_READY = "Ready";

/** Every object made for a cluster (Infrastructures, MachinePools, Machines, Secrets) carries its name under this label. */
export const LABEL_CLUSTER = "slipway.dev/cluster";
export const FINALIZER_CLUSTER = "slipway.dev/cluster";

export const CNI_PLUGINS = ["calico", "flannel", "cilium"] as const;

/** Who reaches the cluster's API: anyone (a public load balancer and name) or only the cloud's network. */
export const API_VISIBILITIES = ["public", "private"] as const;
export type ApiVisibility = (typeof API_VISIBILITIES)[number];

const ApiServerSpec = Struct(
  {
    visibility: Type.Optional(
      StringEnum(API_VISIBILITIES, {
        default: "public",
        description:
          "public: the API has a public load balancer and the name api.<cluster>.<zone>; private: only an internal load balancer and api-int.<cluster>.<zone>, reached from inside the control plane's cloud network. Cannot be changed.",
      }),
    ),
  },
  { description: "How the cluster's Kubernetes API is exposed." },
);

const ControlPlaneSpec = Struct(
  {
    connection: Type.String({ minLength: 1, description: "Connection (in this namespace) the control-plane machines are built in." }),
    machineType: Type.Optional(
      Type.String({ minLength: 1, description: "Machine type of the control-plane machines (at least 2 vCPU and 1.7 GiB); from the template (spec.templateName) when left out." }),
    ),
    replicas: Type.Optional(
      Type.Integer({ default: 1, description: "Number of control-plane machines: 1, 3 or 5 (etcd needs an odd number)." }),
    ),
    image: Type.Optional(Type.String({ default: DEFAULT_IMAGE, description: "Operating-system image of the machines." })),
    maxUnhealthy: Type.Optional(MaxUnhealthy),
  },
  { description: "The control plane: its machines and where they run." },
);

const WorkerPoolSpec = Struct(
  {
    name: Type.String({ minLength: 1, description: "Name of the pool, a DNS label unique within the cluster." }),
    connection: Type.String({ minLength: 1, description: "Connection (in this namespace) the pool's machines are built in." }),
    machineType: Type.Optional(Type.String({ minLength: 1, description: "Machine type of the pool's machines; from the template (spec.templateName) when left out." })),
    replicas: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_WORKER_REPLICAS, default: 1, description: "Number of machines (0 to 1000)." }),
    ),
    image: Type.Optional(Type.String({ default: DEFAULT_IMAGE, description: "Operating-system image of the machines." })),
    labels: Type.Optional(nodeLabels("Labels the pool's nodes are registered with.")),
    taints: Type.Optional(Type.Array(Taint, { description: "Taints the pool's nodes are registered with." })),
    strategy: Type.Optional(RolloutStrategy),
    maxUnhealthy: Type.Optional(MaxUnhealthy),
    scaleSet: Type.Optional(
      Struct(
        {
          minSize: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WORKER_REPLICAS, description: "Fewest instances of the scale set (default 0)." })),
          maxSize: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WORKER_REPLICAS, description: "Most instances of the scale set (default 100)." })),
        },
        {
          description:
            "Back the pool with a scale set of its connection's cloud: the pool is made with a SimMachinePool and a BootstrapConfig named after it (`<cluster>-<pool>`), which it adopts. Taken when the pool is made; a template change is applied to new instances only.",
        },
      ),
    ),
  },
  { description: "A pool of identical worker machines. A change of machineType, image, labels or taints rolls its machines (see strategy)." },
);

const RegistrationSpec = Struct(
  {
    kubeconfigSecretRef: Struct(
      {
        name: Type.String({ minLength: 1, description: "Name of the Secret (in this namespace)." }),
        key: Type.Optional(Type.String({ minLength: 1, default: "value", description: "Key of the kubeconfig in the Secret's data (default value)." })),
      },
      { description: "Secret holding a kubeconfig of the cluster: its first context's server, CA and credentials are used." },
    ),
  },
  {
    description:
      "Registers a cluster Slipway did not build, by its kubeconfig, instead of a controlPlane: Slipway reports its reachability, version and nodes, delivers resources to it, and never builds or deletes its machines.",
  },
);

// Type.Object rather than Struct: the section has a default of its own ({} then filled field by field).
const NetworkSpec = Type.Object(
  {
    cni: Type.Optional(StringEnum(CNI_PLUGINS, { default: "calico", description: "Network plugin: calico, flannel or cilium." })),
    podCIDR: Type.Optional(Type.String({ default: "10.244.0.0/16", description: "Address range of pods (IPv4 CIDR)." })),
    serviceCIDR: Type.Optional(Type.String({ default: "10.96.0.0/12", description: "Address range of services (IPv4 CIDR, /12 or smaller)." })),
    nodeCIDR: Type.Optional(
      Type.String({ default: "10.0.0.0/16", description: "Address range of the cloud network made in each connection (IPv4 CIDR)." }),
    ),
    serviceDomain: Type.Optional(Type.String({ default: "cluster.local", description: "DNS domain of services." })),
  },
  { additionalProperties: false, default: {}, description: "Cluster networking. Cannot be changed after creation." },
);

export const ClusterSpecSchema = Struct(
  {
    kubernetesVersion: Type.Optional(
      Type.String({
        default: DEFAULT_KUBERNETES_VERSION,
        description:
          "Kubernetes version, v1.<minor>.<patch> with minor 28 to 32. A change upgrades the cluster: the control plane one machine at a time, then the worker pools; no downgrade, one minor version at a time.",
      }),
    ),
    controlPlane: Type.Optional(ControlPlaneSpec),
    registration: Type.Optional(RegistrationSpec),
    // Pools are told apart by name: strategic merge patches and server-side apply merge them pool by pool.
    workers: Type.Optional(Type.Array(WorkerPoolSpec, { ...keyedBy("name"), default: [], maxItems: MAX_WORKER_POOLS, description: `Worker pools, in any connections (at most ${MAX_WORKER_POOLS}).` })),
    network: Type.Optional(NetworkSpec),
    apiServer: Type.Optional(ApiServerSpec),
    paused: Type.Optional(Type.Boolean({ description: "If true, controllers leave the cluster and everything made for it (infrastructures, pools, machines) as it is; deletion still runs." })),
    templateName: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "ClusterTemplate (cluster-scoped) the cluster is made from: what the cluster leaves out — kubernetesVersion, network settings, machine types — is filled from it when the cluster is created (a value equal to Slipway's own default counts as left out). May change only to one of the template's upgradeTargets, which upgrades the cluster to that template's version.",
      }),
    ),
    leaseName: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "Lease (in this namespace) whose reserved machines the cluster runs on: it waits until the lease is Active, its machineType fields may name the lease's sizes, it adopts the lease and is deleted when the lease ends. Cannot be changed.",
      }),
    ),
    realmName: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "Realm whose users may sign in to the cluster: Slipway registers an OIDCClient for the cluster in it, its API server trusts the realm's ID tokens, and a Platform names the realm group whose members are cluster-admin. Cannot be changed.",
      }),
    ),
  },
  { description: "The desired cluster." },
);
type ControlPlaneSpec = Static<typeof ControlPlaneSpec>;
/**
 * The spec of a cluster Slipway builds. A registered cluster's spec has a registration and no
 * controlPlane (validation requires exactly one of them): code that may meet one asks isRegistered
 * first — the cluster controller, the plan and the views do; the controllers of machines, pools and
 * infrastructures never see one (a registered cluster has none).
 */
export type ClusterSpec = Static<typeof ClusterSpecSchema> & { controlPlane: ControlPlaneSpec };
export type WorkerPoolSpec = Static<typeof WorkerPoolSpec>;

const ClusterStep = Struct(
  {
    name: Type.String({ description: "What was done, e.g. CreateNetwork or JoinWorker." }),
    startedAt: Type.String({ description: "When the step started (RFC 3339)." }),
    finishedAt: Type.Optional(Type.String({ description: "When the step finished (RFC 3339)." })),
    outcome: StringEnum(["Running", "Succeeded", "Failed"], { description: "Running, Succeeded or Failed." }),
    message: Type.Optional(Type.String({ description: "Details, e.g. the error of a failed step." })),
    target: Type.Optional(
      Struct(
        {
          kind: Type.String({ description: "Kind of the object, e.g. Machine." }),
          name: Type.String({ description: "Name of the object." }),
        },
        { description: "The object the step concerns." },
      ),
    ),
  },
  { description: "One entry of the step journal." },
);
export type ClusterStep = Static<typeof ClusterStep>;

const ClusterAddonStatus = Struct(
  {
    name: Type.String({ description: "Name of the Addon." }),
    phase: Type.String({ description: "Waiting, Installing, Ready or Failed in this cluster." }),
    version: Type.Optional(Type.String({ description: "The version installed." })),
    message: Type.Optional(Type.String({ description: "Why it is not Ready." })),
  },
  { description: "One addon of the cluster." },
);

const ClusterServiceStatus = Struct(
  {
    name: Type.String({ description: "Name of the service in its URL." }),
    label: Type.String({ description: "What users see it as." }),
    icon: Type.Optional(Type.String({ description: "An icon hint." })),
    url: Type.String({ description: "Where Slipway serves it: https://<control plane>/services/<namespace>/<cluster>/<name>/." }),
    addon: Type.String({ description: "The Addon that declares it." }),
    namespace: Type.String({ description: "Namespace of the Service in the cluster." }),
    service: Type.String({ description: "Name of the Service in the cluster." }),
    port: Type.Optional(Type.Integer({ description: "Port of the Service." })),
  },
  { description: "A user-facing service of the cluster." },
);

export const ClusterStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(CLUSTER_PHASES, { description: "Where the cluster is in its life cycle." })),
    reason: Type.Optional(Type.String({ description: "Why the cluster is failing, e.g. QuotaExceeded or JoinWorkerFailed." })),
    message: Type.Optional(Type.String({ description: "Human-readable details of the reason." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
    conditions: Type.Optional(
      Type.Array(Condition, {
        description: "Validated, InfrastructureReady, ControlPlaneInitialized, ControlPlaneReady, WorkersReady and Ready.",
      }),
    ),
    controlPlaneEndpoint: Type.Optional(
      Struct(
        {
          host: Type.String({ description: "Host name or address of the Kubernetes API." }),
          port: Type.Integer({ description: "Port of the Kubernetes API." }),
        },
        { description: "Where the cluster's Kubernetes API answers (its load balancer)." },
      ),
    ),
    controlPlane: Type.Optional(
      Struct(
        {
          desired: Type.Integer({ description: "Control-plane machines wanted." }),
          ready: Type.Integer({ description: "Control-plane machines whose node is Ready." }),
          updated: Type.Optional(Type.Integer({ description: "Control-plane machines Ready at the desired version." })),
          replicas: Type.Optional(Type.Integer({ description: "Control-plane machines that exist, those being removed included." })),
          remediation: Type.Optional(
            Struct(
              {
                attempts: Type.Integer({ minimum: 0, description: "Failed control-plane machines replaced since every one was last Ready; each waits longer (10 s doubling to 5 min)." }),
                lastTime: Type.String({ description: "When the last failed control-plane machine was replaced." }),
              },
              { description: "Replacements of failed control-plane machines, for their backoff." },
            ),
          ),
        },
        { description: "Control-plane machine counts." },
      ),
    ),
    workers: Type.Optional(
      Struct(
        {
          desired: Type.Integer({ description: "Worker machines wanted, over all pools." }),
          ready: Type.Integer({ description: "Worker machines whose node is Ready." }),
          updated: Type.Optional(Type.Integer({ description: "Worker machines Ready and made from their pool's current template." })),
          replicas: Type.Optional(Type.Integer({ description: "Worker machines that exist, those being removed included." })),
        },
        { description: "Worker machine counts." },
      ),
    ),
    kubeconfigSecretName: Type.Optional(
      Type.String({ description: "Secret (key value) holding an admin kubeconfig: <cluster>-kubeconfig." }),
    ),
    operation: Type.Optional(Type.String({ description: "Name of the Operation in progress." })),
    steps: Type.Optional(Type.Array(ClusterStep, { description: "Journal of the steps taken, oldest first." })),
    version: Type.Optional(Type.String({ description: "Kubernetes version observed on the control plane: the oldest its nodes' kubelets report." })),
    nodes: Type.Optional(
      Type.Array(
        Struct(
          {
            name: Type.String({ description: "Name of the node." }),
            role: Type.String({ description: "control-plane or worker." }),
            machine: Type.String({ description: "The Machine behind the node." }),
            ready: Type.Boolean({ description: "True if the node is Ready." }),
            version: Type.Optional(Type.String({ description: "The kubelet version the node reports." })),
          },
          { description: "One node of the cluster." },
        ),
        { description: "The cluster's nodes, each with the machine behind it (nodes whose machine is gone are dropped)." },
      ),
    ),
    lastUpdated: Type.Optional(Type.String({ description: "When the spec last changed (the reconcile that first saw its generation)." })),
    addons: Type.Optional(Type.Array(ClusterAddonStatus, { description: "The addons installed on the cluster (written by the addon controller; addons gone are dropped)." })),
    services: Type.Optional(Type.Array(ClusterServiceStatus, { description: "User-facing services of its addons, reachable through Slipway." })),
    template: Type.Optional(
      Struct(
        {
          name: Type.String({ description: "The ClusterTemplate the cluster was made from." }),
          kubernetesVersion: Type.String({ description: "The Kubernetes version the cluster runs from it." }),
        },
        { description: "The template the cluster was made from and the version it runs." },
      ),
    ),
  },
  { description: "The observed state of the cluster." },
);
export type ClusterStatus = Static<typeof ClusterStatusSchema>;

export const ClusterSchema = objectSchema(SLIPWAY_API_VERSION, "Cluster", "A Kubernetes cluster across clouds.", {
  spec: ClusterSpecSchema,
  status: Type.Optional(ClusterStatusSchema),
});
export type ClusterObject = ObjectOf<typeof ClusterSchema> & { spec: ClusterSpec };

/** Whether the cluster was registered by its kubeconfig rather than built by Slipway. */
export function isRegistered(cluster: { spec: { registration?: unknown } }): boolean {
  return cluster.spec.registration !== undefined;
}

/** A registered cluster has a kubeconfig and nothing to build; a built one has a control plane. */
function registrationErrors(cluster: ClusterObject, old: ClusterObject | undefined): FieldError[] {
  const spec = cluster.spec as Omit<ClusterSpec, "controlPlane"> & { controlPlane?: ControlPlaneSpec };
  if (old && isRegistered(old) !== isRegistered(cluster)) {
    return [invalid("spec.registration", isRegistered(cluster) ? "set" : "removed", "a cluster cannot change between registered and built: delete it and create it again")];
  }
  if (!isRegistered(cluster)) return spec.controlPlane ? [] : [required("spec.controlPlane", "Required value: a cluster needs a controlPlane, or a registration for a cluster Slipway did not build")];
  const errors: FieldError[] = [];
  if (spec.controlPlane) errors.push(invalid("spec.controlPlane", "set", "a registered cluster's control plane is not Slipway's: give either controlPlane or registration"));
  if ((spec.workers ?? []).length > 0) errors.push(invalid("spec.workers", `${spec.workers!.length} pool(s)`, "a registered cluster's machines are not Slipway's: it has no worker pools"));
  return errors;
}

const VERSION = /^v1\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;

export function versionErrors(version: string | undefined): FieldError[] {
  if (version === undefined) return [];
  const field = "spec.kubernetesVersion";
  const match = VERSION.exec(version);
  if (!match) return [invalid(field, version, "must look like v1.<minor>.<patch>, e.g. v1.31.2")];
  const minor = Number(match[1]);
  const { min, max } = SUPPORTED_KUBERNETES_MINORS;
  if (minor < min || minor > max) return [invalid(field, version, `unsupported version; supported are v1.${min} to v1.${max}`)];
  return [];
}

const NETWORK_RANGES = ["podCIDR", "serviceCIDR", "nodeCIDR"] as const;

export function networkErrors(network: ClusterSpec["network"]): FieldError[] {
  if (!network) return [];
  const errors: FieldError[] = [];
  const parsed: { field: string; text: string; cidr: Cidr }[] = [];
  for (const key of NETWORK_RANGES) {
    const text = network[key];
    if (text === undefined) continue;
    const field = `spec.network.${key}`;
    try {
      parsed.push({ field, text, cidr: parseCidr(text) });
    } catch (error) {
      if (!(error instanceof InvalidCidrError)) throw error;
      errors.push(invalid(field, text, error.detail));
    }
  }
  for (const [i, a] of parsed.entries()) {
    for (const b of parsed.slice(i + 1)) {
      if (cidrsOverlap(a.cidr, b.cidr)) errors.push(invalid(b.field, b.text, `overlaps ${a.field} (${a.text})`));
    }
  }
  const service = parsed.find((p) => p.field === "spec.network.serviceCIDR");
  if (service && service.cidr.prefix < 12) {
    errors.push(invalid(service.field, service.text, "must be /12 or smaller (the API server allocates at most 2^20 service addresses)"));
  }
  const pod = parsed.find((p) => p.field === "spec.network.podCIDR");
  if (pod && pod.cidr.prefix > 24) {
    errors.push(invalid(pod.field, pod.text, "must be /24 or larger (each node gets a /24 of pod addresses)"));
  }
  if (network.serviceDomain !== undefined) {
    for (const label of network.serviceDomain.split(".")) {
      const labelErrors = dnsLabelErrors("spec.network.serviceDomain", label);
      if (labelErrors.length > 0) {
        errors.push(invalid("spec.network.serviceDomain", network.serviceDomain, "must be a lowercase DNS domain, e.g. cluster.local"));
        break;
      }
    }
  }
  return errors;
}

function workerErrors(workers: WorkerPoolSpec[]): FieldError[] {
  const errors: FieldError[] = [];
  const names = new Set<string>();
  workers.forEach((pool, i) => {
    const field = `spec.workers[${i}]`;
    errors.push(...dnsLabelErrors(`${field}.name`, pool.name));
    if (names.has(pool.name)) errors.push(duplicate(`${field}.name`, pool.name));
    names.add(pool.name);
    errors.push(
      ...nodeLabelErrors(`${field}.labels`, pool.labels),
      ...taintErrors(`${field}.taints`, pool.taints),
      ...rolloutStrategyErrors(`${field}.strategy`, pool.strategy),
      ...maxUnhealthyErrors(`${field}.maxUnhealthy`, pool.maxUnhealthy),
      ...scaleSetErrors(field, pool),
    );
  });
  return errors;
}

/** A scale set's limits hold the pool's replicas (the defaults are the SimMachinePool's: 0 and 100). */
function scaleSetErrors(field: string, pool: WorkerPoolSpec): FieldError[] {
  if (!pool.scaleSet) return [];
  const { minSize = 0, maxSize = 100 } = pool.scaleSet;
  if (minSize > maxSize) return [invalid(`${field}.scaleSet.minSize`, minSize, `must not exceed spec.workers[].scaleSet.maxSize (${maxSize})`)];
  const replicas = pool.replicas ?? 1;
  if (replicas < minSize || replicas > maxSize) return [invalid(`${field}.replicas`, replicas, `must be within the pool's scale set limits, scaleSet.minSize..scaleSet.maxSize (${minSize}..${maxSize})`)];
  return [];
}

/** Every machine group needs a machine type: its own, or its template's (filled in at admission). */
function machineTypeErrors(spec: ClusterSpec): FieldError[] {
  const why = spec.templateName
    ? `Required value: template ${spec.templateName} names no default machine type for it, so the cluster must`
    : "Required value: name a machine type, or a template (spec.templateName) whose machineTypes give one";
  const missing = [
    ...(spec.controlPlane.machineType === undefined ? ["spec.controlPlane.machineType"] : []),
    ...(spec.workers ?? []).flatMap((w, i) => (w.machineType === undefined ? [`spec.workers[${i}].machineType`] : [])),
  ];
  return missing.map((field) => required(field, why));
}

/** Why control-plane machines cannot take another change: they are rolled only for an upgrade. */
const CONTROL_PLANE_NOT_ROLLED = "control-plane machines are rolled only for a Kubernetes upgrade, so a change would never be applied";

/**
 * What an update may not change. Every other field is applied by the controllers: kubernetesVersion
 * (an upgrade, within the version-skew rules of versions.ts: the control plane rolled one machine at a
 * time, then the workers), controlPlane.replicas (machines joined or removed one at a time), workers (pools added, removed, scaled, and rolled for
 * machineType, image, labels and taints), paused. The fields below would be accepted and then ignored,
 * so they are refused, saying why.
 */
function immutableFieldErrors(cluster: ClusterObject, old: ClusterObject): FieldError[] {
  const spec = cluster.spec;
  const was = old.spec;
  const errors = [
    ...upgradeErrors("spec.kubernetesVersion", spec.kubernetesVersion, oldestVersion([was.kubernetesVersion, old.status?.version])),
    ...immutable("spec.controlPlane.connection", spec.controlPlane.connection, was.controlPlane.connection, "the control plane cannot move to another connection"),
    ...immutable("spec.controlPlane.machineType", spec.controlPlane.machineType, was.controlPlane.machineType, CONTROL_PLANE_NOT_ROLLED),
    ...immutable("spec.controlPlane.image", spec.controlPlane.image, was.controlPlane.image, CONTROL_PLANE_NOT_ROLLED),
    ...immutable("spec.leaseName", spec.leaseName, was.leaseName, "a cluster's machines run on the lease it was made with"),
    // Another template is an upgrade (its admission checks it is one of the template's upgradeTargets); a
    // cluster made without one takes none later, and keeps the one it has.
    ...((spec.templateName === undefined) !== (was.templateName === undefined)
      ? immutable("spec.templateName", spec.templateName, was.templateName, "a cluster is made from a template or not; it may move to one of its template's upgradeTargets")
      : []),
    ...immutable("spec.realmName", spec.realmName, was.realmName, "a cluster's API server trusts the realm it was made with"),
    ...immutable("spec.apiServer.visibility", apiVisibilityOf(spec), apiVisibilityOf(was), "the API's load balancer, names and certificates are made for it when the cluster is made"),
  ];
  for (const key of ["cni", ...NETWORK_RANGES, "serviceDomain"] as const) {
    errors.push(...immutable(`spec.network.${key}`, spec.network?.[key], was.network?.[key], "a cluster's network is fixed when it is made"));
  }
  (spec.workers ?? []).forEach((pool, i) => {
    const before = was.workers?.find((p) => p.name === pool.name);
    if (before) {
      errors.push(
        ...immutable(`spec.workers[${i}].connection`, pool.connection, before.connection, "a pool cannot move to another connection; add a pool there and remove this one"),
      );
      const why = "a pool's scale set is chosen when the pool is made; add a pool and remove this one";
      const limits = (["minSize", "maxSize"] as const).flatMap((k) => immutable(`spec.workers[${i}].scaleSet.${k}`, pool.scaleSet?.[k], before.scaleSet?.[k], why));
      errors.push(...limits);
      if (limits.length === 0) errors.push(...immutable(`spec.workers[${i}].scaleSet`, pool.scaleSet !== undefined, before.scaleSet !== undefined, why));
    }
  });
  return errors;
}

/** How the cluster's API is exposed (public unless the spec says otherwise). */
export function apiVisibilityOf(spec: Pick<ClusterSpec, "apiServer">): ApiVisibility {
  return spec.apiServer?.visibility ?? "public";
}

export function validateCluster(cluster: ClusterObject, old?: ClusterObject): FieldError[] {
  const errors: FieldError[] = [];
  const name = cluster.metadata.name;
  if (name !== undefined) errors.push(...dnsLabelErrors("metadata.name", name, MAX_CLUSTER_NAME_LENGTH));
  const realm = cluster.spec.realmName;
  if (realm !== undefined) {
    errors.push(...(isRegistered(cluster) ? [invalid("spec.realmName", realm, "a registered cluster's API server is not Slipway's to configure")] : dnsLabelErrors("spec.realmName", realm)));
  }
  const registration = registrationErrors(cluster, old);
  if (isRegistered(cluster) && cluster.spec.apiServer) {
    registration.push(invalid("spec.apiServer", "set", "a registered cluster's API server is not Slipway's to expose"));
  }
  if (registration.length > 0 || isRegistered(cluster)) return [...errors, ...registration];
  errors.push(...versionErrors(cluster.spec.kubernetesVersion));
  const replicas = cluster.spec.controlPlane.replicas;
  if (replicas !== undefined && !(CONTROL_PLANE_REPLICAS as readonly number[]).includes(replicas)) {
    errors.push(notSupported("spec.controlPlane.replicas", replicas, CONTROL_PLANE_REPLICAS));
  }
  errors.push(...maxUnhealthyErrors("spec.controlPlane.maxUnhealthy", cluster.spec.controlPlane.maxUnhealthy));
  errors.push(...networkErrors(cluster.spec.network), ...workerErrors(cluster.spec.workers ?? []), ...machineTypeErrors(cluster.spec));
  if (old) errors.push(...immutableFieldErrors(cluster, old));
  return errors;
}

/**
 * A machine group's machine type. Admission fills one in from the cluster's template or refuses the
 * cluster, so every stored cluster has one; "" only for an object built in process without one.
 */
export function machineTypeOf(group: { machineType?: string }): string {
  return group.machineType ?? "";
}

/** Worker machines the spec asks for, over all pools. */
export function desiredWorkers(spec: ClusterSpec): number {
  return (spec.workers ?? []).reduce((sum, pool) => sum + (pool.replicas ?? 1), 0);
}

export const clusterKind: KindDefinition<ClusterObject> = {
  ...slipwayKindBase,
  kind: "Cluster",
  plural: "clusters",
  singular: "cluster",
  shortNames: ["cl"],
  schema: ClusterSchema,
  description: "A Kubernetes cluster: a control plane in one connection and worker pools in any.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the cluster."),
    fieldColumn("PHASE", ".status.phase", "Where the cluster is in its life cycle."),
    computedColumn<ClusterObject>("CONTROL-PLANE", ".status.controlPlane", "Ready/desired control-plane machines.", (c) => {
      const counts = c.status?.controlPlane;
      return counts ? readyOfDesired(counts.ready, counts.desired) : readyOfDesired(0, c.spec.controlPlane?.replicas ?? 1);
    }),
    computedColumn<ClusterObject>("WORKERS", ".status.workers", "Ready/desired worker machines over all pools.", (c) => readyOfDesired(c.status?.workers?.ready, c.status?.workers?.desired ?? desiredWorkers(c.spec))),
    computedColumn<ClusterObject>("VERSION", ".spec.kubernetesVersion", "Kubernetes version (a registered cluster's as observed).", (c) => isRegistered(c) ? c.status?.version : c.spec.kubernetesVersion),
    ageColumn,
    computedColumn<ClusterObject>("ENDPOINT", ".status.controlPlaneEndpoint", "Address of the cluster's Kubernetes API (host:port).", (o) => {
      const endpoint = o.status?.controlPlaneEndpoint;
      return endpoint ? `${endpoint.host}:${endpoint.port}` : undefined;
    }, { priority: 1 }),
    fieldColumn("REASON", ".status.reason", "Why the cluster is failing.", { priority: 1 }),
    fieldColumn("TEMPLATE", ".spec.templateName", "The template the cluster was made from.", { priority: 1 }),
  ],
  defaults(cluster) {
    specDefaults(ClusterSpecSchema)(cluster);
    // A registered cluster runs whatever version it runs: status.version says which.
    if (isRegistered(cluster)) {
      delete cluster.spec.kubernetesVersion;
      delete cluster.spec.network;
    }
  },
  validate: validateCluster,
  strategy: {
    // As a Pod starts Pending: a cluster's phase says something from its create on, before its
    // controller first takes it up (which, with a thousand clusters submitted at once, takes a while).
    prepareForCreate(cluster) {
      cluster.status = { phase: "Pending", message: "waiting for the cluster controller" };
    },
  },
};
