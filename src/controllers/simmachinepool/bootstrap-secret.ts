// The join of a pool's instances in a cloud secret: where the connection's provider keeps bootstrap
// secrets, the bootstrap token and CA hash (the kubeadm configuration) go into a secret owned by the
// SimMachinePool, readable only by instances carrying its owner-uid tag — which every instance of its
// scale set carries from the launch template — and the launch template's user data only names it, as a
// single machine's does. The secret lives as long as the join token is valid (a day) and is made again
// (with the data it holds, or halfway through its life) before it ends; the one it replaced stays for
// instances still booting from the previous launch template, older ones are deleted. Deleting the
// SimMachinePool deletes them all.
import { createHash } from "node:crypto";
import type { SecretObject } from "../../api/kinds.ts";
import { bootstrapSecretValue, renderUserData, type NodeBootstrap } from "../../bootstrap/cloudinit.ts";
import type { BootstrapSecrets } from "../../providers/provider.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import { BOOTSTRAP_PARTS_KEY } from "../bootstrapconfig/controller.ts";
import { TAG_OWNER_UID } from "../contract.ts";
import { poolCreateOptions } from "../pool-parts.ts";
import { JOIN_TOKEN_TTL_MS } from "../machine/jointoken.ts";
import type { SimMachinePoolScope } from "./controller.ts";

/** Longest name the cloud accepts for a secret. */
const NAME_MAX = 256;

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

async function storeOf(scope: SimMachinePoolScope): Promise<BootstrapSecrets | undefined> {
  if (!scope.connection) return undefined;
  return (await scope.providers.open(scope.connection)).capabilities.bootstrapSecrets;
}

/**
 * The launch template's user data: with the secret files in the pool's cloud secret (made or replaced
 * here) where the provider keeps secrets, else the data Secret's user data with them inline.
 */
export async function launchUserData(ctx: ReconcileContext, scope: SimMachinePoolScope, secret: SecretObject): Promise<string> {
  const inline = Buffer.from(secret.data!.value!, "base64").toString("utf8");
  const parts = secret.data?.[BOOTSTRAP_PARTS_KEY];
  const store = parts ? await storeOf(scope) : undefined;
  if (!parts || !store) return inline;
  const bootstrap = JSON.parse(Buffer.from(parts, "base64").toString("utf8")) as NodeBootstrap;
  const value = bootstrapSecretValue(bootstrap);
  const digest = sha256(value).slice(0, 16);
  const object = scope.object;
  const status = (object.status ??= {});
  const now = ctx.clock.now();
  const recorded = status.bootstrapSecret;
  const fresh = recorded && recorded.digest === digest && now - Date.parse(recorded.madeAt) < JOIN_TOKEN_TTL_MS / 2 ? await store.get(recorded.id) : undefined;
  if (fresh) return renderUserData(bootstrap, fresh.reference);
  // A new secret, determined by the one it replaces, so a retry gets the same one back.
  const created = poolCreateOptions(scope, `bootstrap-secret/${digest}/${recorded?.id ?? "first"}`, "bootstrap");
  const token = created.token;
  const plain = `slipway/${object.metadata.namespace}/${object.metadata.name}-${sha256(token).slice(0, 12)}`;
  const name = plain.length <= NAME_MAX ? plain : `slipway/${sha256(`${object.metadata.namespace}/${object.metadata.name}/${token}`)}`;
  const made = await store.create(
    { name, value, ttlSeconds: Math.ceil(JOIN_TOKEN_TTL_MS / 1000), readableBy: { [TAG_OWNER_UID]: object.metadata.uid! } },
    created,
  );
  ctx.log.info({ step: "storeBootstrapSecret", secret: made.id, expiresAt: made.expiresAt }, "bootstrap secret of the scale set stored");
  // The one replaced stays for instances booting from the launch template that names it; older ones go.
  for (const old of await store.findTagged({ [TAG_OWNER_UID]: object.metadata.uid! })) {
    if (old.id !== made.id && old.id !== recorded?.id) await store.delete(old.id);
  }
  status.bootstrapSecret = { id: made.id, digest, madeAt: new Date(now).toISOString() };
  await ctx.event(object, "Normal", "BootstrapSecretStored", `the join of the scale set's instances is in cloud secret ${made.name} (${made.id}) until ${made.expiresAt}`);
  return renderUserData(bootstrap, made.reference);
}

/** Delete path: the pool's bootstrap secrets go with it. */
export async function deleteBootstrapSecrets(ctx: ReconcileContext, scope: SimMachinePoolScope): Promise<void> {
  const store = await storeOf(scope);
  if (!store) return;
  for (const secret of await store.findTagged({ [TAG_OWNER_UID]: scope.object.metadata.uid! })) {
    await store.delete(secret.id);
    await ctx.event(scope.object, "Normal", "BootstrapSecretDeleted", `deleted bootstrap secret ${secret.name} (${secret.id}, read ${secret.reads} time(s)): SimMachinePool ${scope.object.metadata.name} is being deleted`);
  }
  if (scope.object.status) delete scope.object.status.bootstrapSecret;
}
