// The `slipway` command. Exit codes: 0 success, 1 failure, 2 usage error.
import { Command, CommanderError } from "commander";
import { registerApplyCommand } from "./apply.ts";
import { registerConsoleCommand } from "./console.ts";
import { registerDeleteCommand } from "./delete.ts";
import { registerDescribeCommand } from "./describe.ts";
import { ReportedFailure, errorLine } from "./errors.ts";
import { registerEventsCommand } from "./events.ts";
import { registerGetCommand } from "./get.ts";
import { kubectlConfigPath, registerKubeconfigCommand } from "./kubeconfig.ts";
import { registerLoginCommand } from "./login.ts";
import { registerPlanCommand } from "./plan.ts";
import { registerScaleCommand } from "./scale.ts";
import { registerServicesCommand } from "./services.ts";
import { registerTimelineCommand } from "./timeline.ts";
import { UsageError } from "./usage.ts";

/** Commands that talk to a control plane over HTTP; they do not need the control plane's own code. */
const CLIENT_COMMANDS = new Set(["apply", "get", "describe", "events", "delete", "kubeconfig", "scale", "timeline", "console", "plan", "services", "login"]);
/** Global options that take a value (to find the command's name in argv). */
const VALUE_OPTIONS = new Set(["--kubeconfig", "-n", "--namespace"]);

function commandName(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (VALUE_OPTIONS.has(arg)) i++;
    else if (!arg.startsWith("-")) return arg;
  }
  return undefined;
}

export async function buildProgram(argv: readonly string[] = []): Promise<Command> {
  const program = new Command("slipway")
    .description("Create and run Kubernetes clusters across clouds")
    .version("0.1.0")
    .option("--kubeconfig <path>", "kubeconfig of the control plane (default: $KUBECONFIG, else ~/.slipway/kubeconfig)")
    .option("-n, --namespace <namespace>", "namespace of the objects (default: the kubeconfig context's, else default)")
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError()
    .exitOverride();
  // The control plane's code (API server, store, controllers) loads only when the command may need it,
  // so that client commands start quickly.
  if (!CLIENT_COMMANDS.has(commandName(argv) ?? "")) {
    const { registerUpCommand } = await import("./up.ts");
    registerUpCommand(program);
    const { registerSimCloudCommands } = await import("../simcloud/cli.ts");
    registerSimCloudCommands(program);
    const { registerStartCommand } = await import("./start.ts");
    registerStartCommand(program);
  }
  registerApplyCommand(program);
  registerGetCommand(program);
  registerDescribeCommand(program);
  registerEventsCommand(program);
  registerDeleteCommand(program);
  registerKubeconfigCommand(program);
  registerLoginCommand(program, kubectlConfigPath);
  registerScaleCommand(program);
  registerTimelineCommand(program);
  registerConsoleCommand(program);
  registerPlanCommand(program);
  registerServicesCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = await buildProgram(argv);
  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.code === "commander.help") return 0;
      return 2;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`error: ${e.message}\n`);
      return 2;
    }
    if (e instanceof ReportedFailure) return 1;
    process.stderr.write(`error: ${errorLine(e)}\n`);
    return 1;
  }
}

// A reader that has seen enough (`slipway get clusters | head -1`) ends the command quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

const code = await main(process.argv.slice(2));
// Long-running commands (up, serve) keep the process alive through their servers; others end here.
if (code !== 0) process.exit(code);
