// The cloud's services: every kind of resource the sim cloud offers, in the order listings show them. A
// new service is its own file group (schema, record, service, descriptor: see resource-kinds.ts) and one
// entry here; its routes, client calls, operation names and listing follow from the descriptor.
import { dnsRecords, dnsZones } from "./dns-service.ts";
import { instances } from "./instance-service.ts";
import { keyPairs } from "./keypair-service.ts";
import { loadBalancers } from "./loadbalancer-service.ts";
import { networks, securityGroups, subnets } from "./network-service.ts";
import { publicIps } from "./publicip-service.ts";
import { ResourceRegistry } from "./registry.ts";
import { reservations } from "./reservation-service.ts";
import { scaleSets } from "./scaleset-service.ts";
import { secrets } from "./secret-service.ts";

export const BUILTIN_RESOURCES = [networks, subnets, securityGroups, keyPairs, publicIps, loadBalancers, instances, scaleSets, reservations, dnsZones, dnsRecords, secrets] as const;

export type BuiltinResources = typeof BUILTIN_RESOURCES;

/** The built-in kinds, looked up by kind and operation name. */
export const BUILTIN_REGISTRY = new ResourceRegistry(BUILTIN_RESOURCES);
