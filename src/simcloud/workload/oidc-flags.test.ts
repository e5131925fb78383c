// kube-apiserver's --oidc-* flags as Slipway renders them into kubeadm's ClusterConfiguration, and as the
// emulated kubeadm reads them back (with the issuer's CA from --oidc-ca-file) for the cluster's API server.
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { KUBEADM_CONFIG_PATH, initUserData } from "../../bootstrap/cloudinit.ts";
import { OIDC_CA_FILE, type ClusterPki, type OidcIssuer } from "../../bootstrap/kubeadm.ts";
import { createCertificateAuthority } from "../../bootstrap/pki.ts";
import { imagesOf } from "../catalog.ts";
import { bootOutcome, type InitPlan } from "./kubeadm-plan.ts";
import { clusterPki } from "./test-support.ts";

const issuer: OidcIssuer = { issuerUrl: "https://127.0.0.1:6443/realms/corp", clientId: "default.demo", usernameClaim: "preferred_username", usernamePrefix: "oidc:", groupsClaim: "groups", groupsPrefix: "oidc:" };
const init = (oidc?: OidcIssuer) => ({
  clusterName: "demo",
  kubernetesVersion: "v1.31.2",
  controlPlaneEndpoint: "api.example:6443",
  podSubnet: "10.244.0.0/16",
  serviceSubnet: "10.96.0.0/12",
  dnsDomain: "cluster.local",
  bootstrapToken: "abcdef.0123456789abcdef",
  node: { name: "demo-cp-0" },
  ...(oidc ? { oidc } : {}),
});
const medium = { vcpus: 2, memoryMiB: 4096, image: imagesOf("sim-east-1").find((i) => i.name === "ubuntu-22.04")! };

describe("an API server trusting a realm's issuer", () => {
  let pki: ClusterPki;
  let issuerCa: string;
  before(async () => {
    pki = await clusterPki();
    issuerCa = (await createCertificateAuthority({ commonName: "slipway" })).certPem;
  });

  it("carries the --oidc-* flags in the ClusterConfiguration and the issuer's CA beside the cluster's PKI", () => {
    const userData = initUserData(init(issuer), { ...pki, oidcCaPem: issuerCa });
    const files = (parseAllDocuments(userData)[0]!.toJS() as { write_files: { path: string; content: string }[] }).write_files;
    assert.equal(files.find((f) => f.path === OIDC_CA_FILE)?.content, issuerCa);
    const config = parseAllDocuments(files.find((f) => f.path === KUBEADM_CONFIG_PATH)!.content).map((d) => d.toJS() as { kind: string; apiServer?: { extraArgs?: { name: string; value: string }[] } });
    const args = Object.fromEntries(config.find((d) => d.kind === "ClusterConfiguration")!.apiServer!.extraArgs!.map((a) => [a.name, a.value]));
    assert.deepEqual(args, {
      "oidc-issuer-url": issuer.issuerUrl,
      "oidc-client-id": "default.demo",
      "oidc-username-claim": "preferred_username",
      "oidc-username-prefix": "oidc:",
      "oidc-groups-claim": "groups",
      "oidc-groups-prefix": "oidc:",
      "oidc-ca-file": OIDC_CA_FILE,
    });
  });

  it("is read by the emulated kubeadm into the API server's settings; without the flags the API server trusts no issuer", () => {
    const plan = bootOutcome(initUserData(init(issuer), { ...pki, oidcCaPem: issuerCa }), medium).plan as InitPlan;
    assert.deepEqual(plan.oidc, { ...issuer, caPem: issuerCa });
    const plain = bootOutcome(initUserData(init(), pki), medium).plan as InitPlan;
    assert.equal(plain.oidc, undefined);
  });
});
