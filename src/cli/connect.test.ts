import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { kubeconfigPath } from "./connect.ts";
import { kubectlConfigPath } from "./kubeconfig.ts";

describe("kubeconfigPath", () => {
  it("takes --kubeconfig, else the first file of $KUBECONFIG, else ~/.slipway/kubeconfig", () => {
    assert.deepEqual(kubeconfigPath({ kubeconfig: "/a" }, { KUBECONFIG: "/b", HOME: "/h" }), { path: "/a", from: "--kubeconfig" });
    assert.deepEqual(kubeconfigPath({}, { KUBECONFIG: ":/b:/c", HOME: "/h" }), { path: "/b", from: "$KUBECONFIG" });
    assert.deepEqual(kubeconfigPath({}, { HOME: "/h" }), { path: "/h/.slipway/kubeconfig", from: "the default location" });
  });
});

describe("kubectlConfigPath", () => {
  it("merges into the first file of $KUBECONFIG, else ~/.kube/config", () => {
    assert.equal(kubectlConfigPath({ KUBECONFIG: "/k1:/k2" }), "/k1");
    assert.match(kubectlConfigPath({}), /\/\.kube\/config$/);
  });
});
