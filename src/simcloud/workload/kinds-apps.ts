// apps/v1 DaemonSet and Deployment of an emulated workload cluster, with the real spec shape (selector,
// pod template as a PodSpec, update strategy) refusing unknown fields, the validation Kubernetes applies
// (a selector that matches the template's labels, containers with images), and statuses as the
// DaemonSet and Deployment controllers report them.
import { Type } from "@sinclair/typebox";
import { ageColumn, computedColumn, fieldColumn, readyOfDesired } from "../../api/columns.ts";
import { immutable } from "../../api/field-errors.ts";
import { StringEnum, Struct, objectSchema, type KubeObject, type ObjectOf } from "../../api/meta.ts";
import type { FieldError, KindDefinition, PrinterColumn } from "../../api/registry.ts";
import { IntOrString, LabelSelector, PodTemplateSpec, podSpecErrors, selectorMatches, type PodSpecView } from "./kinds-podspec.ts";

const APPS = { group: "apps", version: "v1" } as const;

const WorkloadConditionSchema = Struct(
  {
    type: Type.String({ description: "Available, Progressing or ReplicaFailure." }),
    status: StringEnum(["True", "False", "Unknown"], { description: "True, False or Unknown." }),
    reason: Type.Optional(Type.String({ description: "One-word CamelCase reason for the last transition." })),
    message: Type.Optional(Type.String({ description: "Human-readable details." })),
    lastUpdateTime: Type.Optional(Type.String({ description: "When the condition was last updated (RFC 3339)." })),
    lastTransitionTime: Type.Optional(Type.String({ description: "When the status last changed (RFC 3339)." })),
  },
  { description: "One aspect of the workload's state." },
);

interface PodTemplateView {
  selector?: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };
  template?: { metadata?: { labels?: Record<string, string> }; spec?: PodSpecView };
}

function templateOf(object: KubeObject): PodTemplateView {
  const spec = object.spec;
  return typeof spec === "object" && spec !== null ? (spec as PodTemplateView) : {};
}

function labelsText(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {});
  return entries.length > 0 ? entries.map(([k, v]) => `${k}=${v}`).join(",") : "<none>";
}

/** The `-o wide` columns of a workload with a pod template: containers, images, selector. */
export const templateColumns: PrinterColumn[] = [
  computedColumn("CONTAINERS", ".spec.template.spec.containers", "Names of the containers.", (o) => (templateOf(o).template?.spec?.containers ?? []).map((c) => c.name).join(","), { priority: 1 }),
  computedColumn("IMAGES", ".spec.template.spec.containers", "Images of the containers.", (o) => (templateOf(o).template?.spec?.containers ?? []).map((c) => c.image ?? "").join(","), { priority: 1 }),
  computedColumn("SELECTOR", ".spec.selector", "Label selector of the pods.", (o) => labelsText(templateOf(o).selector?.matchLabels), { priority: 1 }),
];

/** A selector that matches the template's labels, and a template Kubernetes would run. */
function workloadErrors(object: KubeObject, old: KubeObject | undefined): FieldError[] {
  const spec = templateOf(object);
  const errors: FieldError[] = [];
  const selector = spec.selector;
  if (!selector || (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0)) {
    errors.push({ field: "spec.selector", reason: "FieldValueInvalid", message: "Invalid value: empty selector is invalid for deployment and daemonset" });
  } else if (!selectorMatches(selector, spec.template?.metadata?.labels ?? {})) {
    errors.push({ field: "spec.template.metadata.labels", reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(spec.template?.metadata?.labels ?? {})}: \`selector\` does not match template \`labels\`` });
  }
  errors.push(...podSpecErrors(spec.template?.spec, "spec.template.spec"));
  if (old) errors.push(...immutable("spec.selector", selector, templateOf(old).selector));
  return errors;
}

const UpdateKnobs = Struct(
  {
    maxUnavailable: Type.Optional(IntOrString("Pods that may be unavailable during the update (a number or a percentage).")),
    maxSurge: Type.Optional(IntOrString("Pods that may be made above the desired number during the update.")),
  },
  { description: "Pace of a rolling update." },
);

// ---------------------------------------------------------------------------------------------------------
// DaemonSet

const DaemonSetSpec = Struct(
  {
    selector: LabelSelector,
    template: PodTemplateSpec,
    updateStrategy: Type.Optional(Struct({ type: Type.Optional(StringEnum(["RollingUpdate", "OnDelete"], { description: "RollingUpdate or OnDelete." })), rollingUpdate: Type.Optional(UpdateKnobs) }, { description: "How pods are replaced when the template changes." })),
    minReadySeconds: Type.Optional(Type.Integer({ minimum: 0, description: "Seconds a pod must be ready to count as available." })),
    revisionHistoryLimit: Type.Optional(Type.Integer({ minimum: 0, description: "Old revisions kept for rollback." })),
  },
  { description: "Desired state: the pods to run on every (selected) node." },
);

