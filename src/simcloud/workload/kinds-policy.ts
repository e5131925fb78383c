// policy/v1 PodDisruptionBudget of an emulated workload cluster: how many of the pods it selects must
// stay healthy (minAvailable) or may be down (maxUnavailable) during voluntary disruptions — evictions,
// which the pods/eviction subresource refuses while the budget allows none (see eviction.ts).
import { Type } from "@sinclair/typebox";
import { ageColumn, computedColumn } from "../../api/columns.ts";
import { Condition, MapOf, StringEnum, Struct, objectSchema, type ObjectOf } from "../../api/meta.ts";
import type { FieldError, KindDefinition } from "../../api/registry.ts";
import { IntOrString, LabelSelector } from "./kinds-podspec.ts";

export const PodDisruptionBudgetSchema = objectSchema("policy/v1", "PodDisruptionBudget", "Limits how many pods of a set voluntary disruptions may take down at once.", {
  spec: Type.Optional(
    Struct(
      {
        selector: Type.Optional(LabelSelector),
        minAvailable: Type.Optional(IntOrString("Pods that must stay available (a number or a percentage of the expected pods).")),
        maxUnavailable: Type.Optional(IntOrString("Pods that may be unavailable (a number or a percentage of the expected pods).")),
        unhealthyPodEvictionPolicy: Type.Optional(StringEnum(["IfHealthyBudget", "AlwaysAllow"], { description: "When unhealthy pods may be evicted." })),
      },
      { description: "The pods and how many of them must stay up." },
    ),
  ),
  status: Type.Optional(
    Struct(
      {
        observedGeneration: Type.Optional(Type.Integer({ description: "Generation the status was computed from." })),
        disruptedPods: Type.Optional(MapOf(Type.String(), "Pods being evicted, with when the eviction was admitted.")),
        disruptionsAllowed: Type.Integer({ minimum: 0, description: "Evictions allowed now." }),
        currentHealthy: Type.Integer({ minimum: 0, description: "Selected pods that are healthy." }),
        desiredHealthy: Type.Integer({ minimum: 0, description: "Healthy pods the budget needs." }),
        expectedPods: Type.Integer({ minimum: 0, description: "Pods the budget counts." }),
        conditions: Type.Optional(Type.Array(Condition, { description: "DisruptionAllowed." })),
      },
      { description: "What the disruption controller observed." },
    ),
  ),
});
export type PodDisruptionBudgetObject = ObjectOf<typeof PodDisruptionBudgetSchema>;

function budgetText(value: number | string | undefined): string {
  return value === undefined ? "N/A" : String(value);
}

export const podDisruptionBudgetKind: KindDefinition<PodDisruptionBudgetObject> = {
  group: "policy",
  version: "v1",
  kind: "PodDisruptionBudget",
  plural: "poddisruptionbudgets",
  singular: "poddisruptionbudget",
  shortNames: ["pdb"],
  namespaced: true,
  schema: PodDisruptionBudgetSchema,
  description: "Limits how many pods of a set voluntary disruptions may take down at once.",
  subresources: { status: true },
  printerColumns: [
    computedColumn<PodDisruptionBudgetObject>("MIN AVAILABLE", ".spec.minAvailable", "Pods that must stay available.", (o) => budgetText(o.spec?.minAvailable)),
    computedColumn<PodDisruptionBudgetObject>("MAX UNAVAILABLE", ".spec.maxUnavailable", "Pods that may be unavailable.", (o) => budgetText(o.spec?.maxUnavailable)),
    computedColumn<PodDisruptionBudgetObject>("ALLOWED DISRUPTIONS", ".status.disruptionsAllowed", "Evictions allowed now.", (o) => o.status?.disruptionsAllowed ?? 0, { type: "integer" }),
    ageColumn,
  ],
  validate(pdb): FieldError[] {
    const spec = pdb.spec ?? {};
    if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined) {
      return [{ field: "spec", reason: "FieldValueInvalid", message: "Invalid value: minAvailable and maxUnavailable cannot be both set" }];
    }
    return [];
  },
};
