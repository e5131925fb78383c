import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KubeInvalidError, KubeTimeoutError, KubeUnreachableError, kubeApiError } from "../kubeclient/index.ts";
import { ObjectNotFoundError, errorLine } from "./errors.ts";

describe("errorLine", () => {
  it("names the object and every offending field on one line", () => {
    const error = kubeApiError(422, "Unprocessable Entity", {
      kind: "Status",
      reason: "Invalid",
      message: 'Cluster.slipway.dev "demo" is invalid: …',
      details: {
        name: "demo",
        kind: "Cluster",
        causes: [
          { field: "spec.controlPlane.replicas", message: "Unsupported value: 2: supported values: 1, 3, 5" },
          { field: "spec.network.podCIDR", message: "Invalid value: \"10.0.0.0/33\": not a CIDR" },
        ],
      },
    });
    assert.ok(error instanceof KubeInvalidError);
    assert.equal(
      errorLine(error),
      'Cluster "demo" is invalid: spec.controlPlane.replicas: Unsupported value: 2: supported values: 1, 3, 5; spec.network.podCIDR: Invalid value: "10.0.0.0/33": not a CIDR',
    );
  });

  it("says which server cannot be reached, and why", () => {
    const refused = new KubeUnreachableError("https://127.0.0.1:6443", "GET /api: cannot reach https://127.0.0.1:6443: connect ECONNREFUSED 127.0.0.1:6443", {
      cause: new Error("connect ECONNREFUSED 127.0.0.1:6443"),
    });
    assert.equal(errorLine(refused), "cannot reach the Slipway API at https://127.0.0.1:6443: connect ECONNREFUSED 127.0.0.1:6443 (is slipway up running?)");
    const slow = new KubeTimeoutError("https://127.0.0.1:6443", "GET /api: no complete answer from https://127.0.0.1:6443 within 30000 ms");
    assert.match(errorLine(slow), /^cannot reach the Slipway API at https:\/\/127\.0\.0\.1:6443: GET \/api: no complete answer .* \(is slipway up running\?\)$/);
  });

  it("names a missing object by kind, name and namespace", () => {
    assert.equal(new ObjectNotFoundError({ singularName: "cluster", namespaced: true }, "x", "default").message, 'cluster "x" not found in namespace default');
    assert.equal(new ObjectNotFoundError({ singularName: "namespace", namespaced: false }, "x", "default").message, 'namespace "x" not found');
  });
});
