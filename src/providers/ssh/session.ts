// One SSH connection to a host, with the `ssh2` library: the host key is pinned (the first contact
// records its fingerprint, every later contact must present the same key), commands run with their exit
// code and output captured, and files travel over the command's standard input. Failures are named by
// what went wrong — the host did not answer, refused the key, or presented another host key — so that
// conditions and messages say it without parsing text.
import { createHash } from "node:crypto";
import { Client, type ConnectConfig } from "ssh2";

/** Where a host is and how Slipway logs in. */
export interface SshTarget {
  address: string;
  port: number;
  user: string;
  /** OpenSSH or PEM private key. Secret: never logged, never put in a message. */
  privateKey: string;
  /** The host key fingerprint recorded at first contact (`SHA256:…`); absent on first contact. */
  hostKeyFingerprint?: string;
}

export type SshFailureReason = "Unreachable" | "AuthenticationFailed" | "HostKeyChanged" | "InvalidKey";

/** Contact with a host failed; `reason` is the condition reason it is reported under. */
export class SshError extends Error {
  override readonly name = "SshError";
  constructor(
    readonly reason: SshFailureReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The OpenSSH form of a key's fingerprint: `SHA256:` and the unpadded base64 of the key blob's digest. */
export function fingerprintOf(keyBlob: Buffer): string {
  return `SHA256:${createHash("sha256").update(keyBlob).digest("base64").replace(/=+$/, "")}`;
}

function hostName(target: SshTarget): string {
  return `${target.user}@${target.address}:${target.port}`;
}

export class SshSession {
  private constructor(
    private readonly client: Client,
    /** The fingerprint of the key the host presented. */
    readonly hostKeyFingerprint: string,
    readonly target: SshTarget,
  ) {}

  /** Connects and logs in; SshError names why it could not. */
  static connect(target: SshTarget, options: { timeoutMs?: number } = {}): Promise<SshSession> {
    const where = hostName(target);
    return new Promise((resolve, reject) => {
      const client = new Client();
      let presented: string | undefined;
      let settled = false;
      const fail = (error: SshError) => {
        if (settled) return;
        settled = true;
        client.end();
        reject(error);
      };
      const config: ConnectConfig = {
        host: target.address,
        port: target.port,
        username: target.user,
        privateKey: target.privateKey,
        readyTimeout: options.timeoutMs ?? 10_000,
        hostVerifier: (key: Buffer) => {
          presented = fingerprintOf(key);
          return target.hostKeyFingerprint === undefined || target.hostKeyFingerprint === presented;
        },
      };
      client.on("ready", () => {
        settled = true;
        resolve(new SshSession(client, presented ?? "", target));
      });
      client.on("error", (error: Error & { level?: string; code?: string }) => {
        if (presented !== undefined && target.hostKeyFingerprint !== undefined && presented !== target.hostKeyFingerprint) {
          fail(new SshError("HostKeyChanged", `${where} presented host key ${presented}, not the recorded ${target.hostKeyFingerprint}; if the host was reinstalled, trust the new key by setting the Host's annotation slipway.dev/trust-host-key to it`));
        } else if (error.level === "client-authentication") {
          fail(new SshError("AuthenticationFailed", `${where} refused the SSH key (${error.message})`, { cause: error }));
        } else if (/privateKey|private key|Cannot parse/i.test(error.message)) {
          fail(new SshError("InvalidKey", `the SSH key for ${where} cannot be read as a private key`, { cause: error }));
        } else {
          fail(new SshError("Unreachable", `${where} cannot be reached over SSH: ${error.message}`, { cause: error }));
        }
      });
      try {
        client.connect(config);
      } catch (error) {
        fail(new SshError("InvalidKey", `the SSH key for ${where} cannot be read as a private key`, { cause: error }));
      }
    });
  }

  /**
   * Runs a command with `sh -c`; `stdin` is written to its standard input. Never throws on a non-zero exit;
   * with `timeoutMs`, a command still running then is abandoned (its channel closed) and SshError says so.
   */
  exec(command: string, stdin?: string | Buffer, options: { timeoutMs?: number } = {}): Promise<CommandResult> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (error, channel) => {
        if (error) return reject(new SshError("Unreachable", `${hostName(this.target)}: cannot run a command: ${error.message}`, { cause: error }));
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        let code = -1;
        const deadline =
          options.timeoutMs === undefined
            ? undefined
            : setTimeout(() => {
                reject(new SshError("Unreachable", `${hostName(this.target)}: \`${command.split("\n")[0]}\` did not finish within ${options.timeoutMs! / 1000} s`));
                channel.close();
              }, options.timeoutMs);
        channel.on("data", (chunk: Buffer) => out.push(chunk));
        channel.stderr.on("data", (chunk: Buffer) => err.push(chunk));
        channel.on("exit", (exitCode: number | null) => {
          code = exitCode ?? -1;
        });
        channel.on("close", () => {
          clearTimeout(deadline);
          resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") });
        });
        channel.end(stdin);
      });
    });
  }

  /** Runs a command and fails (naming it and its output's tail) when it exits non-zero. */
  async run(command: string, stdin?: string | Buffer): Promise<string> {
    const result = await this.exec(command, stdin);
    if (result.code !== 0) throw new CommandFailedError(hostName(this.target), command, result);
    return result.stdout;
  }

  close(): void {
    this.client.end();
  }
}

/** A command exited non-zero; the message carries the last lines of its output. */
export class CommandFailedError extends Error {
  override readonly name = "CommandFailedError";
  constructor(
    readonly host: string,
    readonly command: string,
    readonly result: CommandResult,
  ) {
    super(`${host}: \`${command.split("\n")[0]}\` exited with ${result.code}: ${outputTail(result)}`);
  }
}

/** The last lines a command printed, for messages and events (bounded). */
export function outputTail(result: CommandResult, lines = 8): string {
  const text = `${result.stdout}\n${result.stderr}`.trim().split("\n").filter((l) => l.trim().length > 0);
  return text.slice(-lines).join(" | ").slice(0, 1000) || "(no output)";
}

/** Connects, runs `work`, and always closes. */
export async function withSession<R>(target: SshTarget, work: (session: SshSession) => Promise<R>, options?: { timeoutMs?: number }): Promise<R> {
  const session = await SshSession.connect(target, options);
  try {
    return await work(session);
  } finally {
    session.close();
  }
}

/** A word quoted for `sh`. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
