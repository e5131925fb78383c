// SimMachinePool: the sim provider's pool infrastructure, a scale set of the sim cloud (as Cluster API's
// AWSMachinePool is an Auto Scaling group and AzureMachinePool a VM scale set). Referenced from a
// MachinePool's spec.template.infrastructureRef and owned by that pool; once it has its owner, its
// controller makes the scale set through the provider's poolInfrastructure (launch template from the
// pool's machine type and image and the bootstrap data the pool copied), keeps the scale set's size
// limits, and reports what the cloud says: instances, provider IDs, readiness and why it is not at its
// size. Deleting it deletes the scale set with its instances.
import { Type, type Static } from "@sinclair/typebox";
import { StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, countColumn, fieldColumn } from "../columns.ts";
import { invalid } from "../field-errors.ts";
import { SLIPWAY_API_VERSION, reportedState, slipwayKindBase, specDefaults } from "./group.ts";

export const FINALIZER_SIM_MACHINE_POOL = "slipway.dev/simmachinepool";
/** Most instances one scale set of the sim cloud holds. */
export const MAX_SCALE_SET_SIZE = 1000;

export const SimMachinePoolSpecSchema = Struct(
  {
    minSize: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_SCALE_SET_SIZE, default: 0, description: "Fewest instances the scale set holds." })),
    maxSize: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_SCALE_SET_SIZE, default: 100, description: "Most instances the scale set holds; the pool's spec.replicas must not exceed it." }),
    ),
  },
  { description: "The scale set's limits. Machine type, image, user data and zones come from the owning pool and its cluster's infrastructure." },
);
export type SimMachinePoolSpec = Static<typeof SimMachinePoolSpecSchema>;

const SimMachinePoolInstance = Struct(
  {
    instanceId: Type.String({ description: "Cloud ID of the instance." }),
    providerID: Type.String({ description: "Provider ID, as its node carries it." }),
    zone: Type.String({ description: "Zone of the instance." }),
    state: StringEnum(["pending", "ready", "leaving"] as const, { description: "pending (booting), ready (in service), leaving (being removed or replaced)." }),
    healthy: Type.Boolean({ description: "Whether the cloud reports the instance healthy." }),
    protected: Type.Boolean({ description: "Protected from the cloud's own scale-in." }),
    upToDate: Type.Boolean({ description: "Launched from the scale set's current launch template." }),
  },
  { description: "An instance of the scale set." },
);

export const SimMachinePoolStatusSchema = Struct(
  {
    ready: Type.Optional(Type.Boolean({ description: "True when the scale set exists and holds the instances wanted (the pool's infrastructureReady)." })),
    replicas: Type.Optional(Type.Integer({ minimum: 0, description: "Instances that count towards the desired capacity (pending or in service)." })),
    desiredCapacity: Type.Optional(Type.Integer({ minimum: 0, description: "The scale set's desired capacity." })),
    scaleSetId: Type.Optional(Type.String({ description: "Cloud ID of the scale set." })),
    connection: Type.Optional(Type.String({ description: "Connection the scale set is in (its pool's), kept to delete it after the pool is gone." })),
    providerIDList: Type.Optional(Type.Array(Type.String(), { description: "Provider IDs of the instances that are not leaving, sorted." })),
    instances: Type.Optional(Type.Array(SimMachinePoolInstance, { description: "The scale set's instances, as the cloud reports them." })),
    userDataHash: Type.Optional(Type.String({ description: "SHA-256 of the bootstrap data in the launch template (the data itself is secret)." })),
    bootstrapSecret: Type.Optional(
      Struct(
        {
          id: Type.String({ description: "Cloud ID of the secret." }),
          digest: Type.String({ description: "Short SHA-256 of the bootstrap data it was made from." }),
          madeAt: Type.String({ description: "When it was made (RFC 3339): it is replaced before its lifetime ends." }),
        },
        { description: "The cloud secret the launch template's user data reads the join (token, CA hash) from at boot, where the provider keeps bootstrap secrets." },
      ),
    ),
    machineType: Type.Optional(Type.String({ description: "Machine type of the launch template." })),
    imageId: Type.Optional(Type.String({ description: "Cloud ID of the launch template's image." })),
    poolTemplate: Type.Optional(Type.String({ description: "The pool template (hash, and @version when the pool names one) the launch template was last brought to; instances launched since are on it." })),
    ...reportedState({
      reason: "Why the scale set is not ready, e.g. WaitingForOwner, ScaleSetCapacity.",
      message: "Human-readable details, e.g. the cloud's message on quota or capacity.",
      conditions: "Current conditions: Ready.",
    }),
  },
  { description: "The scale set as the cloud reports it." },
);
export type SimMachinePoolStatus = Static<typeof SimMachinePoolStatusSchema>;

export const SimMachinePoolSchema = objectSchema(SLIPWAY_API_VERSION, "SimMachinePool", "A scale set of the sim cloud backing a MachinePool.", {
  spec: Type.Optional(SimMachinePoolSpecSchema),
  status: Type.Optional(SimMachinePoolStatusSchema),
});
export type SimMachinePoolObject = ObjectOf<typeof SimMachinePoolSchema>;

const fillSpecDefaults = specDefaults<SimMachinePoolObject>(SimMachinePoolSpecSchema);

export const simMachinePoolKind: KindDefinition<SimMachinePoolObject> = {
  ...slipwayKindBase,
  kind: "SimMachinePool",
  plural: "simmachinepools",
  singular: "simmachinepool",
  shortNames: ["smp"],
  schema: SimMachinePoolSchema,
  description: "A scale set of the sim cloud backing a MachinePool (the sim provider's pool infrastructure).",
  subresources: { status: true },
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the pool infrastructure."),
    fieldColumn("SCALESET", ".status.scaleSetId", "Cloud ID of the scale set."),
    countColumn<SimMachinePoolObject>("DESIRED", ".status.desiredCapacity", "The scale set's desired capacity.", (o) => o.status?.desiredCapacity),
    countColumn<SimMachinePoolObject>("REPLICAS", ".status.replicas", "Instances pending or in service.", (o) => o.status?.replicas),
    fieldColumn("READY", ".status.ready", "True when the scale set holds the instances wanted.", { type: "boolean" }),
    fieldColumn("MESSAGE", ".status.message", "What the cloud says, e.g. of quota or capacity."),
    ageColumn,
    fieldColumn("MIN", ".spec.minSize", "Fewest instances.", { type: "integer", priority: 1 }),
    fieldColumn("MAX", ".spec.maxSize", "Most instances.", { type: "integer", priority: 1 }),
  ],
  defaults(pool) {
    pool.spec ??= {};
    fillSpecDefaults(pool);
  },
  validate(pool) {
    const errors: FieldError[] = [];
    const { minSize = 0, maxSize = 100 } = pool.spec ?? {};
    if (minSize > maxSize) errors.push(invalid("spec.minSize", minSize, `must not exceed spec.maxSize (${maxSize})`));
    return errors;
  },
};
