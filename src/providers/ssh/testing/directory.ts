// A HostDirectory kept in memory, for the provider's tests: the lab's hosts as one Connection's, each
// already checked (reachable, host key pinned) as the Host controller would leave it, with faults to inject.
import type { FaultOperation, InjectedFault } from "../../conformance/case.ts";
import { HostTakenError, type HostClaimRecord, type HostDirectory, type HostRecord } from "../hosts.ts";
import type { SshLab } from "./lab.ts";

export class MemoryHostDirectory implements HostDirectory {
  readonly records: HostRecord[];
  private fault: InjectedFault | undefined;

  constructor(
    readonly connection: string,
    lab: SshLab,
  ) {
    this.records = lab.hosts.map((h) => ({
      name: h.name,
      target: { address: h.address, port: h.port, user: h.user, privateKey: lab.privateKey, hostKeyFingerprint: h.hostKeyFingerprint },
      reachable: true,
    }));
  }

  injectFault(operation: FaultOperation, fault: InjectedFault): void {
    if (operation === "create:instance") this.fault = fault;
  }

  clearFaults(): void {
    this.fault = undefined;
  }

  private find(connection: string, name: string): HostRecord {
    const host = this.records.find((h) => h.name === name);
    if (connection !== this.connection || !host) throw new Error(`no host ${connection}/${name}`);
    return host;
  }

  async hosts(connection: string): Promise<HostRecord[]> {
    if (connection !== this.connection) return [];
    // Every host taken: what a capacity failure looks like to a provider of hosts.
    if (this.fault === "capacity") return this.records.map((h) => ({ ...h, reachable: false, unreachableReason: "injected: busy" }));
    return this.records.map((h) => structuredClone(h));
  }

  async claim(connection: string, name: string, claim: HostClaimRecord): Promise<void> {
    const host = this.find(connection, name);
    if (host.claim) throw new HostTakenError(`host ${name} is already claimed`);
    host.claim = structuredClone(claim);
    if (this.fault === "lostAnswer") throw new Error("the answer to the claim was lost");
  }

  async markReleasing(connection: string, name: string, token: string): Promise<void> {
    const host = this.find(connection, name);
    if (host.claim?.token === token) host.claim.releasing = true;
  }

  async release(connection: string, name: string, token: string): Promise<void> {
    const host = this.find(connection, name);
    if (host.claim?.token === token) delete host.claim;
  }
}
