// `slipway sim-cloud …`: serve the sim cloud on its own, and list what it holds.
import { InvalidArgumentError, type Command } from "commander";
import pino from "pino";
import { InvalidCidrError, parseCidr } from "../api/cidr.ts";
import { DEFAULT_TOKEN } from "./cloud.ts";
import { SimCloudClient } from "./client.ts";
import { SimCloudError } from "./errors.ts";
import { loadFaultConfig } from "./faults.ts";
import { isProfileName, type ProfileName } from "./profiles.ts";
import { DEFAULT_ADMIN_TOKEN, DEFAULT_PORT, startSimCloudServer } from "./server.ts";
import type { ResourceView } from "./resource-kinds.ts";
import { embeddedToken } from "./tokens.ts";
import { BUILTIN_REGISTRY } from "./services.ts";

export { startSimCloudServer } from "./server.ts";
export type { SimCloudServer, SimCloudServerOptions } from "./server.ts";

export const DEFAULT_ENDPOINT = `http://127.0.0.1:${DEFAULT_PORT}`;

/** Where the commands write (the process's streams unless a test captures them). */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

const processOutput: CliOutput = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

function numberOption(name: string, check: (n: number) => boolean) {
  return (value: string): number => {
    const parsed = Number(value);
    if (value.trim() === "" || !Number.isFinite(parsed) || !check(parsed)) throw new InvalidArgumentError(`${name} "${value}" is not valid`);
    return parsed;
  };
}

function profileOption(value: string): ProfileName {
  if (!isProfileName(value)) throw new InvalidArgumentError(`unknown profile "${value}" (instant, fast, demo, realistic)`);
  return value;
}

/** pino's levels, as the logger takes them. */
function logLevelOption(value: string): string {
  if (value !== "silent" && !(value in pino.levels.values)) throw new InvalidArgumentError(`unknown log level "${value}" (${[...Object.keys(pino.levels.values), "silent"].join(", ")})`);
  return value;
}

/** Renders resources as an aligned table (KIND ID REGION STATE TAGS) or as JSON; kinds in their registration order. */
export function renderResources(resources: ResourceView[], format: "table" | "json"): string {
  if (format === "json") {
    const rows = resources.map(({ kind, id, region, state, tags }) => ({ kind, id, region, state, tags }));
    return JSON.stringify(rows, null, 2) + "\n";
  }
  if (resources.length === 0) return "No resources.\n";
  const sorted = [...resources].sort(
    (a, b) =>
      a.region.localeCompare(b.region) ||
      BUILTIN_REGISTRY.order(a.kind) - BUILTIN_REGISTRY.order(b.kind) ||
      a.kind.localeCompare(b.kind) ||
      a.createdAt.localeCompare(b.createdAt),
  );
  const rows = [
    ["KIND", "ID", "REGION", "STATE", "TAGS"],
    ...sorted.map((r) => [r.kind, r.id, r.region, r.state, Object.entries(r.tags).map(([k, v]) => `${k}=${v}`).join(",")]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("   ").trimEnd()).join("\n") + "\n";
}

/** Retries throttled and transient answers a few times, waiting as told. */
async function withRetries<R>(attempt: () => Promise<R>): Promise<R> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof SimCloudError) || !error.retryable || tries >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, error.retryAfterMs ?? 200 * 2 ** tries));
    }
  }
}

interface ServeOptions {
  port: number;
  workloadPort: number;
  state: string;
  profile: ProfileName;
  seed: number;
  timeScale: number;
  faults?: string;
  token: string;
  adminToken: string;
  peer: string[];
  outsideNetwork: string[];
  publicRange?: string;
  logLevel: string;
}

