// `slipway console`: the web console's address and a new one-time sign-in link for the user of the
// kubeconfig (the code rides in the link's fragment, used once, valid a few minutes).
import type { Command } from "commander";
import { withSession } from "./connect.ts";
import { CliError } from "./errors.ts";

interface LoginCode {
  link: string;
  expiresAt: string;
}

export function registerConsoleCommand(program: Command): void {
  program
    .command("console")
    .description("print the web console's address and a one-time sign-in link")
    .action(async (_flags: unknown, command: Command) => {
      await withSession(command, async (session) => {
        // Error answers throw the API's named errors; a server without a console answers something else.
        const answer = await session.client.raw<LoginCode | undefined>("POST", "/login/codes", {});
        if (typeof answer.body?.link !== "string") throw new CliError(`the control plane at ${session.client.server} serves no console sign-in`);
        const minutes = Math.max(1, Math.round((Date.parse(answer.body.expiresAt) - Date.now()) / 60_000));
        session.out.write(`console: ${new URL("/", session.client.server).href}\n`);
        session.out.write(`sign in (one-time link, valid ${minutes} minutes): ${answer.body.link}\n`);
      });
    });
}
