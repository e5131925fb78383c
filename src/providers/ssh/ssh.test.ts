// The SSH steps against real OpenSSH servers in network namespaces (the lab): login with host key
// pinning, facts, a node's bootstrap run step by step and again without effect, a failing step's output,
// the bootstrap unit detached where there is no systemd, and the cleanup that leaves the host as found.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { release } from "node:os";
import { joinUserData } from "../../bootstrap/cloudinit.ts";
import { gatherFacts } from "./facts.ts";
import { BOOTSTRAP_UNIT, bootstrapPlan } from "./plan.ts";
import { SshError, SshSession, withSession, type SshTarget } from "./session.ts";
import { cleanHost, runPlanStep, runStep, slipwayLeftovers, startUnit, unitState } from "./steps.ts";
import { SshLab, labUnavailable, type LabHost } from "./testing/lab.ts";

const skip = labUnavailable();

function workerUserData(endpoint: string): string {
  return joinUserData({
    kubernetesVersion: "v1.31.2",
    controlPlaneEndpoint: endpoint,
    bootstrapToken: "abcdef.0123456789abcdef",
    caCertHashes: [`sha256:${"0".repeat(64)}`],
    node: { name: "worker-1" },
  });
}

async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("SSH steps on real hosts", { skip }, () => {
  let lab: SshLab;
  const target = (host: LabHost, pinned = true): SshTarget => ({
    address: host.address,
    port: host.port,
    user: host.user,
    privateKey: lab.privateKey,
    ...(pinned ? { hostKeyFingerprint: host.hostKeyFingerprint } : {}),
  });

  before(async () => {
    lab = await SshLab.start(2);
  });
  after(async () => {
    await lab?.stop();
  });

  it("records the host key at first contact, and logs in again only with the same key", async () => {
    const host = lab.hosts[0]!;
    const first = await SshSession.connect(target(host, false));
    first.close();
    assert.equal(first.hostKeyFingerprint, host.hostKeyFingerprint, "the fingerprint is the host key's, in OpenSSH's SHA256 form");
    assert.match(first.hostKeyFingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
    const again = await withSession(target(host), (s) => s.run("echo hello"));
    assert.equal(again.trim(), "hello");
    const other = { ...target(host), hostKeyFingerprint: lab.hosts[1]!.hostKeyFingerprint };
    await assert.rejects(SshSession.connect(other), (e: unknown) => e instanceof SshError && e.reason === "HostKeyChanged" && e.message.includes(host.address));
  });

  it("names a refused key and an unreachable host", async () => {
    const host = lab.hosts[0]!;
    const { privateKey: wrongKey } = await SshLab.keyPair(lab.dir, "wrong");
    await assert.rejects(SshSession.connect({ ...target(host), privateKey: wrongKey }), (e: unknown) => {
      assert.ok(e instanceof SshError);
      assert.equal(e.reason, "AuthenticationFailed");
      assert.match(e.message, new RegExp(`root@${host.address.replace(/\./g, "\\.")}:22 refused the SSH key`));
      assert.ok(!e.message.includes("PRIVATE KEY"), "the key is not in the message");
      return true;
    });
    const nowhere = { ...target(host), address: `${lab.subnet}.99` };
    await assert.rejects(SshSession.connect(nowhere, { timeoutMs: 3000 }), (e: unknown) => e instanceof SshError && e.reason === "Unreachable" && e.message.includes(`${lab.subnet}.99`));
  });

  it("gathers the host's facts, its host name among them", async () => {
    const facts = await withSession(target(lab.hosts[0]!), gatherFacts);
    assert.equal(facts.kernel, release());
    assert.ok(facts.os.length > 0 && facts.os !== "unknown", facts.os);
    assert.ok(facts.cpus >= 1);
    assert.ok(facts.memoryMiB > 100);
    assert.match(facts.architecture, /^(x86_64|aarch64|arm64)$/);
    assert.equal(facts.hostname, lab.hosts[0]!.name, "the host's own name, which its node registers under");
  });

  it("abandons a command that does not finish in time, naming it and the host", async () => {
    await withSession(target(lab.hosts[0]!), async (session) => {
      await assert.rejects(session.exec("sleep 30", undefined, { timeoutMs: 300 }), (e: unknown) => e instanceof SshError && e.reason === "Unreachable" && /`sleep 30` did not finish within 0.3 s/.test(e.message) && e.message.includes(lab.hosts[0]!.address));
      assert.equal((await session.run("echo still here")).trim(), "still here", "the session still runs commands");
    });
  });

  it("runs a node's bootstrap once, detaches kubeadm where there is no systemd, and cleans up to the host as found", async () => {
    const host = lab.hosts[0]!;
    const plan = bootstrapPlan(workerUserData(`${lab.hosts[1]!.address}:6443`));
    assert.deepEqual(plan.steps.slice(0, 3).map((s) => s.name), ["record-host", "write-files", "install-packages"]);
    assert.match(plan.unitCommand ?? "", /^kubeadm join --config \/run\/kubeadm\/kubeadm.yaml$/);
    await withSession(target(host), async (session) => {
      const outcomes = [];
      for (const step of plan.steps) outcomes.push(await runPlanStep(session, step));
      const restart = plan.steps.findIndex((s) => s.service === "containerd");
      assert.equal(outcomes[restart], "detached", "containerd is started detached where there is no systemd");
      assert.ok(outcomes.every((o, i) => o === (i === restart ? "detached" : "ran")), outcomes.join(", "));
      for (const step of plan.steps) assert.equal(await runPlanStep(session, step), "skipped", `${step.name} runs only once`);
      const started = await startUnit(session, BOOTSTRAP_UNIT, plan.unitCommand!, { oneshot: true });
      assert.deepEqual(started, { started: true, manager: "nohup" });
      assert.equal((await startUnit(session, BOOTSTRAP_UNIT, plan.unitCommand!, { oneshot: true })).started, false, "a started unit is not started twice");
      await eventually("the bootstrap unit to end", async () => ((await unitState(session, BOOTSTRAP_UNIT)).state === "succeeded" ? true : undefined));
      assert.equal((await session.run("cat /run/kubeadm/kubeadm.yaml")).includes("kind: JoinConfiguration"), true);
    });
    const calls = await lab.calls(host);
    assert.deepEqual(calls.filter((c) => c.startsWith("kubeadm join")), ["kubeadm join --config /run/kubeadm/kubeadm.yaml"], "kubeadm ran once");
    assert.ok(calls.includes("swapoff -a") && calls.includes("sysctl --system"), calls.join("\n"));
    const written = await lab.writtenFiles(host);
    for (const path of ["/run/kubeadm/kubeadm.yaml", "/etc/sysctl.d/99-kubernetes.conf", "/etc/containerd/config.toml", "/etc/kubernetes/kubelet.conf", "/var/lib/slipway/found"]) {
      assert.ok(written.includes(path), `${path} was written (written: ${written.join(", ")})`);
    }
    assert.deepEqual(await lab.writtenFiles(lab.hosts[1]!), [], "the other host saw none of it");

    await withSession(target(host), async (session) => {
      await cleanHost(session);
      assert.deepEqual(await slipwayLeftovers(session), []);
      assert.match(await cleanHost(session), /nothing of Slipway's/, "a second cleanup finds nothing");
    });
    assert.ok((await lab.calls(host)).includes("kubeadm reset -f"), "kubeadm was reset");
    assert.deepEqual(await lab.writtenFiles(host), [], "no file Slipway or kubeadm wrote is left, and /etc/fstab is as it was");
  });

  it("reports a failing step and a failing unit with the host, the step and their output", async () => {
    const host = lab.hosts[1]!;
    await withSession(target(host), async (session) => {
      const bad = bootstrapPlan("#cloud-config\nruncmd:\n  - echo preparing\n  - ls /no/such/dir\n");
      assert.equal(await runStep(session, bad.steps[1]!), "ran");
      await assert.rejects(runStep(session, bad.steps[2]!), (e: Error) => {
        assert.equal(e.name, "StepFailedError");
        assert.match(e.message, new RegExp(`^step command-2 failed on ${host.address.replace(/\./g, "\\.")}:22: .*No such file or directory`));
        return true;
      });
      await writeFile(join(host.dir, "fail-kubeadm"), "[ERROR Port-10250]: Port 10250 is in use\n");
      await startUnit(session, BOOTSTRAP_UNIT, "kubeadm join --config /etc/hostname", { oneshot: true });
      const failed = await eventually("the unit to fail", async () => {
        const state = await unitState(session, BOOTSTRAP_UNIT);
        return state.state === "failed" ? state : undefined;
      });
      assert.match(failed.output, /Port 10250 is in use/);
      await cleanHost(session);
    });
    assert.deepEqual(await lab.writtenFiles(host), []);
  });

  it("refuses a changed host key after the host was reinstalled", async () => {
    const host = lab.hosts[1]!;
    const recorded = host.hostKeyFingerprint;
    const changed = await lab.replaceHostKey(host);
    assert.notEqual(changed, recorded);
    await assert.rejects(SshSession.connect({ ...target(host), hostKeyFingerprint: recorded }), (e: unknown) => {
      assert.ok(e instanceof SshError && e.reason === "HostKeyChanged");
      assert.ok(e.message.includes(changed) && e.message.includes(recorded), e.message);
      return true;
    });
  });
});
