// Operation: the record of one asynchronous create, update or delete, which a client polls.
import { Type, type Static } from "@sinclair/typebox";
import { StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "../columns.ts";
import { immutable } from "../field-errors.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase } from "./group.ts";

export const OPERATION_TYPES = ["Create", "Update", "Upgrade", "Delete"] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];
export const OPERATION_PHASES = ["InProgress", "Succeeded", "Failed", "Canceled"] as const;
export type OperationPhase = (typeof OPERATION_PHASES)[number];

export const OperationSpecSchema = Struct(
  {
    type: StringEnum(OPERATION_TYPES, { description: "Create, Update, Upgrade (a change of the Kubernetes version) or Delete." }),
    target: Struct(
      {
        apiVersion: Type.String({ description: "API version of the target." }),
        kind: Type.String({ description: "Kind of the target, e.g. Cluster." }),
        name: Type.String({ description: "Name of the target (in this namespace)." }),
        uid: Type.String({ description: "UID of the target." }),
      },
      { description: "The object the operation acts on." },
    ),
    generation: Type.Optional(Type.Integer({ description: "Generation of the target's spec the operation brings about." })),
  },
  { description: "What the operation does. Cannot be changed." },
);
export type OperationSpec = Static<typeof OperationSpecSchema>;

export const OperationStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(OPERATION_PHASES, { description: "InProgress, Succeeded, Failed or Canceled." })),
    startTime: Type.Optional(Type.String({ description: "When the operation started (RFC 3339)." })),
    endTime: Type.Optional(Type.String({ description: "When the operation ended (RFC 3339)." })),
    percentComplete: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: "Progress, 0 to 100." })),
    machinesToChange: Type.Optional(
      Type.Integer({ minimum: 0, description: "For an Update: the machines its change makes, replaces or removes, the most seen at once; percentComplete counts against it." }),
    ),
    error: Type.Optional(
      Struct(
        {
          code: Type.String({ description: "Machine-readable code, e.g. QuotaExceeded." }),
          message: Type.String({ description: "Human-readable description." }),
        },
        { description: "Why the operation failed." },
      ),
    ),
    message: Type.Optional(Type.String({ description: "What the operation is doing now." })),
    recoveredTime: Type.Optional(
      Type.String({ description: "For a Failed operation: when its target applied the change after all and was Ready (RFC 3339). The phase stays Failed." }),
    ),
  },
  { description: "Progress and outcome." },
);
export type OperationStatus = Static<typeof OperationStatusSchema>;

export const OperationSchema = objectSchema(SLIPWAY_API_VERSION, "Operation", "An asynchronous operation record.", {
  spec: OperationSpecSchema,
  status: Type.Optional(OperationStatusSchema),
});
export type OperationObject = ObjectOf<typeof OperationSchema>;

export const operationKind: KindDefinition<OperationObject> = {
  ...slipwayKindBase,
  kind: "Operation",
  plural: "operations",
  singular: "operation",
  shortNames: ["op"],
  schema: OperationSchema,
  description: "An asynchronous create, update or delete; mutating Cluster responses point to one.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the operation."),
    fieldColumn("TYPE", ".spec.type", "Create, Update or Delete."),
    computedColumn<OperationObject>("TARGET", ".spec.target", "The object acted on (kind/name).", (o) => {
      const target = o.spec.target;
      return `${target.kind}/${target.name}`;
    }),
    fieldColumn("STATUS", ".status.phase", "InProgress, Succeeded, Failed or Canceled."),
    fieldColumn("PERCENT", ".status.percentComplete", "Progress, 0 to 100.", { type: "integer" }),
    ageColumn,
  ],
  validate(operation, old) {
    return old ? immutable("spec", operation.spec, old.spec) : [];
  },
};
