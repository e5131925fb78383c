// The hosts of ssh Connections as the API holds them: Host objects labelled slipway.dev/connection in the
// Connection's namespace, their keys read from their Secrets, their claims written to their status. A
// claim is written fenced by the Host's resourceVersion, so two clusters racing for one host cannot both
// have it: the loser reads the claim and moves on to another host.
import { secretKind } from "../../api/core.ts";
import type { SecretObject } from "../../api/kinds.ts";
import { LABEL_CONNECTION } from "../../api/slipway/connection.ts";
import { SSH_PRIVATE_KEY, hostKind, type HostObject } from "../../api/slipway/host.ts";
import { HostTakenError, type HostClaimRecord, type HostDirectory, type HostRecord } from "../../providers/ssh/hosts.ts";
import type { Client } from "../../runtime/client.ts";

function split(connection: string): { namespace: string; name: string } {
  const [namespace = "", name = ""] = connection.split("/");
  return { namespace, name };
}

function isConflict(error: unknown): boolean {
  return error instanceof Error && (error as Error & { code?: unknown }).code === 409;
}

/** The private key of a Host from its Secret, or why it cannot be had (never the key itself in a message). */
export async function hostKey(client: Client, host: HostObject): Promise<{ privateKey: string } | { problem: string; reason: string }> {
  const ref = host.spec.sshKeySecretRef;
  const secret = await client.of<SecretObject>(secretKind).tryGet(host.metadata.namespace, ref.name);
  if (!secret) return { problem: `Secret "${ref.name}" named by spec.sshKeySecretRef does not exist`, reason: "SecretNotFound" };
  const key = ref.key ?? SSH_PRIVATE_KEY;
  const value = secret.data?.[key];
  if (!value) return { problem: `Secret "${ref.name}" has no key "${key}"`, reason: "SecretKeyMissing" };
  return { privateKey: Buffer.from(value, "base64").toString("utf8") };
}

/** Another Host of the namespace naming the same machine (address and port) that a cluster holds. */
function heldAs(host: HostObject, all: readonly HostObject[]): { heldAs?: string } {
  const machine = (h: HostObject) => `${h.spec.address.toLowerCase()}:${h.spec.port ?? 22}`;
  const other = all.find((h) => h.metadata.name !== host.metadata.name && machine(h) === machine(host) && h.status?.claim && !host.status?.claim);
  return other ? { heldAs: `Host ${other.metadata.name} of cluster ${other.status?.clusterRef?.name ?? "?"}` } : {};
}

export class ApiHostDirectory implements HostDirectory {
  constructor(private readonly client: Client) {}

  private get hostsApi() {
    return this.client.of<HostObject>(hostKind);
  }

  async hosts(connection: string): Promise<HostRecord[]> {
    const { namespace, name } = split(connection);
    const all = (await this.hostsApi.list(namespace)).items;
    const mine = all.filter((h) => h.metadata.labels?.[LABEL_CONNECTION] === name);
    const records: HostRecord[] = [];
    for (const host of [...mine].sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""))) {
      const key = await hostKey(this.client, host);
      const reachable = host.status?.conditions?.find((c) => c.type === "Reachable");
      records.push({
        name: host.metadata.name!,
        target: {
          address: host.spec.address,
          port: host.spec.port ?? 22,
          user: host.spec.user ?? "root",
          ...("privateKey" in key ? { privateKey: key.privateKey } : {}),
          ...(host.status?.hostKeyFingerprint ? { hostKeyFingerprint: host.status.hostKeyFingerprint } : {}),
        },
        ...("problem" in key ? { keyProblem: key.problem } : {}),
        reachable: reachable?.status === "True",
        ...(reachable && reachable.status !== "True" ? { unreachableReason: reachable.reason, unreachableMessage: reachable.message } : {}),
        ...(host.status?.facts ? { facts: host.status.facts } : {}),
        ...(host.metadata.labels ? { labels: host.metadata.labels } : {}),
        ...(host.status?.claim ? { claim: host.status.claim } : {}),
        ...heldAs(host, all),
      });
    }
    return records;
  }

  /** Changes a Host's status with `change` (undefined: nothing to change), again on a conflicting write. */
  private async writeStatus(connection: string, host: string, change: (h: HostObject) => HostObject["status"] | undefined): Promise<void> {
    const { namespace } = split(connection);
    for (let attempt = 0; ; attempt++) {
      const current = await this.hostsApi.get(namespace, host);
      const status = change(current);
      if (status === undefined) return;
      try {
        await this.hostsApi.updateStatus({ ...current, status });
        return;
      } catch (error) {
        if (!isConflict(error) || attempt >= 10) throw error;
      }
    }
  }

  async claim(connection: string, host: string, claim: HostClaimRecord, cluster: string): Promise<void> {
    await this.writeStatus(connection, host, (h) => {
      if (h.status?.claim) {
        if (h.status.claim.token === claim.token) return undefined;
        throw new HostTakenError(`host ${host} is used by cluster ${h.status.clusterRef?.name ?? "?"}`);
      }
      if (h.metadata.deletionTimestamp) throw new HostTakenError(`host ${host} is being deleted`);
      return { ...h.status, claim, clusterRef: { name: cluster } };
    });
  }

  async transfer(connection: string, host: string, fromToken: string, claim: HostClaimRecord): Promise<void> {
    await this.writeStatus(connection, host, (h) => {
      if (h.status?.claim?.token === claim.token) return undefined;
      if (h.status?.claim?.token !== fromToken || h.status.claim.releasing) throw new HostTakenError(`host ${host} no longer holds the reservation`);
      return { ...h.status, claim };
    });
  }

  async markReleasing(connection: string, host: string, token: string): Promise<void> {
    await this.writeStatus(connection, host, (h) => (h.status?.claim?.token === token && !h.status.claim.releasing ? { ...h.status, claim: { ...h.status.claim, releasing: true } } : undefined));
  }

  async release(connection: string, host: string, token: string): Promise<void> {
    await this.writeStatus(connection, host, (h) => {
      if (h.status?.claim?.token !== token) return undefined;
      const { claim: _claim, clusterRef: _clusterRef, ...rest } = h.status;
      return rest;
    });
  }
}
