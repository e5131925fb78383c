// Helpers for the sim cloud's tests (and for tests of code built on it): waiting on conditions, a ready
// network, and a well-formed SSH public key.
import type { CloudApi, Network, SecurityGroup, Subnet } from "./types.ts";

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<R>(check: () => R | Promise<R>, what: string, timeoutMs = 3000): Promise<Exclude<R, false | undefined>> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const result = await check();
    if (result !== undefined && result !== false) return result as Exclude<R, false | undefined>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Lets timers due now and the promise jobs they start run (for clouds on the instant profile). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1));
}

/** An OpenSSH ed25519 public key line built from fixed bytes. */
export function sshPublicKey(seed = 7, comment = "test@slipway"): string {
  const type = Buffer.from("ssh-ed25519");
  const key = Buffer.alloc(32, seed);
  const blob = Buffer.alloc(4 + type.length + 4 + key.length);
  blob.writeUInt32BE(type.length, 0);
  type.copy(blob, 4);
  blob.writeUInt32BE(key.length, 4 + type.length);
  key.copy(blob, 8 + type.length);
  return `ssh-ed25519 ${blob.toString("base64")} ${comment}`;
}

export interface ReadyNetwork {
  network: Network;
  subnet: Subnet;
  securityGroup: SecurityGroup;
  imageId: string;
}

export interface ReadyNetworkOptions {
  region?: string;
  /** A /16 range; the subnet takes its x.y.1.0/24. */
  cidr?: string;
  /** Called before each poll, e.g. to move a manual clock. */
  tick?: () => void;
}

/** Creates a network, a subnet in the region's first zone and a security group, and waits until they are available. */
export async function readyNetwork(api: CloudApi, options: ReadyNetworkOptions = {}): Promise<ReadyNetwork> {
  const { region = "sim-east-1", cidr = "10.0.0.0/16", tick } = options;
  const poll = <R>(check: () => Promise<R>, what: string) =>
    waitFor(async () => {
      tick?.();
      return check();
    }, what);
  const network = await api.createNetwork(region, { cidr });
  await poll(async () => (await api.getNetwork(region, network.id)).state === "available", "network available");
  const zone = (await api.describeZones(region))[0]!.name;
  const subnet = await api.createSubnet(region, { networkId: network.id, zone, cidr: cidr.replace(/\.0\.0\/16$/, ".1.0/24") });
  const securityGroup = await api.createSecurityGroup(region, {
    networkId: network.id,
    name: "nodes",
    rules: [{ direction: "ingress", protocol: "tcp", fromPort: 6443, toPort: 6443, cidr: "0.0.0.0/0" }],
  });
  await poll(async () => (await api.getSubnet(region, subnet.id)).state === "available", "subnet available");
  await poll(async () => (await api.getSecurityGroup(region, securityGroup.id)).state === "available", "security group available");
  const imageId = (await api.describeImages(region))[0]!.id;
  return {
    network: await api.getNetwork(region, network.id),
    subnet: await api.getSubnet(region, subnet.id),
    securityGroup: await api.getSecurityGroup(region, securityGroup.id),
    imageId,
  };
}
