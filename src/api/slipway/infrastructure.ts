// Infrastructure: what one cluster needs in one connection (network, subnet, security group, key pair,
// resolved images and machine types, and the control-plane load balancer). Owned by the Cluster.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, MapOf, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "../columns.ts";
import { immutable, invalid } from "../field-errors.ts";
import { InvalidCidrError, parseCidr } from "../cidr.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";

export const INFRASTRUCTURE_PHASES = ["Pending", "Provisioning", "Ready", "Deleting", "Failed"] as const;
export type InfrastructurePhase = (typeof INFRASTRUCTURE_PHASES)[number];

export const FINALIZER_INFRASTRUCTURE = "slipway.dev/infrastructure";

export const InfrastructureSpecSchema = Struct(
  {
    clusterName: Type.String({ minLength: 1, description: "Cluster (in this namespace) the infrastructure is for." }),
    connection: Type.String({ minLength: 1, description: "Connection to build in." }),
    region: Type.String({ minLength: 1, description: "Region of the connection." }),
    nodeCIDR: Type.String({ description: "Address range of the network and subnet (IPv4 CIDR)." }),
    controlPlane: Type.Optional(
      Type.Boolean({ default: false, description: "True if this connection hosts the control plane and its load balancer." }),
    ),
    apiVisibility: Type.Optional(
      StringEnum(["public", "private"], {
        description: "Where the control plane runs: public gives the API a public load balancer and the name api.<cluster>.<zone>; private only an internal one and api-int.<cluster>.<zone>. The Cluster's spec.apiServer.visibility; public when left out.",
      }),
    ),
    machineTypes: Type.Optional(Type.Array(Type.String(), { default: [], description: "Machine types to resolve in this connection." })),
    images: Type.Optional(Type.Array(Type.String(), { default: [], description: "Images to resolve in this connection." })),
  },
  { description: "What to build in one connection." },
);
export type InfrastructureSpec = Static<typeof InfrastructureSpecSchema>;

const MachineTypeInfo = Struct(
  {
    vcpu: Type.Integer({ description: "Virtual CPUs." }),
    memoryMiB: Type.Integer({ description: "Memory in MiB." }),
  },
  { description: "Size of a machine type." },
);

export const InfrastructureStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(INFRASTRUCTURE_PHASES, { description: "Pending, Provisioning, Ready, Deleting or Failed." })),
    ready: Type.Optional(Type.Boolean({ description: "True once every resource exists." })),
    networkId: Type.Optional(Type.String({ description: "Cloud ID of the network." })),
    subnetId: Type.Optional(Type.String({ description: "Cloud ID of the subnet in the first zone." })),
    subnets: Type.Optional(MapOf(Type.String({ description: "Cloud ID of the subnet." }), "The subnet of each zone used: zone → cloud ID.")),
    securityGroupId: Type.Optional(Type.String({ description: "Cloud ID of the security group." })),
    keyPairId: Type.Optional(Type.String({ description: "Cloud ID of the SSH key pair." })),
    images: Type.Optional(MapOf(Type.String({ description: "Cloud ID of the image." }), "Resolved images: name → cloud ID.")),
    machineTypes: Type.Optional(MapOf(MachineTypeInfo, "Resolved machine types: name → size.")),
    loadBalancer: Type.Optional(
      Struct(
        {
          id: Type.String({ description: "Cloud ID of the load balancer." }),
          host: Type.String({ description: "Address clients reach the Kubernetes API at." }),
          internalHost: Type.Optional(Type.String({ description: "Name machines inside the cloud reach the Kubernetes API at (api-int), when the connection offers DNS." })),
          port: Type.Integer({ description: "Port of the Kubernetes API." }),
          url: Type.Optional(Type.String({ description: "URL clients use to reach the Kubernetes API (may differ from host:port)." })),
          publicIpId: Type.Optional(Type.String({ description: "Cloud ID of the public IP attached to it." })),
        },
        { description: "Load balancer in front of the control plane (control-plane connection only)." },
      ),
    ),
    zones: Type.Optional(Type.Array(Type.String(), { description: "Availability zones used, each with a subnet; machines are spread over them." })),
    publicAddresses: Type.Optional(
      Type.Boolean({ description: "True where the cluster spans clouds: machines made here get a public address, which the other clouds' nodes reach them at." }),
    ),
    crossCloudRules: Type.Optional(
      Type.Integer({ description: "Rules of the security group that admit the other clouds' node addresses (the Kubernetes ports only)." }),
    ),
    conditions: Type.Optional(Type.Array(Condition, { description: "Current conditions, e.g. Ready." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
    reason: Type.Optional(Type.String({ description: "Why the infrastructure is failing, e.g. CreateNetworkFailed." })),
    message: Type.Optional(Type.String({ description: "Human-readable details of the reason." })),
  },
  { description: "The observed state: the cloud resources made or found." },
);
export type InfrastructureStatus = Static<typeof InfrastructureStatusSchema>;

export const InfrastructureSchema = objectSchema(
  SLIPWAY_API_VERSION,
  "Infrastructure",
  "What one cluster needs in one connection.",
  { spec: InfrastructureSpecSchema, status: Type.Optional(InfrastructureStatusSchema) },
);
export type InfrastructureObject = ObjectOf<typeof InfrastructureSchema>;

export const infrastructureKind: KindDefinition<InfrastructureObject> = {
  ...slipwayKindBase,
  kind: "Infrastructure",
  plural: "infrastructures",
  singular: "infrastructure",
  shortNames: ["infra"],
  schema: InfrastructureSchema,
  description: "What one cluster needs in one connection: network, subnet, security group, key pair, load balancer.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the infrastructure."),
    fieldColumn("CLUSTER", ".spec.clusterName", "Cluster it is for."),
    fieldColumn("CONNECTION", ".spec.connection", "Connection it is built in."),
    fieldColumn("REGION", ".spec.region", "Region it is built in."),
    fieldColumn("PHASE", ".status.phase", "Where the infrastructure is in its life cycle."),
    ageColumn,
    fieldColumn("NETWORK", ".status.networkId", "Cloud ID of the network.", { priority: 1 }),
    computedColumn<InfrastructureObject>("LB", ".status.loadBalancer", "Control-plane load balancer (host:port).", (o) => {
      const lb = o.status?.loadBalancer;
      return lb ? `${lb.host}:${lb.port}` : undefined;
    }, { priority: 1 }),
  ],
  defaults: specDefaults(InfrastructureSpecSchema),
  validate(infra, old) {
    const errors: FieldError[] = [];
    try {
      parseCidr(infra.spec.nodeCIDR);
    } catch (error) {
      if (!(error instanceof InvalidCidrError)) throw error;
      errors.push(invalid("spec.nodeCIDR", infra.spec.nodeCIDR, error.detail));
    }
    if (old) {
      // Changing these would orphan what was built; a new Infrastructure is made instead.
      for (const key of ["clusterName", "connection", "region", "nodeCIDR"] as const) {
        errors.push(...immutable(`spec.${key}`, infra.spec[key], old.spec[key]));
      }
      errors.push(...immutable("spec.apiVisibility", infra.spec.apiVisibility ?? "public", old.spec.apiVisibility ?? "public"));
    }
    return errors;
  },
};
