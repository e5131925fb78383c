// A collection kept current in the page: listed once, then followed through the watch API (never
// polled). A stream the server ends is resumed from the last version seen; a version too old (410) makes
// it list again; a broken connection is retried with a growing pause.
import { useEffect, useState } from "preact/hooks";
import { KubeGoneError, KubeUnauthorizedError } from "../../../kubeclient/errors.ts";
import type { ApiClient } from "./client.ts";

export interface Named {
  metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export interface LiveList<T> {
  items: T[];
  /** False until the first listing arrived. */
  loaded: boolean;
  error?: Error;
}

const RETRY_MS = [500, 1000, 2000, 5000];

function keyOf(object: Named): string {
  return `${object.metadata.namespace ?? ""}/${object.metadata.name ?? ""}`;
}

function byName(a: Named, b: Named): number {
  return keyOf(a).localeCompare(keyOf(b), "en", { numeric: true });
}

/** Follows a collection until `signal` aborts; `publish` gets the whole list after every change. */
export async function follow<T extends Named>(
  client: ApiClient,
  path: string,
  options: { labelSelector?: string; fieldSelector?: string },
  signal: AbortSignal,
  publish: (items: T[], error?: Error) => void,
): Promise<void> {
  const objects = new Map<string, T>();
  let resourceVersion: string | undefined;
  let failures = 0;
  const emit = (error?: Error) => publish([...objects.values()].sort(byName), error);
  while (!signal.aborted) {
    try {
      if (resourceVersion === undefined) {
        const list = await client.list<T>(path, options);
        objects.clear();
        for (const item of list.items) objects.set(keyOf(item), item);
        resourceVersion = list.metadata.resourceVersion;
        emit();
      }
      await client.watch<T>(path, { ...options, resourceVersion, signal }, (event) => {
        resourceVersion = event.object.metadata.resourceVersion ?? resourceVersion;
        if (event.type === "BOOKMARK") return;
        if (event.type === "DELETED") objects.delete(keyOf(event.object));
        else objects.set(keyOf(event.object), event.object);
        failures = 0;
        emit();
      });
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof KubeUnauthorizedError) return emit(error);
      if (error instanceof KubeGoneError) {
        resourceVersion = undefined;
        continue;
      }
      emit(error as Error);
      const pause = RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]!;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** The live contents of a collection, for a component. */
export function useLiveList<T extends Named>(client: ApiClient, path: string | undefined, options: { labelSelector?: string; fieldSelector?: string } = {}): LiveList<T> {
  const [state, setState] = useState<LiveList<T>>({ items: [], loaded: false });
  const { labelSelector, fieldSelector } = options;
  useEffect(() => {
    setState({ items: [], loaded: false });
    if (!path) return;
    const abort = new AbortController();
    void follow<T>(client, path, { labelSelector, fieldSelector }, abort.signal, (items, error) => {
      if (!abort.signal.aborted) setState({ items, loaded: true, ...(error ? { error } : {}) });
    });
    return () => abort.abort();
  }, [client, path, labelSelector, fieldSelector]);
  return state;
}
