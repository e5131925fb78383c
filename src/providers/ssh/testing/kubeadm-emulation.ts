// The program behind the SSH host lab's stand-in kubeadm (stand-ins.ts), run on a lab host in its
// namespaces. `init` starts the cluster's emulated API (simcloud/workload/standalone.ts) detached, as the
// kubelet would start kube-apiserver's static pod, and — as kubeadm init does — finishes only once the
// API answers through the control-plane endpoint (haproxy, which Slipway starts on this host). `join`
// finds the cluster through the endpoint, checks the token and the CA hash, and registers the node.
// `serve` is the API server process itself. Exits non-zero with kubeadm's words on failure.
import { spawn } from "node:child_process";
import { openSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { networkInterfaces } from "node:os";
import { fileURLToPath } from "node:url";
import { readKubeadmConfig } from "../../../simcloud/workload/kubeadm-config.ts";
import { serveStandaloneCluster } from "../../../simcloud/workload/standalone.ts";
import { JoinFailedError, joinStandaloneCluster } from "../../../simcloud/workload/standalone-join.ts";


function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

/** The host's address: its first IPv4 address that is not loopback. */
function hostAddress(): string {
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((a) => a.family === "IPv4" && !a.internal);
    if (found) return found.address;
  }
  throw new Error("the host has no IPv4 address");
}

function answers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { rejectUnauthorized: false, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
}

async function waitFor(url: string, timeoutMs: number, alive: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && alive()) {
    if (await answers(url)) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

async function init(args: string[]): Promise<void> {
  const configPath = option(args, "--config")!;
  const logPath = option(args, "--log")!;
  const pidPath = option(args, "--pid")!;
  const config = readKubeadmConfig(readFileSync(configPath, "utf8"));
  const address = hostAddress();
  const bindPort = config.init?.localAPIEndpoint?.bindPort ?? 6443;
  const endpoint = config.cluster?.controlPlaneEndpoint ?? `${address}:${bindPort}`;
  const log = openSync(logPath, "a");
  // The same program, with the same loader, as the API server's own process.
  const server = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "serve", "--config", configPath, "--address", address], { detached: true, stdio: ["ignore", log, log] });
  server.unref();
  writeFileSync(pidPath, `${server.pid}\n`);
  let exited = false;
  server.once("exit", () => (exited = true));
  console.log(`[control-plane] Creating static Pod manifest for "kube-apiserver" (serving ${address}:${bindPort})`);
  if (!(await waitFor(`https://${address}:${bindPort}/readyz`, 60_000, () => !exited))) {
    console.error(`error execution phase wait-control-plane: the API server did not come up:\n${readFileSync(logPath, "utf8").split("\n").slice(-10).join("\n")}`);
    process.exit(1);
  }
  console.log(`[api-check] Waiting for the API at the control-plane endpoint ${endpoint}`);
  if (!(await waitFor(`https://${endpoint}/readyz`, 4 * 60_000, () => !exited))) {
    console.error(`error execution phase upload-config: the API does not answer at the control-plane endpoint ${endpoint}`);
    process.exit(1);
  }
  console.log("Your Kubernetes control-plane has initialized successfully!");
}

async function serve(args: string[]): Promise<void> {
  const cluster = await serveStandaloneCluster({ configPath: option(args, "--config")!, address: option(args, "--address")! });
  console.log(`serving ${cluster.url}`);
  const stop = () => void cluster.close().finally(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

async function join(args: string[]): Promise<void> {
  try {
    const name = await joinStandaloneCluster({ configPath: option(args, "--config")!, address: hostAddress(), });
    console.log(`This node has joined the cluster (node ${name})`);
  } catch (error) {
    if (!(error instanceof JoinFailedError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}

const COMMANDS: Record<string, (args: string[]) => Promise<void>> = { init, serve, join };

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command = "", ...args] = process.argv.slice(2);
  const run = COMMANDS[command];
  if (!run) {
    console.error(`kubeadm emulation: unknown command ${command}`);
    process.exit(2);
  }
  run(args).catch((error: unknown) => {
    console.error(`error: ${(error as Error).message}`);
    process.exit(1);
  });
}
