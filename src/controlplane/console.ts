// The web console beside the API on the same HTTPS endpoint: the files of its build (dist/console, made
// by `npm run build:console`) at `/`, and the two sign-in endpoints. Everything else the console does,
// it does through the Kubernetes-style API like any other client.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError, BadRequestError, UnauthorizedError } from "../apiserver/errors.ts";
import { loginLink, type LoginCodes, type SessionTokens, type SignedInIdentity } from "./login.ts";

export const CONSOLE_BUILD_DIR = fileURLToPath(new URL("../../dist/console/", import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

// Everything the console loads comes from this server; nothing may be framed or sent elsewhere.
const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Slipway console</title>
<p>The console is not built. From the project's folder run <code>npm run build:console</code> (npm start and npm test do it), then reload.</p>`;

export class LoginCodeRejectedError extends ApiError {
  readonly code = 401;
  readonly reason = "Unauthorized";
  constructor() {
    super("the sign-in code is not valid: it was used already, it expired, or it was never issued; ask for a new link with `slipway console`");
  }
}

interface ConsoleFile {
  body: Buffer;
  type: string;
  /** Hashed asset names never change content, so browsers may keep them. */
  immutable: boolean;
}

/** The build's files by URL path, read once. */
function readBuild(dir: string): Map<string, ConsoleFile> | undefined {
  if (!existsSync(join(dir, "index.html"))) return undefined;
  const files = new Map<string, ConsoleFile>();
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const url = `/${relative(dir, path).split(sep).join("/")}`;
        files.set(url, { body: readFileSync(path), type: CONTENT_TYPES[extname(name)] ?? "application/octet-stream", immutable: url.startsWith("/assets/") });
      }
    }
  };
  walk(dir);
  return files;
}

export interface ConsoleSiteOptions {
  codes: LoginCodes;
  sessions: SessionTokens;
  /** Who sent a request, by its credentials (undefined: nobody known). */
  authenticate: (request: FastifyRequest) => SignedInIdentity | undefined | Promise<SignedInIdentity | undefined>;
  /** The console's URL, for the links `/login/codes` answers with. */
  url: () => string;
  buildDir?: string;
}

function jsonBody(request: FastifyRequest): Record<string, unknown> {
  const raw = typeof request.body === "string" ? request.body : "";
  try {
    const parsed = JSON.parse(raw || "{}") as unknown;
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new BadRequestError("the request body must be a JSON object");
}

/**
 * Answers the requests the console's site serves (its files, sign-in), or undefined for every other
 * path, which the API serves.
 */
export function consoleSite(options: ConsoleSiteOptions): (request: FastifyRequest, reply: FastifyReply, path: string) => Promise<unknown> | undefined {
  const dir = options.buildDir ?? CONSOLE_BUILD_DIR;
  let build: Map<string, ConsoleFile> | undefined;
  const files = () => (build ??= readBuild(dir));

  const signIn = async (request: FastifyRequest, reply: FastifyReply) => {
    const code = jsonBody(request).code;
    if (typeof code !== "string" || code === "") {
      throw new BadRequestError("code is required", [{ reason: "FieldValueRequired", message: "the one-time code from the sign-in link", field: "code" }]);
    }
    const identity = options.codes.redeem(code);
    if (!identity) throw new LoginCodeRejectedError();
    const session = options.sessions.issue(identity);
    reply.header("Cache-Control", "no-store");
    return { token: session.token, user: identity.user, expiresAt: new Date(session.expiresAt).toISOString() };
  };

  const newCode = async (request: FastifyRequest, reply: FastifyReply) => {
    const identity = await options.authenticate(request);
    if (!identity) throw new UnauthorizedError();
    const issued = options.codes.issue(identity);
    reply.header("Cache-Control", "no-store");
    return { link: loginLink(options.url(), issued.code), expiresAt: new Date(issued.expiresAt).toISOString() };
  };

  return (request, reply, path) => {
    const method = request.method;
    if (path === "/login/session") return method === "POST" ? signIn(request, reply) : undefined;
    if (path === "/login/codes") return method === "POST" ? newCode(request, reply) : undefined;
    if (method !== "GET" && method !== "HEAD") return undefined;
    const served = files();
    const wanted = path === "/" ? "/index.html" : path;
    if (!served) {
      if (wanted !== "/index.html") return undefined;
      return Promise.resolve(reply.code(503).headers(SECURITY_HEADERS).type("text/html; charset=utf-8").send(NOT_BUILT));
    }
    const file = served.get(wanted);
    if (!file) return undefined;
    reply.headers(SECURITY_HEADERS).type(file.type).header("Cache-Control", file.immutable ? "public, max-age=31536000, immutable" : "no-cache");
    return Promise.resolve(reply.send(file.body));
  };
}
