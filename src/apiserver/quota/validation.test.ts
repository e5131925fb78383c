import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { InvalidError } from "../errors.ts";
import { validateHardLimits, validateResourceQuotaSpec } from "./validation.ts";

const quotaWith = (spec: Record<string, unknown>) => ({ metadata: { name: "q", namespace: "team-a" }, spec });
const errorsOf = (spec: Record<string, unknown>) => validateResourceQuotaSpec(quotaWith(spec)).map((e) => `${e.field}: ${e.message}`);

const QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

describe("validateResourceQuotaSpec: hard", () => {
  it("accepts every resource name a quota can limit", () => {
    assert.deepEqual(
      errorsOf({
        hard: {
          pods: "5",
          services: "3",
          secrets: "10",
          configmaps: "10",
          persistentvolumeclaims: "2",
          resourcequotas: "1",
          replicationcontrollers: "0",
          "services.loadbalancers": 1,
          "services.nodeports": "4",
          cpu: "2",
          memory: "1Gi",
          "requests.cpu": "1.5",
          "requests.memory": "512Mi",
          "limits.cpu": "4",
          "limits.memory": "8Gi",
          "ephemeral-storage": "10Gi",
          "requests.storage": "100Gi",
          "count/pods": "10",
          "count/deployments.apps": "3",
          "count/widgets.example.com": "1",
          "gold.storageclass.storage.k8s.io/requests.storage": "10Gi",
          "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "2",
          "requests.nvidia.com/gpu": "2",
          "hugepages-2Mi": "1Gi",
          "requests.hugepages-1Gi": "2Gi",
        },
      }),
      [],
    );
  });

  const cases: [string, Record<string, unknown>, string[]][] = [
    [
      "an unknown name, as kube-apiserver words it",
      { foo: "1" },
      ['spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified', 'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota'],
    ],
    [
      "a misspelt compute name",
      { "request.cpu": "1" },
      [
        'spec.hard[request.cpu]: Invalid value: "request.cpu": must be a standard resource type or fully qualified',
        'spec.hard[request.cpu]: Invalid value: "request.cpu": must be a standard resource for quota',
      ],
    ],
    ["a resource that is standard but not for quota", { storage: "1Gi" }, ['spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota']],
    ["an extended resource without requests., which nothing would enforce", { "nvidia.com/gpu": "1" }, ['spec.hard[nvidia.com/gpu]: Invalid value: "nvidia.com/gpu": must be a standard resource for quota']],
    ["count/ without a resource", { "count/": "1" }, ['spec.hard[count/]: Invalid value: "count/": name part must be non-empty']],
    [
      "a name with two slashes",
      { "count/a/b": "1" },
      [
        `spec.hard[count/a/b]: Invalid value: "count/a/b": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      ],
    ],
    ["a value that is not a quantity", { pods: "five" }, [`spec.hard[pods]: Invalid value: "five": ${QUANTITY_FORMAT}`]],
    ["a value with a bad suffix", { "requests.memory": "1GB" }, [`spec.hard[requests.memory]: Invalid value: "1GB": ${QUANTITY_FORMAT}`]],
    ["a value of the wrong type", { pods: true }, ['spec.hard[pods]: Invalid value: true: must be a quantity, e.g. "10", "500m" or "2Gi"']],
    ["a negative limit", { "requests.cpu": "-1" }, ['spec.hard[requests.cpu]: Invalid value: "-1": must be greater than or equal to 0']],
    ["a fraction of a count", { pods: "1.5" }, ['spec.hard[pods]: Invalid value: "1500m": must be an integer']],
    ["a fraction of a count, in milli", { services: "2500m" }, ['spec.hard[services]: Invalid value: "2500m": must be an integer']],
  ];
  for (const [name, hard, expected] of cases) {
    it(`refuses ${name}`, () => assert.deepEqual(errorsOf({ hard }), expected));
  }

  it("names every bad entry at once, in name order", () => {
    assert.deepEqual(
      validateResourceQuotaSpec(quotaWith({ hard: { pods: "x", foo: "1", "limits.cpu": "2" } })).map((e) => e.field),
      ["spec.hard[foo]", "spec.hard[foo]", "spec.hard[pods]"],
    );
  });

  it("reads as kube-apiserver's Invalid error once wrapped", () => {
    const error = new InvalidError({ group: "", kind: "ResourceQuota", plural: "resourcequotas", name: "compute" }, validateResourceQuotaSpec(quotaWith({ hard: { "limit.cpu": "1" } })));
    assert.equal(
      error.message,
      'ResourceQuota "compute" is invalid: [spec.hard[limit.cpu]: Invalid value: "limit.cpu": must be a standard resource type or fully qualified, spec.hard[limit.cpu]: Invalid value: "limit.cpu": must be a standard resource for quota]',
    );
    assert.deepEqual(error.toStatus().details?.causes?.map((c) => c.field), ["spec.hard[limit.cpu]", "spec.hard[limit.cpu]"]);
  });
});

describe("validateResourceQuotaSpec: scopes", () => {
  const cases: [string, Record<string, unknown>, string[]][] = [
    ["pod limits under Terminating", { hard: { pods: "1", "requests.cpu": "1" }, scopes: ["Terminating"] }, []],
    ["a pod count under BestEffort", { hard: { pods: "1" }, scopes: ["BestEffort"] }, []],
    ["compute under BestEffort", { hard: { "requests.cpu": "1" }, scopes: ["BestEffort"] }, ['spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource']],
    ["services under a pod scope", { hard: { services: "1" }, scopes: ["NotTerminating"] }, ['spec.scopes: Invalid value: ["NotTerminating"]: unsupported scope applied to resource']],
    ["an unknown scope", { hard: { pods: "1" }, scopes: ["Nightly"] }, ['spec.scopes: Invalid value: ["Nightly"]: unsupported scope']],
    [
      "contradicting scopes",
      { hard: { pods: "1" }, scopes: ["Terminating", "NotTerminating"] },
      ['spec.scopes: Invalid value: ["Terminating","NotTerminating"]: conflicting scopes'],
    ],
    ["a priority class selector", { hard: { pods: "1" }, scopeSelector: { matchExpressions: [{ scopeName: "PriorityClass", operator: "In", values: ["high"] }] } }, []],
    [
      "In without values",
      { hard: { pods: "1" }, scopeSelector: { matchExpressions: [{ scopeName: "PriorityClass", operator: "In" }] } },
      ["spec.scopeSelector.matchExpressions[0].values: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"],
    ],
    [
      "Exists with values",
      { hard: { pods: "1" }, scopeSelector: { matchExpressions: [{ scopeName: "PriorityClass", operator: "Exists", values: ["high"] }] } },
      [`spec.scopeSelector.matchExpressions[0].values: Invalid value: ["high"]: must be no value when \`operator\` is 'Exist' or 'DoesNotExist' for scope selector`],
    ],
    [
      "a pod-state scope with In",
      { hard: { pods: "1" }, scopeSelector: { matchExpressions: [{ scopeName: "Terminating", operator: "In", values: ["x"] }] } },
      [
        `spec.scopeSelector.matchExpressions[0].operator: Invalid value: "In": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity`,
      ],
    ],
    [
      "an unknown operator",
      { hard: { pods: "1" }, scopeSelector: { matchExpressions: [{ scopeName: "PriorityClass", operator: "Gt", values: ["1"] }] } },
      ['spec.scopeSelector.matchExpressions[0].operator: Invalid value: "Gt": not a valid selector operator (one of In, NotIn, Exists, DoesNotExist)'],
    ],
    [
      "an unknown scope in a selector",
      { hard: { pods: "1" }, scopeSelector: { matchExpressions: [{ scopeName: "Nightly", operator: "Exists" }] } },
      ['spec.scopeSelector.matchExpressions[0].scopeName: Invalid value: "Nightly": unsupported scope'],
    ],
    ["matchExpressions that are not a list", { hard: { pods: "1" }, scopeSelector: { matchExpressions: "PriorityClass" } }, ['spec.scopeSelector.matchExpressions: Invalid value: "PriorityClass": must be a list of scope requirements']],
  ];
  for (const [name, spec, expected] of cases) {
    it(`${expected.length === 0 ? "accepts" : "refuses"} ${name}`, () => assert.deepEqual(errorsOf(spec), expected));
  }
});

describe("validateHardLimits", () => {
  it("names the field under the path given (a LogicalCloud's spec.quota)", () => {
    assert.deepEqual(
      validateHardLimits({ pods: "5", "requests.cpu": "2", gpus: "1" }, "spec.quota").map((e) => e.field),
      ["spec.quota[gpus]", "spec.quota[gpus]"],
    );
    assert.deepEqual(validateHardLimits({ pods: "5", "limits.memory": "4Gi" }, "spec.quota"), []);
  });
});
