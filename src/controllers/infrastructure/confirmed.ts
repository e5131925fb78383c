// What an Infrastructure's reconciles saw ready in the cloud, so that the reconciles soon after — a
// requeue while the load balancer provisions, a pause ending — do not ask the cloud for each resource
// again. What is remembered serves only while the Infrastructure and its Connection are exactly as they
// were (the same resourceVersions: any change of either, an annotation even, reads everything again),
// and only for `ttlMs` after each resource was read: the informer's resync, minutes later, reads every
// resource again and so finds one lost behind the controller's back. Nothing of it is written: another
// replica, or this one restarted, reads again.
import type { ConnectionObject, InfrastructureObject } from "../../api/kinds.ts";
import { BoundedCache } from "../../api/bounded-cache.ts";
import type { InfrastructureResourceKind, ResourceInfo } from "../../providers/provider.ts";

interface Sighting {
  info: ResourceInfo;
  /** When the cloud said it was ready (the clock's epoch ms). */
  at: number;
}

interface Memory {
  /** The Infrastructure's resourceVersion the sightings hold for: the one read, or the one its status write made. */
  version: string;
  connectionVersion: string;
  sightings: Map<string, Sighting>;
}

/** What one reconcile may take from memory, and tells it. */
export interface Sightings {
  /** The resource as last seen ready, if that still holds; undefined means: ask the cloud. */
  ready(kind: InfrastructureResourceKind, id: string): ResourceInfo | undefined;
  /** What the cloud just answered about a resource: remembered if ready, forgotten otherwise. */
  saw(kind: InfrastructureResourceKind, info: ResourceInfo): void;
}

const keyOf = (kind: InfrastructureResourceKind, id: string) => `${kind}/${id}`;

export class ConfirmedResources {
  private readonly memories: BoundedCache<Memory>;

  /** `ttlMs` 0 remembers nothing: every reconcile asks the cloud for every resource. */
  constructor(
    private readonly ttlMs: number,
    limit = 16_384,
  ) {
    this.memories = new BoundedCache(limit);
  }

  /** The sightings a reconcile of `infra` (as read, with its Connection as cached) may use, at `now`. */
  of(infra: InfrastructureObject, connection: ConnectionObject | undefined, now: number): Sightings {
    const uid = infra.metadata.uid ?? "";
    const version = infra.metadata.resourceVersion ?? "";
    const connectionVersion = connection?.metadata.resourceVersion ?? "";
    let memory = this.memories.get(uid);
    if (!memory || memory.version !== version || memory.connectionVersion !== connectionVersion) {
      memory = { version, connectionVersion, sightings: new Map() };
      if (this.ttlMs > 0 && uid) this.memories.set(uid, memory);
    }
    const { sightings } = memory;
    return {
      ready: (kind, id) => {
        const sighting = sightings.get(keyOf(kind, id));
        if (!sighting) return undefined;
        if (now - sighting.at < this.ttlMs) return sighting.info;
        sightings.delete(keyOf(kind, id));
        return undefined;
      },
      saw: (kind, info) => {
        if (info.state === "ready") sightings.set(keyOf(kind, info.id), { info, at: now });
        else sightings.delete(keyOf(kind, info.id));
      },
    };
  }

  /** The reconcile that read `previous` wrote `written`: what it saw holds for the version it made. */
  written(previous: InfrastructureObject, written: InfrastructureObject): void {
    const memory = this.memories.get(previous.metadata.uid ?? "");
    if (memory && memory.version === previous.metadata.resourceVersion) memory.version = written.metadata.resourceVersion ?? "";
  }

  /** Drops what is remembered of an Infrastructure (it is being deleted). */
  forget(infra: InfrastructureObject): void {
    this.memories.delete(infra.metadata.uid ?? "");
  }
}
