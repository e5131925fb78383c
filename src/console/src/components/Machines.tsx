// The cluster's machines (its nodes to be), control plane first, then each worker pool with a control to
// scale it. A pool is scaled through its Cluster's spec, which stays the source of truth.
import { useState } from "preact/hooks";
import type { ClusterObject, MachineObject, MachinePoolObject } from "../../../api/kinds.ts";
import type { ApiClient } from "../api/client.ts";
import { LABEL_POOL, slipwayPath } from "../api/paths.ts";
import { belongsTo } from "../../../views/describe.ts";
import { isNodeReady } from "../../../views/readiness.ts";
import { humanAge } from "../format.ts";
import { DataTable } from "./DataTable.tsx";
import { Phase } from "./Phase.tsx";

function MachineRows({ machines, now }: { machines: MachineObject[]; now: number }) {
  if (machines.length === 0) return <p class="muted">No machines.</p>;
  return (
    <DataTable class="machines" columns={["Machine", "Phase", "Node", "Ready", "Type", "Zone", "Address", "Age"]}>
      {machines.map((m) => (
            <tr key={m.metadata.uid} data-machine={m.metadata.name}>
              <th scope="row">{m.metadata.name}</th>
              <td>
                <Phase value={m.metadata.deletionTimestamp ? "Deleting" : m.status?.phase} title={m.status?.failureMessage} />
              </td>
              <td>{m.status?.nodeName ?? "—"}</td>
              <td>{isNodeReady(m) ? "✓ Ready" : "—"}</td>
              <td>{m.spec.machineType}</td>
              <td>{m.status?.zone ?? "—"}</td>
              <td>{m.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "—"}</td>
              <td>{humanAge(m.metadata.creationTimestamp, now)}</td>
            </tr>
      ))}
    </DataTable>
  );
}

function ScalePool({ client, cluster, poolName, onError }: { client: ApiClient; cluster: ClusterObject; poolName: string; onError: (e: unknown) => void }) {
  const declared = (cluster.spec.workers ?? []).find((w) => w.name === poolName);
  const [replicas, setReplicas] = useState(String(declared?.replicas ?? 1));
  const [busy, setBusy] = useState(false);
  if (!declared) return null;
  const scale = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    onError(undefined);
    try {
      // A merge patch replaces the list whole; the resourceVersion refuses the write if the cluster changed.
      const workers = (cluster.spec.workers ?? []).map((w) => (w.name === poolName ? { ...w, replicas: Number(replicas) } : w));
      await client.patch(slipwayPath("clusters", cluster.metadata.namespace!, cluster.metadata.name!), { metadata: { resourceVersion: cluster.metadata.resourceVersion }, spec: { workers } });
    } catch (error) {
      onError(error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="scale" onSubmit={scale} aria-label={`Scale pool ${poolName}`}>
      <label>
        Replicas
        <input type="number" min={0} max={1000} required value={replicas} onInput={(e) => setReplicas(e.currentTarget.value)} name={`replicas-${poolName}`} />
      </label>
      <button type="submit" disabled={busy || Number(replicas) === (declared.replicas ?? 1) || cluster.metadata.deletionTimestamp !== undefined}>
        Scale
      </button>
    </form>
  );
}

export function Machines(props: { client: ApiClient; cluster: ClusterObject; pools: MachinePoolObject[]; machines: MachineObject[]; now: number; onError: (e: unknown) => void }) {
  const { client, cluster, pools, machines, now, onError } = props;
  const controlPlane = machines.filter((m) => m.spec.role === "control-plane");
  const poolOf = (p: MachinePoolObject) => p.metadata.labels?.[LABEL_POOL] ?? p.metadata.name!.slice(cluster.metadata.name!.length + 1);
  return (
    <div class="pools">
      <section aria-label="Control plane">
        <h3>
          Control plane{" "}
          {cluster.spec.controlPlane ? (
            <span class="muted">
              · {cluster.spec.controlPlane.replicas ?? 1} × {cluster.spec.controlPlane.machineType} in {cluster.spec.controlPlane.connection}
            </span>
          ) : (
            <span class="muted">· registered: not built by Slipway</span>
          )}
        </h3>
        <MachineRows machines={controlPlane} now={now} />
      </section>
      {pools.map((p) => {
        const pool = poolOf(p);
        const mine = machines.filter((m) => belongsTo(m, p));
        return (
          <section key={p.metadata.uid} aria-label={`Pool ${pool}`} data-pool={pool}>
            <div class="pool-head">
              <h3>
                Pool {pool}{" "}
                <span class="muted">
                  · {p.status?.readyReplicas ?? 0}/{p.spec.replicas ?? 1} ready · {p.spec.machineType} in {p.spec.connection}
                </span>{" "}
                <Phase value={p.metadata.deletionTimestamp ? "Deleting" : p.status?.phase} />
              </h3>
              <ScalePool key={`${p.metadata.uid}/${cluster.metadata.generation}`} client={client} cluster={cluster} poolName={pool} onError={onError} />
            </div>
            <MachineRows machines={mine} now={now} />
          </section>
        );
      })}
    </div>
  );
}
