// A machine's bootstrap secret: where its connection's cloud keeps secrets (the bootstrapSecrets
// capability), the bootstrap token and the cluster's keys go into a cloud secret named for the machine,
// readable only by the machine's own instance (by its owner-uid tag) and only until the machine could have
// booted and joined; the user data carries a reference to it. Once the node joined, or when the machine is
// deleted, the secret is deleted: nothing secret stays in the cloud, as ARO deletes its ignition.
import { createHash } from "node:crypto";
import type { MachineObject } from "../../api/kinds.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { bootstrapSecretValue, type BootstrapSecretRef, type NodeBootstrap } from "../../bootstrap/cloudinit.ts";
import type { BootstrapSecrets } from "../../providers/provider.ts";
import { getCondition, setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { cloudTags, idempotencyToken, TAG_OWNER_UID } from "../contract.ts";
import type { MachineScope } from "./phases.ts";
import { BOOTSTRAP_READY, REASONS } from "./status.ts";

/** Longest name the cloud accepts for a secret. */
const NAME_MAX = 256;

/** The secret's name: the machine's namespace, name and uid, or a hash of them when that is too long. */
export function bootstrapSecretName(machine: MachineObject): string {
  const { namespace, name, uid } = machine.metadata;
  const plain = `slipway/${namespace}/${name}-${uid!.slice(0, 8)}`;
  if (plain.length <= NAME_MAX) return plain;
  return `slipway/${createHash("sha256").update(`${namespace}/${name}/${uid}`).digest("hex")}`;
}

/** The connection's secret store, if its provider has one. */
async function storeOf(scope: MachineScope): Promise<BootstrapSecrets | undefined> {
  if (!scope.connection) return undefined;
  return (await scope.deps.providers.open(scope.connection)).capabilities.bootstrapSecrets;
}

/**
 * Puts the bootstrap's secret files into a cloud secret, once (idempotency token), and answers where the
 * machine reads it; undefined when the provider keeps no secrets (they then go into the user data).
 */
export async function storeBootstrapSecret(ctx: ReconcileContext, scope: MachineScope, bootstrap: NodeBootstrap): Promise<BootstrapSecretRef | undefined> {
  const store = await storeOf(scope);
  if (!store) return undefined;
  const machine = scope.object;
  const cluster = scope.cluster!;
  // Readable for as long as the machine may take to boot and join; the node's join deletes it sooner.
  const ttlSeconds = Math.ceil((scope.timings.bootDeadlineMs + scope.timings.joinDeadlineMs) / 1000);
  const secret = await store.create(
    { name: bootstrapSecretName(machine), value: bootstrapSecretValue(bootstrap), ttlSeconds, readableBy: { [TAG_OWNER_UID]: machine.metadata.uid! } },
    {
      token: idempotencyToken(machine.metadata.uid!, "bootstrap-secret"),
      tags: cloudTags({ namespace: cluster.metadata.namespace!, name: cluster.metadata.name!, uid: cluster.metadata.uid! }, machine, "bootstrap"),
    },
  );
  ctx.log.info({ step: "storeBootstrapSecret", secret: secret.id, expiresAt: secret.expiresAt }, "bootstrap secret stored");
  return secret.reference;
}

/** Deletes the machine's bootstrap secrets (found by its owner-uid tag); answers what went, one phrase each, or undefined without a secret store. */
async function deleteSecrets(ctx: ReconcileContext, scope: MachineScope): Promise<string[] | undefined> {
  const store = await storeOf(scope);
  if (!store) return undefined;
  const deleted: string[] = [];
  for (const secret of await store.findTagged({ [TAG_OWNER_UID]: scope.object.metadata.uid! })) {
    await store.delete(secret.id);
    ctx.log.info({ step: "deleteBootstrapSecret", secret: secret.id, reads: secret.reads }, "bootstrap secret deleted");
    deleted.push(`bootstrap secret ${secret.name} (${secret.id}, read ${secret.reads} time(s))`);
  }
  return deleted;
}

/** Deletes the machine's bootstrap secrets, with an Event for each; answers how many there were. */
export async function deleteBootstrapSecrets(ctx: ReconcileContext, scope: MachineScope, why: string): Promise<number> {
  const deleted = (await deleteSecrets(ctx, scope)) ?? [];
  for (const secret of deleted) await ctx.event(scope.object, "Normal", REASONS.bootstrapSecretDeleted, `deleted ${secret}: ${why}`);
  return deleted.length;
}

function secretGone(machine: MachineObject): boolean {
  return getCondition(machine.status?.conditions, BOOTSTRAP_READY)?.reason === REASONS.bootstrapSecretDeleted;
}

function markSecretGone(ctx: ReconcileContext, machine: MachineObject, deleted: number): void {
  const node = machine.status!.nodeName ?? machine.metadata.name;
  const message = deleted > 0 ? `the bootstrap secret was deleted after node ${node} joined` : `node ${node} joined; no bootstrap secret is left in the cloud`;
  setCondition(machine.status!, { type: BOOTSTRAP_READY, status: "True", reason: REASONS.bootstrapSecretDeleted, message }, nowTimestamp(new Date(ctx.clock.now())));
}

/**
 * As the node turns Ready: deletes its bootstrap secret and answers what the node's NodeReady Event adds
 * ("deleted its bootstrap secret …"), so one Event says both. Undefined when there was nothing to delete
 * or it failed (removeJoinedBootstrapSecret then tries again, with an Event of its own).
 */
export async function deleteSecretOfReadyNode(ctx: ReconcileContext, scope: MachineScope): Promise<string | undefined> {
  const machine = scope.object;
  if (!machine.status?.bootstrapped || secretGone(machine)) return undefined;
  try {
    const deleted = await deleteSecrets(ctx, scope);
    if (deleted === undefined) return undefined;
    markSecretGone(ctx, machine, deleted.length);
    return deleted.length > 0 ? `deleted its ${deleted.join(", ")}` : undefined;
  } catch (error) {
    ctx.log.info({ step: "deleteBootstrapSecret", err: (error as Error).message }, "bootstrap secret not deleted yet");
    return undefined;
  }
}

/**
 * Once the node joined and is Ready (the phase runs after observeNode, which halts until then), its
 * bootstrap secret goes, once: the BootstrapReady condition says it went. observeNode does it as the
 * node turns Ready; this phase catches a deletion that failed then.
 */
export const removeJoinedBootstrapSecret: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  if (!machine.status?.bootstrapped || secretGone(machine)) return;
  if (!(await storeOf(scope))) return;
  const node = machine.status.nodeName ?? machine.metadata.name;
  markSecretGone(ctx, machine, await deleteBootstrapSecrets(ctx, scope, `node ${node} joined`));
};

/** Delete path: whatever bootstrap secret is left goes with the machine. */
export const deleteBootstrapSecret: Phase<MachineScope> = async (ctx, scope) => {
  if (!scope.connection) return;
  await deleteBootstrapSecrets(ctx, scope, `machine ${scope.object.metadata.name} is being deleted`);
};
