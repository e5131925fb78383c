// Secrets, as AWS Secrets Manager and SSM's SecureString parameters keep them: a named value an account
// stores and reads back by id. The value never appears in a view, a listing or a log: only the
// `getSecretValue` action answers it, to the account that owns the secret, or to a running instance of
// that account whose tags match the secret's `instanceAccess` (the instance's own identity, as an EC2
// instance profile reads what its role may). Every read is counted on the secret; one made `readOnce` is
// deleted by its first read. A secret with a `ttlSeconds` expires then and is gone, as if deleted.
import { Type, type Static } from "@sinclair/typebox";
import type { CloudCore } from "./core.ts";
import { InvalidParameterError, NotFoundError, UnauthorizedError } from "./errors.ts";
import { findOwned, hasTags } from "./lookup.ts";
import type { Transition } from "./records.ts";
import { RecordIndex } from "./record-index.ts";
import { action, defineResource, type ResourceView } from "./resource-kinds.ts";
import { CreateCommon, Strict, TagsSchema, checkInput, type Tags } from "./schemas.ts";
import { plainView } from "./views.ts";

/** Largest secret value, in bytes (Secrets Manager's limit). */
export const MAX_SECRET_BYTES = 64 * 1024;
/** Longest lifetime a secret may be given: 30 days. */
export const MAX_SECRET_TTL_SECONDS = 30 * 24 * 3600;

export const CreateSecretInputSchema = Strict({
  name: Type.String({ pattern: "^[a-zA-Z0-9/_+=.@-]{1,256}$", description: "Unique per account and region; letters, digits and /_+=.@-." }),
  value: Type.String({ description: "The secret material; never shown again except by getSecretValue." }),
  ttlSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_SECRET_TTL_SECONDS, description: "The secret expires (is deleted) this long after it was made." })),
  readOnce: Type.Optional(Type.Boolean({ description: "The first read deletes it." })),
  /** Running instances of the account with every one of these tags may read the value. */
  instanceAccess: Type.Optional(Strict({ tags: TagsSchema })),
  ...CreateCommon,
});
export type CreateSecretInput = Static<typeof CreateSecretInputSchema>;

export interface Secret extends ResourceView<"secret"> {
  state: "available";
  name: string;
  /** When it expires, if it was given a lifetime. */
  expiresAt?: string;
  readOnce: boolean;
  /** Running instances of the account carrying every one of these tags may read it with their own identity. */
  instanceAccess?: { tags: Tags };
  /** Reads so far, and the last one: when and by whom ("account <id>" or "instance <id>"). */
  reads: number;
  lastReadAt?: string;
  lastReadBy?: string;
}

export type SecretRecord = Secret & { value: string; transition?: Transition<"expire"> };

/** What a read answers: the value, and which secret it is. */
export interface SecretValue {
  id: string;
  name: string;
  value: string;
}

function checkSecret(input: CreateSecretInput): void {
  if (Buffer.byteLength(input.value) > MAX_SECRET_BYTES) {
    throw new InvalidParameterError(`secret.value: ${Buffer.byteLength(input.value)} bytes, more than ${MAX_SECRET_BYTES}`, { details: { field: "secret.value" } });
  }
}

export function secretView(record: SecretRecord): Secret {
  const { value: _value, ...rest } = record;
  return plainView(rest);
}

export class SecretService {
  private readonly byName: RecordIndex<"secret">;

  constructor(private readonly core: CloudCore) {
    this.byName = new RecordIndex(core.state, "secret", (s) => [`${s.account}/${s.region}/${s.name}`]);
    core.onTransition("secret", (record) => this.expire(record));
  }

  createSecret(account: string, region: string, input: CreateSecretInput): SecretRecord {
    const core = this.core;
    const taken = this.byName.get(`${account}/${region}/${input.name}`)[0];
    if (taken) throw new InvalidParameterError(`secret.name: a secret named ${input.name} already exists (${taken.id})`, { details: { field: "secret.name" } });
    const now = core.now();
    const record: SecretRecord = {
      id: core.newId("secret"),
      kind: "secret",
      account,
      region,
      tags: { ...input.tags },
      createdAt: core.iso(now),
      state: "available",
      name: input.name,
      readOnce: input.readOnce ?? false,
      ...(input.instanceAccess ? { instanceAccess: { tags: { ...input.instanceAccess.tags } } } : {}),
      reads: 0,
      value: input.value,
    };
    if (input.ttlSeconds === undefined) {
      core.state.put(record);
    } else {
      // Lifetimes are simulated time, as every delay of the cloud is.
      const lifetimeMs = core.scale(input.ttlSeconds * 1000);
      record.expiresAt = core.iso(now + lifetimeMs);
      core.schedule(record, "expire", lifetimeMs);
    }
    return record;
  }

