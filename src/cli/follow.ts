// Following objects as they change: a collection listed and then watched (watched again when the
// server ends a watch, relisted when it no longer has the version asked for, retried while it cannot be
// reached), and a cluster followed until it is Ready, Failed or gone.
import type { ClusterObject, MachineObject } from "../api/kinds.ts";
import { LABEL_CLUSTER } from "../api/slipway/cluster.ts";
import { KubeGoneError, KubeUnreachableError, type KubeClient, type KubeObject, type KubeWatch, type WatchEvent } from "../kubeclient/index.ts";
import { countMachines, isClusterFailed, isClusterReady, slipwayPath } from "./clusters.ts";
import { errorLine } from "./errors.ts";
import type { ClusterProgress, ProgressOutcome, ProgressReporter } from "./progress.ts";

const RETRY_MS = 1000;
/** How long the server keeps one watch open before the client opens the next. */
const WATCH_SECONDS = 300;

interface Selector {
  labelSelector?: string;
  fieldSelector?: string;
}

/** The objects of a collection that match a selector, kept current. */
export class LiveCollection<T extends KubeObject> {
  readonly items = new Map<string, T>();
  private resourceVersion: string | undefined;
  private current: KubeWatch | undefined;
  private stopped = false;

  constructor(
    private readonly client: KubeClient,
    private readonly path: string,
    private readonly selector: Selector,
    private readonly onChange: () => void,
    /** Told when the server cannot be reached and the watch is retried. */
    private readonly onRetry: (why: string) => void,
  ) {}

  /** Lists the objects; then keeps them current until `stop`. The promise it answers ends when watching ends. */
  async start(): Promise<{ watching: Promise<void> }> {
    await this.relist();
    return { watching: this.run() };
  }

  stop(): void {
    this.stopped = true;
    this.current?.close();
  }

  private async relist(): Promise<void> {
    const list = await this.client.list<T>(this.path, this.selector);
    this.items.clear();
    for (const item of list.items) this.items.set(item.metadata.name ?? "", item);
    this.resourceVersion = list.metadata.resourceVersion;
  }

  private apply(event: WatchEvent<T>): void {
    if (this.stopped) return;
    this.resourceVersion = event.object.metadata.resourceVersion ?? this.resourceVersion;
    if (event.type === "BOOKMARK") return;
    const name = event.object.metadata.name ?? "";
    if (event.type === "DELETED") this.items.delete(name);
    else this.items.set(name, event.object);
    this.onChange();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        this.current = this.client.watch<T>(
          this.path,
          { ...this.selector, allowWatchBookmarks: true, timeoutSeconds: WATCH_SECONDS, ...(this.resourceVersion ? { resourceVersion: this.resourceVersion } : {}) },
          (event) => this.apply(event),
        );
        await this.current.done;
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof KubeGoneError) await this.recover();
        else if (error instanceof KubeUnreachableError) {
          this.onRetry(errorLine(error));
          await this.recover();
        } else throw error;
      }
    }
  }

  /** Lists again, as soon as the server answers. */
  private async recover(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.relist();
        this.onChange();
        return;
      } catch (error) {
        if (!(error instanceof KubeUnreachableError)) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }
}

export interface FollowClusterOptions {
  namespace: string;
  name: string;
  /** Ready: until Running with Ready True (or Failed). Deleted: until the Cluster is gone. */
  goal: "ready" | "deleted";
  timeoutMs: number;
  reporter: ProgressReporter;
}

export function clusterProgress(cluster: ClusterObject, machines: readonly MachineObject[]): ClusterProgress {
  const st = cluster.status;
  return {
    label: `cluster/${cluster.metadata.name}`,
    phase: st?.phase ?? "Pending",
    ...(st?.reason ? { reason: st.reason } : {}),
    ...(st?.message ? { message: st.message } : {}),
    deleting: cluster.metadata.deletionTimestamp !== undefined,
    steps: st?.steps ?? [],
    machines: countMachines(cluster, machines),
  };
}

/** Follows a cluster, reporting each change, until the goal, a failure, or the time limit; answers how it ended. */
export async function followCluster(client: KubeClient, options: FollowClusterOptions): Promise<ProgressOutcome> {
  const { namespace, name, reporter } = options;
  const label = `cluster/${name}`;
  const [clustersPath, machinesPath] = await Promise.all([slipwayPath(client, "Cluster", namespace), slipwayPath(client, "Machine", namespace)]);
  return new Promise<ProgressOutcome>((resolve, reject) => {
    let listed = false;
    let settled = false;
    let phase = "Pending";
    let lastRetry = "";
    const retry = (why: string) => {
      if (why !== lastRetry) reporter.note(label, `lost the API (${why}); retrying`);
      lastRetry = why;
    };
    const check = () => {
      if (!listed || settled) return;
      lastRetry = "";
      const cluster = clusters.items.get(name);
      if (!cluster) {
        end(options.goal === "deleted" ? { result: "deleted" } : { result: "failed", reason: "Deleted", message: "the cluster was deleted while it was being made" });
        return;
      }
      const progress = clusterProgress(cluster, [...machines.items.values()]);
      phase = progress.phase;
      reporter.update(progress);
      if (options.goal !== "ready") return;
      if (isClusterReady(cluster)) end({ result: "ready" });
      else if (isClusterFailed(cluster)) end({ result: "failed", reason: cluster.status?.reason ?? "Failed", message: cluster.status?.message ?? "" });
    };
    const clusters = new LiveCollection<ClusterObject & KubeObject>(client, clustersPath, { fieldSelector: `metadata.name=${name}` }, check, retry);
    const machines = new LiveCollection<MachineObject & KubeObject>(client, machinesPath, { labelSelector: `${LABEL_CLUSTER}=${name}` }, check, retry);
    const stop = () => {
      settled = true;
      clearTimeout(timer);
      clusters.stop();
      machines.stop();
    };
    const end = (outcome: ProgressOutcome) => {
      if (settled) return;
      stop();
      reporter.finish(label, outcome);
      resolve(outcome);
    };
    const fail = (error: unknown) => {
      if (settled) return;
      stop();
      reject(error);
    };
    const timer = setTimeout(() => end({ result: "timeout", phase }), options.timeoutMs);
    Promise.all([clusters.start(), machines.start()]).then((started) => {
      listed = true;
      for (const { watching } of started) watching.catch(fail);
      check();
    }, fail);
  });
}

/** Waits until the named object is gone (true), or the time limit passed (false). */
export async function waitUntilGone(client: KubeClient, collectionPath: string, name: string, timeoutMs: number, onRetry: (why: string) => void): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    let listed = false;
    let settled = false;
    const end = (gone: boolean, error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      objects.stop();
      if (error === undefined) resolve(gone);
      else reject(error);
    };
    const check = () => {
      if (listed && !objects.items.has(name)) end(true);
    };
    const objects = new LiveCollection<KubeObject>(client, collectionPath, { fieldSelector: `metadata.name=${name}` }, check, onRetry);
    const timer = setTimeout(() => end(false), timeoutMs);
    objects.start().then(({ watching }) => {
      listed = true;
      watching.catch((error: unknown) => end(false, error));
      check();
    }, (error: unknown) => end(false, error));
  });
}
