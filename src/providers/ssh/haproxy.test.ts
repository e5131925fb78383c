// haproxy on a real leader host (the lab) in front of API servers on two other hosts: started once,
// left alone when nothing changed, reloaded when members come and go (requests follow), a configuration
// haproxy refuses is reported and the running one kept, and the cleanup stops it and leaves no file.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { request } from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import { API_LOAD_BALANCER_PORT, ensureApiLoadBalancer, renderHaproxyConfig, type ApiServerMember } from "./haproxy.ts";
import { withSession, type SshTarget } from "./session.ts";
import { cleanHost } from "./steps.ts";
import { SshLab, labUnavailable, type LabHost } from "./testing/lab.ts";

const run = promisify(execFile);

/** An HTTPS server standing in for a kube-apiserver: /readyz answers ok, everything else its name. */
const BACKEND = `
import { createServer } from "node:https";
import { readFileSync } from "node:fs";
const [name, address, dir] = process.argv.slice(2);
createServer({ key: readFileSync(dir + "/tls.key"), cert: readFileSync(dir + "/tls.crt") }, (req, res) => {
  res.end(req.url === "/readyz" ? "ok" : name);
}).listen(6443, address);
`;

function get(address: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path: "/", rejectUnauthorized: false, timeout: 3000, agent: false }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve(body));
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.end();
  });
}

describe("haproxy in front of the control plane on a real host", { skip: labUnavailable() }, () => {
  let lab: SshLab;
  const target = (h: LabHost): SshTarget => ({ address: h.address, port: h.port, user: h.user, privateKey: lab.privateKey, hostKeyFingerprint: h.hostKeyFingerprint });
  const member = (h: LabHost): ApiServerMember => ({ name: h.name, address: h.address, port: 6443 });
  /** The names answering through the leader's haproxy, over `n` requests. */
  const answering = async (leader: LabHost, n = 8): Promise<Set<string>> => {
    const names = new Set<string>();
    for (let i = 0; i < n; i++) names.add(await get(leader.address, API_LOAD_BALANCER_PORT).catch((e: Error) => `error: ${e.message}`));
    return names;
  };
  const until = async (what: string, check: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + 15_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  before(async () => {
    lab = await SshLab.start(3);
    await run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=kube-apiserver", "-keyout", join(lab.dir, "tls.key"), "-out", join(lab.dir, "tls.crt")]);
    await writeFile(join(lab.dir, "backend.mjs"), BACKEND);
    for (const h of lab.hosts.slice(1)) {
      const started = await lab.exec(h, `setsid nohup ${process.execPath} ${join(lab.dir, "backend.mjs")} ${h.name} ${h.address} ${lab.dir} > /dev/null 2>&1 < /dev/null &`);
      assert.equal(started.code, 0, started.stderr);
    }
    for (const h of lab.hosts.slice(1)) await until(`${h.name}'s API server`, async () => (await get(h.address, 6443).catch(() => "")) === h.name);
  });
  after(async () => {
    await lab?.stop();
  });

  it("renders the same members in the same words", () => {
    const a = { name: "b", address: "10.0.0.2", port: 6443 };
    const b = { name: "a", address: "10.0.0.1", port: 6443 };
    assert.equal(renderHaproxyConfig({ members: [a, b] }), renderHaproxyConfig({ members: [b, a] }));
    assert.match(renderHaproxyConfig({ members: [a] }), /bind \*:8443\n[\s\S]*server b 10\.0\.0\.2:6443 check check-ssl verify none/);
  });

  it("starts, keeps, reloads on member changes, refuses a bad configuration, and is cleaned away", async () => {
    const [leader, second, third] = lab.hosts as [LabHost, LabHost, LabHost];
    await withSession(target(leader), async (session) => {
      assert.equal(await ensureApiLoadBalancer(session, { members: [member(second)] }), "started");
      await until("the first member behind haproxy", async () => [...(await answering(leader))].join() === second.name);
      assert.equal(await ensureApiLoadBalancer(session, { members: [member(second)] }), "unchanged");

      assert.equal(await ensureApiLoadBalancer(session, { members: [member(second), member(third)] }), "reloaded");
      await until("both members to answer", async () => (await answering(leader)).size === 2 && (await answering(leader)).has(third.name));

      assert.equal(await ensureApiLoadBalancer(session, { members: [member(third)] }), "reloaded");
      await until("only the remaining member to answer", async () => [...(await answering(leader, 10))].join() === third.name);

      await assert.rejects(ensureApiLoadBalancer(session, { members: [{ name: "broken", address: "no such address", port: 6443 }] }), (e: Error) => {
        assert.equal(e.name, "StepFailedError");
        assert.match(e.message, new RegExp(`^step haproxy configuration failed on ${leader.address.replace(/\./g, "\\.")}:22: .+`));
        return true;
      });
      assert.deepEqual([...(await answering(leader))], [third.name], "the running configuration is kept");

      await cleanHost(session);
    });
    await until("haproxy to stop", async () => (await answering(leader, 1)).values().next().value?.startsWith("error") ?? false);
    assert.deepEqual(await lab.writtenFiles(leader), [], "no haproxy file or unit left");
  });
});
