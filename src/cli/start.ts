// `slipway start` (what `npm start` runs): the control plane with its embedded sim cloud, then the
// example cluster applied with live progress, then the control plane keeps serving. It only drives the
// public commands (`up`, `apply --wait`), so what a newcomer sees is exactly what those commands do.
import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import type { Command } from "commander";
import { defaultDataDir } from "./up.ts";

interface StartFlags {
  dataDir: string;
  port: string;
  simProfile: string;
  simPort: string;
  file: string;
}

function slipway(args: string[], stdio: "inherit" | "pipe"): ChildProcess {
  return spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...args], { stdio: ["ignore", stdio, stdio] });
}

export function registerStartCommand(program: Command): void {
  program
    .command("start")
    .description("run the control plane with an embedded sim cloud and build the example cluster, with progress")
    .option("--data-dir <dir>", "where state, credentials and the admin kubeconfig live", defaultDataDir())
    .option("--port <port>", "port to serve the API on (127.0.0.1)", "6443")
    .option("--sim-profile <name>", "latency profile of the embedded sim cloud", "demo")
    .option("--sim-port <port>", "port of the embedded sim cloud's API (0: a free one)", "7480")
    .option("-f, --file <manifest>", "what to apply once the control plane runs", "examples/quickstart.yaml")
    .action(async (flags: StartFlags) => {
      await runStart(flags);
    });
}

async function runStart(flags: StartFlags): Promise<void> {
  const dataDir = resolve(flags.dataDir);
  const kubeconfig = resolve(dataDir, "kubeconfig");
  const up = slipway(["up", "--data-dir", dataDir, "--port", flags.port, "--sim-profile", flags.simProfile, "--sim-port", flags.simPort], "pipe");
  let output = "";
  let nextSteps = "";
  // Up's lines until "ready" are shown now; its suggestions of what to do next, once the cluster runs.
  await new Promise<void>((ready, failed) => {
    let isReady = false;
    up.stdout!.on("data", (chunk: Buffer) => {
      if (isReady) {
        nextSteps += chunk.toString();
        return;
      }
      output += chunk.toString();
      const end = output.search(/\bready\n/);
      if (end < 0) return;
      isReady = true;
      const cut = end + "ready\n".length;
      process.stdout.write(output.slice(0, cut));
      nextSteps = output.slice(cut);
      ready();
    });
    up.stderr!.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    up.once("exit", (code) => failed(new Error(`slipway up exited with code ${code}:\n${output}`)));
  });
  const stop = () => up.kill("SIGTERM");
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  up.once("exit", (code) => process.exit(code ?? 0));

  process.stdout.write(`\nslipway: applying ${flags.file}\n`);
  const apply = slipway(["--kubeconfig", kubeconfig, "apply", "-f", flags.file, "--wait"], "inherit");
  const code = await new Promise<number | null>((done) => apply.once("exit", done));
  if (code !== 0) {
    process.stdout.write(`\nslipway: the cluster did not become Ready (see above); the control plane keeps serving for you to look.\n`);
  } else {
    process.stdout.write(`\nslipway: the cluster is Running.\n`);
  }
  process.stdout.write(`${nextSteps.trimEnd()}\n\nslipway: serving until Ctrl-C.\n`);
}
