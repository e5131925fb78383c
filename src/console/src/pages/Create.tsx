// Creating a cluster: a form (connections, machine types from the catalogue, replicas, version) or a YAML
// editor, both showing the plan — resources, cost, quota, expected time — before Create. Errors from the
// API are shown with the field they name, beside that field.
import { useEffect, useMemo, useState } from "preact/hooks";
import { parseAllDocuments, stringify } from "yaml";
import type { ClusterObject, ConnectionObject } from "../../../api/kinds.ts";
import type { ClusterPlanStatus } from "../../../api/slipway/clusterplan.ts";
import { KubeAlreadyExistsError } from "../../../kubeclient/errors.ts";
import type { ApiClient } from "../api/client.ts";
import { useLiveList } from "../api/live.ts";
import { planCluster } from "../api/plan.ts";
import { NAMESPACES_PATH, slipwayPath } from "../api/paths.ts";
import { ErrorNotice, fieldProblems } from "../components/ErrorNotice.tsx";
import { PlanView } from "../components/PlanView.tsx";
import { navigate } from "../router.ts";

const VERSIONS = ["v1.32.0", "v1.31.2", "v1.30.6", "v1.29.10", "v1.28.15"];

interface PoolDraft {
  name: string;
  connection: string;
  machineType: string;
  replicas: number;
}

interface Draft {
  name: string;
  namespace: string;
  version: string;
  connection: string;
  machineType: string;
  replicas: number;
  workers: PoolDraft[];
}

function toCluster(d: Draft): ClusterObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: d.name, namespace: d.namespace },
    spec: {
      kubernetesVersion: d.version,
      controlPlane: { connection: d.connection, machineType: d.machineType, replicas: d.replicas },
      workers: d.workers.map((w) => ({ name: w.name, connection: w.connection, machineType: w.machineType, replicas: w.replicas })),
    },
  } as ClusterObject;
}

/** The Cluster and Connections of a YAML text (several documents allowed). */
function fromYaml(text: string): { cluster?: ClusterObject; connections: ConnectionObject[]; error?: Error } {
  try {
    const docs = parseAllDocuments(text).map((d) => {
      if (d.errors.length > 0) throw d.errors[0]!;
      return d.toJS() as { kind?: string } | null;
    });
    const objects = docs.filter((d): d is { kind?: string } => d !== null && typeof d === "object");
    return {
      cluster: objects.find((o) => o.kind === "Cluster") as ClusterObject | undefined,
      connections: objects.filter((o) => o.kind === "Connection") as ConnectionObject[],
    };
  } catch (error) {
    return { connections: [], error: error as Error };
  }
}

function Field(props: { label: string; field: string; invalid: Set<string>; children: preact.ComponentChildren }) {
  const bad = props.invalid.has(props.field);
  return (
    <label class={bad ? "invalid" : ""} data-field={props.field}>
      {props.label}
      {props.children}
    </label>
  );
}

