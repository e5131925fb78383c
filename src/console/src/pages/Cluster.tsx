// One cluster: where it stands (phase, progress, conditions with reasons), the timeline as a Gantt chart
// with its critical path, its objects as a tree, its machines and pools, its events as they happen, and
// what can be done to it: scale a pool, pause or resume, download the kubeconfig, delete.
import { useMemo, useState } from "preact/hooks";
import type { ClusterObject, EventObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../../../api/kinds.ts";
import type { ApiClient } from "../api/client.ts";
import { useLiveList } from "../api/live.ts";
import { eventsPath, LABEL_CLUSTER, slipwayPath } from "../api/paths.ts";
import { useNow } from "../clock.ts";
import { ClusterActions } from "../components/ClusterActions.tsx";
import { DataTable } from "../components/DataTable.tsx";
import { ErrorNotice } from "../components/ErrorNotice.tsx";
import { Gantt } from "../components/Gantt.tsx";
import { Phase } from "../components/Phase.tsx";
import { Progress } from "../components/Progress.tsx";
import { Tree } from "../components/Tree.tsx";
import { Machines } from "../components/Machines.tsx";
import { formatDuration, humanAge } from "../format.ts";
import { href } from "../router.ts";
import { clusterTree } from "../../../views/describe.ts";
import { clusterEvents as eventsOfCluster, eventTime } from "../../../views/events.ts";

export function ClusterPage({ client, namespace, name }: { client: ApiClient; namespace: string; name: string }) {
  const now = useNow(1000);
  const selector = `${LABEL_CLUSTER}=${name}`;
  const clusters = useLiveList<ClusterObject>(client, slipwayPath("clusters", namespace), { fieldSelector: `metadata.name=${name}` });
  const infrastructures = useLiveList<InfrastructureObject>(client, slipwayPath("infrastructures", namespace), { labelSelector: selector });
  const pools = useLiveList<MachinePoolObject>(client, slipwayPath("machinepools", namespace), { labelSelector: selector });
  const machines = useLiveList<MachineObject>(client, slipwayPath("machines", namespace), { labelSelector: selector });
  const events = useLiveList<EventObject>(client, eventsPath(namespace));
  const [actionError, setActionError] = useState<unknown>();
  const cluster = clusters.items[0];

  // Newest first.
  const clusterEvents = useMemo(
    () => (cluster ? eventsOfCluster({ cluster, infrastructures: infrastructures.items, pools: pools.items, machines: machines.items }, [], events.items).reverse() : []),
    [cluster, events.items, infrastructures.items, pools.items, machines.items],
  );

  if (!clusters.loaded) return <p aria-busy="true">Loading cluster {name}…</p>;
  if (!cluster) {
    return (
      <section>
        <h1>Cluster {name}</h1>
        <ErrorNotice error={clusters.error} />
        <p class="empty" data-testid="cluster-gone">
          There is no cluster {name} in namespace {namespace} (any more). <a href={href({ page: "clusters" })}>Back to clusters</a>
        </p>
      </section>
    );
  }
  const st = cluster.status;
  const phase = cluster.metadata.deletionTimestamp ? "Deleting" : st?.phase;
  const family = { cluster, infrastructures: infrastructures.items, pools: pools.items, machines: machines.items };
  const conditions = st?.conditions ?? [];
  const created = Date.parse(cluster.metadata.creationTimestamp ?? "");
  const ready = conditions.find((c) => c.type === "Ready" && c.status === "True");

  return (
    <article aria-labelledby="cluster-title" class="cluster">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href({ page: "clusters" })}>Clusters</a> / {namespace} / <span aria-current="page">{name}</span>
      </nav>
      <div class="page-head">
        <h1 id="cluster-title">
          {name} <Phase value={phase} />
          {cluster.spec.paused && <span class="badge warn">Paused</span>}
        </h1>
        <ClusterActions client={client} cluster={cluster} onError={setActionError} />
      </div>
      <ErrorNotice error={actionError} />
      {st?.reason && (
        <div class={`notice ${phase === "Failed" ? "error" : "info"}`} role="status">
          <strong>{st.reason}</strong> {st.message}
        </div>
      )}
      <dl class="facts">
        <div>
          <dt>Version</dt>
          <dd>{st?.version ?? cluster.spec.kubernetesVersion}</dd>
        </div>
        <div>
          <dt>Endpoint</dt>
          <dd>{st?.controlPlaneEndpoint ? `${st.controlPlaneEndpoint.host}:${st.controlPlaneEndpoint.port}` : "—"}</dd>
        </div>
        <div>
          <dt>Age</dt>
          <dd>{humanAge(cluster.metadata.creationTimestamp, now)}</dd>
        </div>
        <div>
          <dt>Time to Ready</dt>
          <dd>{ready?.lastTransitionTime && !Number.isNaN(created) ? formatDuration(Date.parse(ready.lastTransitionTime) - created) : "—"}</dd>
        </div>
      </dl>
      <Progress cluster={cluster} machines={machines.items} />

      <nav class="sections" aria-label="Sections">
        <a href="#timeline" onClick={jump("timeline")}>Timeline</a>
        <a href="#conditions" onClick={jump("conditions")}>Conditions</a>
        <a href="#nodes" onClick={jump("nodes")}>Nodes</a>
        <a href="#objects" onClick={jump("objects")}>Objects</a>
        <a href="#events" onClick={jump("events")}>Events</a>
      </nav>

      <section id="timeline" aria-labelledby="timeline-title" tabIndex={-1}>
        <h2 id="timeline-title">Timeline</h2>
        <Gantt cluster={cluster} now={now} />
      </section>

      <section id="conditions" aria-labelledby="conditions-title" tabIndex={-1}>
        <h2 id="conditions-title">Conditions</h2>
        {conditions.length === 0 ? (
          <p class="muted">None reported yet.</p>
        ) : (
          <DataTable labelledBy="conditions-title" columns={["Type", "Status", "Reason", "Since", "Message"]}>
            {conditions.map((c) => (
                  <tr key={c.type} data-condition={c.type}>
                    <th scope="row">{c.type}</th>
                    <td>
                      <Phase value={c.status} />
                    </td>
                    <td>{c.reason}</td>
                    <td>{c.lastTransitionTime ? humanAge(c.lastTransitionTime, now) : ""}</td>
                    <td class="message">{c.message}</td>
                  </tr>
            ))}
          </DataTable>
        )}
      </section>

      <section id="nodes" aria-labelledby="nodes-title" tabIndex={-1}>
        <h2 id="nodes-title">Nodes</h2>
        <Machines client={client} cluster={cluster} pools={pools.items} machines={machines.items} now={now} onError={setActionError} />
      </section>

      <section id="objects" aria-labelledby="objects-title" tabIndex={-1}>
        <h2 id="objects-title">Objects</h2>
        <Tree root={clusterTree(family)} now={now} />
      </section>

      <section id="events" aria-labelledby="events-title" tabIndex={-1}>
        <h2 id="events-title">Events</h2>
        <ErrorNotice error={events.error} />
        {clusterEvents.length === 0 ? (
          <p class="muted">No events yet.</p>
        ) : (
          <ol class="events" aria-live="polite" aria-relevant="additions">
            {clusterEvents.slice(0, 200).map((e) => (
              <li key={e.metadata.uid} class={e.type === "Warning" ? "warning" : ""} data-reason={e.reason}>
                <time dateTime={eventTime(e)}>{humanAge(eventTime(e), now)}</time>
                <span class="event-reason">{e.reason}</span>
                <span class="event-object">
                  {e.involvedObject.kind?.toLowerCase()}/{e.involvedObject.name}
                </span>
                <span class="message">{e.message}</span>
              </li>
            ))}
          </ol>
        )}
      </section>
    </article>
  );
}

/** In-page links move focus to the section, for keyboard users, without touching the route. */
function jump(id: string) {
  return (event: Event) => {
    event.preventDefault();
    const target = document.getElementById(id);
    target?.scrollIntoView({ behavior: "smooth", block: "start" });
    target?.focus({ preventScroll: true });
  };
}
