// The control-plane endpoint on hosts: a host is reserved before any machine exists, the same token finds
// it again (also once a machine took it), the machine that runs `kubeadm init` takes it while others go
// to free hosts, and only a reservation no machine took is given back. On real sshd hosts (the lab).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { SshProvider, TAG_API_ENDPOINT } from "./provider.ts";
import { MemoryHostDirectory } from "./testing/directory.ts";
import { SshLab, labUnavailable } from "./testing/lab.ts";

const skip = labUnavailable();
const REGION = "lab";
const userData = (command: string) => `#cloud-config\nruncmd:\n  - ${command} --config /etc/hostname\n`;
const tagsOf = (cluster: string, owner: string) => ({ "slipway.dev/cluster": `default/${cluster}`, "slipway.dev/cluster-uid": `uid-${cluster}`, "slipway.dev/owner-uid": owner });

describe("ssh provider: the control-plane endpoint", { skip }, () => {
  let lab: SshLab;
  let directory: MemoryHostDirectory;
  let provider: SshProvider;
  before(async () => {
    lab = await SshLab.start(3);
    directory = new MemoryHostDirectory("default/lab", lab);
    provider = new SshProvider(directory, "default/lab", REGION, { pollMs: 50 });
  });
  after(async () => {
    await provider?.settle();
    await lab?.stop();
  });

  const create = (command: string, token: string, cluster: string) =>
    provider.create("instance", { zone: REGION, machineType: "host", imageId: "host", userData: userData(command) }, { token, tags: tagsOf(cluster, token) });

  it("reserves a host for the endpoint, and places the machine that initialises the cluster there", async () => {
    const endpoint = await provider.endpoints.reserve({ token: "infra-a/endpoint", tags: tagsOf("a", "infra-a") });
    assert.deepEqual(endpoint, { id: "host-1", host: lab.hosts[0]!.address, port: 8443 });
    assert.deepEqual(await provider.endpoints.reserve({ token: "infra-a/endpoint", tags: tagsOf("a", "infra-a") }), endpoint, "the same token, the same host");

    const worker = await create("kubeadm join", "a-worker", "a");
    assert.equal(worker.id, "host-2", "a joining machine does not take the reserved host");
    const initialiser = await create("kubeadm init", "a-cp-0", "a");
    assert.equal(initialiser.id, "host-1", "the machine that runs kubeadm init takes the reserved host");
    const claim = directory.records.find((h) => h.name === "host-1")!.claim!;
    assert.equal(claim.token, "a-cp-0");
    assert.equal(claim.tags[TAG_API_ENDPOINT], "infra-a/endpoint");
    assert.deepEqual(await provider.endpoints.reserve({ token: "infra-a/endpoint", tags: tagsOf("a", "infra-a") }), endpoint, "found again once a machine took it");

    await provider.endpoints.release("host-1", "infra-a/endpoint");
    assert.equal(directory.records.find((h) => h.name === "host-1")!.claim?.token, "a-cp-0", "a reservation a machine took goes with the machine");

    // Another cluster's reservation takes the last free host, and is given back untouched.
    assert.equal((await provider.endpoints.reserve({ token: "infra-b/endpoint", tags: tagsOf("b", "infra-b") })).id, "host-3");
    await assert.rejects(create("kubeadm init", "c-cp-0", "c"), /no free reachable host/, "a reserved host serves no other cluster");
    await provider.endpoints.release("host-3", "infra-b/endpoint");
    assert.equal(directory.records.find((h) => h.name === "host-3")!.claim, undefined);

    for (const id of ["host-1", "host-2"]) await provider.delete("instance", id);
    await provider.settle();
    for (const host of lab.hosts) assert.deepEqual(await lab.writtenFiles(host), [], `${host.name} is left as found`);
  });
});
