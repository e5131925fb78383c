// Resolves a Connection to an opened cloud provider: its provider's factory, region, endpoint and the
// credentials from the Secret it names. Providers are kept per Connection version, so a changed
// Connection (or credentials Secret) opens a new one.
import type { ConnectionObject, SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { providerFactory, providerNames, type CloudProvider, type ProviderFactory } from "../providers/provider.ts";
import type { Client } from "../runtime/client.ts";

export class ConnectionUnusableError extends Error {
  override readonly name = "ConnectionUnusableError";
}

export class ProviderResolver {
  private readonly opened = new Map<string, { version: string; provider: CloudProvider }>();

  /** `factories` finds a provider by name (default: the providers registered in this process). */
  constructor(
    private readonly client: Client,
    private readonly factories: (name: string) => ProviderFactory | undefined = providerFactory,
  ) {}

  /** Opens the provider of a Connection; ConnectionUnusableError says why it cannot be used. */
  async open(connection: ConnectionObject): Promise<CloudProvider> {
    const { namespace, name } = connection.metadata;
    const factory = this.factories(connection.spec.provider);
    if (!factory) {
      throw new ConnectionUnusableError(`connection "${name}" names provider "${connection.spec.provider}", which is not installed (installed: ${providerNames().join(", ")})`);
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
