import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SimCloudAdminClient } from "../../simcloud/client.ts";
import { SimCloud } from "../../simcloud/cloud.ts";
import type { FaultConfig } from "../../simcloud/faults.ts";
import { startSimCloudServer } from "../../simcloud/cli.ts";
import { DEFAULT_ADMIN_TOKEN } from "../../simcloud/server.ts";
import { conformancePublicKey, runProviderConformance, type FaultOperation, type InjectedFault } from "../conformance/index.ts";
import { ProviderError, type ConnectionTarget, type ResourceKind } from "../provider.ts";
import { SimProvider, loadBalancerName, simProviderFactory } from "./index.ts";

const REGION = "sim-east-1";
const target = (extra: Partial<ConnectionTarget> = {}): ConnectionTarget => ({ name: "default/east", provider: "sim", region: REGION, ...extra });

const CREATE_OPERATION: Record<ResourceKind, string> = {
  network: "createNetwork",
  subnet: "createSubnet",
  securityGroup: "createSecurityGroup",
  keyPair: "createKeyPair",
  loadBalancer: "createLoadBalancer",
  instance: "createInstance",
};

/** The sim cloud's fault configuration that makes every call of `operation` fail with `fault`. */
function faultConfig(operation: FaultOperation, fault: InjectedFault): FaultConfig {
  const kind = operation.slice("create:".length) as ResourceKind;
  const name = CREATE_OPERATION[kind];
  switch (fault) {
    case "lostAnswer":
      return { errors: { [name]: { InternalError: 1 } }, failAfterCommit: 1 };
    case "transient":
      return { errors: { [name]: { InternalError: 1 } }, failAfterCommit: 0 };
    case "throttled":
      return { errors: { [name]: { Throttling: 1 } }, retryAfterMs: 250 };
    case "capacity":
      return { errors: { [name]: { InsufficientCapacity: 1 } } };
  }
}

runProviderConformance("sim, in-process", async () => {
  const cloud = new SimCloud({ profile: "instant", seed: 11 });
  const factory = simProviderFactory({ cloud });
  return {
    provider: factory.open(target()),
    inRegion: (region) => factory.open(target({ region })),
    injectFault: async (operation, fault) => cloud.setFaults(faultConfig(operation, fault)),
    clearFaults: async () => cloud.setFaults({}),
    setQuota: async (limits) => void cloud.setQuota("default", REGION, limits),
    readBootstrapSecretAsInstance: async (instanceId, reference) => cloud.getSecretValueAsInstance(instanceId, reference.region, reference.id).value,
    close: () => cloud.close(),
  };
}, ["catalogue", "clusterInfrastructure", "machines", "reservations", "dns", "poolInfrastructure", "bootstrapSecrets"]);

runProviderConformance("sim, over HTTP", async () => {
  const server = await startSimCloudServer({ port: 0, profile: "instant", seed: 12 });
  const admin = new SimCloudAdminClient({ endpoint: server.url, token: DEFAULT_ADMIN_TOKEN });
  const factory = simProviderFactory({ endpoint: server.url });
  return {
    provider: factory.open(target()),
    inRegion: (region) => factory.open(target({ region })),
    injectFault: async (operation, fault) => void (await admin.setFaults(faultConfig(operation, fault))),
    clearFaults: async () => void (await admin.setFaults({})),
    setQuota: async (limits) => void (await admin.setQuota("default", REGION, limits)),
    readBootstrapSecretAsInstance: async (instanceId, reference) => {
      assert.equal(reference.endpoint, server.url, "the reference names the cloud's endpoint");
      return server.cloud.getSecretValueAsInstance(instanceId, reference.region, reference.id).value;
    },
    close: () => server.close(),
  };
}, ["catalogue", "clusterInfrastructure", "machines", "reservations", "dns", "poolInfrastructure", "bootstrapSecrets"]);

