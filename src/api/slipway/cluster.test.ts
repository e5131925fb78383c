import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { TSchema } from "@sinclair/typebox";
import { ClusterSpecSchema, apiVisibilityOf, clusterKind, type ClusterObject } from "./cluster.ts";
import { admit, admitted, cell, manifest } from "../testing.ts";
import type { FieldError } from "../registry.ts";

/** What a user writes for a small cluster: one control-plane machine and one pool. */
function minimalCluster(): ClusterObject {
  return manifest(clusterKind, "demo", {
    controlPlane: { connection: "sim-east", machineType: "m.large" },
    workers: [{ name: "general", connection: "sim-east", machineType: "m.medium", replicas: 2 }],
  });
}

/** Static errors of a cluster that passes the schema. */
function errorsOf(mutate: (c: ClusterObject) => void, old?: ClusterObject): FieldError[] {
  const input = minimalCluster();
  mutate(input);
  const result = admit(clusterKind, input, old);
  assert.deepEqual(result.schemaErrors, []);
  return result.errors;
}

function only(errors: FieldError[], field: string): FieldError {
  assert.equal(errors.length, 1, JSON.stringify(errors));
  const [error] = errors;
  assert.ok(error);
  assert.equal(error.field, field);
  return error;
}

describe("Cluster schema", () => {
  it("fills the defaults of a minimal cluster", () => {
    const cluster = admitted(clusterKind, minimalCluster());
    assert.deepEqual(cluster.spec, {
      kubernetesVersion: "v1.31.2",
      controlPlane: { connection: "sim-east", machineType: "m.large", replicas: 1, image: "ubuntu-22.04" },
      workers: [{ name: "general", connection: "sim-east", machineType: "m.medium", replicas: 2, image: "ubuntu-22.04" }],
      network: {
        cni: "calico",
        podCIDR: "10.244.0.0/16",
        serviceCIDR: "10.96.0.0/12",
        nodeCIDR: "10.0.0.0/16",
        serviceDomain: "cluster.local",
      },
    });
  });

  it("accepts a control-plane-only cluster and gives it an empty worker list", () => {
    const cluster = admitted(clusterKind, { ...minimalCluster(), spec: { controlPlane: { connection: "c", machineType: "m" } } });
    assert.deepEqual(cluster.spec.workers, []);
  });

  it("keeps what the user set over the defaults", () => {
    const input = minimalCluster();
    input.spec.network = { cni: "cilium", podCIDR: "192.168.0.0/16" };
    input.spec.controlPlane.replicas = 3;
    const cluster = admitted(clusterKind, input);
    assert.equal(cluster.spec.network?.cni, "cilium");
    assert.equal(cluster.spec.network?.podCIDR, "192.168.0.0/16");
    assert.equal(cluster.spec.network?.serviceCIDR, "10.96.0.0/12");
    assert.equal(cluster.spec.controlPlane.replicas, 3);
  });

  it("the defaults hook alone completes an object built in process", () => {
    const cluster = minimalCluster();
    clusterKind.defaults?.(cluster);
    assert.equal(cluster.spec.network?.nodeCIDR, "10.0.0.0/16");
    assert.equal(cluster.spec.workers?.[0]?.image, "ubuntu-22.04");
  });

  const rejected: [string, (spec: Record<string, unknown>) => void, string][] = [
    ["an unknown spec field", (s) => (s.size = "large"), "/spec/size"],
    ["an unknown control-plane field", (s) => ((s.controlPlane as Record<string, unknown>).count = 3), "/spec/controlPlane/count"],
    ["replicas given as a string", (s) => ((s.controlPlane as Record<string, unknown>).replicas = "3"), "/spec/controlPlane/replicas"],
    ["a missing control-plane connection", (s) => delete (s.controlPlane as Record<string, unknown>).connection, "/spec/controlPlane/connection"],
    ["an unknown CNI", (s) => (s.network = { cni: "weave" }), "/spec/network/cni"],
    ["negative worker replicas", (s) => ((s.workers as Record<string, unknown>[])[0]!.replicas = -1), "/spec/workers/0/replicas"],
    ["more than 1000 worker replicas", (s) => ((s.workers as Record<string, unknown>[])[0]!.replicas = 1001), "/spec/workers/0/replicas"],
    ["a taint with an unknown effect", (s) => ((s.workers as Record<string, unknown>[])[0]!.taints = [{ key: "gpu", effect: "Never" }]), "/spec/workers/0/taints/0/effect"],
    ["a non-string label", (s) => ((s.workers as Record<string, unknown>[])[0]!.labels = { tier: 1 }), "/spec/workers/0/labels/tier"],
    ["paused given as a string", (s) => (s.paused = "yes"), "/spec/paused"],
    ["an API visibility other than public or private", (s) => (s.apiServer = { visibility: "internal" }), "/spec/apiServer/visibility"],
    ["an unknown field of apiServer", (s) => (s.apiServer = { visibility: "private", port: 443 }), "/spec/apiServer/port"],
  ];
  for (const [what, mutate, path] of rejected) {
    it(`rejects ${what}, naming ${path}`, () => {
      const input = minimalCluster();
      mutate(input.spec as unknown as Record<string, unknown>);
      const result = admit(clusterKind, input);
      assert.ok(
        result.schemaErrors.some(([p]) => p === path),
        `expected an error at ${path}, got ${JSON.stringify(result.schemaErrors)}`,
      );
    });
  }

  it("names the allowed CNIs when one is unknown", () => {
    const input = minimalCluster();
    input.spec.network = { cni: "weave" as "calico" };
    const [, message] = admit(clusterKind, input).schemaErrors.find(([p]) => p === "/spec/network/cni") ?? [];
    assert.match(message ?? "", /"calico", "flannel", "cilium"/);
  });

  it("names the allowed API visibilities when one is unknown, and makes the API public unless told", () => {
    const input = minimalCluster();
    input.spec.apiServer = { visibility: "internal" as "public" };
    const [, message] = admit(clusterKind, input).schemaErrors.find(([p]) => p === "/spec/apiServer/visibility") ?? [];
    assert.match(message ?? "", /"public", "private"/);
    assert.equal(apiVisibilityOf(admitted(clusterKind, minimalCluster()).spec), "public");
    const given = minimalCluster();
    given.spec.apiServer = {};
    assert.deepEqual(admitted(clusterKind, given).spec.apiServer, { visibility: "public" });
    given.spec.apiServer = { visibility: "private" };
    assert.equal(apiVisibilityOf(admitted(clusterKind, given).spec), "private");
  });

  it("rejects an unknown field in status too", () => {
    const input = { ...minimalCluster(), status: { phase: "Running", health: "good" } };
    assert.ok(admit(clusterKind, input).schemaErrors.some(([p]) => p === "/status/health"));
  });
});

