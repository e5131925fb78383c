// What the ssh provider needs to know about hosts, and how it claims them: the Host objects of a
// Connection, their SSH keys and pinned host keys, and their claims. The provider does not read the API
// itself — the control plane hands it a HostDirectory (controllers/host/directory.ts, over the API) — so
// that a test can hand it one of its own.
import type { Tags } from "../provider.ts";
import type { HostFacts } from "./facts.ts";
import type { SshTarget } from "./session.ts";

export interface HostClaimRecord {
  token: string;
  tags: Tags;
  claimedAt: string;
  /** The claim is being given up: the host is being cleaned. */
  releasing?: boolean;
}

/** One Host as the provider sees it. */
export interface HostRecord {
  /** The Host's name (unique in its namespace): the id of the instance made on it. */
  name: string;
  /**
   * Where and how to log in, with the host key pinned at first contact (by the Host controller); no
   * `privateKey` when the key cannot be read (`keyProblem` says why).
   */
  target: Omit<SshTarget, "privateKey"> & { privateKey?: string };
  keyProblem?: string;
  /** Reachable: the last check logged in with the pinned host key; the reason of the last failure otherwise. */
  reachable: boolean;
  unreachableReason?: string;
  unreachableMessage?: string;
  facts?: HostFacts;
  /** The Host's labels, which pools of hosts select by. */
  labels?: Record<string, string>;
  claim?: HostClaimRecord;
  /**
   * The same machine (address and port) as another Host that a cluster holds, e.g. "Host h1 of cluster
   * demo": it cannot serve, whatever this Host's own claim says.
   */
  heldAs?: string;
}

/** A host that may be claimed now: free, reachable, with its key readable and its host key pinned. */
export function isClaimable(host: HostRecord): boolean {
  return !host.claim && !host.heldAs && host.reachable && Boolean(host.target.privateKey) && Boolean(host.target.hostKeyFingerprint);
}

/** Another claim won the race for a host; the provider tries the next free host. */
export class HostTakenError extends Error {
  override readonly name = "HostTakenError";
}

export interface HostDirectory {
  /** The hosts of the Connection named `connection` ("namespace/name"), sorted by name. */
  hosts(connection: string): Promise<HostRecord[]>;
  /** Records the claim on a free host; HostTakenError when another claim got there first. */
  claim(connection: string, host: string, claim: HostClaimRecord, cluster: string): Promise<void>;
  /**
   * Hands the claim with `fromToken` over to `claim` (a reservation taken by the machine it was made for);
   * HostTakenError when the host no longer holds `fromToken` (nor already `claim`'s token).
   */
  transfer(connection: string, host: string, fromToken: string, claim: HostClaimRecord): Promise<void>;
  /** Marks the claim with `token` as being released (the host is being cleaned). */
  markReleasing(connection: string, host: string, token: string): Promise<void>;
  /** Removes the claim with `token`: the host is free again. */
  release(connection: string, host: string, token: string): Promise<void>;
}