/** Polls the provider until `check` holds. */
async function until<R>(check: () => Promise<R | undefined>, what: string): Promise<R> {
  const deadline = Date.now() + 5000;
  while (true) {
    const result = await check();
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A ready subnet (and its network) with a security group, and the region's first image. */
async function foundation(provider: SimProvider) {
  const network = await provider.create("network", { cidr: "10.7.0.0/16" }, { token: "net", tags: { cluster: "c1" } });
  await until(async () => ((await provider.get("network", network.id))?.state === "ready" ? true : undefined), "network ready");
  const subnet = await provider.create("subnet", { networkId: network.id, zone: `${REGION}a`, cidr: "10.7.1.0/24" }, { token: "subnet", tags: {} });
  const sg = await provider.create("securityGroup", { networkId: network.id, name: "nodes", description: "", rules: [] }, { token: "sg", tags: {} });
  await until(async () => ((await provider.get("subnet", subnet.id))?.state === "ready" ? true : undefined), "subnet ready");
  await until(async () => ((await provider.get("securityGroup", sg.id))?.state === "ready" ? true : undefined), "sg ready");
  const imageId = (await provider.images())[0]!.id;
  const instance = (token: string) =>
    provider.create(
      "instance",
      { zone: `${REGION}a`, machineType: "s1.small", imageId, userData: "#cloud-config\n", placement: { subnetId: subnet.id, securityGroupIds: [sg.id] } },
      { token, tags: { cluster: "c1" } },
    );
  return { network, subnet, sg, instance };
}

describe("sim provider", () => {
  it("names instances as Kubernetes nodes carry them and reports why an instance went away", async (t) => {
    const cloud = new SimCloud({ profile: "instant", seed: 3 });
    t.after(() => cloud.close());
    const provider = simProviderFactory({ cloud }).open(target());
    const { instance } = await foundation(provider);
    const created = await instance("i1");
    assert.match(created.providerId, new RegExp(`^sim://${REGION}/${created.id}$`));
    await until(async () => ((await provider.get("instance", created.id))?.state === "ready" ? true : undefined), "instance ready");

    cloud.killInstance(created.id, "the host lost power");
    const gone = await provider.get("instance", created.id);
    assert.equal(gone?.state, "gone");
    assert.equal(gone?.cloudState, "terminated");
    assert.deepEqual(gone?.reason, { code: "InstanceFailure", message: "the host lost power" });
    assert.deepEqual(await provider.findTagged("instance", { cluster: "c1" }), []);
  });

  it("reports a boot that failed, and an instance stopped behind its back as failed", async (t) => {
    const cloud = new SimCloud({ profile: "instant", seed: 4 });
    t.after(() => cloud.close());
    cloud.addHooks({ onInstanceBooted: (_instance, userData) => (userData.includes("fail-me") ? { fail: "kubeadm init failed" } : undefined) });
    const provider = simProviderFactory({ cloud }).open(target());
    const { subnet, sg } = await foundation(provider);
    const imageId = (await provider.images())[0]!.id;
    const spec = { zone: `${REGION}a`, machineType: "s1.small", imageId, placement: { subnetId: subnet.id, securityGroupIds: [sg.id] } };
    const failing = await provider.create("instance", { ...spec, userData: "#cloud-config\n# fail-me\n" }, { token: "bad", tags: {} });
    const failed = await until(async () => {
      const info = await provider.get("instance", failing.id);
      return info?.state === "gone" ? info : undefined;
    }, "boot failure");
    assert.deepEqual(failed.reason, { code: "BootFailed", message: "kubeadm init failed" });

    const healthy = await provider.create("instance", { ...spec, userData: "#cloud-config\n" }, { token: "good", tags: {} });
    await until(async () => ((await provider.get("instance", healthy.id))?.state === "ready" ? true : undefined), "instance ready");
    await cloud.stopInstance(REGION, healthy.id);
    const stopped = await until(async () => {
      const info = await provider.get("instance", healthy.id);
      return info?.cloudState === "stopped" ? info : undefined;
    }, "instance stopped");
    assert.equal(stopped.state, "failed");
    assert.equal(stopped.reason?.code, "UserInitiatedShutdown");
  });

  it("gives the URL the load balancer publishes and keeps the DNS name for certificates", async (t) => {
    const cloud = new SimCloud({ profile: "instant", seed: 5 });
    t.after(() => cloud.close());
    cloud.addHooks({ onLoadBalancerActive: (lb) => ({ host: "127.0.0.1", port: 31443, path: `/clusters/${lb.id}` }) });
    const provider = simProviderFactory({ cloud }).open(target());
    const { network, subnet } = await foundation(provider);
    const name = "a-cluster-with-a-rather-long-name-apiserver";
    const lb = await provider.create(
      "loadBalancer",
      { name, networkId: network.id, subnetIds: [subnet.id], listeners: [{ port: 6443, targetPort: 6443 }] },
      { token: "lb", tags: { cluster: "c1" } },
    );
    assert.equal(lb.state, "pending");
    const ready = await until(async () => {
      const info = await provider.get("loadBalancer", lb.id);
      return info?.state === "ready" ? info : undefined;
    }, "load balancer ready");
    assert.equal(ready.url, `https://127.0.0.1:31443/clusters/${lb.id}`);
    assert.equal(ready.port, 6443);
    assert.match(ready.dnsName, /\.sim-east-1\.lb\.simcloud\.internal$/);
    assert.ok(ready.dnsName.startsWith(loadBalancerName(name).toLowerCase()), `dnsName ${ready.dnsName} starts with the cloud name`);
    assert.ok(loadBalancerName(name).length <= 32);
    assert.equal(loadBalancerName(name), loadBalancerName(name), "the same name maps to the same cloud name");

    await assert.rejects(
      provider.create("loadBalancer", { name: "x", networkId: "vpc-other", subnetIds: [subnet.id], listeners: [{ port: 6443, targetPort: 6443 }] }, { token: "lb2", tags: {} }),
      (error: unknown) => error instanceof ProviderError && error.kind === "invalid" && /vpc-other/.test(error.message),
    );
  });

  it("keeps the cloud's error code and classifies a dependency as retryable", async (t) => {
    const cloud = new SimCloud({ profile: "instant", seed: 6 });
    t.after(() => cloud.close());
    const provider = simProviderFactory({ cloud }).open(target());
    const { network } = await foundation(provider);
    await assert.rejects(provider.delete("network", network.id), (error: unknown) => {
      assert.ok(error instanceof ProviderError);
      assert.equal(error.kind, "dependency");
      assert.equal(error.code, "DependencyViolation");
      assert.match(error.message, /delete network .* in sim region sim-east-1 \(connection default\/east\)/);
      return true;
    });
  });

  it("opens the endpoint and token a Connection names, over those of the factory", async (t) => {
    const server = await startSimCloudServer({ port: 0, profile: "instant", accounts: [{ id: "team-b", token: "team-b-token" }] });
    t.after(() => server.close());
    const unreachable = simProviderFactory({ endpoint: "http://127.0.0.1:9", timeoutMs: 2000 });

    await assert.rejects(unreachable.open(target()).zones(), (error: unknown) => {
      assert.ok(error instanceof ProviderError);
      assert.equal(error.kind, "transient", error.message);
      assert.equal(error.retryable, true);
      return true;
    });
    const viaConnection = unreachable.open(target({ endpoint: server.url }));
    assert.deepEqual(await viaConnection.zones(), ["sim-east-1a", "sim-east-1b", "sim-east-1c"]);

    const teamB = unreachable.open(target({ endpoint: server.url, credentials: { token: "team-b-token" } }));
    const network = await teamB.create("network", { cidr: "10.9.0.0/16" }, { token: "n", tags: { team: "b" } });
    assert.deepEqual((await teamB.findTagged("network", { team: "b" })).map((n) => n.id), [network.id]);
    assert.deepEqual(await viaConnection.findTagged("network", { team: "b" }), [], "another account does not see team b's network");

    const wrong = unreachable.open(target({ endpoint: server.url, credentials: { token: "not-a-token" } }));
    await assert.rejects(wrong.quota(), (error: unknown) => error instanceof ProviderError && error.kind === "permission" && error.code === "Unauthorized");
  });

  it("uses an embedded cloud in-process, as the account the Connection's token names", async (t) => {
    const cloud = new SimCloud({ profile: "instant", seed: 8, accounts: [{ id: "team-c", token: "team-c-token" }] });
    t.after(() => cloud.close());
    const factory = simProviderFactory({ cloud });
    assert.equal(factory.name, "sim");
    const teamC = factory.open(target({ credentials: { token: "team-c-token" } }));
    assert.ok(teamC instanceof SimProvider);
    const keyPair = await teamC.create("keyPair", { name: "k", publicKey: conformancePublicKey() }, { token: "k", tags: { team: "c" } });
    assert.equal((await cloud.forAccount("team-c").getKeyPair(REGION, keyPair.id)).name, "k");
    assert.equal(await factory.open(target()).get("keyPair", keyPair.id), undefined, "the default account does not see it");

    const refused = factory.open(target({ credentials: { token: "wrong-token" } }));
    await assert.rejects(refused.zones(), (error: unknown) => error instanceof ProviderError && error.kind === "permission");
  });
});