export function CreatePage({ client }: { client: ApiClient }) {
  const [mode, setMode] = useState<"form" | "yaml">("form");
  const [draft, setDraft] = useState<Draft>({ name: "", namespace: "default", version: "v1.31.2", connection: "", machineType: "s1.medium", replicas: 1, workers: [] });
  const [yamlText, setYamlText] = useState("");
  const [plan, setPlan] = useState<ClusterPlanStatus>();
  const [planError, setPlanError] = useState<unknown>();
  const [createError, setCreateError] = useState<unknown>();
  const [creating, setCreating] = useState(false);
  const namespaces = useLiveList<{ metadata: { name?: string } }>(client, NAMESPACES_PATH);
  const connections = useLiveList<ConnectionObject>(client, slipwayPath("connections", draft.namespace));

  // A first connection is chosen for the user once the list arrives.
  useEffect(() => {
    const first = connections.items[0]?.metadata.name;
    if (first && !draft.connection) setDraft((d) => ({ ...d, connection: first, workers: d.workers.length ? d.workers : [{ name: "workers", connection: first, machineType: "s1.large", replicas: 2 }] }));
  }, [connections.items]);

  const parsed = useMemo(() => (mode === "yaml" ? fromYaml(yamlText) : { cluster: toCluster(draft), connections: [] as ConnectionObject[] }), [mode, yamlText, draft]);
  const cluster = parsed.cluster;

  // The plan follows every edit, a moment after typing stops.
  useEffect(() => {
    if (!cluster?.metadata?.name) {
      setPlan(undefined);
      setPlanError(parsed.error);
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      planCluster(client, cluster, parsed.connections)
        .then((p) => live && (setPlan(p), setPlanError(undefined)))
        .catch((e) => live && (setPlan(undefined), setPlanError(e)));
    }, 300);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [client, JSON.stringify(cluster), JSON.stringify(parsed.connections)]);

  const invalid = useMemo(() => new Set([...fieldProblems(createError), ...fieldProblems(planError), ...(plan?.problems ?? [])].map((p) => p.field ?? "")), [createError, planError, plan]);
  const typesOf = (connection: string) => plan?.connections.find((c) => c.name === connection)?.machineTypes ?? [];
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }));
  const setPool = (i: number, patch: Partial<PoolDraft>) => setDraft((d) => ({ ...d, workers: d.workers.map((w, j) => (j === i ? { ...w, ...patch } : w)) }));

  const switchTo = (next: "form" | "yaml") => {
    if (next === mode) return;
    if (next === "yaml") setYamlText(stringify(toCluster(draft)));
    else if (cluster) {
      const s = cluster.spec;
      setDraft({
        name: cluster.metadata.name ?? "",
        namespace: cluster.metadata.namespace ?? "default",
        version: s.kubernetesVersion ?? draft.version,
        connection: s.controlPlane?.connection ?? "",
        machineType: s.controlPlane?.machineType ?? "",
        replicas: s.controlPlane?.replicas ?? 1,
        workers: (s.workers ?? []).map((w) => ({ name: w.name, connection: w.connection, machineType: w.machineType ?? "", replicas: w.replicas ?? 1 })),
      });
    }
    setMode(next);
  };

  const create = async (event: Event) => {
    event.preventDefault();
    if (!cluster) return;
    setCreating(true);
    setCreateError(undefined);
    try {
      const namespace = cluster.metadata.namespace || "default";
      for (const connection of parsed.connections) {
        try {
          await client.create(slipwayPath("connections", connection.metadata.namespace || namespace), connection);
        } catch (error) {
          if (!(error instanceof KubeAlreadyExistsError)) throw error;
        }
      }
      await client.create(slipwayPath("clusters", namespace), cluster);
      navigate({ page: "cluster", namespace, name: cluster.metadata.name! });
    } catch (error) {
      setCreateError(error);
    } finally {
      setCreating(false);
    }
  };

  const connectionOptions = connections.items.map((c) => (
    <option key={c.metadata.name} value={c.metadata.name}>
      {c.metadata.name} ({c.spec.provider}, {c.spec.region})
    </option>
  ));
  const typeOptions = (connection: string, current: string) => {
    const types = typesOf(connection);
    const names = types.some((t) => t.name === current) || !current ? types : [...types, { name: current, vcpus: 0, memoryMiB: 0 }];
    return names.map((t) => (
      <option key={t.name} value={t.name}>
        {t.vcpus ? `${t.name} · ${t.vcpus} vCPU · ${Math.round(t.memoryMiB / 1024)} GiB${t.hourlyPrice !== undefined ? ` · $${t.hourlyPrice}/h` : ""}` : t.name}
      </option>
    ));
  };

  return (
    <section aria-labelledby="create-title" class="create">
      <div class="page-head">
        <h1 id="create-title">Create a cluster</h1>
        <div class="tabs" role="tablist" aria-label="Editor">
          <button type="button" role="tab" aria-selected={mode === "form"} onClick={() => switchTo("form")}>
            Form
          </button>
          <button type="button" role="tab" aria-selected={mode === "yaml"} onClick={() => switchTo("yaml")}>
            YAML
          </button>
        </div>
      </div>
      <div class="create-grid">
        <form onSubmit={create} aria-label="Cluster" noValidate>
          {mode === "form" ? (
            <>
              <fieldset>
                <legend>Cluster</legend>
                <Field label="Name" field="metadata.name" invalid={invalid}>
                  <input name="name" required value={draft.name} onInput={(e) => set({ name: e.currentTarget.value })} placeholder="e.g. team-a" autoComplete="off" />
                </Field>
                <Field label="Namespace" field="metadata.namespace" invalid={invalid}>
                  <select name="namespace" value={draft.namespace} onChange={(e) => set({ namespace: e.currentTarget.value, connection: "" })}>
                    {(namespaces.items.length ? namespaces.items : [{ metadata: { name: "default" } }]).map((n) => (
                      <option key={n.metadata.name} value={n.metadata.name}>
                        {n.metadata.name}
                      </option>
                    ))}
                  </select>
                </Field>
                <Field label="Kubernetes version" field="spec.kubernetesVersion" invalid={invalid}>
                  <select name="version" value={draft.version} onChange={(e) => set({ version: e.currentTarget.value })}>
                    {VERSIONS.map((v) => (
                      <option key={v}>{v}</option>
                    ))}
                  </select>
                </Field>
              </fieldset>
              <fieldset>
                <legend>Control plane</legend>
                <Field label="Connection" field="spec.controlPlane.connection" invalid={invalid}>
                  <select name="cp-connection" value={draft.connection} onChange={(e) => set({ connection: e.currentTarget.value })}>
                    {!draft.connection && <option value="">Choose a connection</option>}
                    {connectionOptions}
                  </select>
                </Field>
                <Field label="Machine type" field="spec.controlPlane.machineType" invalid={invalid}>
                  <select name="cp-type" value={draft.machineType} onChange={(e) => set({ machineType: e.currentTarget.value })}>
                    {typeOptions(draft.connection, draft.machineType)}
                  </select>
                </Field>
                <Field label="Machines" field="spec.controlPlane.replicas" invalid={invalid}>
                  <select name="cp-replicas" value={String(draft.replicas)} onChange={(e) => set({ replicas: Number(e.currentTarget.value) })}>
                    <option value="1">1</option>
                    <option value="3">3 (highly available)</option>
                    <option value="5">5</option>
                  </select>
                </Field>
              </fieldset>
              {draft.workers.map((w, i) => (
                <fieldset key={i} data-pool-index={i}>
                  <legend>Worker pool {i + 1}</legend>
                  <Field label="Name" field={`spec.workers[${i}].name`} invalid={invalid}>
                    <input name={`pool-${i}-name`} value={w.name} onInput={(e) => setPool(i, { name: e.currentTarget.value })} autoComplete="off" />
                  </Field>
                  <Field label="Connection" field={`spec.workers[${i}].connection`} invalid={invalid}>
                    <select name={`pool-${i}-connection`} value={w.connection} onChange={(e) => setPool(i, { connection: e.currentTarget.value })}>
                      {connectionOptions}
                    </select>
                  </Field>
                  <Field label="Machine type" field={`spec.workers[${i}].machineType`} invalid={invalid}>
                    <select name={`pool-${i}-type`} value={w.machineType} onChange={(e) => setPool(i, { machineType: e.currentTarget.value })}>
                      {typeOptions(w.connection, w.machineType)}
                    </select>
                  </Field>
                  <Field label="Machines" field={`spec.workers[${i}].replicas`} invalid={invalid}>
                    <input type="number" name={`pool-${i}-replicas`} min={0} max={1000} value={w.replicas} onInput={(e) => setPool(i, { replicas: Number(e.currentTarget.value) })} />
                  </Field>
                  <button type="button" onClick={() => setDraft((d) => ({ ...d, workers: d.workers.filter((_, j) => j !== i) }))}>
                    Remove pool
                  </button>
                </fieldset>
              ))}
              <button type="button" onClick={() => setDraft((d) => ({ ...d, workers: [...d.workers, { name: `pool-${d.workers.length + 1}`, connection: d.connection, machineType: "s1.large", replicas: 1 }] }))}>
                Add worker pool
              </button>
            </>
          ) : (
            <label class="yaml">
              Manifest (a Cluster, and Connections it needs)
              <textarea name="yaml" spellcheck={false} rows={24} value={yamlText} onInput={(e) => setYamlText(e.currentTarget.value)} />
            </label>
          )}
          <ErrorNotice error={createError} title="The API refused the cluster" />
          <div class="actions">
            <button type="submit" class="primary" disabled={creating || !cluster || !plan}>
              {creating ? "Creating…" : "Create"}
            </button>
            {!plan && <span class="muted">The plan appears here once the cluster has a name.</span>}
          </div>
        </form>
        <div class="plan-column" aria-live="polite">
          <ErrorNotice error={planError} title="The plan cannot be made" />
          {plan && <PlanView plan={plan} />}
        </div>
      </div>
    </section>
  );
}
