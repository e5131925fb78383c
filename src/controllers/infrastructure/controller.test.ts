import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventKind, secretKind } from "../../api/core.ts";
import type { ClusterObject, InfrastructureObject, SecretObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind, FINALIZER_INFRASTRUCTURE } from "../../api/slipway/infrastructure.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { until } from "../../runtime/testing.ts";
import { DEFAULT_ACCOUNT, type SimCloudOptions } from "../../simcloud/cloud.ts";
import { controllerRef, TAG_CLUSTER_UID, TAG_OWNER_UID, TAG_ROLE } from "../contract.ts";
import { names } from "../../api/slipway/names.ts";
import { manifest } from "../../api/testing.ts";
import { controllerTestEnvs } from "../testing.ts";
import { registerInfrastructureController, type InfrastructureControllerOptions } from "./controller.ts";
import { SSH_PRIVATE_KEY, SSH_PUBLIC_KEY } from "./sshkey.ts";

const NS = "default";
const REGION = "sim-east-1";

const newEnv = controllerTestEnvs();

async function setup(cloud: SimCloudOptions = {}, options: InfrastructureControllerOptions = {}) {
  const env = await newEnv({ cloud });
  registerInfrastructureController(
    env.manager,
    { providers: env.providers },
    { pollMs: 10, failureRetryMs: 100, dependencyRetryMs: 20, backoff: { baseMs: 5, capMs: 50 }, ...options },
  );
  await env.start();
  const cluster = await env.client.of(clusterKind).create(manifest(clusterKind, "demo", { controlPlane: { connection: "east", machineType: "s1.medium" } }));
  await env.client.of(connectionKind).create(manifest(connectionKind, "east", { provider: "sim", region: REGION }));
  const infras = env.client.of(infrastructureKind);
  const createInfra = (spec: Partial<InfrastructureObject["spec"]> = {}) =>
    infras.create({
      apiVersion: apiVersionOf(infrastructureKind),
      kind: "Infrastructure",
      metadata: { name: names.infrastructure("demo", "east"), namespace: NS, ownerReferences: [controllerRef(cluster)] },
      spec: {
        clusterName: "demo",
        connection: "east",
        region: REGION,
        nodeCIDR: "10.0.0.0/20",
        controlPlane: true,
        machineTypes: ["s1.medium", "s1.large"],
        images: ["ubuntu-22.04"],
        ...spec,
      },
    } as InfrastructureObject);
  const waitForPhase = (phase: string, timeoutMs?: number) =>
    env.waitFor(infrastructureKind, NS, "demo-east", (i) => i?.status?.phase === phase, timeoutMs) as Promise<InfrastructureObject>;
  /** Cloud resources of one kind tagged with the infrastructure's uid. */
  const owned = async (uid: string, kind?: string) =>
    (await env.cloud.listResources({ tags: { [TAG_OWNER_UID]: uid } })).filter((r) => kind === undefined || r.kind === kind);
  /** Events about the object: reason → count. */
  const eventCounts = async (uid: string) => {
    const counts = new Map<string, number>();
    for (const e of (await env.client.of(eventKind).list(NS)).items) {
      if (e.involvedObject?.uid === uid) counts.set(e.reason ?? "", (counts.get(e.reason ?? "") ?? 0) + (e.count ?? 1));
    }
    return counts;
  };
  return { env, cluster, infras, createInfra, waitForPhase, owned, eventCounts };
}

