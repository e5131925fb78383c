// The apply engine: makes a server hold what a set of manifests declares. Each object is created when
// absent and otherwise brought to its declared configuration by an apply strategy (client-side apply
// today, a three-way merge kubectl shares; server-side apply is a second strategy behind the same
// interface); a set is applied in dependency order (namespaces, then definitions, then what uses them);
// objects a set applied before and no longer declares can be pruned, found by labels the caller
// chooses. The `slipway apply` command, the controllers (the network plugin) and the resource
// synchroniser all apply through it.
import type { KubeClient, KubeObject, WriteOptions } from "./client.ts";
import { clientSideApply } from "./client-side-apply.ts";
import type { ApiResource } from "./discovery.ts";
import { KubeNotFoundError, KubeUnauthorizedError, KubeUnreachableError } from "./errors.ts";

export type ApplyAction = "created" | "configured" | "unchanged";

export interface ApplyResult<T> {
  action: ApplyAction;
  /** The object as the server stored it. */
  object: T;
}

/** Where one object lives on the server. */
export interface ApplyTarget {
  resource: ApiResource;
  /** Path of the object's collection (in its namespace). */
  collection: string;
  /** Path of the object. */
  path: string;
}

export interface StrategyOptions extends WriteOptions {
  /** Who makes the change: recorded by the server (`fieldManager`); server-side apply requires one. */
  fieldManager: string;
}

/** How one object is brought to its declared configuration. */
export interface ApplyStrategy {
  readonly name: string;
  /** Creates or updates the object at `target`; `desired` is complete (namespace set, no status or server fields). */
  apply<T extends KubeObject>(client: KubeClient, target: ApplyTarget, desired: KubeObject, options: StrategyOptions): Promise<ApplyResult<T>>;
  /** Whether a live object was applied by this strategy: prune deletes only those. */
  appliedBy(live: KubeObject): boolean;
}

export interface ApplierOptions extends WriteOptions {
  /** Default client-side apply. */
  strategy?: ApplyStrategy;
  /** Default "slipway". */
  fieldManager?: string;
  /** Namespace of namespaced objects that name none (default the client's). */
  namespace?: string;
  /** Refuse an object declared in a namespace other than `namespace` (a namespace asked for explicitly). */
  enforceNamespace?: boolean;
}

/** An object as a set names it. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  /** Set for namespaced objects once the server's resource is known. */
  namespace?: string;
  name: string;
}

/** What happened to one object of a set. */
export type ApplyOutcome =
  | { ref: ObjectRef; resource: ApiResource; action: ApplyAction | "pruned"; object?: KubeObject; error?: undefined }
  | { ref: ObjectRef; resource?: ApiResource; action?: undefined; object?: undefined; error: Error };

export interface PruneOptions {
  /**
   * Labels that mark the set's objects: put on every object applied, and the selector by which objects
   * applied before are found. Choose them to name the set's owner (e.g. `slipway.dev/resourcesync`).
   */
  labels: Record<string, string>;
  /** Kinds that may still hold objects of the set beyond the kinds it now declares (those it held before). */
  kinds?: { apiVersion: string; kind: string }[];
}

export interface ApplySetOptions {
  prune?: PruneOptions;
  /** Stop at the first object that fails and throw its error (default: record it and go on). */
  failFast?: boolean;
  /** Told about each object as it is done, in order. */
  onOutcome?: (outcome: ApplyOutcome) => void;
}

export interface ApplyReport {
  outcomes: ApplyOutcome[];
  /** The outcomes that failed. */
  failed: Extract<ApplyOutcome, { error: Error }>[];
}

/** The kind has no resource on the server. */
export class UnknownKindError extends Error {
  override name = "UnknownKindError";
}

/** An object declared in another namespace than the one asked for. */
export class NamespaceMismatchError extends Error {
  override name = "NamespaceMismatchError";
}

/**
 * The order in which kinds are applied (as Helm installs them): namespaces first, then definitions
 * and what others refer to (policies, accounts, configuration, custom resource definitions, roles),
 * then workloads. Kinds not listed (custom resources among them) come last; objects of one rank
 * keep the set's order.
 */
export const APPLY_ORDER: readonly string[] = [
  "Namespace",
  "CustomResourceDefinition",
  "PriorityClass",
  "NetworkPolicy",
  "ResourceQuota",
  "LimitRange",
  "PodDisruptionBudget",
  "ServiceAccount",
  "Secret",
  "ConfigMap",
  "StorageClass",
  "PersistentVolume",
  "PersistentVolumeClaim",
  "ClusterRole",
  "ClusterRoleBinding",
  "Role",
  "RoleBinding",
  "Service",
  "DaemonSet",
  "Pod",
  "ReplicationController",
  "ReplicaSet",
  "Deployment",
  "HorizontalPodAutoscaler",
  "StatefulSet",
  "Job",
  "CronJob",
  "IngressClass",
  "Ingress",
  "APIService",
];

