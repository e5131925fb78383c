// Starts real etcd servers (one member or a three-member cluster) on free loopback ports, each in its own
// temporary data directory, for tests that need the etcd store. Every process started here is killed
// when the test process exits, even if a test fails before calling stop().
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, closeSync, rmSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";

const ETCD_BINARY = process.env.SLIPWAY_ETCD_BINARY ?? "/usr/bin/etcd";
const READY_TIMEOUT_MS = 20_000;

export interface EtcdMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  pid: number;
  process: ChildProcess;
}

export interface EtcdCluster {
  endpoints: string[];
  members: EtcdMember[];
  /** Kills every member and removes the data directories. */
  stop(): Promise<void>;
  /** Sends a signal to one member and waits until it has exited. */
  kill(memberName: string, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed member again on its data directory and waits until it answers. */
  restart(memberName: string): Promise<void>;
  /** The name of the member that currently leads (waits for an election if there is none yet). */
  leader(): Promise<string>;
}

export class EtcdStartError extends Error {
  override readonly name = "EtcdStartError";
}

const running = new Set<ChildProcess>();
const directories = new Set<string>();
let cleanupRegistered = false;

function cleanupSync(): void {
  for (const child of running) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  running.clear();
  for (const dir of directories) rmSync(dir, { recursive: true, force: true });
  directories.clear();
}

function registerCleanup(): void {
  if (cleanupRegistered) return;
  cleanupRegistered = true;
  process.on("exit", cleanupSync);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const onSignal = (): void => {
      cleanupSync();
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  server.close();
  await once(server, "close");
  if (port === 0) throw new EtcdStartError("could not find a free port");
  return port;
}

interface MemberPlan {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  args: string[];
}

function launch(plan: MemberPlan): ChildProcess {
  const logFd = openSync(join(plan.dataDir, "..", `${plan.name}.log`), "a");
  const child = spawn(ETCD_BINARY, plan.args, { stdio: ["ignore", logFd, logFd] });
  closeSync(logFd);
  child.unref();
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

function memberLog(plan: MemberPlan): string {
  try {
    return readFileSync(join(plan.dataDir, "..", `${plan.name}.log`), "utf8").split("\n").slice(-15).join("\n");
  } catch {
    return "";
  }
}

async function answers(clientUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1_000) });
    if (!response.ok) return false;
    const body = (await response.json()) as { health?: string };
    return body.health === "true";
  } catch {
    return false;
  }
}

