// Following a cluster until it is Ready, Failed or gone (its progress view told to a reporter at each
// change), and any object until it is gone, through live collections of the API.
import type { ClusterObject, MachineObject } from "../api/kinds.ts";
import { LABEL_CLUSTER } from "../api/slipway/cluster.ts";
import { LiveCollection, type KubeClient, type KubeObject } from "../kubeclient/index.ts";
import { clusterOutcome, clusterProgress, type ProgressOutcome } from "../views/progress.ts";
import { slipwayPath } from "./clusters.ts";
import { errorLine } from "./errors.ts";
import type { ProgressReporter } from "./progress.ts";

export interface FollowClusterOptions {
  namespace: string;
  name: string;
  /** Ready: until Running with Ready True (or Failed). Deleted: until the Cluster is gone. */
  goal: "ready" | "deleted";
  timeoutMs: number;
  reporter: ProgressReporter;
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
    let failure: { reason: string; message: string } | undefined;
    let lastRetry = "";
    const retry = (why: string) => {
      if (why !== lastRetry) reporter.note(label, `lost the API (${why}); retrying`);
      lastRetry = why;
    };
    const check = () => {
      if (!listed || settled) return;
      lastRetry = "";
      const cluster = clusters.items.get(name);
      if (cluster) {
        const progress = clusterProgress(cluster, [...machines.items.values()]);
        phase = progress.phase;
        failure = phase === "Failed" ? { reason: progress.reason ?? "Failed", message: progress.message ?? "" } : undefined;
        reporter.update(progress);
      }
      const outcome = clusterOutcome(cluster, options.goal);
      if (outcome) end(outcome);
    };
    const retryError = (error: Error) => retry(errorLine(error));
    const clusters = new LiveCollection<ClusterObject & KubeObject>(client, clustersPath, { fieldSelector: `metadata.name=${name}` }, check, retryError);
    const machines = new LiveCollection<MachineObject & KubeObject>(client, machinesPath, { labelSelector: `${LABEL_CLUSTER}=${name}` }, check, retryError);
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
    const timer = setTimeout(() => end({ result: "timeout", phase, ...(failure ? { failure } : {}) }), options.timeoutMs);
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
    const objects = new LiveCollection<KubeObject>(client, collectionPath, { fieldSelector: `metadata.name=${name}` }, check, (error) => onRetry(errorLine(error)));
    const timer = setTimeout(() => end(false), timeoutMs);
    objects.start().then(({ watching }) => {
      listed = true;
      watching.catch((error: unknown) => end(false, error));
      check();
    }, (error: unknown) => end(false, error));
  });
}
