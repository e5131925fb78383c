// batch/v1 Job of an emulated workload cluster: pods of a template run to completion, `parallelism` at a
// time, until `completions` of them succeeded. The API server defaults and validates it as Kubernetes
// does — completions and parallelism 1, backoffLimit 6, a pod template that never restarts always, and a
// selector generated from the Job's uid unless `manualSelector` — and prints it as kubectl does.
import { Type } from "@sinclair/typebox";
import { humanAge } from "../../api/age.ts";
import { ageColumn, computedColumn } from "../../api/columns.ts";
import { immutable, invalid, notSupported, required } from "../../api/field-errors.ts";
import { FreeForm, StringEnum, Struct, objectSchema, type ObjectOf } from "../../api/meta.ts";
import type { FieldError, KindDefinition } from "../../api/registry.ts";
import { templateColumns } from "./kinds-apps.ts";
import { LabelSelector, PodTemplateSpec, podSpecErrors, selectorMatches, type PodSpecView } from "./kinds-podspec.ts";

/** Labels the API server puts on a Job's pod template (and its selector selects), as Kubernetes names them. */
export const JOB_LABELS = {
  controllerUid: "batch.kubernetes.io/controller-uid",
  legacyControllerUid: "controller-uid",
  jobName: "batch.kubernetes.io/job-name",
  legacyJobName: "job-name",
} as const;

const count = (description: string) => Type.Optional(Type.Integer({ minimum: 0, description }));

const JobCondition = Struct(
  {
    type: Type.String({ description: "Complete, Failed, SuccessCriteriaMet, FailureTarget or Suspended." }),
    status: StringEnum(["True", "False", "Unknown"], { description: "True, False or Unknown." }),
    reason: Type.Optional(Type.String({ description: "One-word CamelCase reason for the last transition." })),
    message: Type.Optional(Type.String({ description: "Human-readable details." })),
    lastProbeTime: Type.Optional(Type.String({ description: "When the condition was last probed (RFC 3339)." })),
    lastTransitionTime: Type.Optional(Type.String({ description: "When the status last changed (RFC 3339)." })),
  },
  { description: "One aspect of the job's state." },
);

const JobSpec = Struct(
  {
    template: PodTemplateSpec,
    completions: count("Pods that must succeed (default 1)."),
    parallelism: count("Pods run at once at most (default 1)."),
    backoffLimit: count("Retries before the job is marked failed (default 6)."),
    backoffLimitPerIndex: count("Retries of each index of an Indexed job."),
    maxFailedIndexes: count("Failed indexes before an Indexed job is marked failed."),
    activeDeadlineSeconds: Type.Optional(Type.Integer({ minimum: 1, description: "Seconds the job may be active before it is failed." })),
    ttlSecondsAfterFinished: count("Seconds after it finished before the job is deleted."),
    completionMode: Type.Optional(StringEnum(["NonIndexed", "Indexed"], { description: "NonIndexed (default) or Indexed." })),
    suspend: Type.Optional(Type.Boolean({ description: "Whether the job's pods are not to be created." })),
    selector: Type.Optional(LabelSelector),
    manualSelector: Type.Optional(Type.Boolean({ description: "Whether the selector is the user's rather than generated from the job's uid." })),
    podFailurePolicy: Type.Optional(FreeForm("How pod failures count against the backoff limit.")),
    podReplacementPolicy: Type.Optional(StringEnum(["TerminatingOrFailed", "Failed"], { description: "When a replacement pod is made." })),
    successPolicy: Type.Optional(FreeForm("When an Indexed job succeeds before all its completions.")),
    managedBy: Type.Optional(Type.String({ description: "The controller that reconciles the job." })),
  },
  { description: "Desired state: the pod template and how many pods must succeed." },
);

export const JobSchema = objectSchema("batch/v1", "Job", "Pods run to completion.", {
  spec: Type.Optional(JobSpec),
  status: Type.Optional(
    Struct(
      {
        startTime: Type.Optional(Type.String({ description: "When the job controller started the job (RFC 3339)." })),
        completionTime: Type.Optional(Type.String({ description: "When the job completed (RFC 3339)." })),
        active: count("Pods pending or running."),
        ready: count("Pods that are ready."),
        terminating: count("Pods being terminated."),
        succeeded: count("Pods that succeeded."),
        failed: count("Pods that failed."),
        completedIndexes: Type.Optional(Type.String({ description: "Completed indexes of an Indexed job." })),
        failedIndexes: Type.Optional(Type.String({ description: "Failed indexes of an Indexed job." })),
        uncountedTerminatedPods: Type.Optional(
          Struct(
            {
              succeeded: Type.Optional(Type.Array(Type.String(), { description: "Uids of succeeded pods not counted yet." })),
              failed: Type.Optional(Type.Array(Type.String(), { description: "Uids of failed pods not counted yet." })),
            },
            { description: "Finished pods the controller has not counted yet." },
          ),
        ),
        conditions: Type.Optional(Type.Array(JobCondition, { description: "Current conditions." })),
      },
      { description: "What the job controller observed." },
    ),
  ),
});
export type JobObject = ObjectOf<typeof JobSchema>;

interface JobView {
  template?: { metadata?: { labels?: Record<string, string> }; spec?: PodSpecView & { restartPolicy?: string } };
  selector?: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };
  manualSelector?: boolean;
}

function conditionOf(job: JobObject, type: string): boolean {
  return (job.status?.conditions ?? []).some((c) => c.type === type && c.status === "True");
}

