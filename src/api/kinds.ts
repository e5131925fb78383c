// Every kind the API serves, and the registry the API server is built over.
import { Registry, type KindDefinition } from "./registry.ts";
import type { KubeObject } from "./meta.ts";
import { configMapKind, eventKind, namespaceKind, secretKind, serviceAccountKind } from "./core.ts";
import { rbacKinds } from "./rbac.ts";
import { connectionKind, connectionKindFor, type InstalledProviders } from "./slipway/connection.ts";
import { clusterKind } from "./slipway/cluster.ts";
import { infrastructureKind } from "./slipway/infrastructure.ts";
import { machinePoolKind } from "./slipway/machinepool.ts";
import { machineKind } from "./slipway/machine.ts";
import { bootstrapConfigKind } from "./slipway/bootstrapconfig.ts";
import { simMachinePoolKind } from "./slipway/simmachinepool.ts";
import { hostMachinePoolKind } from "./slipway/hostmachinepool.ts";
import { operationKind } from "./slipway/operation.ts";
import { leaseKind } from "./slipway/lease.ts";
import { clusterTemplateKind } from "./slipway/clustertemplate.ts";
import { resourceSyncKind } from "./slipway/resourcesync.ts";
import { logicalCloudKind } from "./slipway/logicalcloud.ts";
import { hostKind } from "./slipway/host.ts";
import { addonKind } from "./slipway/addon.ts";
import { oidcClientKind, platformKind, realmKind, realmUserKind } from "./slipway/realm.ts";

export type { EventObject, NamespaceObject, ObjectReference, SecretObject } from "./core.ts";
export type { ConnectionObject, ConnectionSpec, ConnectionStatus } from "./slipway/connection.ts";
export type { ClusterObject, ClusterSpec, ClusterStatus, ClusterStep, WorkerPoolSpec } from "./slipway/cluster.ts";
export type { InfrastructureObject, InfrastructureSpec, InfrastructureStatus } from "./slipway/infrastructure.ts";
export type { MachinePoolObject, MachinePoolSpec, MachinePoolStatus } from "./slipway/machinepool.ts";
export type { BootstrapConfigObject } from "./slipway/bootstrapconfig.ts";
export type { SimMachinePoolObject } from "./slipway/simmachinepool.ts";
export type { HostMachinePoolObject } from "./slipway/hostmachinepool.ts";
export type { MachineAddress, MachineObject, MachineSpec, MachineStatus } from "./slipway/machine.ts";
export type { OperationObject, OperationSpec, OperationStatus } from "./slipway/operation.ts";
export type { HostObject, HostSpec, HostStatus } from "./slipway/host.ts";
export type { LeaseObject, LeaseSpec, LeaseStatus } from "./slipway/lease.ts";
export type { ClusterTemplateObject, ClusterTemplateSpec } from "./slipway/clustertemplate.ts";

/** A kind's definition as the registry holds it, whatever its object type. */
function general<T extends KubeObject>(definition: KindDefinition<T>): KindDefinition {
  return definition as unknown as KindDefinition;
}

export const coreKinds: readonly KindDefinition[] = [general(namespaceKind), general(secretKind), general(configMapKind), general(eventKind), general(serviceAccountKind)];

/** Who may do what on the control plane: Role, ClusterRole, RoleBinding, ClusterRoleBinding. */
export { rbacKinds };

export const slipwayKinds: readonly KindDefinition[] = [
  general(connectionKind),
  general(clusterKind),
  general(infrastructureKind),
  general(machinePoolKind),
  general(machineKind),
  general(bootstrapConfigKind),
  general(simMachinePoolKind),
  general(hostMachinePoolKind),
  general(operationKind),
  general(leaseKind),
  general(clusterTemplateKind),
  general(resourceSyncKind),
  general(logicalCloudKind),
  general(hostKind),
  general(addonKind),
  general(realmKind),
  general(realmUserKind),
  general(oidcClientKind),
  general(platformKind),
];

export interface RegistryOptions {
  /** The providers installed: Connection admission refuses any other (unchecked when not given). */
  providers?: InstalledProviders;
}

export function defaultRegistry(options: RegistryOptions = {}): Registry {
  const { providers } = options;
  const kinds = providers ? slipwayKinds.map((k) => (k.kind === connectionKind.kind ? general(connectionKindFor(providers)) : k)) : slipwayKinds;
  return new Registry([...coreKinds, ...rbacKinds, ...kinds]);
}