describe("infrastructure controller", () => {
  it("builds network, subnet, security group, key pair and load balancer, and reports them Ready", async () => {
    const { env, cluster, createInfra, waitForPhase, owned, eventCounts } = await setup();
    const created = await createInfra();
    const ready = await waitForPhase("Ready");
    const status = ready.status!;

    assert.equal(status.ready, true);
    assert.match(status.networkId ?? "", /^vpc-/);
    assert.match(status.subnetId ?? "", /^subnet-/);
    assert.match(status.securityGroupId ?? "", /^sg-/);
    assert.match(status.keyPairId ?? "", /^key-/);
    assert.match(status.loadBalancer?.id ?? "", /^lb-/);
    assert.equal(status.loadBalancer?.port, 6443);
    // The API's name in the connection's DNS zone stands for the load balancer's generated name.
    assert.equal(status.loadBalancer?.host, `api.demo.${REGION}.sim.slipway.internal`);
    assert.equal(status.loadBalancer?.internalHost, `api-int.demo.${REGION}.sim.slipway.internal`);
    assert.match(status.loadBalancer?.url ?? "", /^https:\/\//);
    // Every zone of the region gets a subnet, so that machines can be spread over them.
    assert.deepEqual(status.zones, [`${REGION}a`, `${REGION}b`, `${REGION}c`]);
    assert.equal(status.subnets?.[`${REGION}a`], status.subnetId);
    assert.deepEqual(status.machineTypes, { "s1.medium": { vcpu: 2, memoryMiB: 4096 }, "s1.large": { vcpu: 4, memoryMiB: 8192 } });
    assert.match(status.images?.["ubuntu-22.04"] ?? "", /^img-/);
    assert.equal(status.observedGeneration, ready.metadata.generation);
    for (const type of ["NetworkReady", "SubnetReady", "SecurityGroupReady", "KeyPairReady", "LoadBalancerReady", "Ready"]) {
      const condition = getCondition(status.conditions, type);
      assert.equal(condition?.status, "True", type);
      assert.ok(condition.lastTransitionTime, `${type} has a transition time`);
    }

    // One of each but subnets, one per zone, tagged with the infrastructure and its cluster.
    const resources = await owned(created.metadata.uid!);
    assert.deepEqual(resources.map((r) => r.kind).sort(), ["dnsRecord", "dnsRecord", "keyPair", "loadBalancer", "network", "securityGroup", "subnet", "subnet", "subnet"]);
    for (const r of resources) {
      assert.equal(r.tags[TAG_CLUSTER_UID], cluster.metadata.uid);
      assert.equal(r.tags[TAG_ROLE], r.kind === "dnsRecord" ? "apiDnsRecord" : r.kind);
    }
    // api and api-int both alias the API load balancer, and resolve to it.
    const records = await env.cloud.listDnsRecords(REGION, { tags: { [TAG_OWNER_UID]: created.metadata.uid! } });
    assert.deepEqual(records.map((r) => [r.name, r.aliasTarget?.loadBalancerId]).sort(), [
      [`api-int.demo.${REGION}.sim.slipway.internal`, status.loadBalancer?.id],
      [`api.demo.${REGION}.sim.slipway.internal`, status.loadBalancer?.id],
    ]);
    const lb = await env.cloud.getLoadBalancer(REGION, status.loadBalancer!.id);
    assert.deepEqual(env.cloud.resolveName(DEFAULT_ACCOUNT, status.loadBalancer!.host), { loadBalancer: lb.dnsName });
    // The first zone's subnet in the first half of the node range, the others in its last two quarters.
    const subnets = await Promise.all(status.zones!.map((zone) => env.cloud.getSubnet(REGION, status.subnets![zone]!)));
    assert.deepEqual(
      subnets.map((s) => [s.zone, s.cidr]),
      [
        [`${REGION}a`, "10.0.0.0/21"],
        [`${REGION}b`, "10.0.8.0/22"],
        [`${REGION}c`, "10.0.12.0/22"],
      ],
    );
    assert.deepEqual((await env.cloud.getLoadBalancer(REGION, status.loadBalancer!.id)).subnetIds, status.zones!.map((zone) => status.subnets![zone]));
    const group = await env.cloud.getSecurityGroup(REGION, status.securityGroupId!);
    assert.ok(group.rules.some((r) => r.direction === "ingress" && r.protocol === "tcp" && r.fromPort === 6443 && r.cidr === "0.0.0.0/0"));
    assert.ok(group.rules.some((r) => r.direction === "ingress" && r.protocol === "all" && r.cidr === "10.0.0.0/20"));

    // The cluster's SSH key: a Secret owned by the Cluster whose public key is the key pair's.
    const secret = await env.client.of<SecretObject>(secretKind).get(NS, "demo-ssh");
    assert.equal(secret.metadata.ownerReferences?.[0]?.uid, cluster.metadata.uid);
    const publicKey = Buffer.from(secret.data![SSH_PUBLIC_KEY]!, "base64").toString("utf8");
    assert.match(publicKey, /^ssh-ed25519 AAAA/);
    assert.match(Buffer.from(secret.data![SSH_PRIVATE_KEY]!, "base64").toString("utf8"), /^-----BEGIN OPENSSH PRIVATE KEY-----/);
    const keyPair = await env.cloud.getKeyPair(REGION, status.keyPairId!);
    assert.equal(keyPair.name, "demo-east");
    assert.equal(keyPair.publicKey, publicKey.trim());

    const events = await eventCounts(created.metadata.uid!);
    for (const reason of ["NetworkReady", "SubnetReady", "SecurityGroupReady", "KeyPairReady", "LoadBalancerReady", "InfrastructureReady"]) {
      assert.equal(events.get(reason), 1, reason);
    }
    // A first create is said by the cluster (CreatingInfrastructure) and the resource's Ready event, not by one more event.
    assert.deepEqual([...events.keys()].filter((r) => r.startsWith("Creating")), []);
  });

  it("builds nothing while its cluster is paused, deletes one being deleted, and builds once resumed", async () => {
    const { env, cluster, infras, createInfra, waitForPhase, owned } = await setup();
    const clusters = env.client.of<ClusterObject>(clusterKind);
    await clusters.update({ ...cluster, spec: { ...cluster.spec, paused: true } });
    const held = await createInfra();
    // Made after it and deleted at once: an infrastructure being deleted is not held by the pause, so
    // once this one is gone the controller has had the first in hand too.
    await infras.create({ ...held, metadata: { name: "demo-west", namespace: NS, ownerReferences: held.metadata.ownerReferences, finalizers: [FINALIZER_INFRASTRUCTURE] }, spec: { ...held.spec, connection: "west", controlPlane: false } });
    await infras.delete(NS, "demo-west");
    await env.waitFor(infrastructureKind, NS, "demo-west", (i) => i === undefined);
    assert.equal((await infras.get(NS, "demo-east")).status, undefined);
    assert.deepEqual(await owned(held.metadata.uid!), []);

    const paused = await clusters.get(NS, "demo");
    await clusters.update({ ...paused, spec: { ...paused.spec, paused: false } });
    await waitForPhase("Ready");
    assert.equal((await owned(held.metadata.uid!)).length, 9);
  });

  it("makes exactly one network when the answer to its create call is lost", async () => {
    // Every createNetwork makes the network, then answers with an InternalError.
    const { createInfra, waitForPhase, owned, eventCounts } = await setup({ faults: { errors: { createNetwork: { InternalError: 1 } }, failAfterCommit: 1 } });
    const infra = await createInfra();
    const ready = await waitForPhase("Ready");
    assert.equal((await eventCounts(infra.metadata.uid!)).get("AdoptedNetwork"), 1);
    const networks = await owned(infra.metadata.uid!, "network");
    assert.equal(networks.length, 1);
    assert.equal(ready.status?.networkId, networks[0]!.id);
  });

  it("makes a resource deleted behind its back again, once", async () => {
    const { env, infras, createInfra, waitForPhase, owned, eventCounts } = await setup();
    const infra = await createInfra();
    const first = await waitForPhase("Ready");
    const lostId = first.status!.keyPairId!;
    await env.cloud.deleteKeyPair(REGION, lostId);
    // Any change makes the controller look again (the informer's resync would, later).
    await infras.patch(NS, "demo-east", "merge", { metadata: { annotations: { touched: "1" } } });
    const again = await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i?.status?.ready === true && i.status.keyPairId !== lostId);
    const keyPairs = await owned(infra.metadata.uid!, "keyPair");
    assert.deepEqual(keyPairs.map((k) => k.id), [again!.status!.keyPairId]);
    assert.equal((await eventCounts(infra.metadata.uid!)).get("KeyPairLost"), 1);
  });

  it("fails with CreateNetworkFailed when the network quota is used up, and recovers once it is raised", async () => {
    const { env, createInfra, waitForPhase } = await setup({ quota: { networks: 0 } });
    const infra = await createInfra();
    const failed = await waitForPhase("Failed");
    assert.equal(failed.status?.reason, "CreateNetworkFailed");
    assert.match(failed.status?.message ?? "", /quota/i);
    assert.equal(getCondition(failed.status?.conditions, "NetworkReady")?.status, "False");

    env.cloud.setQuota(DEFAULT_ACCOUNT, REGION, { networks: 5 });
    const ready = await waitForPhase("Ready");
    assert.equal(ready.metadata.uid, infra.metadata.uid);
    assert.equal(ready.status?.reason, undefined);
  });

  it("fails validation naming the machine types and images the region lacks", async () => {
    const { createInfra, waitForPhase } = await setup();
    await createInfra({ machineTypes: ["s1.medium", "x9.huge"], images: ["windows-95"] });
    const failed = await waitForPhase("Failed");
    assert.equal(failed.status?.reason, "ValidationFailed");
    assert.match(failed.status?.message ?? "", /x9\.huge/);
    assert.match(failed.status?.message ?? "", /windows-95/);
    assert.equal(failed.status?.networkId, undefined);
  });

  it("reaches Ready with 30% of creates failing transiently, with one resource of each kind", async () => {
    const rate = { InternalError: 0.3 };
    const { createInfra, waitForPhase, owned, eventCounts } = await setup({
      seed: 11,
      faults: {
        errors: { createNetwork: rate, createSubnet: rate, createSecurityGroup: rate, createKeyPair: rate, createLoadBalancer: rate },
      },
    });
    const infra = await createInfra();
    await waitForPhase("Ready");
    // Some creates did fail (the seed decides which): their resources were found again, or made on a retry.
    const events = [...(await eventCounts(infra.metadata.uid!))];
    assert.ok(events.some(([reason]) => reason.startsWith("Adopted") || reason.startsWith("Creating")));
    const kinds = (await owned(infra.metadata.uid!)).map((r) => r.kind).sort();
    assert.deepEqual(kinds, ["dnsRecord", "dnsRecord", "keyPair", "loadBalancer", "network", "securityGroup", "subnet", "subnet", "subnet"]);
  });

  it("builds no load balancer outside the control plane's connection", async () => {
    const { createInfra, waitForPhase, owned } = await setup();
    const infra = await createInfra({ controlPlane: false });
    const ready = await waitForPhase("Ready");
    assert.equal(ready.status?.loadBalancer, undefined);
    assert.equal(getCondition(ready.status?.conditions, "LoadBalancerReady"), undefined);
    assert.equal((await owned(infra.metadata.uid!, "loadBalancer")).length, 0);
    assert.equal((await owned(infra.metadata.uid!, "dnsRecord")).length, 0, "the API's names are the control plane's connection's");
  });

  it("gives a private API an internal load balancer and only the name api-int, which outside the network does not reach, and removes it on delete", async () => {
    const { env, infras, createInfra, waitForPhase, owned } = await setup();
    const infra = await createInfra({ apiVisibility: "private" });
    const ready = await waitForPhase("Ready");
    const internalName = `api-int.demo.${REGION}.sim.slipway.internal`;
    // The endpoint everything is given is api-int: the kubeconfig, kubeadm and its certificates name it.
    assert.equal(ready.status?.loadBalancer?.host, internalName);
    assert.equal(ready.status?.loadBalancer?.internalHost, internalName);
    const lb = await env.cloud.getLoadBalancer(REGION, ready.status!.loadBalancer!.id);
    assert.equal(lb.scheme, "internal");
    const records = await env.cloud.listDnsRecords(REGION, { tags: { [TAG_OWNER_UID]: infra.metadata.uid! } });
    assert.deepEqual(records.map((r) => r.name), [internalName], "no public name");
    assert.deepEqual(env.cloud.resolveName(DEFAULT_ACCOUNT, `api.demo.${REGION}.sim.slipway.internal`), undefined);
    assert.equal((await owned(infra.metadata.uid!)).filter((r) => r.kind === "publicIp").length, 0, "no public address");
    // From outside the cloud's network the internal load balancer does not answer; from inside it does route.
    assert.match((env.cloud.routeThroughLoadBalancer(lb.dnsName, 6443, {}) as { error: string }).error, /i\/o timeout/);
    assert.doesNotMatch(JSON.stringify(env.cloud.routeThroughLoadBalancer(lb.dnsName, 6443, { networkId: lb.networkId })), /timeout/);
    // Visibility is fixed once made: refused, naming the field, and nothing changed.
    await assert.rejects(infras.patch(NS, "demo-east", "merge", { spec: { apiVisibility: "public" } }), /spec\.apiVisibility/);
    await infras.delete(NS, "demo-east");
    await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i === undefined);
    assert.deepEqual(await owned(infra.metadata.uid!), []);
    assert.deepEqual(env.cloud.resolveName(DEFAULT_ACCOUNT, internalName), undefined);
  });

  it("deletes every cloud resource it made, also one whose id never reached the status, then goes", async () => {
    const { env, infras, createInfra, waitForPhase, owned } = await setup();
    const infra = await createInfra();
    const ready = await waitForPhase("Ready");
    const uid = infra.metadata.uid!;
    // A network made by a create whose answer was lost: only its tags say whose it is.
    await env.cloud.createNetwork(REGION, { cidr: "10.1.0.0/16", tags: { [TAG_OWNER_UID]: uid, [TAG_ROLE]: "network" } });
    // An instance still in the subnet holds the deletion up until it is terminated.
    const instance = await env.cloud.createInstance(REGION, {
      subnetId: ready.status!.subnetId!,
      machineType: "s1.small",
      imageId: ready.status!.images!["ubuntu-22.04"]!,
      securityGroupIds: [ready.status!.securityGroupId!],
    });

    await infras.delete(NS, "demo-east");
    const waiting = await env.waitFor(infrastructureKind, NS, "demo-east", (i) => /waiting to delete/.test(i?.status?.message ?? ""));
    assert.equal(waiting?.status?.phase, "Deleting");
    assert.ok((await owned(uid)).length > 0);

    await env.cloud.terminateInstance(REGION, instance.id);
    await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i === undefined);
    assert.deepEqual(await owned(uid), []);
  });

  it("fails validation without its connection, and is deleted at once when nothing was made", async () => {
    const { env, infras, createInfra, waitForPhase } = await setup();
    await createInfra({ connection: "nowhere" });
    const failed = await waitForPhase("Failed");
    assert.equal(failed.status?.reason, "ValidationFailed");
    assert.match(failed.status?.message ?? "", /connection "nowhere" does not exist/);
    await infras.delete(NS, "demo-east");
    await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i === undefined);
  });

  it("waits, loudly, for a connection it needs to delete its resources", async () => {
    const { env, infras, createInfra, waitForPhase, owned, eventCounts } = await setup();
    const infra = await createInfra();
    await waitForPhase("Ready");
    const connections = env.client.of(connectionKind);
    const connection = await connections.get(NS, "east");
    await connections.delete(NS, "east");
    // The controller works from its informer's cache: wait until it has seen the connection go.
    const cached = env.manager.informer(connectionKind).cache;
    await until(() => cached.get(`${NS}/east`) === undefined, "the connection to leave the cache");
    await infras.delete(NS, "demo-east");
    const blocked = await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i?.status?.reason === "DeleteFailed");
    assert.equal(blocked?.status?.phase, "Deleting");
    assert.match(blocked?.status?.message ?? "", /connection "east" does not exist/);
    assert.ok((await eventCounts(infra.metadata.uid!)).get("DeleteFailed")! >= 1);
    assert.equal((await owned(infra.metadata.uid!)).length, 9);

    await connections.create({ ...connection, metadata: { name: "east", namespace: NS } });
    await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i === undefined);
    assert.deepEqual(await owned(infra.metadata.uid!), []);
  });

  it("says so loudly when the cloud refuses a delete, and finishes once it is allowed", async () => {
    const { env, infras, createInfra, waitForPhase, owned, eventCounts } = await setup();
    const infra = await createInfra();
    await waitForPhase("Ready");
    const secrets = env.client.of<SecretObject>(secretKind);
    await secrets.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "east-credentials", namespace: NS }, stringData: { token: "not-a-valid-token" } } as SecretObject);
    const connections = env.client.of(connectionKind);
    await connections.patch(NS, "east", "merge", { spec: { credentialsRef: { name: "east-credentials" } } });
    const cached = env.manager.informer(connectionKind).cache;
    await until(() => cached.get(`${NS}/east`)?.spec.credentialsRef !== undefined, "the controller to see the new credentials");
    await infras.delete(NS, "demo-east");
    const blocked = await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i?.status?.reason === "DeleteFailed");
    assert.match(blocked?.status?.message ?? "", /cannot delete the API's DNS records/);
    assert.ok((await eventCounts(infra.metadata.uid!)).get("DeleteFailed")! >= 1);

    await connections.patch(NS, "east", "merge", { spec: { credentialsRef: null } });
    await env.waitFor(infrastructureKind, NS, "demo-east", (i) => i === undefined);
    assert.deepEqual(await owned(infra.metadata.uid!), []);
  });
});
