// The sim provider's bootstrap secrets: the sim cloud's secrets service (secret-service.ts) through the
// bootstrapSecrets capability of the contract. A secret grants access to instances by tags (its
// `instanceAccess`), expires with its lifetime, and its value never comes back through the provider.
import type { Secret } from "../../simcloud/secret-service.ts";
import type * as Sim from "../../simcloud/types.ts";
import { isProviderError, type BootstrapSecretInfo, type BootstrapSecretSpec, type BootstrapSecrets, type CreateOptions, type Tags } from "../provider.ts";
import type { CloudCall } from "./reservations.ts";

export class SimBootstrapSecrets implements BootstrapSecrets {
  constructor(
    private readonly api: Sim.CloudApi,
    private readonly region: string,
    private readonly call: CloudCall,
    /** The cloud's endpoint, when the provider talks to it over HTTP. */
    private readonly endpoint?: string,
  ) {}

  private info(s: Secret): BootstrapSecretInfo {
    return {
      id: s.id,
      name: s.name,
      tags: { ...s.tags },
      expiresAt: s.expiresAt ?? "",
      reads: s.reads,
      reference: { id: s.id, region: s.region, ...(this.endpoint ? { endpoint: this.endpoint } : {}) },
    };
  }

  async create(spec: BootstrapSecretSpec, { token, tags }: CreateOptions): Promise<BootstrapSecretInfo> {
    const created = await this.call(`create secret ${spec.name}`, () =>
      this.api.createSecret(this.region, { name: spec.name, value: spec.value, ttlSeconds: spec.ttlSeconds, instanceAccess: { tags: spec.readableBy }, tags, clientToken: token }),
    );
    return this.info(created);
  }

  async get(id: string): Promise<BootstrapSecretInfo | undefined> {
    try {
      return this.info(await this.call(`get secret ${id}`, () => this.api.getSecret(this.region, id)));
    } catch (error) {
      if (isProviderError(error, "notFound")) return undefined;
      throw error;
    }
  }

  async findTagged(tags: Tags): Promise<BootstrapSecretInfo[]> {
    const found = await this.call("list secrets", () => this.api.listSecrets(this.region, { tags }));
    return found.map((s) => this.info(s));
  }

  async delete(id: string): Promise<void> {
    try {
      await this.call(`delete secret ${id}`, () => this.api.deleteSecret(this.region, id));
    } catch (error) {
      if (!isProviderError(error, "notFound")) throw error;
    }
  }
}
