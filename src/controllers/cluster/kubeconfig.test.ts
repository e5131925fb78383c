import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SecretObject } from "../../api/kinds.ts";
import { renderKubeconfig } from "../../bootstrap/kubeconfig.ts";
import { KubeconfigTargets } from "./kubeconfig.ts";

/** PEM-framed bytes: the kubeconfig parser checks the framing, not the certificate. */
const CA_PEM = `-----BEGIN CERTIFICATE-----\n${Buffer.from("not a real certificate").toString("base64")}\n-----END CERTIFICATE-----\n`;

function secret(resourceVersion: string, server: string): SecretObject {
  const value = renderKubeconfig({ clusterName: "demo", server, caCertPem: CA_PEM, user: "admin", token: "t", tlsServerName: "demo-api.lb.internal" });
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "demo-kubeconfig", namespace: "default", uid: "s-1", resourceVersion },
    data: { value: Buffer.from(value).toString("base64") },
  } as SecretObject;
}

describe("KubeconfigTargets", () => {
  it("reads where a kubeconfig Secret points, once per version of the Secret", () => {
    const targets = new KubeconfigTargets();
    const first = secret("10", "https://127.0.0.1:31443/clusters/lb-1");
    assert.deepEqual(targets.of(first), { server: "https://127.0.0.1:31443/clusters/lb-1", tlsServerName: "demo-api.lb.internal" });
    // The same version is not parsed again (its data is not even read).
    assert.equal(targets.of({ ...first, data: {} }).server, "https://127.0.0.1:31443/clusters/lb-1");
    assert.equal(targets.of(secret("11", "https://127.0.0.1:31444/clusters/lb-1")).server, "https://127.0.0.1:31444/clusters/lb-1", "a new version is read");
  });

  it("keeps a bounded number of versions", () => {
    const targets = new KubeconfigTargets(2);
    for (const version of ["1", "2", "3"]) targets.of(secret(version, `https://127.0.0.1:${31000 + Number(version)}`));
    assert.equal(targets.size, 2);
    assert.throws(() => targets.of({ ...secret("1", "https://x"), data: {} }), "the oldest version was forgotten and is read again");
  });
});