describe("Cluster validation", () => {
  it("accepts 1, 3 and 5 control-plane replicas", () => {
    for (const replicas of [1, 3, 5]) assert.deepEqual(errorsOf((c) => (c.spec.controlPlane.replicas = replicas)), []);
  });

  for (const replicas of [0, 2, 4, 7]) {
    it(`refuses ${replicas} control-plane replicas, listing 1, 3 and 5`, () => {
      const error = only(errorsOf((c) => (c.spec.controlPlane.replicas = replicas)), "spec.controlPlane.replicas");
      assert.equal(error.reason, "FieldValueNotSupported");
      assert.match(error.message, /1, 3, 5/);
    });
  }

  it("refuses a malformed CIDR, explaining why", () => {
    const error = only(errorsOf((c) => (c.spec.network = { podCIDR: "10.244.0.1/16" })), "spec.network.podCIDR");
    assert.match(error.message, /host bits/);
    only(errorsOf((c) => (c.spec.network = { nodeCIDR: "10.0.0.0" })), "spec.network.nodeCIDR");
    only(errorsOf((c) => (c.spec.network = { serviceCIDR: "10.96.0.0/40" })), "spec.network.serviceCIDR");
  });

  it("refuses overlapping pod and service ranges, naming both fields", () => {
    const error = only(
      errorsOf((c) => (c.spec.network = { podCIDR: "10.96.0.0/16", serviceCIDR: "10.96.0.0/12" })),
      "spec.network.serviceCIDR",
    );
    assert.match(error.message, /overlaps spec\.network\.podCIDR \(10\.96\.0\.0\/16\)/);
  });

  it("refuses a node range that overlaps the pod or service range", () => {
    const pod = only(errorsOf((c) => (c.spec.network = { nodeCIDR: "10.244.128.0/20" })), "spec.network.nodeCIDR");
    assert.match(pod.message, /spec\.network\.podCIDR/);
    const service = only(errorsOf((c) => (c.spec.network = { nodeCIDR: "10.100.0.0/16" })), "spec.network.nodeCIDR");
    assert.match(service.message, /spec\.network\.serviceCIDR/);
  });

  it("refuses a service range larger than /12 and a pod range smaller than /24", () => {
    assert.match(
      only(errorsOf((c) => (c.spec.network = { serviceCIDR: "172.0.0.0/11" })), "spec.network.serviceCIDR").message,
      /\/12/,
    );
    assert.match(only(errorsOf((c) => (c.spec.network = { podCIDR: "10.244.0.0/25" })), "spec.network.podCIDR").message, /\/24/);
  });

  it("refuses a service domain that is not a DNS name", () => {
    only(errorsOf((c) => (c.spec.network = { serviceDomain: "Cluster_Local" })), "spec.network.serviceDomain");
    only(errorsOf((c) => (c.spec.network = { serviceDomain: "cluster..local" })), "spec.network.serviceDomain");
    assert.deepEqual(errorsOf((c) => (c.spec.network = { serviceDomain: "k8s.example.com" })), []);
  });

  it("accepts supported versions and refuses others", () => {
    for (const version of ["v1.28.0", "v1.31.2", "v1.32.10"]) {
      assert.deepEqual(errorsOf((c) => (c.spec.kubernetesVersion = version)), [], version);
    }
    for (const version of ["1.31.2", "v1.31", "v1.31.2-rc.1", "v2.0.0", "v1.031.2"]) {
      assert.match(only(errorsOf((c) => (c.spec.kubernetesVersion = version)), "spec.kubernetesVersion").message, /v1\.<minor>\.<patch>/);
    }
    for (const version of ["v1.27.9", "v1.33.0"]) {
      assert.match(
        only(errorsOf((c) => (c.spec.kubernetesVersion = version)), "spec.kubernetesVersion").message,
        /v1\.28 to v1\.32/,
      );
    }
  });

  it("refuses duplicate and malformed pool names", () => {
    const duplicate = only(
      errorsOf((c) => c.spec.workers?.push({ name: "general", connection: "sim-west", machineType: "m.small" })),
      "spec.workers[1].name",
    );
    assert.equal(duplicate.reason, "FieldValueDuplicate");
    only(errorsOf((c) => (c.spec.workers![0]!.name = "GPU_pool")), "spec.workers[0].name");
  });

  it("refuses a cluster name that is not a DNS label of at most 40 characters", () => {
    assert.deepEqual(errorsOf((c) => (c.metadata.name = "a".repeat(40))), []);
    assert.match(only(errorsOf((c) => (c.metadata.name = "a".repeat(41))), "metadata.name").message, /40 characters/);
    only(errorsOf((c) => (c.metadata.name = "my.cluster")), "metadata.name");
  });

  it("checks pool labels and taints", () => {
    only(errorsOf((c) => (c.spec.workers![0]!.labels = { "example.com/tier": "a b" })), "spec.workers[0].labels[example.com/tier]");
    only(errorsOf((c) => (c.spec.workers![0]!.labels = { "-tier": "web" })), "spec.workers[0].labels");
    assert.deepEqual(errorsOf((c) => (c.spec.workers![0]!.labels = { "node.example.com/tier": "web", zone: "" })), []);
    const twice = { key: "gpu", value: "true", effect: "NoSchedule" as const };
    only(errorsOf((c) => (c.spec.workers![0]!.taints = [twice, twice])), "spec.workers[0].taints[1]");
    assert.deepEqual(errorsOf((c) => (c.spec.workers![0]!.taints = [twice, { ...twice, effect: "NoExecute" }])), []);
  });

  it("keeps a scale-set pool's replicas within its scale set's limits, naming the field", () => {
    assert.deepEqual(errorsOf((c) => (c.spec.workers![0]!.scaleSet = { minSize: 1, maxSize: 10 })), []);
    assert.match(only(errorsOf((c) => (c.spec.workers![0]!.scaleSet = { minSize: 1, maxSize: 1 })), "spec.workers[0].replicas").message, /scale set limits.*\(1\.\.1\)/);
    only(errorsOf((c) => (c.spec.workers![0]!.scaleSet = { minSize: 3 })), "spec.workers[0].replicas");
    only(errorsOf((c) => (c.spec.workers![0]!.scaleSet = { minSize: 5, maxSize: 4 })), "spec.workers[0].scaleSet.minSize");
    assert.deepEqual(errorsOf((c) => (c.spec.workers![0]!.replicas = 101)), [], "a pool off scale sets is not limited by them");
  });

  it("reports every problem at once", () => {
    const errors = errorsOf((c) => {
      c.spec.controlPlane.replicas = 2;
      c.spec.kubernetesVersion = "v1.40.0";
      c.spec.network = { podCIDR: "10.0.0.0/8" };
    });
    assert.deepEqual(errors.map((e) => e.field).sort(), [
      "spec.controlPlane.replicas",
      "spec.kubernetesVersion",
      "spec.network.nodeCIDR",
      "spec.network.serviceCIDR",
    ]);
  });
});

