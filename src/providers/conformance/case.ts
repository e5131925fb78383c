// What every conformance case shares: the harness a provider's test hands the suite, and one case's
// provider, names, tags and what it built (deleted in reverse order afterwards). Every case opens the
// provider afresh and tags what it builds with names of its own, so the suite can also run against a
// real cloud account.
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { createHash, createPrivateKey, createPublicKey } from "node:crypto";
import {
  ProviderError,
  capabilityOf,
  isProviderError,
  type Capabilities,
  type BootstrapSecretReference,
  type CapabilityName,
  type InfrastructureResourceKind,
  type Provider,
  type ProviderErrorKind,
  type QuotaResources,
  type ResourceInfos,
  type ResourceKind,
  type Tags,
} from "../provider.ts";

/**
 * A fault the cloud is made to answer with. "lostAnswer": the cloud makes the change, then the answer is
 * lost (a transient error); "transient": a transient error before anything changed.
 */
export type InjectedFault = "lostAnswer" | "transient" | "throttled" | "capacity";

/** The provider operation a fault applies to. */
export type FaultOperation = `create:${ResourceKind}`;

/** What a machine is made of, for a provider that has no catalogue to pick from. */
export interface MachineTemplate {
  zone: string;
  machineType: string;
  imageId: string;
}

export interface ProviderUnderTest {
  provider: Provider;
  /** The same account in another region; the suite asks for one that does not exist. */
  inRegion?(region: string): Provider;
  /** Makes every call of `operation` fail with `fault` until `clearFaults` is called. */
  injectFault?(operation: FaultOperation, fault: InjectedFault): Promise<void>;
  clearFaults?(): Promise<void>;
  /** Sets some of the account's limits in the provider's region. */
  setQuota?(limits: Partial<QuotaResources>): Promise<void>;
  /** Reads a bootstrap secret as the running instance would at boot, with its own identity (rejects when refused). */
  readBootstrapSecretAsInstance?(instanceId: string, reference: BootstrapSecretReference): Promise<string>;
  /** Zone, machine type and image of the machines the suite makes (default: from the catalogue). */
  machineTemplate?: MachineTemplate;
  close(): Promise<void>;
}

export interface ProviderConformanceOptions {
  /** How long a case waits for a resource to reach a state (default 10 s). */
  timeoutMs?: number;
  /** Pause between two polls of a resource (default 10 ms). */
  pollMs?: number;
}

/** Names unique to this run, so that leftovers of other runs in a real account are never mistaken for ours. */
const RUN = `conf-${Date.now().toString(36)}-${process.pid.toString(36)}`;

/** An OpenSSH ed25519 public key derived from a fixed seed (valid, and the same in every run). */
export function conformancePublicKey(seed = "slipway-conformance"): string {
  const secret = createHash("sha256").update(seed).digest();
  const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), secret]);
  const publicJwk = createPublicKey(createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" })).export({ format: "jwk" });
  const raw = Buffer.from(publicJwk.x ?? "", "base64url");
  const type = Buffer.from("ssh-ed25519");
  const blob = Buffer.alloc(8 + type.length + raw.length);
  blob.writeUInt32BE(type.length, 0);
  type.copy(blob, 4);
  blob.writeUInt32BE(raw.length, 4 + type.length);
  raw.copy(blob, 8 + type.length);
  return `ssh-ed25519 ${blob.toString("base64")} ${seed}`;
}

/** Resolves with the ProviderError `promise` rejects with, after checking its kind. */
export async function rejectsWith(promise: Promise<unknown>, kind: ProviderErrorKind, what: string): Promise<ProviderError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  }, `${what} should fail`);
  assert.ok(caught instanceof ProviderError, `${what}: expected a ProviderError, got ${String(caught)}`);
  assert.equal(caught.kind, kind, `${what}: expected a ${kind} error, got ${caught.kind}: ${caught.message}`);
  assert.ok(caught.message.length > 0, `${what}: the error says what happened`);
  return caught;
}

/** One case: its provider, its names and tags, and what it built (deleted in reverse order afterwards). */
export class Case {
  private readonly built: { kind: ResourceKind; id: string }[] = [];
  private readonly cleanups: (() => Promise<void>)[] = [];
  readonly tags: Tags;
  readonly cluster: string;

  constructor(
    readonly h: ProviderUnderTest,
    readonly label: string,
    private readonly options: Required<ProviderConformanceOptions>,
  ) {
    this.cluster = `${RUN}-${label}`;
    this.tags = { "slipway.dev/cluster": this.cluster, "slipway.dev/owner": `conformance-${label}` };
  }

  get provider(): Provider {
    return this.h.provider;
  }

  has(capability: CapabilityName): boolean {
    return this.provider.capabilities[capability] !== undefined;
  }