function rank(kind: string): number {
  const index = APPLY_ORDER.indexOf(kind);
  return index < 0 ? APPLY_ORDER.length : index;
}

/** The objects in the order they are applied (a stable sort by kind). */
export function applyOrder<T extends { kind: string }>(objects: readonly T[]): T[] {
  return objects.map((object, index) => ({ object, index })).sort((a, b) => rank(a.object.kind) - rank(b.object.kind) || a.index - b.index).map(({ object }) => object);
}

/** Metadata the server owns: a manifest read back from the server carries them, an apply never sends them. */
const SERVER_METADATA = ["uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"];

/** Errors that say the server cannot be used at all: every other object would fail alike. */
function isServerWide(error: unknown): boolean {
  return error instanceof KubeUnreachableError || error instanceof KubeUnauthorizedError;
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

function selectorOf(labels: Record<string, string>): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) throw new TypeError("prune needs at least one label to find the set's objects by");
  for (const [key, value] of entries) {
    if (!LABEL_KEY.test(key)) throw new TypeError(`prune label key "${key}" is not a valid label key`);
    if (!LABEL_VALUE.test(value)) throw new TypeError(`prune label ${key}: "${value}" is not a valid label value`);
  }
  return entries.map(([key, value]) => `${key}=${value}`).join(",");
}

function refKey(group: string, kind: string, namespace: string | undefined, name: string): string {
  return `${group}/${kind}/${namespace ?? ""}/${name}`;
}

export class Applier {
  private readonly strategy: ApplyStrategy;
  private readonly options: StrategyOptions;
  private readonly namespace: string;

  constructor(
    private readonly client: KubeClient,
    private readonly settings: ApplierOptions = {},
  ) {
    this.strategy = settings.strategy ?? clientSideApply;
    this.namespace = settings.namespace ?? client.namespace;
    this.options = {
      fieldManager: settings.fieldManager ?? "slipway",
      ...(settings.dryRun ? { dryRun: true } : {}),
      ...(settings.fieldValidation ? { fieldValidation: settings.fieldValidation } : {}),
    };
  }

  /** Applies one object; throws what went wrong. */
  async apply<T extends KubeObject = KubeObject>(object: KubeObject): Promise<ApplyResult<T>> {
    const { resource, desired } = await this.prepare(object);
    return this.applyPrepared<T>(resource, desired);
  }

  /**
   * Applies a set in dependency order, then (with `prune`) deletes what the set applied before and no
   * longer declares. An object that fails is recorded and the rest still applied (unless `failFast`);
   * a server that cannot be reached or refuses the credentials ends it all with that error.
   */
  async applyAll(objects: readonly KubeObject[], options: ApplySetOptions = {}): Promise<ApplyReport> {
    const report: ApplyReport = { outcomes: [], failed: [] };
    const record = (outcome: ApplyOutcome) => {
      report.outcomes.push(outcome);
      if (outcome.error) report.failed.push(outcome);
      options.onOutcome?.(outcome);
      if (outcome.error && options.failFast) throw outcome.error;
    };
    const selector = options.prune ? selectorOf(options.prune.labels) : undefined;
    const declared = new Set<string>();
    const resources = new Map<string, ApiResource>();
    for (const object of applyOrder(objects)) {
      const labelled = options.prune ? withLabels(object, options.prune.labels) : object;
      let prepared: { resource: ApiResource; desired: KubeObject } | undefined;
      try {
        prepared = await this.prepare(labelled);
        const { resource, desired } = prepared;
        declared.add(refKey(resource.group, resource.kind, desired.metadata.namespace, desired.metadata.name!));
        resources.set(`${resource.group}/${resource.name}`, resource);
        const result = await this.applyPrepared(resource, desired);
        record({ ref: refOf(desired), resource, action: result.action, object: result.object });
      } catch (error) {
        if (isServerWide(error)) throw error;
        // Still declared (and so not pruned), though it could not be applied now.
        if (prepared) declared.add(refKey(prepared.resource.group, prepared.resource.kind, prepared.desired.metadata.namespace, prepared.desired.metadata.name!));
        record({ ref: refOf(prepared?.desired ?? object), ...(prepared ? { resource: prepared.resource } : {}), error: asError(error) });
      }
    }
    if (options.prune && selector !== undefined) {
      for (const extra of options.prune.kinds ?? []) {
        const resource = await this.client.resource(extra.apiVersion, extra.kind).catch((error: unknown) => {
          // A kind the server no longer offers holds nothing to prune.
          if (error instanceof KubeNotFoundError) return undefined;
          throw error;
        });
        if (resource) resources.set(`${resource.group}/${resource.name}`, resource);
      }
      await this.prune([...resources.values()], selector, declared, record);
    }
    return report;
  }

