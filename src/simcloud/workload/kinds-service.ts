// Core v1 Service of an emulated workload cluster: a stable name for the pods its selector picks. The
// emulator gives each a cluster IP from the cluster's service range and answers the API server's service
// proxy (services/<name>[:port]/proxy/…) with a small static-file responder, as an nginx serving the
// ConfigMap mounted into the selected pods would (see service-proxy.ts).
import { createHash } from "node:crypto";
import { Type } from "@sinclair/typebox";
import { ageColumn, computedColumn } from "../../api/columns.ts";
import { MapOf, StringEnum, Struct, objectSchema, type ObjectOf } from "../../api/meta.ts";
import type { FieldError, KindDefinition } from "../../api/registry.ts";
import { IntOrString } from "./kinds-podspec.ts";

const ServicePort = Struct(
  {
    name: Type.Optional(Type.String({ description: "Name of the port, unique in the service (required when there are several)." })),
    protocol: Type.Optional(StringEnum(["TCP", "UDP", "SCTP"], { description: "TCP (default), UDP or SCTP." })),
    appProtocol: Type.Optional(Type.String({ description: "Application protocol, e.g. http." })),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: "Port the service answers on." }),
    targetPort: Type.Optional(IntOrString("Port (number or container port name) of the pods.")),
    nodePort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Port on every node (NodePort and LoadBalancer)." })),
  },
  { description: "A port of the service." },
);

export const ServiceSchema = objectSchema("v1", "Service", "A stable name and address for a set of pods.", {
  spec: Type.Optional(
    Struct(
      {
        type: Type.Optional(StringEnum(["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"], { description: "How the service is exposed (default ClusterIP)." })),
        selector: Type.Optional(MapOf(Type.String(), "Pods with these labels back the service.")),
        ports: Type.Optional(Type.Array(ServicePort, { description: "Ports the service answers on." })),
        clusterIP: Type.Optional(Type.String({ description: "Virtual IP of the service (assigned when empty; None for a headless service)." })),
        clusterIPs: Type.Optional(Type.Array(Type.String(), { description: "Virtual IPs of the service." })),
        externalName: Type.Optional(Type.String({ description: "DNS name an ExternalName service aliases." })),
        sessionAffinity: Type.Optional(StringEnum(["None", "ClientIP"], { description: "None (default) or ClientIP." })),
        externalTrafficPolicy: Type.Optional(StringEnum(["Cluster", "Local"], { description: "How external traffic is routed." })),
        internalTrafficPolicy: Type.Optional(StringEnum(["Cluster", "Local"], { description: "How internal traffic is routed." })),
        ipFamilies: Type.Optional(Type.Array(Type.String(), { description: "IP families of the service." })),
        ipFamilyPolicy: Type.Optional(Type.String({ description: "SingleStack, PreferDualStack or RequireDualStack." })),
        publishNotReadyAddresses: Type.Optional(Type.Boolean({ description: "Whether pods not ready are published." })),
      },
      { description: "What the service selects and how it answers." },
    ),
  ),
  status: Type.Optional(
    Struct(
      { loadBalancer: Type.Optional(Struct({ ingress: Type.Optional(Type.Array(Struct({ ip: Type.Optional(Type.String()), hostname: Type.Optional(Type.String()) }, { description: "An ingress point." }))) }, { description: "The load balancer, if any." })) },
      { description: "What the service was given." },
    ),
  ),
});
export type ServiceObject = ObjectOf<typeof ServiceSchema>;

function portsText(service: ServiceObject): string {
  const ports = service.spec?.ports ?? [];
  return ports.length === 0 ? "<none>" : ports.map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ""}/${p.protocol ?? "TCP"}`).join(",");
}

export const serviceKind: KindDefinition<ServiceObject> = {
  group: "",
  version: "v1",
  kind: "Service",
  plural: "services",
  singular: "service",
  shortNames: ["svc"],
  namespaced: true,
  schema: ServiceSchema,
  description: "A stable name and address for a set of pods.",
  subresources: { status: true },
  printerColumns: [
    computedColumn<ServiceObject>("TYPE", ".spec.type", "How the service is exposed.", (o) => o.spec?.type ?? "ClusterIP"),
    computedColumn<ServiceObject>("CLUSTER-IP", ".spec.clusterIP", "Virtual IP of the service.", (o) => o.spec?.clusterIP ?? "<none>"),
    computedColumn<ServiceObject>("PORT(S)", ".spec.ports", "Ports the service answers on.", portsText),
    ageColumn,
  ],
  strategy: {
    // A virtual IP in the default service range, the same for the same name (addresses are not routed here).
    prepareForCreate(service) {
      const spec = (service.spec ??= {});
      if (spec.type === "ExternalName" || (spec.clusterIP && spec.clusterIP !== "")) return;
      const digest = createHash("sha256").update(`${service.metadata.namespace}/${service.metadata.name}`).digest();
      spec.clusterIP = `10.96.${digest[0]!}.${(digest[1]! % 254) + 1}`;
      spec.clusterIPs = [spec.clusterIP];
    },
    // The virtual IP stays what it was made with.
    prepareForUpdate(service, old) {
      if (!old.spec?.clusterIP || service.spec?.clusterIP) return;
      service.spec = { ...service.spec, clusterIP: old.spec.clusterIP, clusterIPs: old.spec.clusterIPs ?? [old.spec.clusterIP] };
    },
  },
  validate(service): FieldError[] {
    const ports = service.spec?.ports ?? [];
    const errors: FieldError[] = [];
    const names = new Set<string>();
    ports.forEach((p, i) => {
      if (ports.length > 1 && !p.name) errors.push({ field: `spec.ports[${i}].name`, reason: "FieldValueRequired", message: "Required value: a service with several ports names each" });
      if (p.name && names.has(p.name)) errors.push({ field: `spec.ports[${i}].name`, reason: "FieldValueDuplicate", message: `Duplicate value: "${p.name}"` });
      if (p.name) names.add(p.name);
    });
    return errors;
  },
};
