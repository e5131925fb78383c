// RBAC enforced by a server over its own RBAC objects: the authorizer its object service asks, the
// post-write hook that keeps the policy index current from every accepted write of a Role, ClusterRole,
// RoleBinding or ClusterRoleBinding, and the admission plugin that refuses a role or binding granting more
// than its author holds. The index is loaded from the server's store on the first request that needs it
// (members of system:masters never do), so a server with no RBAC traffic reads nothing.
import type { KindDefinition } from "../../api/registry.ts";
import type { AdmissionPlugin, PostWriteHook } from "../admission.ts";
import type { ObjectService } from "../objects.ts";
import { checkRbacWrite } from "./escalation.ts";
import { PolicyIndex } from "./policy-index.ts";
import { RbacAuthorizer } from "./rbac.ts";
import { GROUP_MASTERS, RBAC_GROUP, type RbacDecision, type RbacObject, type RequestAttributes } from "./types.ts";

const RBAC_KINDS = new Set(["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]);

function isRbacKind(def: KindDefinition): boolean {
  return def.group === RBAC_GROUP && RBAC_KINDS.has(def.kind);
}

const MASTERS_DECISION: RbacDecision = { allowed: true, reason: `RBAC: allowed as a member of group "${GROUP_MASTERS}"` };

export class ServedRbac {
  readonly rbac: RbacAuthorizer;
  private readonly index = new PolicyIndex();
  private loading: Promise<void> | undefined;
  private objects: ObjectService | undefined;

  constructor() {
    this.rbac = new RbacAuthorizer(this.index);
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
    afterWrite: ({ def, operation, object, previous }) => {
      if (!isRbacKind(def) || this.loading === undefined) return;
      // While the first load is under way its list may or may not include this write: apply it after.
      return this.loading.then(() => {
        // An object held by finalizers is still stored, and still grants what it grants.
        const removed = operation === "DELETE" && (object.metadata.finalizers ?? []).length === 0;
        if (removed) this.index.deleted(object as unknown as RbacObject);
        else if (previous) this.index.updated(previous as unknown as RbacObject, object as unknown as RbacObject);
        else this.index.added(object as unknown as RbacObject);
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

  /** Undefined once the index is loaded; otherwise the load under way (started here if needed). */
  private ready(): Promise<void> | undefined {
    if (this.loaded) return undefined;
    this.loading ??= this.load().then(
      () => {
        this.loaded = true;
      },
      (error: unknown) => {
        this.loading = undefined;
        throw error;
      },
    );
    return this.loading;
  }

  private async load(): Promise<void> {
    const objects = this.objects;
    if (!objects) throw new Error("RBAC is served before its object service is attached");
    for (const def of objects.registry.all()) {
      if (!isRbacKind(def)) continue;
      const list = await objects.list(def, undefined);
      for (const object of list.items) this.index.added(object as unknown as RbacObject);
    }
  }
}