async function serve(options: ServeOptions, io: CliOutput): Promise<void> {
  const server = await startSimCloudServer({
    port: options.port,
    workloadPort: options.workloadPort,
    state: options.state,
    profile: options.profile,
    seed: options.seed,
    timeScale: options.timeScale,
    ...(options.faults ? { faults: loadFaultConfig(options.faults) } : {}),
    defaultToken: options.token,
    adminToken: options.adminToken,
    ...(options.peer.length > 0 ? { peers: options.peer } : {}),
    ...(options.outsideNetwork.length > 0 ? { outside: options.outsideNetwork } : {}),
    ...(options.publicRange ? { publicRange: options.publicRange } : {}),
    logger: pino({ level: options.logLevel }, pino.destination(2)),
  });
  const workloads = server.workloadUrl ? `; workload clusters at ${server.workloadUrl}/clusters/<id>` : "";
  io.out(`sim-cloud ready at ${server.url} (profile ${options.profile}, seed ${options.seed}, time scale ${options.timeScale}, state ${options.state}${workloads})\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      resolve();
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
  await server.close();
  io.out("sim-cloud stopped\n");
}

function cidrOption(value: string): string {
  try {
    parseCidr(value);
    return value;
  } catch (error) {
    if (error instanceof InvalidCidrError) throw new InvalidArgumentError(`${value} is not an IPv4 CIDR: ${error.detail}`);
    throw error;
  }
}

/** Adds `sim-cloud serve` and `sim-cloud resources` to the `slipway` command. */
export function registerSimCloudCommands(program: Command, io: CliOutput = processOutput): void {
  const group = program.command("sim-cloud").description("run and inspect the emulated cloud");

  group
    .command("serve")
    .description("serve the sim cloud's HTTP API on 127.0.0.1")
    .option("--port <port>", "port to listen on", numberOption("port", (n) => Number.isInteger(n) && n >= 0 && n < 65536), DEFAULT_PORT)
    .option("--workload-port <port>", "HTTPS port of the emulated workload clusters' APIs (0: a free one)", numberOption("workload port", (n) => Number.isInteger(n) && n >= 0 && n < 65536), 0)
    .option("--state <file>", 'state file (":memory:" keeps nothing)', ":memory:")
    .option("--profile <name>", "latency profile: instant, fast, demo, realistic", profileOption, "demo" as ProfileName)
    .option("--seed <n>", "seed of ids, jitter and faults", numberOption("seed", Number.isInteger), 1)
    .option("--time-scale <x>", "multiplies every delay (0.1 = ten times faster)", numberOption("time scale", (n) => n > 0), 1)
    .option("--faults <file>", "JSON fault configuration")
    .option("--token <token>", "bearer token of the default account", process.env.SLIPWAY_SIM_TOKEN ?? DEFAULT_TOKEN)
    .option("--admin-token <token>", "bearer token of /admin/v1", process.env.SLIPWAY_SIM_ADMIN_TOKEN ?? DEFAULT_ADMIN_TOKEN)
    .option("--peer <url>", "another sim cloud on the public network: its public addresses and names are reachable from here (repeatable)", (url: string, all: string[]) => [...all, url], [] as string[])
    .option(
      "--outside-network <cidr>",
      "a range of addresses outside the sim clouds (hosts on this machine's networks) that this cloud's machines reach, as through a NAT gateway; kubeadm joins to it go over the network (repeatable)",
      (cidr: string, all: string[]) => [...all, cidrOption(cidr)],
      [] as string[],
    )
    .option("--public-range <cidr>", "the range this cloud's public addresses come from (clouds on one public network need ranges of their own)")
    .option("--log-level <level>", "what is logged on stderr: debug, info, warn or error", logLevelOption, "warn")
    .action(async (options: ServeOptions) => {
      try {
        await serve(options, io);
      } catch (error) {
        io.err(`error: ${(error as Error).message}\n`);
        process.exitCode = 1;
      }
    });

  group
    .command("resources")
    .description("list every resource of the account, in all regions, with its tags")
    .option("--endpoint <url>", "sim cloud URL", DEFAULT_ENDPOINT)
    .option("--token <token>", "bearer token of the account (default: $SLIPWAY_SIM_TOKEN, the token of --data-dir's embedded cloud, or the sim's default)")
    .option("--data-dir <dir>", "the data directory of the `slipway up` whose embedded sim cloud this is (its token is read from there)")
    .option("-o, --output <format>", "table or json", "table")
    .action(async (options: { endpoint: string; token?: string; dataDir?: string; output: string }) => {
      if (options.output !== "table" && options.output !== "json") {
        io.err(`error: unknown output format "${options.output}" (table, json)\n`);
        process.exitCode = 1;
        return;
      }
      try {
        const token = options.token ?? process.env.SLIPWAY_SIM_TOKEN ?? (options.dataDir ? embeddedToken(options.dataDir) : DEFAULT_TOKEN);
        const client = new SimCloudClient({ endpoint: options.endpoint, token });
        const resources = await withRetries(() => client.listResources());
        io.out(renderResources(resources, options.output));
      } catch (error) {
        io.err(`error: ${(error as Error).message}\n`);
        process.exitCode = 1;
      }
    });
}
