// RBAC enforced by a server over its own RBAC objects: the authorizer its object service asks, the
// post-write hook that keeps the policy index current from every accepted write of a Role, ClusterRole,
// RoleBinding or ClusterRoleBinding, and the admission plugin that refuses a role or binding granting more
// than its author holds. The index is loaded from the server's store on the first request that needs it
// (members of system:masters never do), so a server with no RBAC traffic reads nothing. A server whose
// store other replicas write too (the control plane on etcd) also follows the watch of the four kinds,
// so a binding made through another replica applies here as well; each object's resourceVersion keeps a
// late event from undoing a newer write.
import type { KindDefinition } from "../../api/registry.ts";
import type { AdmissionPlugin, PostWriteHook } from "../admission.ts";
import type { ObjectService, ObjectWatch } from "../objects.ts";
import type { KubeObject } from "../../api/meta.ts";
import { checkRbacWrite } from "./escalation.ts";
import { PolicyIndex } from "./policy-index.ts";
import { RbacAuthorizer } from "./rbac.ts";
import { GROUP_MASTERS, RBAC_GROUP, type RbacDecision, type RbacObject, type RequestAttributes } from "./types.ts";

const RBAC_KINDS = new Set(["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]);

function isRbacKind(def: KindDefinition): boolean {
  return def.group === RBAC_GROUP && RBAC_KINDS.has(def.kind);
}

const MASTERS_DECISION: RbacDecision = { allowed: true, reason: `RBAC: allowed as a member of group "${GROUP_MASTERS}"` };

function objectKeyOf(object: KubeObject): string {
  return `${object.kind}/${object.metadata.namespace ?? ""}/${object.metadata.name ?? ""}`;
}

export interface ServedRbacOptions {
  /** Follow the watch of the RBAC kinds (other replicas write the same store). Default: post-write hook only. */
  watch?: boolean;
}

export class ServedRbac {
  readonly rbac: RbacAuthorizer;
  private readonly index = new PolicyIndex();
  private loading: Promise<void> | undefined;
  private objects: ObjectService | undefined;
  /** The resourceVersion last applied per object (kind/namespace/name). */
  private readonly versions = new Map<string, number>();
  private watches: ObjectWatch[] = [];
  private closed = false;

  constructor(private readonly options: ServedRbacOptions = {}) {
    this.rbac = new RbacAuthorizer(this.index);
  }

  /** Stops following the watch. */
  close(): void {
    this.closed = true;
    for (const watch of this.watches.splice(0)) watch.close();
  }

  /** The rules bound to a user in a namespace, once the index is loaded (SelfSubjectRulesReview). */
  async rulesReview(identity: RequestAttributes["identity"], namespace: string): Promise<ReturnType<RbacAuthorizer["rulesReview"]>> {
    await this.ready();
    return this.rbac.rulesReview(identity, namespace);
  }

  /** Applies an object's new state, unless a newer one was applied already; a removal always applies. */
  private apply(object: KubeObject, removed: boolean): void {
    const key = objectKeyOf(object);
    const version = Number(object.metadata.resourceVersion ?? 0);
    const known = this.versions.get(key) ?? -1;
    if (removed) {
      this.versions.set(key, Math.max(known, version));
      this.index.deleted(object as unknown as RbacObject);
      return;
    }
    if (version <= known) return;
    this.versions.set(key, version);
    this.index.added(object as unknown as RbacObject);
  }

  /** The object service whose RBAC objects this serves (set once it exists: the service takes this as its authorizer). */
  attach(objects: ObjectService): void {
    this.objects = objects;
  }

  /** The Authorizer: synchronous for members of system:masters and once the index is loaded. */
  readonly authorizer = {
    authorize: (request: RequestAttributes): RbacDecision | Promise<RbacDecision> => {
      if (request.identity.groups.includes(GROUP_MASTERS)) return MASTERS_DECISION;
      const ready = this.ready();
      return ready ? ready.then(() => this.rbac.authorize(request)) : this.rbac.authorize(request);
    },
  };

  /** Keeps the index current from the server's accepted writes of RBAC objects. */
  readonly hook: PostWriteHook = {
    name: "RbacPolicy",
    afterWrite: ({ def, operation, object }) => {
      if (!isRbacKind(def) || this.loading === undefined) return;
      // While the first load is under way its list may or may not include this write: apply it after.
      return this.loading.then(() => {
        // An object held by finalizers is still stored, and still grants what it grants.
        this.apply(object, operation === "DELETE" && (object.metadata.finalizers ?? []).length === 0);
      });
    },
  };

  /** Refuses a role or binding that grants what its author does not hold (kube-apiserver's escalation check). */
  readonly admission: AdmissionPlugin = {
    name: "RbacEscalation",
    validate: async (request) => {
      if (request.operation === "DELETE" || !isRbacKind(request.def)) return;
      if (request.request.identity.groups.includes(GROUP_MASTERS)) return;
      await this.ready();
      checkRbacWrite(this.rbac, {
        identity: request.request.identity,
        object: request.object as unknown as RbacObject,
        ...(request.oldObject ? { oldObject: request.oldObject as unknown as RbacObject } : {}),
      });
    },
  };

  private loaded = false;
  /** Loads started, so that a load overtaken by a relist knows it. */
  private loads = 0;

  /** Undefined once the index is loaded; otherwise the load under way (started here if needed). */
  private ready(): Promise<void> | undefined {
    if (this.loaded) return undefined;
    if (this.loading) return this.loading;
    // A watch that ends while this load runs starts another load; this one must not then say it is done.
    const generation = ++this.loads;
    const loading = this.load().then(
      () => {
        if (generation === this.loads) this.loaded = true;
        else return this.ready();
      },
      (error: unknown) => {
        if (generation === this.loads) this.loading = undefined;
        throw error;
      },
    );
    this.loading = loading;
    return loading;
  }

  private async load(): Promise<void> {
    const objects = this.objects;
    if (!objects) throw new Error("RBAC is served before its object service is attached");
    for (const def of objects.registry.all()) {
      if (!isRbacKind(def)) continue;
      const list = await objects.list(def, undefined);
      for (const object of list.items) this.apply(object, false);
      if (this.options.watch && !this.closed) {
        const watch = await objects.watch(
          def,
          undefined,
          { resourceVersion: list.metadata.resourceVersion },
          (event) => {
            if (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED") this.apply(event.object, event.type === "DELETED");
          },
          () => this.relist(),
        );
        this.watches.push(watch);
      }
    }
  }

  /** A watch ended (its history was compacted): the next request loads everything again. */
  private relist(): void {
    for (const watch of this.watches.splice(0)) watch.close();
    if (this.closed) return;
    this.index.clear();
    this.versions.clear();
    this.loaded = false;
    this.loading = undefined;
    this.loads++;
  }
}
