// What can be done to a whole cluster: pause or resume its controllers, download its admin kubeconfig,
// delete it (after typing its name).
import { useRef, useState } from "preact/hooks";
import type { ClusterObject } from "../../../api/kinds.ts";
import type { ApiClient } from "../api/client.ts";
import { secretPath, slipwayPath } from "../api/paths.ts";
import { navigate } from "../router.ts";

interface SecretData {
  data?: Record<string, string>;
}

export function ClusterActions({ client, cluster, onError }: { client: ApiClient; cluster: ClusterObject; onError: (error: unknown) => void }) {
  const namespace = cluster.metadata.namespace!;
  const name = cluster.metadata.name!;
  const dialog = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState("");
  const [busy, setBusy] = useState(false);
  const deleting = cluster.metadata.deletionTimestamp !== undefined;
  const path = slipwayPath("clusters", namespace, name);

  const act = async (work: () => Promise<unknown>) => {
    setBusy(true);
    onError(undefined);
    try {
      await work();
    } catch (error) {
      onError(error);
    } finally {
      setBusy(false);
    }
  };

  const togglePause = () => act(() => client.patch(path, { spec: { paused: cluster.spec.paused ? null : true } }));

  const downloadKubeconfig = () =>
    act(async () => {
      const secretName = cluster.status?.kubeconfigSecretName ?? `${name}-kubeconfig`;
      const secret = await client.get<SecretData>(secretPath(namespace, secretName));
      const value = secret.data?.value;
      if (!value) throw new Error(`Secret ${secretName} holds no kubeconfig yet`);
      const text = new TextDecoder().decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0)));
      const url = URL.createObjectURL(new Blob([text], { type: "application/yaml" }));
      const link = document.createElement("a");
      link.href = url;
      link.download = `${name}.kubeconfig`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    });

  const remove = () =>
    act(async () => {
      await client.delete(path);
      dialog.current?.close();
      navigate({ page: "clusters" });
    });

  return (
    <div class="actions">
      <button type="button" onClick={togglePause} disabled={busy || deleting} aria-pressed={cluster.spec.paused === true}>
        {cluster.spec.paused ? "Resume" : "Pause"}
      </button>
      <button type="button" onClick={downloadKubeconfig} disabled={busy || !cluster.status?.kubeconfigSecretName}>
        Download kubeconfig
      </button>
      <button
        type="button"
        class="danger"
        disabled={busy || deleting}
        onClick={() => {
          setTyped("");
          dialog.current?.showModal();
        }}
      >
        Delete…
      </button>
      <dialog ref={dialog} aria-labelledby="delete-title" class="confirm">
        <form
          method="dialog"
          onSubmit={(e) => {
            e.preventDefault();
            if (typed === name) void remove();
          }}
        >
          <h2 id="delete-title">Delete cluster {name}?</h2>
          <p>Every machine, load balancer and network made for it is removed. This cannot be undone.</p>
          <label>
            Type <code>{name}</code> to confirm
            <input value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autoComplete="off" name="confirm-name" />
          </label>
          <div class="actions">
            <button type="button" onClick={() => dialog.current?.close()}>
              Cancel
            </button>
            <button type="submit" class="danger" disabled={typed !== name || busy}>
              Delete cluster
            </button>
          </div>
        </form>
      </dialog>
    </div>
  );
}
