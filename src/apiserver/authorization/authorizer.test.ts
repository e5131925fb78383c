import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../../api/kinds.ts";
import type { ClusterObject } from "../../api/kinds.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { Client, controllerContext } from "../../runtime/client.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { ForbiddenError } from "../errors.ts";
import { ObjectService } from "../objects.ts";
import { authorizerOf, clusterRole, clusterRoleBinding, serviceAccount } from "./testing.ts";

describe("the request path's authorizer", () => {
  it("takes the RBAC authorizer as it is: a controller's service account may do what its role allows, in process too", async () => {
    const rbac = authorizerOf([
      clusterRole("cluster-reader", [{ verbs: ["get", "list", "watch"], apiGroups: ["slipway.dev"], resources: ["clusters"] }]),
      clusterRoleBinding("reader", "cluster-reader", [serviceAccount("cluster-controller", "slipway-system")]),
    ]);
    const registry = defaultRegistry();
    const store = SqliteStore.open(":memory:");
    try {
      const objects = new ObjectService(registry, store, { authorizer: rbac });
      const clusterDef = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
      // The server's own writes (no context) are system:masters'.
      await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
      await objects.create(clusterDef, "default", { metadata: { name: "a" }, spec: { controlPlane: { connection: "east", machineType: "s1.medium" } } });

      const clusters = new Client(objects).as(controllerContext("cluster")).of<ClusterObject>(clusterKind);
      assert.equal((await clusters.get("default", "a")).metadata.name, "a");
      assert.equal((await clusters.list("default")).items.length, 1);
      const refused = await clusters.patch("default", "a", "merge", { metadata: { labels: { x: "y" } } }).catch((e: unknown) => e);
      assert.ok(refused instanceof ForbiddenError);
      assert.equal(
        refused.message,
        'clusters.slipway.dev "a" is forbidden: User "system:serviceaccount:slipway-system:cluster-controller" cannot patch resource "clusters" in API group "slipway.dev" in the namespace "default"',
      );
      assert.equal((await objects.get(clusterDef, "default", "a")).metadata.labels, undefined);
      await assert.rejects(new Client(objects).as(controllerContext("machine")).of<ClusterObject>(clusterKind).get("default", "a"), ForbiddenError);
    } finally {
      await store.close();
    }
  });
});
