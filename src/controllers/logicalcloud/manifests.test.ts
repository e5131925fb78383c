import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { LogicalCloudObject } from "../../api/slipway/logicalcloud.ts";
import { dnsServerBlock, meshCaManifest, memberManifests } from "./manifests.ts";

const cloud: LogicalCloudObject = {
  apiVersion: "slipway.dev/v1alpha1",
  kind: "LogicalCloud",
  metadata: { name: "team-a", namespace: "default" },
  spec: {
    namespace: "team",
    clusters: [{ name: "one" }],
    users: [{ name: "alice", role: "edit" }, { name: "ci", role: "view", rules: [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["patch"] }] }],
    quota: { pods: 5 },
  },
};
const ca = { intermediate: { certPem: "INTERMEDIATE\n", keyPem: "KEY\n" }, rootCertPem: "ROOT\n" };

describe("what a logical cloud puts on a member cluster", () => {
  it("makes the namespace, the quota, a binding per role and a Role for rules, the trust bundle and the DNS block — and no key", () => {
    const objects = memberManifests(cloud, ca, ["api.two.example"]);
    assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`), [
      "Namespace//team",
      "Namespace//slipway-mesh-team-a",
      "ResourceQuota/team/team-a-quota",
      "RoleBinding/team/team-a-alice-edit",
      "RoleBinding/team/team-a-ci-view",
      "Role/team/team-a-ci",
      "RoleBinding/team/team-a-ci",
      "ConfigMap/team/team-a-trust-bundle",
      "ConfigMap/kube-system/slipway-logicalcloud-team-a",
    ]);
    assert.deepEqual((objects[2] as { spec?: unknown }).spec, { hard: { pods: "5" } });
    assert.doesNotMatch(JSON.stringify(objects), /KEY/);
    const secret = meshCaManifest(cloud, ca) as unknown as { metadata: { namespace?: string }; data: Record<string, string> };
    assert.equal(secret.metadata.namespace, "slipway-mesh-team-a");
    assert.equal(Buffer.from(secret.data["cert-chain.pem"]!, "base64").toString(), "INTERMEDIATE\nROOT\n");
  });

  it("forwards the logical cloud's domain to the other members", () => {
    assert.match(dnsServerBlock(cloud, ["a.example", "b.example"]), /^team-a\.logicalcloud\.local:53 \{\n[\s\S]*forward \. a\.example:53 b\.example:53\n\}/m);
    assert.match(dnsServerBlock(cloud, []), /# no other member cluster yet/);
  });
});
