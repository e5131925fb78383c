// An API server for tests: the whole request path over an ObjectService (and its registry), answering the
// static bearer tokens given, ready for fastify's inject.
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { AuthenticatorChain, StaticTokenAuthenticator } from "./authentication.ts";
import { ApiMetrics } from "./metrics.ts";
import type { ObjectService } from "./objects.ts";
import type { Identity } from "./request-context.ts";
import { createApiContext } from "./routes.ts";
import { createApiServer } from "./server.ts";

/** What the API context takes besides the objects (actions, create-only resources, bookmark interval). */
type ContextExtras = Omit<Parameters<typeof createApiContext>[0], "registry" | "objects" | "metrics">;

export async function testApiServer(objects: ObjectService, tokens: Iterable<[string, Identity]>, extras: ContextExtras = {}): Promise<FastifyInstance> {
  const ctx = createApiContext({ registry: objects.registry, objects, metrics: new ApiMetrics(), ...extras });
  const authenticator = new AuthenticatorChain([new StaticTokenAuthenticator(tokens)]);
  const app = createApiServer({ logger: pino({ level: "silent" }), metrics: new ApiMetrics(), route: (_request, path) => ({ ctx, path, authenticator }) });
  await app.ready();
  return app;
}