describe("Cluster updates", () => {
  const old = admitted(clusterKind, minimalCluster());

  function updateErrors(mutate: (c: ClusterObject) => void): FieldError[] {
    const next = structuredClone(old);
    mutate(next);
    return admit(clusterKind, next, old).errors;
  }

  /** Fields the controllers apply when they change: scaling, pools added and removed, rolling, pausing. */
  const applied: [string, (c: ClusterObject) => void][] = [
    ["spec.controlPlane.replicas", (c) => (c.spec.controlPlane.replicas = 3)],
    ["spec.workers[].name", (c) => (c.spec.workers![0]!.name = "renamed")],
    ["spec.workers[].replicas", (c) => (c.spec.workers![0]!.replicas = 10)],
    ["spec.workers[].machineType", (c) => (c.spec.workers![0]!.machineType = "m.xlarge")],
    ["spec.workers[].image", (c) => (c.spec.workers![0]!.image = "ubuntu-24.04")],
    ["spec.workers[].labels", (c) => (c.spec.workers![0]!.labels = { tier: "web" })],
    ["spec.workers[].taints", (c) => (c.spec.workers![0]!.taints = [{ key: "dedicated", value: "db", effect: "NoSchedule" }])],
    ["spec.workers[].strategy.maxSurge", (c) => (c.spec.workers![0]!.strategy = { maxSurge: 3 })],
    ["spec.workers[].strategy.maxUnavailable", (c) => (c.spec.workers![0]!.strategy = { maxUnavailable: 1 })],
    ["spec.workers[].maxUnhealthy", (c) => (c.spec.workers![0]!.maxUnhealthy = 2)],
    ["spec.controlPlane.maxUnhealthy", (c) => (c.spec.controlPlane.maxUnhealthy = "100%")],
    ["spec.paused", (c) => (c.spec.paused = true)],
    ["spec.kubernetesVersion", (c) => (c.spec.kubernetesVersion = "v1.32.0")],
  ];
  for (const [field, mutate] of applied) {
    it(`allow a change of ${field}, which the controllers apply`, () => {
      assert.deepEqual(updateErrors(mutate), []);
    });
  }

  it("allow adding and removing pools", () => {
    assert.deepEqual(updateErrors((c) => c.spec.workers!.push({ name: "gpu", connection: "sim-west", machineType: "g.large" })), []);
    assert.deepEqual(updateErrors((c) => (c.spec.workers = [])), []);
  });

  /** Fields no controller could apply: a change would be accepted and ignored, so it is refused, saying why. */
  const frozen: [string, (c: ClusterObject) => void, RegExp][] = [
    ["spec.controlPlane.connection", (c) => (c.spec.controlPlane.connection = "sim-west"), /field is immutable: the control plane cannot move to another connection/],
    ["spec.controlPlane.machineType", (c) => (c.spec.controlPlane.machineType = "m.xlarge"), /field is immutable: control-plane machines are rolled only for a Kubernetes upgrade, so a change would never be applied/],
    ["spec.controlPlane.image", (c) => (c.spec.controlPlane.image = "ubuntu-24.04"), /field is immutable: control-plane machines are rolled only for a Kubernetes upgrade/],
    ["spec.network.cni", (c) => (c.spec.network!.cni = "flannel"), /field is immutable: a cluster's network is fixed when it is made/],
    ["spec.network.podCIDR", (c) => (c.spec.network!.podCIDR = "10.245.0.0/16"), /field is immutable/],
    ["spec.network.serviceCIDR", (c) => (c.spec.network!.serviceCIDR = "10.112.0.0/12"), /field is immutable/],
    ["spec.network.nodeCIDR", (c) => (c.spec.network!.nodeCIDR = "10.1.0.0/16"), /field is immutable/],
    ["spec.network.serviceDomain", (c) => (c.spec.network!.serviceDomain = "example.internal"), /field is immutable/],
    ["spec.workers[].connection", (c) => (c.spec.workers![0]!.connection = "sim-west"), /field is immutable: a pool cannot move to another connection; add a pool there and remove this one/],
    ["spec.workers[].scaleSet.minSize", (c) => (c.spec.workers![0]!.scaleSet = { minSize: 1 }), /field is immutable: a pool's scale set is chosen when the pool is made/],
    ["spec.workers[].scaleSet.maxSize", (c) => (c.spec.workers![0]!.scaleSet = { maxSize: 5 }), /field is immutable: a pool's scale set is chosen when the pool is made/],
    ["spec.leaseName", (c) => (c.spec.leaseName = "other-lease"), /field is immutable: a cluster's machines run on the lease it was made with/],
    ["spec.templateName", (c) => (c.spec.templateName = "other-template"), /field is immutable: a cluster is made from a template or not/],
    ["spec.realmName", (c) => (c.spec.realmName = "other-realm"), /field is immutable: a cluster's API server trusts the realm it was made with/],
    ["spec.apiServer.visibility", (c) => (c.spec.apiServer = { visibility: "private" }), /field is immutable: the API's load balancer, names and certificates are made for it/],
  ];
  for (const [field, mutate, message] of frozen) {
    it(`refuse a change of ${field}, saying why`, () => {
      assert.match(only(updateErrors(mutate), field.replace("[]", "[0]")).message, message);
    });
  }

  it("decide for every field of the spec: applied when it changes, or refused (nothing is accepted and ignored)", () => {
    const leaves = (schema: TSchema, path: string): string[] => {
      // The pools are a list of objects whose fields are decided one by one; other lists (taints) as a whole.
      const items = (schema as { items?: TSchema }).items;
      if (schema.type === "array" && items && path === "spec.workers") return leaves(items, `${path}[]`);
      const properties = (schema as { properties?: Record<string, TSchema> }).properties;
      // A map (labels) is one field; a struct has fields of its own.
      if (schema.type !== "object" || !properties || Object.keys(properties).length === 0) return [path];
      return Object.entries(properties).flatMap(([key, child]) => leaves(child, `${path}.${key}`));
    };
    const decided = [...applied.map(([f]) => f), ...frozen.map(([f]) => f)].sort();
    // A registration is a registered cluster's, whose updates are below.
    assert.deepEqual(leaves(ClusterSpecSchema, "spec").filter((f) => !f.startsWith("spec.registration.")).sort(), decided);
  });

  it("allow an upgrade within the version-skew rules, and refuse a downgrade or a skipped minor version naming the rule", () => {
    const at = (version: string, observed?: string) => {
      const running = structuredClone(old);
      running.spec.kubernetesVersion = version;
      if (observed) running.status = { version: observed };
      return (mutate: (c: ClusterObject) => void) => {
        const next = structuredClone(running);
        mutate(next);
        return admit(clusterKind, next, running).errors;
      };
    };
    assert.deepEqual(at("v1.30.4")((c) => (c.spec.kubernetesVersion = "v1.31.2")), [], "one minor up");
    assert.deepEqual(at("v1.30.4")((c) => (c.spec.kubernetesVersion = "v1.30.9")), [], "a patch release");
    assert.match(only(at("v1.29.3")((c) => (c.spec.kubernetesVersion = "v1.31.2")), "spec.kubernetesVersion").message, /version skew rule "one minor version at a time": the cluster runs v1\.29\.3, so the next upgrade is to v1\.30\.x/);
    assert.match(only(at("v1.31.2")((c) => (c.spec.kubernetesVersion = "v1.30.4")), "spec.kubernetesVersion").message, /version skew rule "no downgrade": the cluster runs v1\.31\.2/);
    // Half-way through an upgrade to v1.31 the control plane still runs v1.30: v1.32 is two minors ahead of it.
    assert.match(only(at("v1.31.2", "v1.30.4")((c) => (c.spec.kubernetesVersion = "v1.32.0")), "spec.kubernetesVersion").message, /one minor version at a time": the cluster runs v1\.30\.4/);
  });

  it("refuse a rollout strategy that could never replace a machine", () => {
    const error = only(
      updateErrors((c) => (c.spec.workers![0]!.strategy = { maxSurge: 0 })),
      "spec.workers[0].strategy.maxSurge",
    );
    assert.match(error.message, /maxSurge and maxUnavailable may not both be 0/);
  });

  it("refuse a maxUnhealthy that is neither a number nor a percentage, naming the field", () => {
    assert.match(only(updateErrors((c) => (c.spec.workers![0]!.maxUnhealthy = "half")), "spec.workers[0].maxUnhealthy").message, /a number of machines or a percentage such as "40%"/);
    assert.match(only(updateErrors((c) => (c.spec.controlPlane.maxUnhealthy = "150%")), "spec.controlPlane.maxUnhealthy").message, /from 0% to 100%/);
  });

  it("match pools by name, not position", () => {
    const errors = updateErrors((c) => {
      c.spec.workers!.unshift({ name: "gpu", connection: "sim-west", machineType: "g.large" });
    });
    assert.deepEqual(errors, []);
    const moved = updateErrors((c) => {
      c.spec.workers!.unshift({ name: "gpu", connection: "sim-west", machineType: "g.large" });
      c.spec.workers![1]!.connection = "sim-west";
    });
    only(moved, "spec.workers[1].connection");
  });
});

describe("Cluster printer columns", () => {
  const names = (priority: number) =>
    clusterKind.printerColumns.filter((c) => (c.priority ?? 0) === priority).map((c) => c.name);

  it("are NAME, PHASE, CONTROL-PLANE, WORKERS, VERSION, AGE, and ENDPOINT, REASON, TEMPLATE when wide", () => {
    assert.deepEqual(names(0), ["NAME", "PHASE", "CONTROL-PLANE", "WORKERS", "VERSION", "AGE"]);
    assert.deepEqual(names(1), ["ENDPOINT", "REASON", "TEMPLATE"]);
  });

  it("show the spec's counts before the controllers report any", () => {
    const cluster = admitted(clusterKind, minimalCluster());
    cluster.spec.controlPlane.replicas = 3;
    cluster.spec.workers!.push({ name: "gpu", connection: "sim-west", machineType: "g.large", replicas: 4 });
    assert.equal(cell(clusterKind, "CONTROL-PLANE", cluster), "0/3");
    assert.equal(cell(clusterKind, "WORKERS", cluster), "0/6");
    assert.equal(cell(clusterKind, "VERSION", cluster), "v1.31.2");
    assert.equal(cell(clusterKind, "ENDPOINT", cluster), undefined);
  });

  it("show the status of a running cluster", () => {
    const cluster = admitted(clusterKind, minimalCluster());
    cluster.metadata.creationTimestamp = "2025-01-02T03:04:05Z";
    cluster.status = {
      phase: "Running",
      controlPlane: { desired: 3, ready: 2 },
      workers: { desired: 5, ready: 4 },
      controlPlaneEndpoint: { host: "203.0.113.10", port: 6443 },
      reason: "JoinWorkerFailed",
    };
    assert.equal(cell(clusterKind, "NAME", cluster), "demo");
    assert.equal(cell(clusterKind, "PHASE", cluster), "Running");
    assert.equal(cell(clusterKind, "CONTROL-PLANE", cluster), "2/3");
    assert.equal(cell(clusterKind, "WORKERS", cluster), "4/5");
    assert.equal(cell(clusterKind, "AGE", cluster), "2025-01-02T03:04:05Z");
    assert.equal(cell(clusterKind, "ENDPOINT", cluster), "203.0.113.10:6443");
    assert.equal(cell(clusterKind, "REASON", cluster), "JoinWorkerFailed");
  });
});

describe("Registered clusters", () => {
  const registered = (extra: Record<string, unknown> = {}) => manifest(clusterKind, "ext", { registration: { kubeconfigSecretRef: { name: "ext-kubeconfig" } }, ...extra });

  it("need only a kubeconfig Secret, and get no version or network of Slipway's", () => {
    const cluster = admitted(clusterKind, registered());
    assert.deepEqual(cluster.spec.registration, { kubeconfigSecretRef: { name: "ext-kubeconfig", key: "value" } });
    assert.equal(cluster.spec.kubernetesVersion, undefined);
    assert.equal(cluster.spec.network, undefined);
    cluster.status = { phase: "Running", version: "v1.30.4", controlPlane: { desired: 3, ready: 3 }, workers: { desired: 2, ready: 1 } };
    assert.equal(cell(clusterKind, "VERSION", cluster), "v1.30.4");
    assert.equal(cell(clusterKind, "CONTROL-PLANE", cluster), "3/3");
  });

  it("have no control plane or pools of Slipway's", () => {
    const { errors } = admit(clusterKind, registered({ controlPlane: { connection: "east", machineType: "m.large" }, workers: [{ name: "w", connection: "east", machineType: "m.large" }] }));
    assert.deepEqual(errors.map((e) => e.field), ["spec.controlPlane", "spec.workers"]);
  });

  it("cannot become built clusters, nor built ones registered", () => {
    const old = admitted(clusterKind, registered());
    const built = { ...structuredClone(old), spec: { controlPlane: { connection: "east", machineType: "m.large" } } };
    assert.deepEqual(admit(clusterKind, built, old).errors.map((e) => e.field), ["spec.registration"]);
    const moved = structuredClone(old);
    moved.spec.registration!.kubeconfigSecretRef.name = "other";
    assert.deepEqual(admit(clusterKind, moved, old).errors, []);
  });

  it("have no API server of Slipway's to expose", () => {
    const { errors } = admit(clusterKind, registered({ apiServer: { visibility: "private" } }));
    assert.match(only(errors, "spec.apiServer").message, /a registered cluster's API server is not Slipway's to expose/);
  });

  it("a cluster needs one or the other", () => {
    const { errors } = admit(clusterKind, manifest(clusterKind, "x", {}));
    assert.match(only(errors, "spec.controlPlane").message, /a cluster needs a controlPlane, or a registration/);
  });
});

describe("Cluster limits", () => {
  it("refuses more than 100 worker pools, naming the field", () => {
    const input = manifest(clusterKind, "wide", {
      controlPlane: { connection: "east", machineType: "m.large" },
      workers: Array.from({ length: 101 }, (_, i) => ({ name: `p${i}`, connection: "east", machineType: "m.large" })),
    });
    const [path, message] = admit(clusterKind, input).schemaErrors[0] ?? [];
    assert.equal(path, "/spec/workers");
    assert.match(message ?? "", /100/);
  });
});
