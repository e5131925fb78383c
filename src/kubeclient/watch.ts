// Reading a watch: newline-delimited JSON events, handed over one at a time and in order (a handler that
// returns a promise holds back the next event), with ERROR events turned into the named error.
import { KubeApiError, isKubeStatus, kubeApiError } from "./errors.ts";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface KubeWatch {
  /** Stops the watch; `done` then resolves. */
  close(): void;
  /**
   * Resolves when the server ends the stream (e.g. its time limit) or `close` was called; rejects with
   * the error the server sent (KubeGoneError when the resourceVersion is too old: relist, then watch
   * again), with KubeUnreachableError when the connection broke, or with what the handler threw.
   */
  done: Promise<void>;
}

const EVENT_TYPES = new Set<string>(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]);

/** Splits a byte stream into lines (a line, or a character, may arrive in several chunks). */
export async function* lines(stream: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of stream) {
    pending += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line !== "") yield line;
    }
  }
  pending += decoder.decode();
  if (pending.trim() !== "") yield pending.trim();
}

/** Parses one line of a watch: an event to deliver, or the error the server reported. */
export function parseWatchLine<T>(line: string, request: string): WatchEvent<T> | KubeApiError {
  let parsed: { type?: unknown; object?: unknown };
  try {
    parsed = JSON.parse(line) as { type?: unknown; object?: unknown };
  } catch {
    return new KubeApiError(500, "InternalError", `${request}: the watch sent a line that is not JSON: ${line.slice(0, 200)}`);
  }
  if (parsed.type === "ERROR") {
    const status = isKubeStatus(parsed.object) ? parsed.object : undefined;
    return kubeApiError(status?.code ?? 500, status?.reason ?? "InternalError", parsed.object, { request });
  }
  if (typeof parsed.type !== "string" || !EVENT_TYPES.has(parsed.type)) {
    return new KubeApiError(500, "InternalError", `${request}: the watch sent an event of unknown type ${String(parsed.type)}`);
  }
  return { type: parsed.type as WatchEventType, object: parsed.object as T };
}

/** Delivers the events of an open watch response to `onEvent` until it ends, fails or is closed. */
export function readWatch<T>(
  body: AsyncIterable<Uint8Array | string>,
  abort: () => void,
  request: string,
  onEvent: (event: WatchEvent<T>) => void | Promise<void>,
  brokeOff: (error: unknown) => Error,
): KubeWatch {
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    abort();
  };
  const done = (async () => {
    let handlerFailure: { error: unknown } | undefined;
    try {
      for await (const line of lines(body)) {
        if (closed) return;
        const event = parseWatchLine<T>(line, request);
        if (event instanceof Error) throw event;
        try {
          await onEvent(event);
        } catch (error) {
          handlerFailure = { error };
          break;
        }
      }
    } catch (error) {
      if (closed) return;
      if (error instanceof KubeApiError) throw error;
      throw brokeOff(error);
    } finally {
      close();
    }
    if (handlerFailure) throw handlerFailure.error;
  })();
  return { close, done };
}