  deleteSecret(account: string, region: string, id: string): void {
    this.remove(this.live(findOwned(this.core, account, region, "secret", id)));
  }

  /** The value, to the account that owns the secret. */
  getSecretValue(account: string, region: string, id: string): SecretValue {
    return this.read(this.live(findOwned(this.core, account, region, "secret", id)), `account ${account}`);
  }

  /**
   * The value, to a booting or running instance with its own identity: the secret must be of the instance's account
   * and region, and grant instances with the instance's tags access. Anyone else is refused.
   */
  getSecretValueAsInstance(instanceId: string, region: string, id: string): SecretValue {
    const instance = this.core.state.get("instance", instanceId);
    // A booting instance (pending: its user data runs now) has its identity already, as EC2's does.
    if (!instance || (instance.state !== "running" && instance.state !== "pending")) {
      throw new UnauthorizedError(`instance ${instanceId} is not running: it has no identity to read secrets with`);
    }
    let record: SecretRecord;
    try {
      record = this.live(findOwned(this.core, instance.account, region, "secret", id));
    } catch (error) {
      if (error instanceof NotFoundError) throw new NotFoundError(`secret ${id} not found in ${region}: it expired or was deleted`, { details: { kind: "secret", id } });
      throw error;
    }
    if (!record.instanceAccess || !hasTags(instance.tags, record.instanceAccess.tags)) {
      throw new UnauthorizedError(`instance ${instanceId} may not read secret ${id}: the secret grants no access to instances with its tags`);
    }
    return this.read(record, `instance ${instanceId}`);
  }

  /** NotFound once its lifetime ended, even if its expiry has not run yet. */
  private live(record: SecretRecord): SecretRecord {
    if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= this.core.now()) {
      this.remove(record);
      throw new NotFoundError(`secret ${record.id} not found in ${record.region}`, { details: { kind: "secret", id: record.id } });
    }
    return record;
  }

  private read(record: SecretRecord, by: string): SecretValue {
    const answer = { id: record.id, name: record.name, value: record.value };
    this.core.write(() => {
      record.reads += 1;
      record.lastReadAt = this.core.iso();
      record.lastReadBy = by;
      if (record.readOnce) this.removeNow(record);
      else this.core.state.put(record);
    });
    this.core.logger.info({ secret: record.id, by, readOnce: record.readOnce }, "sim cloud secret read");
    return answer;
  }

  private expire(record: SecretRecord): void {
    this.remove(record);
    this.core.logger.info({ secret: record.id }, "sim cloud secret expired");
  }

  private remove(record: SecretRecord): void {
    this.core.write(() => this.removeNow(record));
  }

  private removeNow(record: SecretRecord): void {
    this.core.cancelTransition(record);
    this.core.state.remove(record.id, secretView(record));
  }
}

export const secrets = defineResource({
  kind: "secret",
  noun: "secret",
  names: { one: "Secret", many: "Secrets" },
  collection: "secrets",
  idPrefix: "secret",
  service: (core) => new SecretService(core),
  create: {
    input: CreateSecretInputSchema,
    check: checkSecret,
    build: (service, account, region, input) => service.createSecret(account, region, input),
  },
  delete: { run: (service, account, region, id) => service.deleteSecret(account, region, id) },
  view: (_core, record: SecretRecord): Secret => secretView(record),
  actions: {
    /** The secret's value (POST …/secrets/{id}/value), to the account that owns it; the read is recorded. */
    getSecretValue: action({
      path: "value",
      body: () => ({}),
      parse: (body: unknown): [] => {
        checkInput(Strict({}), body ?? {}, "getSecretValue");
        return [];
      },
      run: (service: SecretService, account: string, region: string, id: string) => service.getSecretValue(account, region, id),
    }),
  },
});
