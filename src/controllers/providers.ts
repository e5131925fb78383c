// Resolves a Connection to an opened provider: its provider among those installed (the control plane's
// registry), region, endpoint and the credentials from the Secret it names. Providers are kept per
// Connection version, so a changed Connection (or credentials Secret) opens a new one. Controllers ask
// for the capability they need (`capability`); a provider that lacks it makes the connection unusable for
// that purpose, with the reason CapabilityMissing.
import type { ConnectionObject, SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { CapabilityMissingError, requireCapabilities, type Capabilities, type CapabilityName, type Provider } from "../providers/provider.ts";
import type { ProviderRegistry } from "../providers/registry.ts";
import type { Client } from "../runtime/client.ts";

/** Why a Connection cannot be used; `reason` names it for conditions. */
export class ConnectionUnusableError extends Error {
  override readonly name = "ConnectionUnusableError";
  constructor(
    message: string,
    readonly reason = "Unusable",
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class ProviderResolver {
  private readonly opened = new Map<string, { version: string; provider: Provider }>();

  constructor(
    private readonly client: Client,
    private readonly providers: ProviderRegistry,
  ) {}

  /**
   * Opens the provider of a Connection; ConnectionUnusableError says why it cannot be used. A provider
   * that lacks a capability in `needs` makes the connection unusable for what was asked, with the reason
   * CapabilityMissing and a message naming what it lacks and what it offers.
   */
  async open(connection: ConnectionObject, needs: readonly CapabilityName[] = []): Promise<Provider> {
    const provider = await this.openCached(connection);
    try {
      requireCapabilities(provider, needs, `connection "${connection.metadata.name}"`);
    } catch (error) {
      if (error instanceof CapabilityMissingError) throw new ConnectionUnusableError(error.message, error.reason, { cause: error });
      throw error;
    }
    return provider;
  }

  /** One capability of a Connection's provider (see `open`). */
  async capability<C extends CapabilityName>(connection: ConnectionObject, capability: C): Promise<Capabilities[C]> {
    const provider = await this.open(connection, [capability]);
    return provider.capabilities[capability] as Capabilities[C];
  }

  /** The Connection's provider, opened once per version of the Connection and its credentials Secret. */
  private async openCached(connection: ConnectionObject): Promise<Provider> {
    const { namespace, name } = connection.metadata;
    const factory = this.providers.factory(connection.spec.provider);
    if (!factory) {
      const installed = this.providers.names().join(", ") || "none";
      throw new ConnectionUnusableError(`connection "${name}" names provider "${connection.spec.provider}", which is not installed (installed: ${installed})`);
    }
    let credentials: Record<string, string> | undefined;
    let version = connection.metadata.resourceVersion ?? "";
    const ref = connection.spec.credentialsRef?.name;
    if (ref) {
      const secret = await this.client.of<SecretObject>(secretKind).tryGet(namespace, ref);
      if (!secret) throw new ConnectionUnusableError(`connection "${name}" refers to Secret "${ref}", which does not exist`);
      credentials = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
      version += `/${secret.metadata.resourceVersion}`;
    }
    const key = `${namespace}/${name}`;
    const cached = this.opened.get(key);
    if (cached && cached.version === version) return cached.provider;
    const provider = factory.open({ name: key, provider: connection.spec.provider, region: connection.spec.region, endpoint: connection.spec.endpoint, credentials });
    this.opened.set(key, { version, provider });
    return provider;
  }
}
