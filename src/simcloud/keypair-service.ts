// Key pairs: imported OpenSSH public keys with a name unique in the region, available at once.
import { createHash } from "node:crypto";
import type { CloudCore } from "./core.ts";
import { InvalidParameterError } from "./errors.ts";
import { findOwned } from "./lookup.ts";
import { RecordIndex } from "./record-index.ts";
import type { KeyPairRecord } from "./records.ts";
import { defineResource } from "./resource-kinds.ts";
import { CreateKeyPairInputSchema, type CreateKeyPairInput } from "./schemas.ts";
import type { KeyPair } from "./types.ts";
import { plainView, viewOf } from "./views.ts";

const KEY_TYPES = ["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"];

/** Checks an OpenSSH public key line and returns its fingerprint ("SHA256:…", as ssh-keygen -l prints). */
export function sshFingerprint(publicKey: string): string {
  const invalid = (why: string) =>
    new InvalidParameterError(`keyPair.publicKey: not an OpenSSH public key (${why})`, { details: { field: "keyPair.publicKey" } });
  const [type, encoded] = publicKey.trim().split(/\s+/);
  if (!type || !KEY_TYPES.includes(type)) throw invalid(`key type must be one of ${KEY_TYPES.join(", ")}`);
  if (!encoded || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw invalid("the key is not base64");
  const blob = Buffer.from(encoded, "base64");
  const length = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  if (length !== type.length || blob.subarray(4, 4 + length).toString("latin1") !== type) {
    throw invalid(`the key data does not start with its type ${type}`);
  }
  return "SHA256:" + createHash("sha256").update(blob).digest("base64").replace(/=+$/, "");
}

export class KeyPairService {
  private readonly byName: RecordIndex<"keyPair">;

  constructor(private readonly core: CloudCore) {
    this.byName = new RecordIndex(core.state, "keyPair", (k) => [`${k.account}/${k.region}/${k.name}`]);
  }

  /** Imports a key under a name unique in the region; runs once per idempotency token. */
  createKeyPair(account: string, region: string, input: CreateKeyPairInput): KeyPairRecord {
    const sameName = this.byName.get(`${account}/${region}/${input.name}`)[0];
    if (sameName) {
      throw new InvalidParameterError(`keyPair.name: "${input.name}" already exists in ${region} (${sameName.id})`, {
        details: { field: "keyPair.name" },
      });
    }
    const record: KeyPairRecord = {
      ...this.core.newRecord("keyPair", account, region, input.tags),
      state: "available",
      name: input.name,
      publicKey: input.publicKey.trim(),
      fingerprint: sshFingerprint(input.publicKey),
    };
    this.core.state.put(record);
    return record;
  }

  /** Instances launched with the key keep it; only new launches can no longer name it. */
  deleteKeyPair(account: string, region: string, id: string): void {
    const record = findOwned(this.core, account, region, "keyPair", id);
    this.core.write(() => this.core.state.remove(record.id, { ...viewOf(this.core, record), state: "deleted" }));
  }
}

export const keyPairs = defineResource({
  kind: "keyPair",
  noun: "key pair",
  names: { one: "KeyPair", many: "KeyPairs" },
  collection: "key-pairs",
  idPrefix: "key",
  service: (core) => new KeyPairService(core),
  create: {
    input: CreateKeyPairInputSchema,
    check: (input) => void sshFingerprint(input.publicKey),
    build: (service, account, region, input) => service.createKeyPair(account, region, input),
  },
  delete: { run: (service, account, region, id) => service.deleteKeyPair(account, region, id) },
  view: (_core, record: KeyPairRecord): KeyPair => plainView(record),
  actions: {},
});
