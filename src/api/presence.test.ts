import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { AlreadyExistsError, ConflictError, NotFoundError } from "../apiserver/errors.ts";
import { KubeAlreadyExistsError, KubeApiError, KubeConflictError, KubeNotFoundError, KubeUnreachableError, kubeApiError } from "../kubeclient/errors.ts";
import { ProviderError } from "../providers/provider.ts";
import { createIfAbsent, deleteIfPresent, ifPresent, isAlreadyExists, isNotFound } from "./presence.ts";

const ref = { group: "slipway.dev", kind: "Cluster", plural: "clusters", name: "demo" };

describe("presence", () => {
  it("reads NotFound from the API server's errors and the kube client's alike", () => {
    assert.equal(isNotFound(new NotFoundError(ref)), true);
    assert.equal(isNotFound(new KubeNotFoundError(404, "NotFound", "clusters \"demo\" not found")), true);
    assert.equal(isNotFound(kubeApiError(404, "Not Found", "404 page not found")), true, "a 404 without a Status body");
    assert.equal(isNotFound(new AlreadyExistsError(ref)), false);
    assert.equal(isNotFound(new KubeUnreachableError("https://127.0.0.1:9", "connect ECONNREFUSED")), false);
    assert.equal(isNotFound(new ProviderError("notFound", "no such instance")), false, "a cloud's NotFound is the provider's to classify");
    assert.equal(isNotFound({ code: 404, reason: "NotFound" }), false, "only errors");
  });

  it("reads AlreadyExists from both, and never a Conflict", () => {
    assert.equal(isAlreadyExists(new AlreadyExistsError(ref)), true);
    assert.equal(isAlreadyExists(new KubeAlreadyExistsError(409, "AlreadyExists", "exists")), true);
    assert.equal(isAlreadyExists(new KubeApiError(409, "AlreadyExists", "exists")), true);
    assert.equal(isAlreadyExists(new ConflictError(ref, "the object has been modified")), false);
    assert.equal(isAlreadyExists(new KubeConflictError(409, "Conflict", "modified")), false);
  });

  it("creates unless it exists, deletes unless it is gone, reads if it is there", async () => {
    assert.equal(await createIfAbsent(async () => "made"), "made");
    assert.equal(await createIfAbsent(() => Promise.reject(new AlreadyExistsError(ref))), undefined);
    await assert.rejects(createIfAbsent(() => Promise.reject(new ConflictError(ref, "modified"))), ConflictError);
    assert.equal(await deleteIfPresent(async () => undefined), true);
    assert.equal(await deleteIfPresent(() => Promise.reject(new KubeNotFoundError(404, "NotFound", "gone"))), false);
    await assert.rejects(deleteIfPresent(() => Promise.reject(new KubeUnreachableError("https://127.0.0.1:9", "down"))), KubeUnreachableError);
    assert.equal(await ifPresent(async () => 7), 7);
    assert.equal(await ifPresent(() => Promise.reject(new NotFoundError(ref))), undefined);
  });
});
