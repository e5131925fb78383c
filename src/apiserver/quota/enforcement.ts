// ResourceQuota enforced by a server over its own quotas, as kube-apiserver's admission plugin and the
// controller manager's quota controller do it together: the admission plugin charges each create or
// update to the quotas of its namespace (refusing past a limit, with the quota named) and writes their new
// usage before the object is stored, so two writes racing for the last unit cannot both have it; the
// post-write hook recomputes a quota's status from the namespace's objects when the quota's limits change
// and after every write of a kind it counts (deletes included), which gives back what was released and
// corrects a charge whose write was refused later in the chain.
//
// Most namespaces hold no quota, and most writes are in them: which namespaces may hold one is read once
// (a list of every quota) and then learnt from the quota creates this server admits, so a write elsewhere
// reads no quota at all. A namespace stays known once learnt (a quota deleted leaves a list that finds
// none); a new server reads them again. That holds for a server whose store no other server writes quotas
// to (each emulated workload cluster's API); replicas sharing a store would have to watch the quotas too.
import type { KubeObject } from "../../api/meta.ts";
import type { KindDefinition, Registry } from "../../api/registry.ts";
import type { AdmissionPlugin, PostWriteHook, WriteEvent } from "../admission.ts";
import { ConflictError } from "../errors.ts";
import type { ObjectService } from "../objects.ts";
import { admitToQuotas, type QuotaAdmissionRequest } from "./admission.ts";
import type { QuotaCountedObject } from "./evaluators.ts";
import { specHard, type ResourceQuotaLike } from "./quota-object.ts";
import type { GroupResource } from "./resource-names.ts";
import { computeQuotaStatus, trackedKinds } from "./status.ts";

/** How many times a charge is retried when a concurrent write changed the quota first. */
const CHARGE_ATTEMPTS = 8;

function quotaKindOf(registry: Registry): KindDefinition | undefined {
  return registry.byKind("v1", "ResourceQuota");
}

function isQuotaKind(def: KindDefinition): boolean {
  return def.group === "" && def.kind === "ResourceQuota";
}

function tracks(quota: ResourceQuotaLike, def: KindDefinition): boolean {
  return trackedKinds(quota).some((kind) => kind.group === def.group && kind.resource === def.plural);
}

export class QuotaEnforcement {
  /** Per object service, the namespaces that may hold a quota (read once, then learnt from creates). */
  private readonly quotaNamespaces = new WeakMap<ObjectService, Promise<Set<string>>>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  readonly admission: AdmissionPlugin = {
    name: "ResourceQuota",
    validate: async (request) => {
      if (request.operation === "DELETE" || !request.namespace) return;
      const quotaDef = quotaKindOf(request.objects.registry);
      if (!quotaDef) return;
      const withQuotas = await this.namespacesWithQuotas(request.objects, quotaDef);
      // Learnt before the quota is stored, so a write admitted while it is being created already reads it.
      if (isQuotaKind(request.def)) withQuotas.add(request.namespace);
      if (!withQuotas.has(request.namespace)) return;
      const quotaRequest: QuotaAdmissionRequest = {
        operation: request.operation,
        group: request.def.group,
        resource: request.def.plural,
        object: request.object as QuotaCountedObject & { kind?: string },
        ...(request.request.resource.subresource ? { subresource: request.request.resource.subresource } : {}),
        ...(request.oldObject ? { oldObject: request.oldObject as QuotaCountedObject } : {}),
      };
      for (let attempt = 1; ; attempt++) {
        const quotas = (await request.objects.list(quotaDef, request.namespace)).items as ResourceQuotaLike[];
        if (quotas.length === 0) return;
        const charges = admitToQuotas(quotaRequest, quotas, this.now());
        if (request.request.dryRun || charges.length === 0) return;
        try {
          for (const { quota, used } of charges) {
            const status = { ...(quota.status as Record<string, unknown> | undefined), used };
            await request.objects.updateStatus(quotaDef, request.namespace, quota.metadata.name!, { ...quota, status });
          }
          return;
        } catch (error) {
          if (!(error instanceof ConflictError) || attempt >= CHARGE_ATTEMPTS) throw error;
        }
      }
    },
  };

  readonly hook: PostWriteHook = {
    name: "ResourceQuotaStatus",
    afterWrite: (event) => this.afterWrite(event),
  };

  private async afterWrite({ def, operation, object, previous, objects }: WriteEvent): Promise<void> {
    const namespace = object.metadata.namespace;
    if (!namespace) return;
    const quotaDef = quotaKindOf(objects.registry);
    if (!quotaDef) return;
    if (isQuotaKind(def)) {
      const limitsChanged = operation === "CREATE" || (operation === "UPDATE" && JSON.stringify(specHard(previous as ResourceQuotaLike)) !== JSON.stringify(specHard(object as ResourceQuotaLike)));
      if (limitsChanged && !object.metadata.deletionTimestamp) await this.recompute(objects, quotaDef, namespace, object.metadata.name!);
      return;
    }
    if (!(await this.namespacesWithQuotas(objects, quotaDef)).has(namespace)) return;
    const quotas = (await objects.list(quotaDef, namespace)).items as ResourceQuotaLike[];
    for (const quota of quotas) if (tracks(quota, def)) await this.recompute(objects, quotaDef, namespace, quota.metadata.name!);
  }

  /** The namespaces that may hold a quota: those holding one when first asked, and those a quota was created in since. */
  private namespacesWithQuotas(objects: ObjectService, quotaDef: KindDefinition): Promise<Set<string>> {
    let known = this.quotaNamespaces.get(objects);
    if (!known) {
      known = objects.list(quotaDef, undefined).then((list) => new Set(list.items.map((quota) => quota.metadata.namespace ?? "")));
      // A failed read is not kept: the next write reads again.
      known.catch(() => this.quotaNamespaces.delete(objects));
      this.quotaNamespaces.set(objects, known);
    }
    return known;
  }

  /** Writes the quota's status from the objects of its namespace, read after the quota (so a charge made meanwhile is not lost). */
  async recompute(objects: ObjectService, quotaDef: KindDefinition, namespace: string, name: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const quota = (await objects.tryGet(quotaDef, namespace, name)) as (ResourceQuotaLike & KubeObject) | undefined;
      if (!quota || quota.metadata.deletionTimestamp) return;
      const listed = new Map<string, readonly QuotaCountedObject[]>();
      for (const kind of trackedKinds(quota)) {
        const def = kindOf(objects.registry, kind);
        if (def) listed.set(`${kind.group}/${kind.resource}`, (await objects.list(def, namespace)).items);
      }
      const status = computeQuotaStatus(quota, (kind) => listed.get(`${kind.group}/${kind.resource}`), this.now());
      try {
        await objects.updateStatus(quotaDef, namespace, name, { ...quota, status: { ...(quota.status as Record<string, unknown> | undefined), ...status } });
        return;
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= CHARGE_ATTEMPTS) throw error;
      }
    }
  }
}

function kindOf(registry: Registry, kind: GroupResource): KindDefinition | undefined {
  return registry.all().find((def) => def.group === kind.group && def.plural === kind.resource);
}
