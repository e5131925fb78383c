// Machine: one VM and the Kubernetes node it becomes. Owned by its pool, or by the Cluster for the
// control plane.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "../columns.ts";
import { immutable } from "../field-errors.ts";
import { ObservedGeneration, SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";
import { DEFAULT_IMAGE } from "./nodes.ts";

export const MACHINE_PHASES = ["Pending", "Provisioning", "Provisioned", "Running", "Deleting", "Failed"] as const;
export type MachinePhase = (typeof MACHINE_PHASES)[number];

export const MACHINE_ROLES = ["control-plane", "worker"] as const;
export type MachineRole = (typeof MACHINE_ROLES)[number];
export const ROLE_CONTROL_PLANE = "control-plane" satisfies MachineRole;
export const ROLE_WORKER = "worker" satisfies MachineRole;

/** Machines (and worker pools) carry their role under this label. */
export const LABEL_ROLE = "slipway.dev/role";
/** On the first control-plane machine: it runs `kubeadm init`; every other machine joins. */
export const ANNOTATION_BOOTSTRAP = "slipway.dev/bootstrap";
export const FINALIZER_MACHINE = "slipway.dev/machine";
/**
 * On a machine of a scale set's instance: the pool deletes it to scale in, so its instance leaves the
 * scale set with the desired capacity lowered by one; without it the cloud replaces the instance.
 */
export const ANNOTATION_SCALE_IN = "slipway.dev/scale-in";

export const MachineSpecSchema = Struct(
  {
    clusterName: Type.String({ minLength: 1, description: "Cluster (in this namespace) the machine belongs to." }),
    role: StringEnum(MACHINE_ROLES, { description: "control-plane or worker." }),
    connection: Type.String({ minLength: 1, description: "Connection the machine is built in." }),
    machineType: Type.String({ minLength: 1, description: "Machine type." }),
    image: Type.Optional(Type.String({ default: DEFAULT_IMAGE, description: "Operating-system image." })),
    pool: Type.Optional(Type.String({ description: "MachinePool the machine belongs to (workers)." })),
    version: Type.Optional(
      Type.String({ description: "Kubernetes version the machine installs (its kubelet, and on a control-plane machine its control-plane components); default: its cluster's." }),
    ),
    providerID: Type.Optional(
      Type.String({ description: "Provider's ID of the instance, as on the Node (sim://region/instance). Set once." }),
    ),
    scaleSetInstance: Type.Optional(
      Struct(
        {
          scaleSetId: Type.String({ minLength: 1, description: "Cloud ID of the scale set." }),
          instanceId: Type.String({ minLength: 1, description: "Cloud ID of the instance; its node is named after it (its host name) unless nodeName says otherwise." }),
          nodeName: Type.Optional(Type.String({ minLength: 1, description: "The name the instance's node registers under when it is not the instance id (a host of one's own, by its host name)." })),
        },
        {
          description:
            "The scale-set instance this machine stands for (a MachinePool machine): the cloud launched it from the pool's launch template, so the machine neither bootstraps nor creates an instance; deleting the machine drains its node and removes exactly this instance from the scale set.",
        },
      ),
    ),
  },
  { description: "The machine wanted." },
);
export type MachineSpec = Static<typeof MachineSpecSchema>;

const MachineAddress = Struct(
  {
    type: StringEnum(["InternalIP", "ExternalIP", "Hostname"], { description: "InternalIP, ExternalIP or Hostname." }),
    address: Type.String({ description: "The address." }),
  },
  { description: "An address of the machine." },
);
export type MachineAddress = Static<typeof MachineAddress>;

export const MachineStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(MACHINE_PHASES, { description: "Where the machine is in its life cycle." })),
    instanceId: Type.Optional(Type.String({ description: "Cloud ID of the instance." })),
    providerID: Type.Optional(Type.String({ description: "Provider's ID of the instance." })),
    zone: Type.Optional(Type.String({ description: "Availability zone of the instance." })),
    addresses: Type.Optional(Type.Array(MachineAddress, { description: "Addresses of the instance." })),
    nodeName: Type.Optional(Type.String({ description: "Name of the Kubernetes node it became." })),
    nodeUID: Type.Optional(Type.String({ description: "UID of that node." })),
    nodeReady: Type.Optional(Type.Boolean({ description: "True if the node is Ready." })),
    kubeletVersion: Type.Optional(Type.String({ description: "The kubelet version the node reports (status.nodeInfo.kubeletVersion)." })),
    bootstrapped: Type.Optional(Type.Boolean({ description: "True once kubeadm init or join has completed." })),
    conditions: Type.Optional(Type.Array(Condition, { description: "Current conditions, e.g. Ready." })),
    failureReason: Type.Optional(Type.String({ description: "Why the machine failed for good, e.g. BootFailed." })),
    failureMessage: Type.Optional(Type.String({ description: "Human-readable details of the failure." })),
    observedGeneration: ObservedGeneration,
  },
  { description: "The observed state of the machine." },
);
export type MachineStatus = Static<typeof MachineStatusSchema>;

export const MachineSchema = objectSchema(SLIPWAY_API_VERSION, "Machine", "One VM and its Kubernetes node.", {
  spec: MachineSpecSchema,
  status: Type.Optional(MachineStatusSchema),
});
export type MachineObject = ObjectOf<typeof MachineSchema>;

/** A machine is ready when it runs, its node is Ready, and it is not being deleted. */
export function isMachineReady(machine: MachineObject): boolean {
  return machine.status?.phase === "Running" && machine.status.nodeReady === true && !machine.metadata.deletionTimestamp;
}

/** The address to show for a machine: its first internal address, else its first address. */
export function primaryAddress(addresses: MachineAddress[] | undefined): string | undefined {
  return (addresses?.find((a) => a.type === "InternalIP") ?? addresses?.[0])?.address;
}

export const machineKind: KindDefinition<MachineObject> = {
  ...slipwayKindBase,
  kind: "Machine",
  plural: "machines",
  singular: "machine",
  shortNames: ["ma"],
  schema: MachineSchema,
  description: "One VM and the Kubernetes node it becomes.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the machine."),
    fieldColumn("CLUSTER", ".spec.clusterName", "Cluster the machine belongs to."),
    fieldColumn("ROLE", ".spec.role", "control-plane or worker."),
    fieldColumn("PHASE", ".status.phase", "Where the machine is in its life cycle."),
    fieldColumn("NODE", ".status.nodeName", "Kubernetes node it became."),
    fieldColumn("INSTANCE", ".status.instanceId", "Cloud ID of the instance."),
    ageColumn,
    fieldColumn("CONNECTION", ".spec.connection", "Connection it is built in.", { priority: 1 }),
    fieldColumn("ZONE", ".status.zone", "Availability zone of the instance.", { priority: 1 }),
    computedColumn<MachineObject>("ADDRESS", ".status.addresses", "Internal address of the machine.", (o) => primaryAddress(o.status?.addresses), { priority: 1 }),
  ],
  defaults: specDefaults(MachineSpecSchema),
  validate(machine, old) {
    if (!old) return [];
    const errors: FieldError[] = [];
    for (const key of ["clusterName", "role", "connection", "machineType", "image", "pool", "version", "scaleSetInstance"] as const) {
      errors.push(...immutable(`spec.${key}`, machine.spec[key], old.spec[key]));
    }
    // The provider ID is learnt once the instance exists, and then stays.
    if (old.spec.providerID !== undefined) {
      errors.push(...immutable("spec.providerID", machine.spec.providerID, old.spec.providerID));
    }
    return errors;
  },
};
