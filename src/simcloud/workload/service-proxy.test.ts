import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ObjectService } from "../../apiserver/objects.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { workloadRegistry } from "./kinds.ts";
import { answerServiceProxy, parseServiceProxyPath } from "./service-proxy.ts";

const admin = { user: "kubernetes-admin", groups: ["system:masters"] };

async function cluster() {
  const registry = workloadRegistry();
  const objects = new ObjectService(registry, SqliteStore.open(":memory:"));
  const kind = (apiVersion: string, k: string) => registry.byKind(apiVersion, k)!;
  const kinds = { service: kind("v1", "Service"), pod: kind("v1", "Pod"), configMap: kind("v1", "ConfigMap") };
  await objects.create(kind("v1", "Namespace"), undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: "web" } });
  await objects.create(kinds.configMap, "web", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "site", namespace: "web" }, data: { "index.html": "<h1>hello</h1>", "app.css": "h1{}" } });
  await objects.create(kinds.service, "web", { apiVersion: "v1", kind: "Service", metadata: { name: "site", namespace: "web" }, spec: { selector: { app: "site" }, ports: [{ name: "http", port: 80, targetPort: "http" }] } });
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "site-1", namespace: "web", labels: { app: "site" } },
    spec: { containers: [{ name: "nginx", image: "nginx:1.27", ports: [{ name: "http", containerPort: 8080 }], volumeMounts: [{ name: "html", mountPath: "/usr/share/nginx/html" }] }], volumes: [{ name: "html", configMap: { name: "site" } }] },
  };
  await objects.create(kinds.pod, "web", pod);
  const ready = async (yes: boolean) =>
    objects.updateStatus(kinds.pod, "web", "site-1", { ...pod, status: { phase: "Running", containerStatuses: [{ name: "nginx", ready: yes, restartCount: 0, image: "nginx:1.27", imageID: "", started: yes }] } });
  const get = (path: string) => answerServiceProxy(objects, kinds, admin, "GET", path);
  return { objects, kinds, ready, get };
}

describe("the emulated service proxy", () => {
  it("reads the service, its port and the path from the URL", () => {
    assert.deepEqual(parseServiceProxyPath("/api/v1/namespaces/web/services/site:80/proxy/a/b.css"), { namespace: "web", service: "site", port: "80", path: "/a/b.css" });
    assert.deepEqual(parseServiceProxyPath("/api/v1/namespaces/web/services/https:site:443/proxy"), { namespace: "web", service: "site", port: "443", path: "/" });
    assert.equal(parseServiceProxyPath("/api/v1/namespaces/web/services/site"), undefined);
  });

  it("serves the files the ready pod mounts, and 503 while no pod is ready", async () => {
    const { ready, get } = await cluster();
    await assert.rejects(get("/api/v1/namespaces/web/services/site:80/proxy/"), (e: Error & { code?: number }) => e.code === 503 && /no endpoints available for service "site"/.test(e.message));
    await ready(true);
    const page = await get("/api/v1/namespaces/web/services/site:http/proxy/");
    assert.deepEqual([page?.code, page?.contentType, page?.body, page?.headers?.["x-served-by"]], [200, "text/html; charset=utf-8", "<h1>hello</h1>", "web/site-1"]);
    assert.equal((await get("/api/v1/namespaces/web/services/site/proxy/app.css"))?.contentType, "text/css; charset=utf-8");
    assert.equal((await get("/api/v1/namespaces/web/services/site/proxy/nope.js"))?.code, 404);
    await assert.rejects(get("/api/v1/namespaces/web/services/other/proxy/"), (e: Error & { code?: number }) => e.code === 404);
    await ready(false);
    await assert.rejects(get("/api/v1/namespaces/web/services/site/proxy/"), (e: Error & { code?: number }) => e.code === 503);
  });
});