export const DaemonSetSchema = objectSchema("apps/v1", "DaemonSet", "Runs a copy of a pod on every (selected) node.", {
  spec: Type.Optional(DaemonSetSpec),
  status: Type.Optional(
    Struct(
      {
        desiredNumberScheduled: Type.Integer({ minimum: 0, description: "Nodes that should run the pod." }),
        currentNumberScheduled: Type.Integer({ minimum: 0, description: "Nodes running at least one pod of the set." }),
        numberMisscheduled: Type.Integer({ minimum: 0, description: "Nodes running the pod but not supposed to." }),
        numberReady: Type.Integer({ minimum: 0, description: "Nodes whose pod of the set is ready." }),
        updatedNumberScheduled: Type.Optional(Type.Integer({ minimum: 0, description: "Nodes running the current pod template." })),
        numberAvailable: Type.Optional(Type.Integer({ minimum: 0, description: "Nodes whose pod has been ready long enough." })),
        numberUnavailable: Type.Optional(Type.Integer({ minimum: 0, description: "Nodes that should run an available pod and do not." })),
        observedGeneration: Type.Optional(Type.Integer({ description: "Generation the status was computed from." })),
        collisionCount: Type.Optional(Type.Integer({ description: "Hash collisions of controller revisions." })),
        conditions: Type.Optional(Type.Array(WorkloadConditionSchema, { description: "Current conditions." })),
      },
      { description: "Observed state of the daemon set." },
    ),
  ),
});
export type DaemonSetObject = ObjectOf<typeof DaemonSetSchema>;

export const daemonSetKind: KindDefinition<DaemonSetObject> = {
  ...APPS,
  kind: "DaemonSet",
  plural: "daemonsets",
  singular: "daemonset",
  shortNames: ["ds"],
  categories: ["all"],
  namespaced: true,
  schema: DaemonSetSchema,
  description: "Runs a copy of a pod on every (selected) node.",
  subresources: { status: true },
  validate: workloadErrors,
  printerColumns: [
    fieldColumn("DESIRED", ".status.desiredNumberScheduled", "Nodes that should run the pod.", { type: "integer" }),
    fieldColumn("CURRENT", ".status.currentNumberScheduled", "Nodes running the pod.", { type: "integer" }),
    fieldColumn("READY", ".status.numberReady", "Nodes whose pod is ready.", { type: "integer" }),
    fieldColumn("UP-TO-DATE", ".status.updatedNumberScheduled", "Nodes running the current template.", { type: "integer" }),
    fieldColumn("AVAILABLE", ".status.numberAvailable", "Nodes whose pod is available.", { type: "integer" }),
    computedColumn("NODE SELECTOR", ".spec.template.spec.nodeSelector", "Labels a node needs to run the pod.", (o) => labelsText(templateOf(o).template?.spec?.nodeSelector)),
    ageColumn,
    ...templateColumns,
  ],
};

// ---------------------------------------------------------------------------------------------------------
// Deployment

const DeploymentSpec = Struct(
  {
    replicas: Type.Optional(Type.Integer({ minimum: 0, description: "Pods wanted (default 1)." })),
    selector: LabelSelector,
    template: PodTemplateSpec,
    strategy: Type.Optional(Struct({ type: Type.Optional(StringEnum(["RollingUpdate", "Recreate"], { description: "RollingUpdate or Recreate." })), rollingUpdate: Type.Optional(UpdateKnobs) }, { description: "How pods are replaced when the template changes." })),
    minReadySeconds: Type.Optional(Type.Integer({ minimum: 0, description: "Seconds a pod must be ready to count as available." })),
    revisionHistoryLimit: Type.Optional(Type.Integer({ minimum: 0, description: "Old replica sets kept for rollback." })),
    progressDeadlineSeconds: Type.Optional(Type.Integer({ minimum: 0, description: "Seconds before a stalled rollout is reported." })),
    paused: Type.Optional(Type.Boolean({ description: "Whether the rollout is paused." })),
  },
  { description: "Desired state: replicas of a pod template." },
);

export const DeploymentSchema = objectSchema("apps/v1", "Deployment", "A replicated, rolling-updated set of identical pods.", {
  spec: Type.Optional(DeploymentSpec),
  status: Type.Optional(
    Struct(
      {
        observedGeneration: Type.Optional(Type.Integer({ description: "Generation the status was computed from." })),
        replicas: Type.Optional(Type.Integer({ minimum: 0, description: "Pods targeted by the deployment." })),
        updatedReplicas: Type.Optional(Type.Integer({ minimum: 0, description: "Pods running the current template." })),
        readyReplicas: Type.Optional(Type.Integer({ minimum: 0, description: "Pods that are ready." })),
        availableReplicas: Type.Optional(Type.Integer({ minimum: 0, description: "Pods ready for at least minReadySeconds." })),
        unavailableReplicas: Type.Optional(Type.Integer({ minimum: 0, description: "Pods still needed for full availability." })),
        collisionCount: Type.Optional(Type.Integer({ description: "Hash collisions of replica sets." })),
        conditions: Type.Optional(Type.Array(WorkloadConditionSchema, { description: "Current conditions." })),
      },
      { description: "Observed state of the deployment." },
    ),
  ),
});
export type DeploymentObject = ObjectOf<typeof DeploymentSchema>;

export const deploymentKind: KindDefinition<DeploymentObject> = {
  ...APPS,
  kind: "Deployment",
  plural: "deployments",
  singular: "deployment",
  shortNames: ["deploy"],
  categories: ["all"],
  namespaced: true,
  schema: DeploymentSchema,
  description: "A replicated, rolling-updated set of identical pods.",
  subresources: { status: true },
  validate: workloadErrors,
  printerColumns: [
    computedColumn<DeploymentObject>("READY", ".status.readyReplicas", "Ready pods of the desired number.", (d) => {
      const desired = d.spec?.replicas ?? 1;
      return readyOfDesired(d.status?.readyReplicas, desired);
    }),
    fieldColumn("UP-TO-DATE", ".status.updatedReplicas", "Pods running the current template.", { type: "integer" }),
    fieldColumn("AVAILABLE", ".status.availableReplicas", "Pods available.", { type: "integer" }),
    ageColumn,
    ...templateColumns,
  ],
};
