// The admission chain inside the object service, after kube-apiserver's: named plugins run in order,
// first every plugin's `mutate` stage (creates and updates), then every plugin's `validate` stage
// (creates, updates and deletes); a plugin refuses a request by throwing an ApiError, and a refused
// request writes nothing. Post-write hooks run, in order, after the store accepted a write. Both run for
// every caller: HTTP requests and in-process clients (controllers) alike; a dry run is admitted and
// validated but neither written nor followed by hooks.
//
//   const objects = new ObjectService(registry, store, { admission: [quota], postWrite: [operations] });
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import type { ObjectService } from "./objects.ts";
import type { ResourceRequest } from "./request-context.ts";
import { namespaceLifecycle } from "./namespace-lifecycle.ts";
import { defaulting, validation, type FieldValidation } from "./validation.ts";

export type AdmissionOperation = "CREATE" | "UPDATE" | "DELETE";

interface AdmissionAttributes {
  readonly def: KindDefinition;
  readonly namespace: string | undefined;
  readonly name: string;
  /** Who asks, the verb and the resource (subresource "status" for status writes), dry run or not. */
  readonly request: ResourceRequest;
  /** The service serving the request, for reads. Plugins write nothing: the request may be a dry run, or refused later. */
  readonly objects: ObjectService;
}

export interface WriteAdmission extends AdmissionAttributes {
  readonly operation: "CREATE" | "UPDATE";
  /** The object to be stored; `mutate` changes it in place. */
  readonly object: KubeObject;
  /** The stored object an update replaces. */
  readonly oldObject: KubeObject | undefined;
  readonly fieldValidation: FieldValidation;
  /** Warnings for the client (HTTP Warning headers). */
  readonly warnings: string[];
}

export interface DeleteAdmission extends AdmissionAttributes {
  readonly operation: "DELETE";
  readonly object: undefined;
  /** The object being deleted. */
  readonly oldObject: KubeObject;
}

export type AdmissionRequest = WriteAdmission | DeleteAdmission;

export interface AdmissionPlugin {
  readonly name: string;
  /** Changes the object of a create or update before validation. Must leave it valid against the kind's schema. */
  mutate?(request: WriteAdmission): void | Promise<void>;
  /** Refuses a create, update or delete by throwing an ApiError; changes nothing. */
  validate?(request: AdmissionRequest): void | Promise<void>;
}

/** A write the store accepted. */
export interface WriteEvent {
  readonly operation: AdmissionOperation;
  readonly def: KindDefinition;
  /** As stored; for a delete, as removed or as marked for deletion. */
  readonly object: KubeObject;
  /** The object before an update, patch or delete. */
  readonly previous: KubeObject | undefined;
  readonly request: ResourceRequest;
  readonly objects: ObjectService;
}

export interface PostWriteResult {
  /** Headers for the HTTP response of the write (e.g. Operation-Location). */
  responseHeaders?: Record<string, string>;
}

export interface PostWriteHook {
  readonly name: string;
  /** Runs after every successful write that is not a dry run, including writes that changed nothing. */
  afterWrite(event: WriteEvent): void | PostWriteResult | Promise<void | PostWriteResult>;
}

/**
 * The plugins every object service runs before any other: schema defaults and checks (mutate), then
 * the namespace's existence, then the kind's own validation (validate).
 */
export const BUILTIN_ADMISSION: readonly AdmissionPlugin[] = [defaulting, namespaceLifecycle, validation];

export class DuplicatePluginError extends Error {
  override readonly name = "DuplicatePluginError";
  constructor(plugin: string) {
    super(`admission plugin or post-write hook "${plugin}" is registered twice`);
  }
}

export class AdmissionChain {
  private readonly mutators: AdmissionPlugin[];
  private readonly validators: AdmissionPlugin[];

  constructor(
    readonly plugins: readonly AdmissionPlugin[],
    readonly hooks: readonly PostWriteHook[] = [],
  ) {
    const names = new Set<string>();
    for (const { name } of [...plugins, ...hooks]) {
      if (names.has(name)) throw new DuplicatePluginError(name);
      names.add(name);
    }
    this.mutators = plugins.filter((p) => p.mutate);
    this.validators = plugins.filter((p) => p.validate);
  }

  /** The plugins' and hooks' names in the order they run. */
  get names(): { mutate: string[]; validate: string[]; postWrite: string[] } {
    return { mutate: this.mutators.map((p) => p.name), validate: this.validators.map((p) => p.name), postWrite: this.hooks.map((h) => h.name) };
  }

  /** Runs the mutate stages; synchronously while the plugins answer synchronously. */
  mutate(request: WriteAdmission): void | Promise<void> {
    return inOrder(this.mutators, (plugin) => plugin.mutate!(request));
  }

  /** Runs the validate stages; synchronously while the plugins answer synchronously. */
  validate(request: AdmissionRequest): void | Promise<void> {
    return inOrder(this.validators, (plugin) => plugin.validate!(request));
  }

  /** Runs every hook in order (synchronously while they answer so); the headers they ask for, merged. */
  afterWrite(event: WriteEvent, from = 0, headers?: Record<string, string>): Headers | Promise<Headers> {
    for (let i = from; i < this.hooks.length; i++) {
      const returned = this.hooks[i]!.afterWrite(event);
      if (returned instanceof Promise) return returned.then((result) => this.afterWrite(event, i + 1, merged(headers, result)));
      headers = merged(headers, returned);
    }
    return headers;
  }
}

type Headers = Record<string, string> | undefined;

function merged(headers: Headers, result: void | PostWriteResult): Headers {
  return result?.responseHeaders ? { ...headers, ...result.responseHeaders } : headers;
}

/** Calls `stage` for each plugin in turn, waiting for those that return a promise. */
function inOrder(plugins: readonly AdmissionPlugin[], stage: (plugin: AdmissionPlugin) => void | Promise<void>, from = 0): void | Promise<void> {
  for (let i = from; i < plugins.length; i++) {
    const pending = stage(plugins[i]!);
    if (pending) return pending.then(() => inOrder(plugins, stage, i + 1));
  }
}
