// BootstrapConfig: how the machines of a pool join their cluster (a kubeadm join configuration), as
// Cluster API's KubeadmConfig for a MachinePool. Referenced from a MachinePool's
// spec.template.bootstrap.configRef and owned by that pool; its controller renders the join data into a
// Secret (status.dataSecretName) once it has its owner. The data (bootstrap token, CA hash) is only in
// the Secret: never in status, logs or events.
import { Type, type Static } from "@sinclair/typebox";

/** On the bootstrap data's Secret: the pool template (launchTemplateKey) the data was rendered for. */
export const ANNOTATION_RENDERED_FOR = "slipway.dev/rendered-for";
import { Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { KindDefinition } from "../registry.ts";
import { ageColumn, fieldColumn } from "../columns.ts";
import { SLIPWAY_API_VERSION, reportedState, slipwayKindBase, specDefaults } from "./group.ts";
import { Taint, nodeLabelErrors, nodeLabels, taintErrors } from "./nodes.ts";

export const FINALIZER_BOOTSTRAP_CONFIG = "slipway.dev/bootstrapconfig";

export const BootstrapConfigSpecSchema = Struct(
  {
    labels: Type.Optional(nodeLabels("Labels the joining nodes register with (besides the cluster's and the pool's).")),
    taints: Type.Optional(Type.Array(Taint, { description: "Taints the joining nodes register with." })),
    version: Type.Optional(Type.String({ description: "Kubernetes version the machines install (default: the pool's, else the cluster's)." })),
  },
  { description: "The kubeadm join configuration of a pool's machines; every machine joins under its own host name." },
);
export type BootstrapConfigSpec = Static<typeof BootstrapConfigSpecSchema>;

export const BootstrapConfigStatusSchema = Struct(
  {
    ready: Type.Optional(Type.Boolean({ description: "True when the bootstrap data is in the Secret status.dataSecretName." })),
    dataSecretName: Type.Optional(Type.String({ description: "Secret (key value) holding the cloud-init user data that joins a machine." })),
    ...reportedState({ reason: "Why the data is not ready, e.g. WaitingForOwner.", conditions: "Current conditions: Ready, and JoinTokenValid (the join token is kept valid in the cluster's API once its control plane is initialised)." }),
  },
  { description: "The observed state of the bootstrap configuration." },
);

export const BootstrapConfigSchema = objectSchema(SLIPWAY_API_VERSION, "BootstrapConfig", "How a pool's machines join their cluster.", {
  spec: Type.Optional(BootstrapConfigSpecSchema),
  status: Type.Optional(BootstrapConfigStatusSchema),
});
export type BootstrapConfigObject = ObjectOf<typeof BootstrapConfigSchema>;

const fillSpecDefaults = specDefaults<BootstrapConfigObject>(BootstrapConfigSpecSchema);

export const bootstrapConfigKind: KindDefinition<BootstrapConfigObject> = {
  ...slipwayKindBase,
  kind: "BootstrapConfig",
  plural: "bootstrapconfigs",
  singular: "bootstrapconfig",
  shortNames: ["bc"],
  schema: BootstrapConfigSchema,
  description: "How the machines of a pool join their cluster (kubeadm join configuration).",
  subresources: { status: true },
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the bootstrap configuration."),
    fieldColumn("READY", ".status.ready", "True when the bootstrap data is ready.", { type: "boolean" }),
    fieldColumn("DATASECRET", ".status.dataSecretName", "Secret holding the bootstrap data."),
    fieldColumn("REASON", ".status.reason", "Why it is not ready."),
    ageColumn,
  ],
  defaults(config) {
    config.spec ??= {};
    fillSpecDefaults(config);
  },
  validate(config) {
    return [...nodeLabelErrors("spec.labels", config.spec?.labels), ...taintErrors("spec.taints", config.spec?.taints)];
  },
};