/** The defaults of SetDefaults_Job: both counts 1 when neither is given, else parallelism 1; six retries. */
function jobDefaults(job: JobObject): void {
  const spec = job.spec;
  if (!spec) return;
  if (spec.completions === undefined && spec.parallelism === undefined) spec.completions = 1;
  spec.parallelism ??= 1;
  spec.backoffLimit ??= 6;
  spec.completionMode ??= "NonIndexed";
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= "TerminatingOrFailed";
}

/**
 * The job-name and controller-uid labels on the template and a selector of the controller uid, as the
 * API server generates them. Kubernetes does this in its Job validation, the first step that knows the
 * new object's uid; so does this.
 */
function generateSelector(job: JobObject): void {
  const spec = job.spec as JobView | undefined;
  const uid = job.metadata.uid;
  if (!spec?.template || !uid || spec.manualSelector === true) return;
  spec.template.metadata ??= {};
  const labels = (spec.template.metadata.labels ??= {});
  for (const key of [JOB_LABELS.legacyJobName, JOB_LABELS.jobName]) labels[key] ??= job.metadata.name ?? "";
  for (const key of [JOB_LABELS.legacyControllerUid, JOB_LABELS.controllerUid]) labels[key] ??= uid;
  spec.selector ??= {};
  spec.selector.matchLabels ??= {};
  spec.selector.matchLabels[JOB_LABELS.controllerUid] ??= uid;
}

function jobErrors(job: JobObject, old: JobObject | undefined): FieldError[] {
  if (!old) generateSelector(job);
  const spec = (job.spec ?? {}) as JobView;
  const errors: FieldError[] = [];
  if (!job.spec) return [required("spec")];
  // A pod's restart policy defaults to Always, which a Job's pods may not have.
  const restartPolicy = spec.template?.spec?.restartPolicy ?? "Always";
  if (restartPolicy !== "OnFailure" && restartPolicy !== "Never") errors.push(notSupported("spec.template.spec.restartPolicy", restartPolicy, ["OnFailure", "Never"]));
  const selector = spec.selector;
  if (!selector) {
    errors.push(required("spec.selector"));
  } else if (!selectorMatches(selector, spec.template?.metadata?.labels ?? {})) {
    errors.push(invalid("spec.template.metadata.labels", spec.template?.metadata?.labels ?? {}, "`selector` does not match template `labels`"));
  } else if (spec.manualSelector !== true) {
    // A generated selector selects by the uid alone, and the template carries the generated labels.
    const uid = job.metadata.uid ?? "";
    if (!selectorMatches(selector, { [JOB_LABELS.legacyControllerUid]: uid, [JOB_LABELS.controllerUid]: uid })) errors.push(invalid("spec.selector", selector, "`selector` not auto-generated"));
    const labels = spec.template?.metadata?.labels ?? {};
    for (const [key, expected] of [[JOB_LABELS.legacyControllerUid, uid], [JOB_LABELS.legacyJobName, job.metadata.name ?? ""]] as const) {
      if (labels[key] !== expected) errors.push(invalid("spec.template.metadata.labels", labels[key] ?? "", `must be '${expected}'`));
    }
  }
  errors.push(...podSpecErrors(spec.template?.spec, "spec.template.spec"));
  if (old) {
    const before = (old.spec ?? {}) as JobView & { completions?: number };
    errors.push(...immutable("spec.selector", selector, before.selector));
    errors.push(...immutable("spec.template", spec.template, before.template));
    errors.push(...immutable("spec.completions", job.spec.completions, before.completions));
  }
  return errors;
}

/** kubectl's STATUS of a job: the condition that decided it, else Running. */
function jobStatusText(job: JobObject): string {
  if (conditionOf(job, "Complete")) return "Complete";
  if (conditionOf(job, "Failed")) return "Failed";
  if (job.metadata.deletionTimestamp) return "Terminating";
  if (conditionOf(job, "Suspended")) return "Suspended";
  if (conditionOf(job, "FailureTarget")) return "FailureTarget";
  if (conditionOf(job, "SuccessCriteriaMet")) return "SuccessCriteriaMet";
  return "Running";
}

/** kubectl's COMPLETIONS: succeeded of completions, or of one when the job has no completion count. */
function completionsText(job: JobObject): string {
  const succeeded = job.status?.succeeded ?? 0;
  if (job.spec?.completions !== undefined) return `${succeeded}/${job.spec.completions}`;
  const parallelism = job.spec?.parallelism ?? 0;
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

/** kubectl's DURATION: from the start to the completion, or until now while it runs. */
function durationText(job: JobObject, now = Date.now()): string {
  const start = job.status?.startTime;
  if (!start) return "";
  const end = job.status?.completionTime;
  return humanAge(start, end ? Date.parse(end) : now);
}

export const jobKind: KindDefinition<JobObject> = {
  group: "batch",
  version: "v1",
  kind: "Job",
  plural: "jobs",
  singular: "job",
  shortNames: [],
  categories: ["all"],
  namespaced: true,
  schema: JobSchema,
  description: "Pods run to completion.",
  subresources: { status: true },
  defaults: jobDefaults,
  validate: jobErrors,
  printerColumns: [
    computedColumn<JobObject>("STATUS", ".status.conditions", "Status of the job.", jobStatusText),
    computedColumn<JobObject>("COMPLETIONS", ".status.succeeded", "Succeeded pods of the desired completions.", completionsText),
    computedColumn<JobObject>("DURATION", ".status.completionTime", "Time the job took, or has run so far.", durationText, { readsClock: true }),
    ageColumn,
    ...templateColumns,
  ],
};
