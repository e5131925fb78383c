// Helpers for the workload emulator's tests: a cluster PKI, a load balancer for a control plane, machines
// booted with kubeadm user data, an admin kubeconfig, and the real kubectl.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { initUserData, joinUserData } from "../../bootstrap/cloudinit.ts";
import type { ClusterPki, NodeRegistration } from "../../bootstrap/kubeadm.ts";
import { renderKubeconfig } from "../../bootstrap/kubeconfig.ts";
import { caCertHash, createCertificateAuthority, createServiceAccountKeyPair, issueCertificate, type KeyPairPem } from "../../bootstrap/pki.ts";
import { SimCloud } from "../cloud.ts";
import { ManualClock } from "../clock.ts";
import { readyNetwork, waitFor, type ReadyNetwork } from "../test-support.ts";
import { startWorkloadEmulation, type WorkloadEmulation } from "./index.ts";
import type { Instance, LoadBalancer } from "../types.ts";

export const REGION = "sim-east-1";
export const VERSION = "v1.31.2";
export const TOKEN = "abcdef.0123456789abcdef";
export const KUBECTL = "/usr/bin/kubectl";

/**
 * Runs whatever falls due on a manual clock without moving it, every millisecond, so instant steps happen
 * as soon as they can while timed ones (a lost node's removal, kubeadm's discovery timeout) wait for
 * `clock.advance`. Returns the function that stops it.
 */
export function runDueSteps(clock: ManualClock): () => void {
  const timer = setInterval(() => clock.advance(0), 1);
  timer.unref();
  return () => clearInterval(timer);
}

/** An instant sim cloud on a manual clock with workload clusters emulated, a ready network and a scratch directory. */
export interface EmulatedCloud {
  clock: ManualClock;
  cloud: SimCloud;
  workloads: WorkloadEmulation;
  net: ReadyNetwork;
  dir: string;
  close(): Promise<void>;
}

