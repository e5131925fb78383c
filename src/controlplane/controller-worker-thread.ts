// The worker thread of `slipway up --controllers-in-worker` (controller-worker.ts starts it): the
// controllers, their providers, workload clients, event recorders and shard leases, with the object
// service of the main thread reached over a MessagePort. Its log lines go to the process's log and its
// metrics are served on the main thread's /metrics.
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { Registry as MetricsRegistry } from "prom-client";
import { defaultRegistry } from "../api/kinds.ts";
import { ApiHostDirectory } from "../controllers/host/directory.ts";
import { installedProviders } from "../providers/index.ts";
import { Client } from "../runtime/client.ts";
import { RemoteObjectService } from "../runtime/remote-objects.ts";
import { EtcdStore } from "../store/etcd.ts";
import { startControllers, type RunningControllers } from "./controllers.ts";
import { processLogger } from "./logger.ts";
import type { ControllerWorkerData, ToWorker, FromWorker } from "./controller-worker.ts";

const data = workerData as ControllerWorkerData;
const port = parentPort!;
const send = (message: FromWorker) => port.postMessage(message);
const log = processLogger({ write: (line: string) => send({ t: "log", line }) }, data.logLevel);
const hostDirectory: { current?: ApiHostDirectory } = {};
const providers = installedProviders({ sim: data.sim, ssh: { directory: () => hostDirectory.current } });
const objects = new RemoteObjectService(defaultRegistry({ providers }), data.objects as MessagePort);
hostDirectory.current = new ApiHostDirectory(new Client(objects));
const metrics = new MetricsRegistry();
let controllers: RunningControllers | undefined;
let stopping: Promise<void> | undefined;

// The shard leases live on etcd: this thread keeps its own connection for them.
const leases = data.etcdEndpoints?.length ? await EtcdStore.connect(data.etcdEndpoints) : undefined;

async function stop(): Promise<void> {
  await controllers?.stop();
  await leases?.close();
  objects.close("the controllers stopped");
  (data.objects as MessagePort).close();
}

port.on("message", (message: ToWorker) => {
  if (message.t === "stop") {
    stopping ??= stop();
    void stopping.then(
      () => {
        send({ t: "stopped" });
        port.close();
      },
      (error: Error) => send({ t: "stopped", error: error.message }),
    );
    return;
  }
  void (async () => {
    const value = message.what === "metrics" ? await metrics.metrics() : controllers ? await controllers.unready() : "the controllers are starting";
    send({ t: "answer", id: message.id, value });
  })();
});

try {
  controllers = await startControllers({
    objects,
    store: leases,
    replica: data.replica,
    log,
    metrics,
    providers,
    shardLeaseTtlSeconds: data.shardLeaseTtlSeconds,
    shutdownGraceMs: data.shutdownGraceMs,
    pollMs: data.pollMs,
    leaseWarningMs: data.leaseWarningMs,
    resyncMs: data.resyncMs,
    syncPeriodMs: data.syncPeriodMs,
    sweeper: data.sweeper,
    url: data.url,
    realms: { baseUrl: () => data.url, caPem: data.caPem },
    sharesLoopWithApi: false,
  });
  send({ t: "started" });
} catch (error) {
  send({ t: "failed", error: (error as Error).message });
}
