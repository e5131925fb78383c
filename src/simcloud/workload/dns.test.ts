import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderKubeconfig } from "../../bootstrap/kubeconfig.ts";
import type { SimCloud } from "../cloud.ts";
import type { ReadyNetwork } from "../test-support.ts";
import { waitFor } from "../test-support.ts";
import { REGION, adminCertificate, bootLogMatching, clusterPki, controlPlaneLoadBalancer, emulatedCloud, initData, joinData, kubectl, launch, launchControlPlane, type EmulatedCloud } from "./test-support.ts";

let env: EmulatedCloud;
let cloud: SimCloud;
let net: ReadyNetwork;

before(async () => {
  env = await emulatedCloud(31);
  ({ cloud, net } = env);
});

after(() => env.close());

describe("a control-plane endpoint given as a DNS name", () => {
  it("resolves through the zone to the load balancer: init waits for the record, joins and kubectl go through names, and stop when it is deleted", async () => {
    const lb = await controlPlaneLoadBalancer(cloud, net, "delta-api");
    const zone = await cloud.createDnsZone(REGION, { name: `${REGION}.sim.slipway.internal` });
    const name = `api.delta.${REGION}.sim.slipway.internal`;
    const internal = `api-int.delta.${REGION}.sim.slipway.internal`;
    const endpoint = `${name}:6443`;
    const pki = await clusterPki();

    const cp = await launchControlPlane(cloud, net, lb, initData(lb, pki, "delta-cp-0", { endpoint, certSANs: [internal] }));
    // No record yet: kubeadm cannot resolve the endpoint and keeps trying.
    await bootLogMatching(cloud, cp.id, /kubelet-start|wait-control-plane|api-check/);
    const log = (await cloud.getInstance(REGION, cp.id)).bootLog.join("\n");
    assert.doesNotMatch(log, /initialized successfully/, "init cannot finish before the name resolves");

    const record = await cloud.createDnsRecord(REGION, { zoneId: zone.id, name, type: "A", aliasTarget: { loadBalancerId: lb.id }, tags: { cluster: "delta" } });
    const initLog = await bootLogMatching(cloud, cp.id, /initialized successfully/);
    assert.ok(initLog.some((line) => line.includes(`[certs] apiserver serving cert is signed for DNS names [${name} ${internal} `)), "the serving certificate names both names");

    // A worker discovers the cluster through the internal name, which resolves once its record exists.
    await cloud.createDnsRecord(REGION, { zoneId: zone.id, name: internal, type: "A", aliasTarget: { loadBalancerId: lb.id } });
    const worker = await launch(cloud, net, joinData(lb, pki, { name: "delta-w-0" }, { endpoint: `${internal}:6443` }));
    await bootLogMatching(cloud, worker.id, /This node has joined the cluster/);

    const admin = await adminCertificate(pki.ca);
    const kubeconfig = join(env.dir, "delta.kubeconfig");
    writeFileSync(
      kubeconfig,
      renderKubeconfig({ clusterName: "delta", server: `https://${lb.host}:${lb.port}`, tlsServerName: name, caCertPem: pki.ca.certPem, user: "admin", clientCertPem: admin.certPem, clientKeyPem: admin.keyPem }),
      { mode: 0o600 },
    );
    const nodes = await kubectl(kubeconfig, ["get", "nodes", "-o", "name"]);
    assert.equal(nodes.code, 0, nodes.stderr);
    assert.deepEqual(nodes.stdout.trim().split("\n").sort(), ["node/delta-cp-0", "node/delta-w-0"]);

    await cloud.deleteDnsRecord(REGION, record.id);
    await waitFor(async () => (await kubectl(kubeconfig, ["get", "nodes"])).code !== 0, "the API gone once its name no longer resolves", 10_000);
  });
});
