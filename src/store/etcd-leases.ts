// Leases on etcd (see leases.ts), through the etcd3 client's lease service and transactions.
import { EtcdLeaseInvalidError, type Etcd3, type ILeaseKeepAliveResponse } from "etcd3";
import { LeaseTimeoutError, type Leases } from "./leases.ts";

export class EtcdLeases implements Leases {
  constructor(
    private readonly client: Etcd3,
    /** Maps a store key to the etcd key (the store's key prefix applied). */
    private readonly fullKey: (key: string) => Buffer,
  ) {}

  async grant(ttlSeconds: number): Promise<string> {
    const response = await this.client.leaseClient.leaseGrant({ TTL: ttlSeconds, ID: 0 });
    return response.ID;
  }

  /**
   * One renewal on a stream of its own: a stream that a dead member held open would otherwise delay
   * every renewal after it, and the caller must know when each renewal was sent.
   */
  async keepAlive(lease: string, timeoutMs: number): Promise<number> {
    const stream = await this.client.leaseClient.leaseKeepAlive({ deadline: Date.now() + timeoutMs });
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.cancel();
        reject(new LeaseTimeoutError(lease, timeoutMs));
      }, timeoutMs);
      stream.on("data", (response: ILeaseKeepAliveResponse) => {
        clearTimeout(timer);
        stream.end();
        resolve(Number(response.TTL));
      });
      stream.on("error", (error: Error) => {
        clearTimeout(timer);
        reject(error);
      });
      stream.write({ ID: lease });
    });
  }

  async revoke(lease: string): Promise<void> {
    try {
      await this.client.leaseClient.leaseRevoke({ ID: lease });
    } catch (error) {
      // A lease that expired meanwhile is revoked already.
      if (!(error instanceof EtcdLeaseInvalidError)) throw error;
    }
  }

  async put(key: string, value: string, lease: string): Promise<void> {
    await this.client.kv.put({ key: this.fullKey(key), value: Buffer.from(value, "utf8"), lease });
  }

  async claim(key: string, value: string, lease: string): Promise<boolean> {
    const full = this.fullKey(key);
    const response = await this.client.kv.txn({
      compare: [{ key: full, target: "Create", result: "Equal", create_revision: 0 }],
      success: [{ request_put: { key: full, value: Buffer.from(value, "utf8"), lease } }],
      failure: [],
    });
    return response.succeeded;
  }

  async release(key: string, lease: string): Promise<boolean> {
    const full = this.fullKey(key);
    const response = await this.client.kv.txn({
      compare: [{ key: full, target: "Lease", result: "Equal", lease }],
      success: [{ request_delete_range: { key: full } }],
      failure: [],
    });
    return response.succeeded;
  }
}
