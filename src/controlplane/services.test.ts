import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Authorizer } from "../apiserver/authorization/authorizer.ts";
import type { ObjectService } from "../apiserver/objects.ts";
import type { Identity } from "../apiserver/request-context.ts";
import type { WorkloadClients } from "../controllers/workload.ts";
import { servicesSite } from "./services.ts";

const alice: Identity = { user: "alice", groups: ["system:authenticated"] };
const cluster = {
  apiVersion: "slipway.dev/v1alpha1",
  kind: "Cluster",
  metadata: { name: "demo", namespace: "team" },
  spec: {},
  status: { services: [{ name: "dashboard", label: "Dashboard", url: "https://x/services/team/demo/dashboard/", addon: "dashboard", namespace: "kubernetes-dashboard", service: "kubernetes-dashboard", port: 80 }] },
};

function site(options: { identity?: Identity; allow: (resource: unknown) => boolean; answer?: string }) {
  const asked: string[] = [];
  const authorizer: Authorizer = { authorize: (request) => ({ allowed: options.allow("resource" in request ? request.resource : undefined), reason: "no RBAC rule allows it" }) };
  const objects = { authorizer, tryGet: async (_def: unknown, ns: string, name: string) => (ns === "team" && name === "demo" ? cluster : undefined) } as unknown as ObjectService;
  const workloads = {
    forClusterObject: async () => ({
      request: async (_method: string, path: string) => {
        asked.push(path);
        return { statusCode: 200, headers: { "content-type": "text/html" }, body: options.answer ?? "<h1>page</h1>" };
      },
    }),
  } as unknown as WorkloadClients;
  const handler = servicesSite({ authenticate: async () => options.identity, objects, workloads });
  const call = async (url: string) => {
    const reply = { statusCode: 200, body: undefined as unknown, headers: {} as Record<string, string> };
    const fake = {
      code(c: number) {
        reply.statusCode = c;
        return fake;
      },
      type(t: string) {
        reply.headers["content-type"] = t;
        return fake;
      },
      header(k: string, v: string) {
        reply.headers[k] = v;
        return fake;
      },
      send(body?: unknown) {
        reply.body = body;
        return fake;
      },
    };
    const request = { url, method: "GET", headers: {} } as unknown as FastifyRequest;
    const path = url.split("?")[0]!;
    const answer = handler(request, fake as unknown as FastifyReply, path);
    if (answer === undefined) return undefined;
    try {
      await answer;
    } catch (error) {
      return { statusCode: (error as { code: number }).code, body: (error as Error).message, headers: {} };
    }
    return reply;
  };
  return { call, asked };
}

describe("the services path", () => {
  it("proxies to the cluster's Service for a caller allowed to get the cluster", async () => {
    let checked: unknown;
    const { call, asked } = site({ identity: alice, allow: (r) => ((checked = r), true) });
    const reply = await call("/services/team/demo/dashboard/app.js?x=1");
    assert.equal(reply?.statusCode, 200);
    assert.equal(reply?.body, "<h1>page</h1>");
    assert.deepEqual(checked, { group: "slipway.dev", resource: "clusters", namespace: "team", name: "demo" });
    assert.deepEqual(asked, ["/api/v1/namespaces/kubernetes-dashboard/services/kubernetes-dashboard:80/proxy/app.js?x=1"]);
    const redirect = await call("/services/team/demo/dashboard");
    assert.equal(redirect?.statusCode, 301);
    assert.equal(redirect?.headers.location, "/services/team/demo/dashboard/");
  });

  it("answers 401 to a caller it does not know and 403 to one not allowed the cluster, asking the cluster nothing", async () => {
    const anonymous = site({ allow: () => true });
    assert.equal((await anonymous.call("/services/team/demo/dashboard/"))?.statusCode, 401);
    const denied = site({ identity: alice, allow: () => false });
    const reply = await denied.call("/services/team/demo/dashboard/");
    assert.equal(reply?.statusCode, 403);
    assert.match(String(reply?.body), /alice/);
    assert.deepEqual([...anonymous.asked, ...denied.asked], []);
  });

  it("answers 404 for a cluster or a service that is not there, and leaves other paths alone", async () => {
    const { call, asked } = site({ identity: alice, allow: () => true });
    assert.equal((await call("/services/team/nowhere/dashboard/"))?.statusCode, 404);
    const missing = await call("/services/team/demo/grafana/");
    assert.equal(missing?.statusCode, 404);
    assert.match(String(missing?.body), /cluster demo has no service grafana/);
    assert.equal(await call("/apis/slipway.dev/v1alpha1/clusters"), undefined);
    assert.equal(await call("/servicesx"), undefined);
    assert.deepEqual(asked, []);
  });
});
