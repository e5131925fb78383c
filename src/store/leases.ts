// Leases: keys that live only while their holder keeps renewing a lease with a time to live, as etcd
// provides. Control-plane replicas sharing one etcd cluster coordinate through them: who is alive, and
// who holds which shard of the controllers' work. The embedded SQLite store serves a single process and
// has no leases. Keys are read and watched through the Store the leases come from.
//
// Semantics an implementation MUST keep:
// - A key written with a lease is deleted, with a delete event, when the lease is revoked or expires.
// - `claim` creates a key only if it does not exist, atomically; two holders never both succeed.
// - `release` deletes a key only while it is still bound to the given lease.
// - `keepAlive` renews the lease and reports the TTL left; 0 means the lease is gone for good.

export interface Leases {
  /** Grants a lease of `ttlSeconds`; resolves with its id. */
  grant(ttlSeconds: number): Promise<string>;
  /** Renews the lease; resolves with the TTL left in seconds (0: the lease no longer exists). */
  keepAlive(lease: string, timeoutMs: number): Promise<number>;
  /** Ends the lease now: every key bound to it is deleted at once. */
  revoke(lease: string): Promise<void>;
  /** Writes the key bound to the lease, whether or not it exists. */
  put(key: string, value: string, lease: string): Promise<void>;
  /** Creates the key bound to the lease unless it exists; true when this call created it. */
  claim(key: string, value: string, lease: string): Promise<boolean>;
  /** Deletes the key if it is still bound to the lease; true when it was deleted. */
  release(key: string, lease: string): Promise<boolean>;
}

/** A lease could not be renewed in time (the store did not answer). */
export class LeaseTimeoutError extends Error {
  override readonly name = "LeaseTimeoutError";
  constructor(readonly lease: string, readonly timeoutMs: number) {
    super(`lease ${lease} was not renewed within ${timeoutMs} ms`);
  }
}