  /** Deletes the objects of the given resources that carry the set's labels and are no longer declared. */
  private async prune(resources: ApiResource[], selector: string, declared: Set<string>, record: (outcome: ApplyOutcome) => void): Promise<void> {
    const stale: { resource: ApiResource; object: KubeObject }[] = [];
    for (const resource of resources) {
      if (!resource.verbs.includes("list") || !resource.verbs.includes("delete")) continue;
      const collection = await this.client.resourcePath({ apiVersion: resource.apiVersion, kind: resource.kind });
      for (const object of await this.client.listAll(collection, { labelSelector: selector })) {
        const { name, namespace, deletionTimestamp } = object.metadata;
        if (!name || deletionTimestamp) continue;
        if (declared.has(refKey(resource.group, resource.kind, resource.namespaced ? namespace : undefined, name))) continue;
        if (!this.strategy.appliedBy(object)) continue;
        stale.push({ resource, object: { ...object, apiVersion: resource.apiVersion, kind: resource.kind } });
      }
    }
    // Dependents before what they depend on: the reverse of the apply order.
    for (const { resource, object } of applyOrder(stale.map((s) => ({ ...s, kind: s.resource.kind }))).reverse()) {
      const ref = refOf(object);
      try {
        const path = await this.client.resourcePath({ apiVersion: resource.apiVersion, kind: resource.kind, ...(ref.namespace ? { namespace: ref.namespace } : {}), name: ref.name });
        await this.client.delete(path, { propagationPolicy: "Background" });
        record({ ref, resource, action: "pruned", object });
      } catch (error) {
        if (error instanceof KubeNotFoundError) continue;
        if (isServerWide(error)) throw error;
        record({ ref, resource, error: asError(error) });
      }
    }
  }

  /** The object's resource, and the object as it is sent: in its namespace, without status or server-owned metadata. */
  private async prepare(object: KubeObject): Promise<{ resource: ApiResource; desired: KubeObject }> {
    const name = object.metadata?.name;
    if (!name) throw new TypeError(`apply needs metadata.name (${object.kind})`);
    const resource = await this.client.resource(object.apiVersion, object.kind).catch((error: unknown) => {
      if (!(error instanceof KubeNotFoundError)) throw error;
      throw new UnknownKindError(`${object.kind} "${name}": the server has no kind ${object.kind} in ${object.apiVersion}`, { cause: error });
    });
    const declared = object.metadata.namespace;
    if (resource.namespaced && this.settings.enforceNamespace && declared !== undefined && declared !== this.namespace) {
      throw new NamespaceMismatchError(`${object.kind} "${name}" is declared in namespace ${declared}, not ${this.namespace}`);
    }
    const { status: _status, ...rest } = object;
    const metadata: KubeObject["metadata"] = { ...object.metadata };
    for (const field of SERVER_METADATA) delete metadata[field];
    if (resource.namespaced) metadata.namespace = declared ?? this.namespace;
    else delete metadata.namespace;
    return { resource, desired: { ...rest, metadata } };
  }

  private async applyPrepared<T extends KubeObject>(resource: ApiResource, desired: KubeObject): Promise<ApplyResult<T>> {
    const namespace = desired.metadata.namespace;
    const address = { apiVersion: desired.apiVersion, kind: resource.kind, ...(namespace === undefined ? {} : { namespace }) };
    const collection = await this.client.resourcePath(address);
    const path = await this.client.resourcePath({ ...address, name: desired.metadata.name! });
    return this.strategy.apply<T>(this.client, { resource, collection, path }, desired, this.options);
  }
}

function withLabels(object: KubeObject, labels: Record<string, string>): KubeObject {
  return { ...object, metadata: { ...object.metadata, labels: { ...object.metadata?.labels, ...labels } } };
}

function refOf(object: KubeObject): ObjectRef {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    ...(object.metadata?.namespace === undefined ? {} : { namespace: object.metadata.namespace }),
    name: object.metadata?.name ?? "",
  };
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
