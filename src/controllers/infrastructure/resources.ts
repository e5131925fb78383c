// Finding, making and removing one Infrastructure's cloud resources so that none is ever made twice and
// none is left behind. A resource is found by the id recorded in status, else by the tags naming its
// owner and role (a crash between the create call and the status write loses only the id), else made
// with an idempotency token (a retry of a create whose answer was lost gets the same resource back).
//
// A token outlives its resource: once the resource is gone, the same token answers with its last view,
// marked gone. Making it again needs a new token, and every replica must pick the same one, so the next
// token is derived from the id of the gone resource: "network", then "network/after/<id>", and so on.
// The chain is walked from its start each time, which costs a call per resource lost in the past.
import type { ClusterInfrastructure, InfrastructureResourceKind, ResourceInfo, ResourceInfos, ResourceSpecs, Tags } from "../../providers/provider.ts";
import { idempotencyToken } from "../contract.ts";

/** How many gone resources a token chain may pass before it is taken for a loop. */
const MAX_TOKEN_CHAIN = 16;

/** Every resource this controller makes, in the order they are deleted (dependents first). */
export const DELETE_ORDER: readonly InfrastructureResourceKind[] = ["loadBalancer", "securityGroup", "subnet", "network", "keyPair"];

/** What the messages, events and conditions call a kind of resource. */
export const RESOURCE_NAMES: Record<InfrastructureResourceKind, { noun: string; title: string }> = {
  network: { noun: "network", title: "Network" },
  subnet: { noun: "subnet", title: "Subnet" },
  securityGroup: { noun: "security group", title: "SecurityGroup" },
  keyPair: { noun: "key pair", title: "KeyPair" },
  loadBalancer: { noun: "load balancer", title: "LoadBalancer" },
};

export class TokenChainError extends Error {
  override readonly name = "TokenChainError";
}

/** Resources worth adopting: not on their way out. */
function live(info: ResourceInfo): boolean {
  return info.state !== "gone" && info.state !== "deleting" && info.state !== "failed";
}

function oldestFirst(a: ResourceInfo, b: ResourceInfo): number {
  return (a.createdAt ?? "").localeCompare(b.createdAt ?? "") || a.id.localeCompare(b.id);
}

export interface ResourceIntent<K extends InfrastructureResourceKind> {
  kind: K;
  /** The id recorded in status, if any. */
  recordedId?: string;
  /** Tags that single this resource out (the owner's uid and the role). */
  identity: Tags;
  /** Every tag the resource is made with (a superset of `identity`). */
  tags: Tags;
  ownerUid: string;
  /** What the token names, the first link of the chain, given what is being made. */
  purpose: (spec: ResourceSpecs[K]) => string;
  spec: () => ResourceSpecs[K] | Promise<ResourceSpecs[K]>;
  /** Called just before a create call (e.g. for an event). */
  creating?: () => Promise<void> | void;
}

export interface FoundResource<K extends InfrastructureResourceKind> {
  info: ResourceInfos[K];
  /** Where it came from: the id in status, its tags, or a create call. */
  origin: "recorded" | "adopted" | "created";
  /** The recorded id that no longer exists in the cloud, if it was replaced. */
  lostId?: string;
  /** Further resources with the same identity, removed (they should not exist; they are ours). */
  duplicates: string[];
}

/** The resource an intent names: recorded, found by its tags, or made (see the file comment). */
export async function findOrCreate<K extends InfrastructureResourceKind>(provider: ClusterInfrastructure, intent: ResourceIntent<K>): Promise<FoundResource<K>> {
  let lostId: string | undefined;
  if (intent.recordedId) {
    const info = await provider.get(intent.kind, intent.recordedId);
    if (info && info.state !== "gone") return { info, origin: "recorded", duplicates: [] };
    lostId = intent.recordedId;
  }
  const tagged = (await provider.findTagged(intent.kind, intent.identity)).filter(live).sort(oldestFirst);
  const [adopted, ...extra] = tagged;
  if (adopted) {
    const duplicates: string[] = [];
    for (const duplicate of extra) {
      try {
        await provider.delete(intent.kind, duplicate.id);
        duplicates.push(duplicate.id);
      } catch {
        // Best effort: the delete phases remove whatever carries the owner's tags.
      }
    }
    return { info: adopted, origin: "adopted", duplicates, ...(lostId ? { lostId } : {}) };
  }
  const spec = await intent.spec();
  await intent.creating?.();
  const first = intent.purpose(spec);
  let purpose = first;
  for (let link = 0; link < MAX_TOKEN_CHAIN; link++) {
    const info = await provider.create(intent.kind, spec, { token: idempotencyToken(intent.ownerUid, purpose), tags: intent.tags });
    if (info.state !== "gone") return { info, origin: "created", duplicates: [], ...(lostId ? { lostId } : {}) };
    purpose = `${first}/after/${info.id}`;
  }
  throw new TokenChainError(`${intent.kind} "${first}" was made and lost ${MAX_TOKEN_CHAIN} times; not making it again`);
}

/**
 * Deletes every resource of a kind that is recorded (`recordedIds`) or carries `ownerTags`, tolerating
 * those already gone. Says which are gone and which are still on their way out (e.g. a load balancer in
 * `deleting`).
 * Errors (a dependency still using one, a refused permission) are thrown as the provider raised them.
 */
export async function deleteOwned(
  provider: ClusterInfrastructure,
  kind: InfrastructureResourceKind,
  recordedIds: readonly (string | undefined)[],
  ownerTags: Tags,
): Promise<{ deleted: string[]; remaining: ResourceInfo[] }> {
  const ids = new Set(recordedIds.filter((id): id is string => id !== undefined));
  for (const info of await provider.findTagged(kind, ownerTags)) ids.add(info.id);
  const deleted: string[] = [];
  const remaining: ResourceInfo[] = [];
  for (const id of ids) {
    await provider.delete(kind, id);
    const after = await provider.get(kind, id);
    if (after && after.state !== "gone") remaining.push(after);
    else deleted.push(id);
  }
  return { deleted, remaining };
}
