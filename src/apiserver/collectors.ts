// Background work the API server does on its own, as Kubernetes' controller manager would:
// garbage collection of dependents through ownerReferences (background, foreground and orphan
// propagation) and emptying terminating namespaces. It watches every object once and keeps an index of
// owners, so finding an object's dependents costs a lookup, not a scan.
import type { Logger } from "pino";
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import type { Watch, WatchEvent } from "../store/store.ts";
import { FINALIZER_FOREGROUND, FINALIZER_ORPHAN, storedHead, type ObjectService } from "./objects.ts";
import { objectKey, REGISTRY_ROOT, StorageLayout } from "./storage-keys.ts";
import { deleteIfPresent } from "../api/presence.ts";

interface Indexed {
  def: KindDefinition;
  namespace?: string;
  name: string;
  uid: string;
  owners: string[];
  /** Set while the object waits for its dependents (foreground) or for orphaning. */
  pending?: "foreground" | "orphan";
  terminatingNamespace: boolean;
}

type Job = { type: "owner-gone"; uid: string } | { type: "finalize"; key: string } | { type: "namespace"; name: string };

const RETRY_MS = 500;

export class Collectors {
  private readonly byKey = new Map<string, Indexed>();
  private readonly keyByUid = new Map<string, string>();
  private readonly dependents = new Map<string, Set<string>>();
  private readonly terminating = new Set<string>();
  private readonly queue = new Map<string, Job>();
  private running = false;
  private stopped = false;
  private watch?: Watch;
  private readonly timers = new Set<NodeJS.Timeout>();
  private idleWaiters: (() => void)[] = [];
  private readonly layout: StorageLayout;

  constructor(
    private readonly objects: ObjectService,
    private readonly log: Logger,
  ) {
    this.layout = new StorageLayout(objects.registry);
  }