export async function emulatedCloud(seed: number): Promise<EmulatedCloud> {
  // Instant steps run as they fall due; time moves only when a test advances the clock.
  const clock = new ManualClock(Date.now());
  const stopSteps = runDueSteps(clock);
  const dir = mkdtempSync(join(tmpdir(), "slipway-workload-"));
  const cloud = new SimCloud({ profile: "instant", clock, seed });
  cloud.setQuota("default", REGION, { loadBalancers: 20, networks: 10 });
  const workloads = await startWorkloadEmulation(cloud);
  const net = await readyNetwork(cloud);
  return {
    clock,
    cloud,
    workloads,
    net,
    dir,
    async close() {
      stopSteps();
      await workloads.close();
      await cloud.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let serviceAccount: Promise<{ publicKeyPem: string; privateKeyPem: string }> | undefined;

/** A fresh cluster PKI (the RSA service-account key is shared between calls: it is slow to make). */
export async function clusterPki(): Promise<ClusterPki> {
  serviceAccount ??= createServiceAccountKeyPair();
  return {
    ca: await createCertificateAuthority({ commonName: "kubernetes" }),
    frontProxyCa: await createCertificateAuthority({ commonName: "front-proxy-ca" }),
    etcdCa: await createCertificateAuthority({ commonName: "etcd-ca" }),
    serviceAccount: await serviceAccount,
  };
}

/** A load balancer on 6443 for a control plane, once active. */
export async function controlPlaneLoadBalancer(cloud: SimCloud, net: ReadyNetwork, name: string): Promise<LoadBalancer> {
  const lb = await cloud.createLoadBalancer(REGION, { name, subnetIds: [net.subnet.id], listeners: [{ port: 6443, protocol: "tcp", targetPort: 6443 }] });
  return waitFor(async () => {
    const current = await cloud.getLoadBalancer(REGION, lb.id);
    return current.state === "active" ? current : undefined;
  }, `load balancer ${name} active`);
}

export function endpointOf(lb: LoadBalancer): string {
  return `${lb.dnsName}:6443`;
}

export function launch(cloud: SimCloud, net: ReadyNetwork, userData: string, machineType = "s1.medium"): Promise<Instance> {
  return cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType, imageId: net.imageId, securityGroupIds: [net.securityGroup.id], userData });
}

/** Boots a control-plane machine and registers it with the load balancer, as Slipway does (init needs it there). */
export async function launchControlPlane(cloud: SimCloud, net: ReadyNetwork, lb: LoadBalancer, userData: string, machineType?: string): Promise<Instance> {
  const instance = await launch(cloud, net, userData, machineType);
  await cloud.registerTargets(REGION, lb.id, [instance.id]);
  return instance;
}

/**
 * User data of a machine running `kubeadm init`. `software` is the version of the packages it installs
 * (default: the cluster's); a `kubernetesVersion` the writer would refuse is put into the configuration
 * as it is, to see kubeadm refuse it.
 */
export function initData(
  lb: LoadBalancer,
  pki: ClusterPki,
  node: string,
  overrides: { podSubnet?: string; kubernetesVersion?: string; tokenTtl?: string; endpoint?: string; software?: string; certSANs?: string[] } = {},
): string {
  const version = overrides.kubernetesVersion ?? VERSION;
  const software = overrides.software ?? (/^v1\.\d+\.\d+$/.test(version) ? version : VERSION);
  const data = initUserData(
    {
      clusterName: node.replace(/-cp-\d+$/, ""),
      kubernetesVersion: software,
      controlPlaneEndpoint: overrides.endpoint ?? endpointOf(lb),
      ...(overrides.certSANs ? { certSANs: overrides.certSANs } : {}),
      podSubnet: overrides.podSubnet ?? "10.244.0.0/16",
      serviceSubnet: "10.96.0.0/12",
      dnsDomain: "cluster.local",
      bootstrapToken: TOKEN,
      ...(overrides.tokenTtl ? { tokenTtl: overrides.tokenTtl } : {}),
      node: { name: node },
    },
    pki,
  );
  return software === version ? data : data.replace(`kubernetesVersion: ${software}`, `kubernetesVersion: "${version}"`);
}

export function joinData(
  lb: LoadBalancer,
  pki: ClusterPki,
  node: NodeRegistration,
  options: { controlPlane?: boolean; token?: string; caCertHashes?: string[]; endpoint?: string; kubernetesVersion?: string; takeTurn?: boolean } = {},
): string {
  return joinUserData(
    {
      kubernetesVersion: options.kubernetesVersion ?? VERSION,
      controlPlaneEndpoint: options.endpoint ?? endpointOf(lb),
      bootstrapToken: options.token ?? TOKEN,
      caCertHashes: options.caCertHashes ?? [caCertHash(pki.ca.certPem)],
      node,
      ...(options.controlPlane ? { controlPlane: {} } : {}),
    },
    pki,
    options.takeTurn,
  );
}

/** An admin client certificate (O=system:masters) issued by the cluster CA. */
export function adminCertificate(ca: KeyPairPem): Promise<KeyPairPem> {
  return issueCertificate(ca, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });
}

/** Writes an admin kubeconfig for the cluster behind `lb`, reached at the workload port with the LB's name for TLS. */
export async function writeKubeconfig(dir: string, lb: LoadBalancer, ca: KeyPairPem, client?: KeyPairPem): Promise<string> {
  const cert = client ?? (await adminCertificate(ca));
  const path = join(dir, `${lb.id}.kubeconfig`);
  const text = renderKubeconfig({
    clusterName: lb.name,
    server: `https://${lb.host}:${lb.port}${lb.path ?? ""}`,
    tlsServerName: lb.dnsName,
    caCertPem: ca.certPem,
    user: "kubernetes-admin",
    clientCertPem: cert.certPem,
    clientKeyPem: cert.keyPem,
  });
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

const run = promisify(execFile);

/** Runs the real kubectl; resolves with its output, or with the error's output and code. */
export async function kubectl(kubeconfig: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(KUBECTL, ["--kubeconfig", kubeconfig, "--request-timeout=10s", ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === "number" ? failed.code : 1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** The boot log of an instance once a line matches `pattern`. */
export async function bootLogMatching(cloud: SimCloud, instanceId: string, pattern: RegExp, timeoutMs = 5000): Promise<string[]> {
  return waitFor(async () => {
    const log = (await cloud.getInstance(REGION, instanceId)).bootLog;
    return log.some((line) => pattern.test(line)) ? log : undefined;
  }, `a boot log line matching ${pattern} on ${instanceId}`, timeoutMs);
}