async function waitUntilHealthy(plans: MemberPlan[], children: Map<string, ChildProcess>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (const plan of plans) {
    while (!(await answers(plan.clientUrl))) {
      const child = children.get(plan.name);
      if (!child || child.exitCode !== null || child.signalCode !== null) {
        throw new EtcdStartError(`etcd member ${plan.name} exited while starting:\n${memberLog(plan)}`);
      }
      if (Date.now() > deadline) {
        throw new EtcdStartError(`etcd member ${plan.name} did not become healthy:\n${memberLog(plan)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const response = await fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
    signal: AbortSignal.timeout(2_000),
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return (await response.json()) as T;
}

export async function startEtcd(options: { members?: 1 | 3 } = {}): Promise<EtcdCluster> {
  registerCleanup();
  // A port found free can be taken by another test process before etcd binds it: try fresh ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options.members ?? 1);
    } catch (error) {
      if (!(error instanceof EtcdStartError) || attempt >= 3) throw error;
    }
  }
}

async function startOnce(count: number): Promise<EtcdCluster> {
  const root = mkdtempSync(join(tmpdir(), "slipway-etcd-"));
  directories.add(root);
  const token = `slipway-test-${process.pid}-${Date.now()}`;

  const plans: MemberPlan[] = [];
  for (let i = 0; i < count; i++) {
    const name = `member${i}`;
    plans.push({
      name,
      clientUrl: `http://127.0.0.1:${await freePort()}`,
      peerUrl: `http://127.0.0.1:${await freePort()}`,
      dataDir: join(root, name),
      args: [],
    });
  }
  const initialCluster = plans.map((p) => `${p.name}=${p.peerUrl}`).join(",");
  for (const plan of plans) {
    plan.args = [
      `--name=${plan.name}`,
      `--data-dir=${plan.dataDir}`,
      `--listen-client-urls=${plan.clientUrl}`,
      `--advertise-client-urls=${plan.clientUrl}`,
      `--listen-peer-urls=${plan.peerUrl}`,
      `--initial-advertise-peer-urls=${plan.peerUrl}`,
      `--initial-cluster=${initialCluster}`,
      `--initial-cluster-state=new`,
      `--initial-cluster-token=${token}`,
      // Short timings so that a test sees an election within a second.
      "--heartbeat-interval=50",
      "--election-timeout=500",
      "--logger=zap",
      "--log-level=warn",
    ];
  }

  const children = new Map<string, ChildProcess>();
  for (const plan of plans) children.set(plan.name, launch(plan));
  const members: EtcdMember[] = plans.map((plan) => {
    const child = children.get(plan.name) as ChildProcess;
    return {
      name: plan.name,
      clientUrl: plan.clientUrl,
      peerUrl: plan.peerUrl,
      dataDir: plan.dataDir,
      pid: child.pid ?? 0,
      process: child,
    };
  });

  const planOf = (name: string): MemberPlan => {
    const plan = plans.find((p) => p.name === name);
    if (!plan) throw new Error(`no etcd member named ${name}`);
    return plan;
  };
  const memberOf = (name: string): EtcdMember => members.find((m) => m.name === name) as EtcdMember;

  const kill = async (name: string, signal: NodeJS.Signals = "SIGKILL"): Promise<void> => {
    planOf(name);
    const child = children.get(name) as ChildProcess;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    // Members are unref'd so that a test process can end with them running; while one is being stopped,
    // its exit must keep the event loop alive, or a test with nothing else pending ends before it.
    child.ref();
    child.kill(signal);
    await exited;
  };

  const cluster: EtcdCluster = {
    endpoints: plans.map((p) => p.clientUrl),
    members,
    async stop() {
      await Promise.all(plans.map((p) => kill(p.name)));
      rmSync(root, { recursive: true, force: true });
      directories.delete(root);
    },
    kill,
    async restart(name) {
      const plan = planOf(name);
      await kill(name);
      const child = launch(plan);
      children.set(name, child);
      const member = memberOf(name);
      member.process = child;
      member.pid = child.pid ?? 0;
      await waitUntilHealthy([plan], children);
    },
    async leader() {
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while (Date.now() < deadline) {
        for (const plan of plans) {
          const child = children.get(plan.name) as ChildProcess;
          if (child.exitCode !== null || child.signalCode !== null) continue;
          try {
            const status = await postJson<{ leader?: string }>(`${plan.clientUrl}/v3/maintenance/status`, {});
            if (!status.leader || status.leader === "0") continue;
            const list = await postJson<{ members?: { ID?: string; name?: string }[] }>(
              `${plan.clientUrl}/v3/cluster/member/list`,
              {},
            );
            const leader = list.members?.find((m) => m.ID === status.leader);
            if (leader?.name) {
              const leaderChild = children.get(leader.name);
              if (leaderChild && leaderChild.exitCode === null && leaderChild.signalCode === null) return leader.name;
            }
          } catch {
            // this member is not answering yet; ask another
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new EtcdStartError("no etcd leader was elected");
    },
  };

  try {
    await waitUntilHealthy(plans, children);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

/** Requests the cluster's first member answered, by gRPC method (from its /metrics). */
export async function etcdRequests(etcd: EtcdCluster): Promise<Record<string, number>> {
  const text = await (await fetch(`${etcd.endpoints[0]}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^grpc_server_handled_total\{[^}]*grpc_method="(\w+)"[^}]*\} (\d+)/gm)) counts[match[1]!] = (counts[match[1]!] ?? 0) + Number(match[2]);
  return counts;
}