  async start(): Promise<void> {
    const revision = await this.loadIndex();
    this.watch = this.objects.store.watch(REGISTRY_ROOT, {
      afterRevision: revision,
      onEvent: (e) => this.onEvent(e),
      onError: (error) => {
        if (this.stopped) return;
        this.log.warn({ err: error.message }, "collector watch failed; rebuilding the index");
        this.watch?.close();
        void this.restart();
      },
    });
    // Work left over from before a restart.
    for (const [key, entry] of this.byKey) {
      if (entry.owners.length > 0 && entry.owners.every((u) => !this.keyByUid.has(u))) this.enqueue({ type: "owner-gone", uid: entry.owners[0]! });
      if (entry.pending) this.enqueue({ type: "finalize", key });
      if (entry.terminatingNamespace) this.enqueue({ type: "namespace", name: entry.name });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watch?.close();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** Resolves when no work is queued (for tests and orderly shutdown). */
  idle(): Promise<void> {
    if (!this.running && this.queue.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async restart(): Promise<void> {
    if (this.stopped) return;
    this.byKey.clear();
    this.keyByUid.clear();
    this.dependents.clear();
    this.terminating.clear();
    await this.start();
  }

  private async loadIndex(): Promise<number> {
    let revision = 0;
    for (const def of this.objects.registry.all()) {
      let token: string | undefined;
      do {
        const list = await this.objects.list(def, undefined, { limit: 1000, continue: token });
        revision = Math.max(revision, Number(list.metadata.resourceVersion));
        for (const o of list.items) {
          if (def.group === "" && def.kind === "Event" && !o.metadata.ownerReferences && !o.metadata.finalizers) continue;
          this.index(objectKey(def, o.metadata.namespace, o.metadata.name!), def, o);
        }
        token = list.metadata.continue;
      } while (token);
    }
    return Math.max(revision, await this.objects.store.revision());
  }

  private index(key: string, def: KindDefinition, object: KubeObject): Indexed {
    this.unindex(key);
    const finalizers = object.metadata.finalizers ?? [];
    const deleting = !!object.metadata.deletionTimestamp;
    const entry: Indexed = {
      def,
      namespace: object.metadata.namespace,
      name: object.metadata.name!,
      uid: object.metadata.uid!,
      owners: (object.metadata.ownerReferences ?? []).map((r) => r.uid),
      pending: deleting && finalizers.includes(FINALIZER_ORPHAN) ? "orphan" : deleting && finalizers.includes(FINALIZER_FOREGROUND) ? "foreground" : undefined,
      terminatingNamespace: def.group === "" && def.kind === "Namespace" && deleting,
    };
    this.byKey.set(key, entry);
    this.keyByUid.set(entry.uid, key);
    if (entry.terminatingNamespace) this.terminating.add(entry.name);
    for (const owner of entry.owners) {
      let set = this.dependents.get(owner);
      if (!set) this.dependents.set(owner, (set = new Set()));
      set.add(key);
    }
    return entry;
  }

  private unindex(key: string): Indexed | undefined {
    const entry = this.byKey.get(key);
    if (!entry) return undefined;
    this.byKey.delete(key);
    if (this.keyByUid.get(entry.uid) === key) this.keyByUid.delete(entry.uid);
    if (entry.terminatingNamespace) this.terminating.delete(entry.name);
    for (const owner of entry.owners) {
      const set = this.dependents.get(owner);
      set?.delete(key);
      if (set && set.size === 0) this.dependents.delete(owner);
    }
    return entry;
  }

  private onEvent(event: WatchEvent): void {
    const key = event.type === "put" ? event.kv.key : event.key;
    const def = this.layout.parse(key)?.def;
    if (!def) return;
    if (event.type === "put") {
      const indexed = this.byKey.get(key);
      if (!indexed && unremarkable(def, event.kv.value)) return;
      // Most updates are status writes: what the index holds of the object is as it was, and it was acted on then.
      if (indexed && event.prev && !mayChangeIndex(def, event.kv.value, event.prev.value)) return;
      const entry = this.index(key, def, JSON.parse(event.kv.value) as KubeObject);
      if (entry.pending) this.enqueue({ type: "finalize", key });
      if (entry.terminatingNamespace) this.enqueue({ type: "namespace", name: entry.name });
      if (entry.owners.length > 0 && entry.owners.every((u) => !this.keyByUid.has(u))) this.enqueue({ type: "owner-gone", uid: entry.owners[0]! });
      return;
    }
    const gone = this.unindex(key);
    if (!gone) return;
    if (this.dependents.has(gone.uid)) this.enqueue({ type: "owner-gone", uid: gone.uid });
    // An owner waiting in foreground deletion may now be free to go; a namespace may now be empty.
    for (const owner of gone.owners) {
      const ownerKey = this.keyByUid.get(owner);
      if (ownerKey && this.byKey.get(ownerKey)?.pending) this.enqueue({ type: "finalize", key: ownerKey });
    }
    if (gone.namespace && this.terminating.has(gone.namespace)) this.enqueue({ type: "namespace", name: gone.namespace });
  }

  private enqueue(job: Job): void {
    if (this.stopped) return;
    const id = job.type === "owner-gone" ? `o:${job.uid}` : job.type === "finalize" ? `f:${job.key}` : `n:${job.name}`;
    this.queue.set(id, job);
    if (!this.running) void this.drain();
  }

  private later(job: Job): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.enqueue(job);
    }, RETRY_MS);
    this.timers.add(t);
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.size > 0 && !this.stopped) {
        const [id, job] = this.queue.entries().next().value as [string, Job];
        this.queue.delete(id);
        try {
          await this.run(job);
        } catch (e) {
          this.log.warn({ job, err: (e as Error).message }, "collector job failed; retrying");
          this.later(job);
        }
      }
    } finally {
      this.running = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private async run(job: Job): Promise<void> {
    if (job.type === "owner-gone") return this.collectDependents(job.uid);
    if (job.type === "finalize") return this.finalize(job.key);
    return this.emptyNamespace(job.name);
  }

  private async ignoreNotFound(work: Promise<unknown>): Promise<void> {
    await deleteIfPresent(() => work);
  }

  /** Background deletion: dependents whose owners are all gone are deleted; others lose the gone owner. */
  private async collectDependents(ownerUid: string): Promise<void> {
    for (const key of [...(this.dependents.get(ownerUid) ?? [])]) {
      const entry = this.byKey.get(key);
      if (!entry) continue;
      const alive = entry.owners.filter((u) => this.keyByUid.has(u));
      if (alive.length === 0) {
        this.log.info({ kind: entry.def.kind, namespace: entry.namespace, name: entry.name }, "garbage-collecting dependent of a deleted owner");
        await this.ignoreNotFound(this.objects.delete(entry.def, entry.namespace, entry.name, { preconditions: { uid: entry.uid }, propagationPolicy: "Background" }));
      } else {
        await this.dropOwner(entry, ownerUid);
      }
    }
  }

  private async dropOwner(entry: Indexed, ownerUid: string): Promise<void> {
    const current = await this.objects.tryGet(entry.def, entry.namespace, entry.name);
    if (!current || current.metadata.uid !== entry.uid) return;
    const refs = (current.metadata.ownerReferences ?? []).filter((r) => r.uid !== ownerUid);
    await this.ignoreNotFound(
      this.objects.patch(entry.def, entry.namespace, entry.name, "merge", {
        metadata: { ownerReferences: refs.length > 0 ? refs : null, resourceVersion: current.metadata.resourceVersion },
      }),
    );
  }

  private async removeFinalizer(entry: Indexed, finalizer: string): Promise<void> {
    const current = await this.objects.tryGet(entry.def, entry.namespace, entry.name);
    if (!current || current.metadata.uid !== entry.uid) return;
    const finalizers = (current.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    await this.ignoreNotFound(
      this.objects.patch(entry.def, entry.namespace, entry.name, "merge", {
        metadata: { finalizers: finalizers.length > 0 ? finalizers : null, resourceVersion: current.metadata.resourceVersion },
      }),
    );
  }

  private async finalize(key: string): Promise<void> {
    const entry = this.byKey.get(key);
    if (!entry?.pending) return;
    const deps = [...(this.dependents.get(entry.uid) ?? [])].map((k) => this.byKey.get(k)).filter((d): d is Indexed => !!d);
    if (entry.pending === "orphan") {
      for (const dep of deps) await this.dropOwner(dep, entry.uid);
      await this.removeFinalizer(entry, FINALIZER_ORPHAN);
      return;
    }
    if (deps.length === 0) {
      await this.removeFinalizer(entry, FINALIZER_FOREGROUND);
      return;
    }
    for (const dep of deps) {
      await this.ignoreNotFound(this.objects.delete(dep.def, dep.namespace, dep.name, { preconditions: { uid: dep.uid }, propagationPolicy: "Foreground" }));
    }
    // Dependents with finalizers of their own may take a while; deletion events bring us back too.
    this.later({ type: "finalize", key });
  }

  private async emptyNamespace(name: string): Promise<void> {
    const nsDef = this.objects.registry.byKind("v1", "Namespace");
    if (!nsDef) return;
    const ns = await this.objects.tryGet(nsDef, undefined, name);
    if (!ns?.metadata.deletionTimestamp) return;
    let remaining = 0;
    for (const def of this.objects.registry.all()) {
      if (!def.namespaced) continue;
      const list = await this.objects.list(def, name);
      for (const o of list.items) {
        remaining++;
        if (!o.metadata.deletionTimestamp) await this.ignoreNotFound(this.objects.delete(def, name, o.metadata.name!, { propagationPolicy: "Background" }));
      }
    }
    if (remaining > 0) {
      this.later({ type: "namespace", name });
      return;
    }
    this.log.info({ namespace: name }, "namespace is empty; removing it");
    await this.ignoreNotFound(this.objects.patch(nsDef, undefined, name, "merge", { spec: { finalizers: null } }));
  }
}

/**
 * Whether an update of an indexed object can change what the index holds of it: its owners (the text of
 * its ownerReferences) or its deletion (which brings deletionTimestamp, and with it the finalizers that
 * matter). Its name, namespace and uid do not change in an update. In the stored form the metadata comes
 * first, so the first `"ownerReferences":[` is the metadata's when it has one (a quote inside a string is
 * escaped, so none is found there); a value in another form is always a change. Conservative: any
 * deletionTimestamp, anywhere, counts as one.
 */
export function mayChangeIndex(def: KindDefinition, value: string, previous: string): boolean {
  const head = storedHead(def);
  if (!value.startsWith(head) || !previous.startsWith(head) || value.includes('"deletionTimestamp"')) return true;
  return ownersText(value) !== ownersText(previous);
}

/** The text of the first `"ownerReferences":[…]` in a JSON text, to its closing bracket (brackets in strings skipped). */
function ownersText(value: string): string | undefined {
  const at = value.indexOf('"ownerReferences":[');
  if (at < 0) return undefined;
  let inString = false;
  for (let i = at + '"ownerReferences":['.length; i < value.length; i++) {
    const c = value[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "]") return value.slice(at, i + 1);
  }
  return value.slice(at);
}

/**
 * An Event with no owner and no finalizer: nothing for the collectors to do, and nothing owns anything
 * through it. Events are a third of all writes; they are neither parsed nor indexed.
 */
function unremarkable(def: KindDefinition, value: string): boolean {
  return def.group === "" && def.kind === "Event" && !value.includes('"ownerReferences"') && !value.includes('"finalizers"');
}
