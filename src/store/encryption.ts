// Encryption at rest: a Store wrapper that encrypts the values of chosen key prefixes (Secrets) with
// AES-256-GCM before they reach the underlying store, and decrypts them on the way out. A stored value
// reads `enc:v1:<base64 of nonce | ciphertext | tag>`; the key it is stored under is authenticated too,
// so a value copied to another key does not decrypt. Values are never put in error messages.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  RevisionMismatchError,
  type GetOptions,
  type KeyValue,
  type ListOptions,
  type ListResult,
  listSparsely,
  type SparseListResult,
  type Store,
  type Watch,
  type WatchEvent,
  type WatchOptions,
  type Wanted,
} from "./store.ts";

const MARKER = "enc:";
const FORMAT = "enc:v1:";
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const ENCRYPTION_KEY_ENV = "SLIPWAY_ENCRYPTION_KEY";
export const ENCRYPTION_KEY_FILE = "encryption.key";

/** A stored value does not decrypt: the key is not the one it was written with, or the value is damaged. */
export class DecryptionError extends Error {
  override readonly name = "DecryptionError";
  constructor(
    readonly key: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot decrypt the value of ${key}: wrong encryption key or damaged data`, options);
  }
}

export class InvalidEncryptionKeyError extends Error {
  override readonly name = "InvalidEncryptionKeyError";
}

export interface EncryptedStoreOptions {
  /** 32 bytes (AES-256). */
  key: Buffer;
  /** Values of keys starting with one of these are encrypted; others pass through untouched. */
  prefixes: string[];
}

export class EncryptedStore implements Store {
  private readonly key: Buffer;
  private readonly prefixes: string[];

  constructor(
    private readonly inner: Store,
    options: EncryptedStoreOptions,
  ) {
    if (options.key.length !== KEY_BYTES) {
      throw new InvalidEncryptionKeyError(`an encryption key has ${KEY_BYTES} bytes, not ${options.key.length}`);
    }
    this.key = Buffer.from(options.key);
    this.prefixes = [...options.prefixes];
  }

  /** The store underneath, for what only it offers (such as etcd leases). */
  unwrap(): Store {
    return this.inner;
  }

  revision(): Promise<number> {
    return this.inner.revision();
  }

  async get(key: string, options?: GetOptions): Promise<KeyValue | undefined> {
    const kv = await this.inner.get(key, options);
    return kv ? this.open(kv) : undefined;
  }

  async list(prefix: string, options?: ListOptions): Promise<ListResult> {
    const result = await this.inner.list(prefix, options);
    return { ...result, items: result.items.map((kv) => this.open(kv)) };
  }

  async listSparse(prefix: string, wanted: Wanted, options?: ListOptions): Promise<SparseListResult> {
    const result = await listSparsely(this.inner, prefix, wanted, options);
    return { ...result, items: result.items.map((kv) => (kv.value === undefined ? kv : { ...kv, value: this.unseal(kv.key, kv.value) })) };
  }

  count(prefix: string): Promise<number> {
    return this.inner.count(prefix);
  }

  async create(key: string, value: string): Promise<KeyValue> {
    const kv = await this.inner.create(key, this.seal(key, value));
    return { ...kv, value };
  }

  async update(key: string, value: string, expectedModRevision: number): Promise<KeyValue> {
    try {
      const kv = await this.inner.update(key, this.seal(key, value), expectedModRevision);
      return { ...kv, value };
    } catch (error) {
      throw this.openError(error);
    }
  }

  async delete(key: string, expectedModRevision?: number): Promise<KeyValue> {
    try {
      return this.open(await this.inner.delete(key, expectedModRevision));
    } catch (error) {
      throw this.openError(error);
    }
  }

  watch(prefix: string, options: WatchOptions): Watch {
    // A value that does not decrypt ends the watch with a DecryptionError, as a throwing consumer would.
    return this.inner.watch(prefix, {
      afterRevision: options.afterRevision,
      onEvent: (event) => options.onEvent(this.openEvent(event)),
      onError: options.onError,
    });
  }

  compact(revision: number): Promise<void> {
    return this.inner.compact(revision);
  }

  compactedRevision(): Promise<number> {
    return this.inner.compactedRevision();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private encrypts(key: string): boolean {
    return this.prefixes.some((prefix) => key.startsWith(prefix));
  }

  private seal(key: string, value: string): string {
    if (!this.encrypts(key)) return value;
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
    cipher.setAAD(Buffer.from(key, "utf8"));
    const ciphertext = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
    return FORMAT + Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]).toString("base64");
  }

  /**
   * Decrypts a stored value. Values written before encryption was turned on are returned as they are;
   * sealed values are opened wherever they are, so a prefix taken off the list (a kind no longer
   * marked sensitive) still reads until its objects are written again, in clear.
   */
  private unseal(key: string, stored: string): string {
    if (!stored.startsWith(this.encrypts(key) ? MARKER : FORMAT)) return stored;
    if (!stored.startsWith(FORMAT)) throw new DecryptionError(key);
    const sealed = Buffer.from(stored.slice(FORMAT.length), "base64");
    if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new DecryptionError(key);
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, sealed.subarray(0, NONCE_BYTES));
      decipher.setAAD(Buffer.from(key, "utf8"));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      const plaintext = Buffer.concat([
        decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return plaintext.toString("utf8");
    } catch (cause) {
      throw new DecryptionError(key, { cause });
    }
  }

  private open(kv: KeyValue): KeyValue {
    return { ...kv, value: this.unseal(kv.key, kv.value) };
  }

  private openEvent(event: WatchEvent): WatchEvent {
    if (event.type === "delete") return { ...event, prev: this.open(event.prev) };
    const kv = this.open(event.kv);
    return event.prev ? { type: "put", kv, prev: this.open(event.prev) } : { type: "put", kv };
  }

  private openError(error: unknown): unknown {
    if (error instanceof RevisionMismatchError) return new RevisionMismatchError(error.key, this.open(error.current));
    return error;
  }
}

function parseKey(encoded: string, source: string): Buffer {
  const text = encoded.trim();
  const key = Buffer.from(text, "base64");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || key.length !== KEY_BYTES) {
    throw new InvalidEncryptionKeyError(`${source} must hold the base64 encoding of ${KEY_BYTES} bytes`);
  }
  return key;
}

/**
 * The key that encrypts stored secrets: `SLIPWAY_ENCRYPTION_KEY` (base64 of 32 bytes) when set, otherwise
 * `<dataDir>/encryption.key`, which is created (readable by its owner only) with a random key on first use.
 */
export function loadEncryptionKey(options: { dataDir?: string; env?: NodeJS.ProcessEnv }): Buffer {
  const fromEnv = (options.env ?? process.env)[ENCRYPTION_KEY_ENV];
  if (fromEnv !== undefined && fromEnv !== "") return parseKey(fromEnv, ENCRYPTION_KEY_ENV);
  if (!options.dataDir) {
    throw new InvalidEncryptionKeyError(`no encryption key: set ${ENCRYPTION_KEY_ENV} or give a data directory`);
  }
  const file = join(options.dataDir, ENCRYPTION_KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    // Written aside, then linked into place: a link never replaces an existing file, so when two
    // processes start at once both read the key of whichever linked first, and never a partial file.
    const draft = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(draft, `${randomBytes(KEY_BYTES).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
    try {
      linkSync(draft, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      unlinkSync(draft);
    }
  }
  return parseKey(readFileSync(file, "utf8"), file);
}
