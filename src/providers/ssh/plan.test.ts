import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { joinUserData } from "../../bootstrap/cloudinit.ts";
import { isProviderError } from "../provider.ts";
import { bootstrapPlan } from "./plan.ts";

const userData = joinUserData({
  kubernetesVersion: "v1.31.2",
  controlPlaneEndpoint: "10.0.0.1:8443",
  bootstrapToken: "abcdef.0123456789abcdef",
  caCertHashes: [`sha256:${"0".repeat(64)}`],
  node: { name: "worker-1" },
});

describe("bootstrap plan from user data", () => {
  it("records the host first, then files, packages and each command; kubeadm runs as the unit", () => {
    const plan = bootstrapPlan(userData);
    const names = plan.steps.map((s) => s.name);
    assert.deepEqual(names.slice(0, 3), ["record-host", "write-files", "install-packages"]);
    assert.ok(names.slice(3).every((n) => /^command-\d+$/.test(n)));
    assert.equal(plan.unitCommand, "kubeadm join --config /run/kubeadm/kubeadm.yaml");
    assert.ok(!plan.steps.some((s) => s.script.includes("kubeadm join")), "kubeadm is not a step");
    assert.deepEqual(plan.steps.filter((s) => s.service).map((s) => s.service), ["containerd"], "systemctl restart containerd is a service step");
  });

  it("records every path the steps touch, and their parents, before anything changes", () => {
    const record = bootstrapPlan(userData).steps[0]!.script;
    for (const path of ["/run/kubeadm/kubeadm.yaml", "/run/kubeadm", "/etc/sysctl.d/99-kubernetes.conf", "/etc/fstab", "/etc/containerd/config.toml", "/etc/containerd", "/etc/kubernetes", "/var/lib/kubelet", "/etc/apt/sources.list.d/kubernetes.list"]) {
      assert.ok(record.includes(`if [ -e '${path}' ]`), `${path} is recorded`);
    }
    assert.ok(!record.includes("if [ -e '/etc' ]") && !record.includes("if [ -e '/run' ]"), "top directories are never recorded as Slipway's");
  });

  it("keeps secrets out of command lines: file contents travel base64-encoded in the step's script", () => {
    const plan = bootstrapPlan("#cloud-config\nwrite_files:\n  - path: /etc/x/secret\n    content: top-secret-value\n    permissions: '0600'\n");
    const files = plan.steps.find((s) => s.name === "write-files")!.script;
    assert.ok(!files.includes("top-secret-value"));
    assert.ok(files.includes(Buffer.from("top-secret-value").toString("base64")));
    assert.match(files, /chmod 0600 '\/etc\/x\/secret'/);
  });

  it("refuses user data it cannot run over SSH as invalid", () => {
    for (const bad of ["#!/bin/sh\necho hi\n", "#cloud-config\nwrite_files: [ {path: relative/path} ]\n", "#cloud-config\n: : :\n  - x"]) {
      assert.throws(() => bootstrapPlan(bad), (e: unknown) => isProviderError(e, "invalid") && e.message.startsWith("user data: "));
    }
  });
});
