import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createCertificateAuthority, caCertHash } from "./pki.ts";
import { initUserData, joinUserData, parseCloudConfig, readKubeadmBootstrap, CloudInitError, KUBEADM_CONFIG_PATH } from "./cloudinit.ts";
import { KubeadmConfigError, type ClusterPki } from "./kubeadm.ts";

async function pki(): Promise<ClusterPki> {
  return {
    ca: await createCertificateAuthority({ commonName: "kubernetes" }),
    frontProxyCa: await createCertificateAuthority({ commonName: "front-proxy-ca" }),
    etcdCa: await createCertificateAuthority({ commonName: "etcd-ca" }),
    serviceAccount: { publicKeyPem: "-----BEGIN PUBLIC KEY-----\nAA==\n-----END PUBLIC KEY-----\n", privateKeyPem: "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n" },
  };
}

describe("cloud-init user data", () => {
  it("carries kubeadm init with the cluster PKI, and reads back as kubeadm would", async () => {
    const p = await pki();
    const userData = initUserData(
      {
        clusterName: "demo",
        kubernetesVersion: "v1.31.2",
        controlPlaneEndpoint: "lb.example:6443",
        podSubnet: "10.244.0.0/16",
        serviceSubnet: "10.96.0.0/12",
        dnsDomain: "cluster.local",
        bootstrapToken: "abcdef.0123456789abcdef",
        node: { name: "demo-cp-0", labels: { "slipway.dev/cluster": "demo" } },
      },
      p,
    );
    assert.ok(userData.startsWith("#cloud-config\n"));
    const boot = readKubeadmBootstrap(userData)!;
    assert.equal(boot.command, "init");
    assert.equal(boot.config.init?.bootstrapTokens[0]?.token, "abcdef.0123456789abcdef");
    assert.equal(boot.config.cluster?.controlPlaneEndpoint, "lb.example:6443");
    assert.equal(boot.config.cluster?.networking.podSubnet, "10.244.0.0/16");
    assert.equal(boot.files.get("/etc/kubernetes/pki/ca.crt"), p.ca.certPem);
  });

  it("gives joining workers the discovery data but not the PKI", async () => {
    const p = await pki();
    const join = { controlPlaneEndpoint: "lb.example:6443", bootstrapToken: "abcdef.0123456789abcdef", caCertHashes: [caCertHash(p.ca.certPem)], node: { name: "w-0" } };
    const worker = readKubeadmBootstrap(joinUserData(join, p))!;
    assert.equal(worker.command, "join");
    assert.equal(worker.config.join?.discovery.bootstrapToken.caCertHashes[0], caCertHash(p.ca.certPem));
    assert.equal(worker.files.has("/etc/kubernetes/pki/ca.key"), false, "workers never receive the CA key");
    const cp = readKubeadmBootstrap(joinUserData({ ...join, controlPlane: {} }, p))!;
    assert.equal(cp.files.get("/etc/kubernetes/pki/ca.key"), p.ca.keyPem);
    assert.ok(cp.config.join?.controlPlane);
  });

  it("refuses user data that is not cloud-config, or a kubeadm config of another version", () => {
    assert.throws(() => parseCloudConfig("#!/bin/sh\necho hi"), CloudInitError);
    const wrong = `#cloud-config\nwrite_files:\n  - path: ${KUBEADM_CONFIG_PATH}\n    content: "apiVersion: kubeadm.k8s.io/v1beta2\\nkind: JoinConfiguration\\n"\nruncmd:\n  - kubeadm join --config ${KUBEADM_CONFIG_PATH}\n`;
    assert.throws(() => readKubeadmBootstrap(wrong), KubeadmConfigError);
    assert.equal(readKubeadmBootstrap("#cloud-config\nruncmd:\n  - echo hello\n"), undefined);
  });
});
