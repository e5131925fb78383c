// The fleet: every cluster the user may see, kept current through the watch API, filtered by namespace,
// phase and label selector.
import { useMemo, useState } from "preact/hooks";
import type { ClusterObject } from "../../../api/kinds.ts";
import type { ApiClient } from "../api/client.ts";
import { useLiveList } from "../api/live.ts";
import { NAMESPACES_PATH, slipwayPath } from "../api/paths.ts";
import { DataTable } from "../components/DataTable.tsx";
import { ErrorNotice } from "../components/ErrorNotice.tsx";
import { Phase } from "../components/Phase.tsx";
import { ClusterCost } from "../components/ClusterCost.tsx";
import { humanAge } from "../format.ts";
import { href } from "../router.ts";
import { useNow } from "../clock.ts";

const PHASES = ["Pending", "Validating", "Provisioning", "Running", "Updating", "Deleting", "Failed"];

function readiness(c: ClusterObject): string {
  const cp = c.status?.controlPlane;
  const w = c.status?.workers;
  return `${cp?.ready ?? 0}/${cp?.desired ?? c.spec.controlPlane?.replicas ?? 1} · ${w?.ready ?? 0}/${w?.desired ?? (c.spec.workers ?? []).reduce((n, p) => n + (p.replicas ?? 1), 0)}`;
}

function nodes(c: ClusterObject): number {
  return (c.status?.controlPlane?.ready ?? 0) + (c.status?.workers?.ready ?? 0);
}

export function ClustersPage({ client }: { client: ApiClient }) {
  const [namespace, setNamespace] = useState("");
  const [phase, setPhase] = useState("");
  const [selectorDraft, setSelectorDraft] = useState("");
  const [selector, setSelector] = useState("");
  const namespaces = useLiveList<{ metadata: { name?: string } }>(client, NAMESPACES_PATH);
  const clusters = useLiveList<ClusterObject>(client, slipwayPath("clusters", namespace), { labelSelector: selector });
  const now = useNow(1000);
  const shown = useMemo(() => clusters.items.filter((c) => !phase || (c.status?.phase ?? "Pending") === phase), [clusters.items, phase]);

  return (
    <section aria-labelledby="clusters-title">
      <div class="page-head">
        <h1 id="clusters-title">Clusters</h1>
        <a class="button primary" href={href({ page: "create" })}>
          Create cluster
        </a>
      </div>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setSelector(selectorDraft.trim());
        }}
      >
        <label>
          Namespace
          <select value={namespace} onChange={(e) => setNamespace(e.currentTarget.value)} name="namespace">
            <option value="">All namespaces</option>
            {namespaces.items.map((n) => (
              <option key={n.metadata.name} value={n.metadata.name}>
                {n.metadata.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Phase
          <select value={phase} onChange={(e) => setPhase(e.currentTarget.value)} name="phase">
            <option value="">Any phase</option>
            {PHASES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          Labels
          <input type="search" name="labelSelector" placeholder="env=prod,team in (a,b)" value={selectorDraft} onInput={(e) => setSelectorDraft(e.currentTarget.value)} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorNotice error={clusters.error} />
      <DataTable
        class="fleet"
        label="Clusters"
        busy={!clusters.loaded}
        columns={["Name", "Namespace", "Phase", { label: "Ready", title: "control plane ready/desired · workers ready/desired" }, "Version", "Nodes", { label: "Cost / h", numeric: true }, "Age"]}
      >
            {shown.map((c) => (
              <tr key={c.metadata.uid} data-cluster={c.metadata.name}>
                <th scope="row">
                  <a href={href({ page: "cluster", namespace: c.metadata.namespace!, name: c.metadata.name! })}>{c.metadata.name}</a>
                </th>
                <td>{c.metadata.namespace}</td>
                <td>
                  <Phase value={c.metadata.deletionTimestamp ? "Deleting" : c.status?.phase} title={c.status?.reason ? `${c.status.reason}: ${c.status.message ?? ""}` : undefined} />
                </td>
                <td>{readiness(c)}</td>
                <td>{c.status?.version ?? c.spec.kubernetesVersion}</td>
                <td>{nodes(c)}</td>
                <td class="num">
                  <ClusterCost client={client} cluster={c} />
                </td>
                <td>{humanAge(c.metadata.creationTimestamp, now)}</td>
              </tr>
            ))}
      </DataTable>
      {clusters.loaded && shown.length === 0 && (
        <p class="empty">
          {clusters.items.length === 0 ? "No clusters yet." : "No cluster matches these filters."} <a href={href({ page: "create" })}>Create one</a>.
        </p>
      )}
    </section>
  );
}
