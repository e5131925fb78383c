// The `slipway` command. Exit codes: 0 success, 1 failure, 2 usage error.
import { Command, CommanderError } from "commander";
import { registerUpCommand } from "./up.ts";
import { UsageError } from "./usage.ts";

export function buildProgram(): Command {
  const program = new Command("slipway")
    .description("Create and run Kubernetes clusters across clouds")
    .version("0.1.0")
    .showHelpAfterError()
    .exitOverride();
  registerUpCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
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
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
// Long-running commands (up, serve) keep the process alive through their servers; others end here.
if (code !== 0) process.exit(code);