  capability<C extends CapabilityName>(capability: C): Capabilities[C] {
    return capabilityOf(this.provider, capability);
  }

  get catalogue(): Capabilities["catalogue"] {
    return this.capability("catalogue");
  }

  get infrastructure(): Capabilities["clusterInfrastructure"] {
    return this.capability("clusterInfrastructure");
  }

  get machines(): Capabilities["machines"] {
    return this.capability("machines");
  }

  /** A resource of any kind, through the capability that holds its kind. */
  get<K extends ResourceKind>(kind: K, id: string): Promise<ResourceInfos[K] | undefined> {
    if (kind === "instance") return this.machines.get("instance", id) as Promise<ResourceInfos[K] | undefined>;
    return this.infrastructure.get(kind as InfrastructureResourceKind, id) as Promise<ResourceInfos[K] | undefined>;
  }

  delete(kind: ResourceKind, id: string): Promise<void> {
    return kind === "instance" ? this.machines.delete("instance", id) : this.infrastructure.delete(kind, id);
  }

  token(name: string): string {
    return `${this.cluster}-${name}`.slice(0, 64);
  }

  tagsFor(name: string): Tags {
    return { ...this.tags, "slipway.dev/part": name };
  }

  /** Runs `cleanup` first when the case ends, before what `track` recorded is deleted (e.g. to cancel a reservation). */
  onTeardown(cleanup: () => Promise<void>): void {
    this.cleanups.push(cleanup);
  }

  track(kind: ResourceKind, id: string): void {
    if (!this.built.some((b) => b.kind === kind && b.id === id)) this.built.push({ kind, id });
  }

  /** Polls until `check` answers something; retryable provider errors count as "not yet". */
  async eventually<R>(what: string, check: () => Promise<R | undefined>): Promise<R> {
    const deadline = Date.now() + this.options.timeoutMs;
    let last: unknown;
    while (true) {
      try {
        const result = await check();
        if (result !== undefined) return result;
      } catch (error) {
        if (!isProviderError(error) || !error.retryable) throw error;
        last = error;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${this.options.timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.pollMs));
    }
  }

  async waitFor<K extends ResourceKind>(kind: K, id: string, state: "ready"): Promise<ResourceInfos[K]> {
    return this.eventually(`${kind} ${id} to be ${state}`, async () => {
      const info = await this.get(kind, id);
      assert.ok(info, `${kind} ${id} exists`);
      assert.notEqual(info.state, "failed", `${kind} ${id} failed: ${JSON.stringify(info)}`);
      return info.state === state ? info : undefined;
    });
  }

  async waitGone(kind: ResourceKind, id: string): Promise<void> {
    await this.eventually(`${kind} ${id} to be gone`, async () => {
      const info = await this.get(kind, id);
      return info === undefined || info.state === "gone" ? true : undefined;
    });
  }

  /** Deletes what the case built, newest first, retrying while something else still holds a resource. */
  async teardown(): Promise<void> {
    for (const cleanup of this.cleanups) await cleanup();
    for (const { kind, id } of [...this.built].reverse()) {
      await this.eventually(`delete of ${kind} ${id}`, async () => {
        await this.delete(kind, id);
        return true;
      });
      await this.waitGone(kind, id);
    }
  }
}

/** Opens the provider for one case of a suite; afterwards deletes what the case built and closes it. */
export type CaseStarter = (t: TestContext, label: string) => Promise<Case>;

export function caseStarter(open: () => Promise<ProviderUnderTest>, options: ProviderConformanceOptions): CaseStarter {
  const settings: Required<ProviderConformanceOptions> = { timeoutMs: options.timeoutMs ?? 10_000, pollMs: options.pollMs ?? 10 };
  return async (t, label) => {
    const h = await open();
    const c = new Case(h, label, settings);
    t.after(async () => {
      try {
        await h.clearFaults?.();
        await c.teardown();
      } finally {
        await h.close();
      }
    });
    return c;
  };
}

/** Zone, machine type and image of the machines a case makes: the harness's, else the catalogue's smallest. */
export async function machineTemplate(c: Case): Promise<MachineTemplate> {
  if (c.h.machineTemplate) return c.h.machineTemplate;
  assert.ok(c.has("catalogue"), "a provider without a catalogue needs the harness to give a machineTemplate");
  const zone = (await c.catalogue.zones())[0];
  assert.ok(zone, "the region has zones");
  const types = await c.catalogue.machineTypes();
  const smallest = [...types].sort((a, b) => a.vcpus - b.vcpus || a.memoryMiB - b.memoryMiB)[0];
  assert.ok(smallest, "the region offers machine types");
  const image = (await c.catalogue.images())[0];
  assert.ok(image, "the region has images");
  return { zone, machineType: smallest.name, imageId: image.id };
}
