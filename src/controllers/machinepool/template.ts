// A pool's machine template — what each of its machines is made from: machine type, image, Kubernetes
// version, and the labels and taints its node registers with — and which machines are made from the current one. A
// change of the template rolls the pool's machines (rollout/plan.ts); the Cluster reads the same to say
// how many of its workers are up to date.
import type { MachineObject } from "../../api/kinds.ts";
import { DEFAULT_IMAGE, type Taint } from "../../api/slipway/nodes.ts";
import { LABEL_TEMPLATE_HASH } from "../../api/slipway/machinepool.ts";
import { templateHash } from "../rollout/hash.ts";
import { sameVersion } from "../../api/slipway/versions.ts";

/** The fields of a pool's spec (a MachinePool's, or a Cluster's worker pool) that make its machines. */
export interface PoolTemplateSource {
  machineType: string;
  image?: string;
  labels?: Record<string, string>;
  taints?: Taint[];
  /** The Kubernetes version of the machines (not part of the hash: pools made before it was recorded do not roll). */
  version?: string;
}

export interface PoolTemplate {
  machineType: string;
  image: string;
  labels: Record<string, string>;
  taints: Taint[];
  version?: string;
  hash: string;
}

export function poolTemplate(source: PoolTemplateSource): PoolTemplate {
  const template = { machineType: source.machineType, image: source.image ?? DEFAULT_IMAGE, labels: source.labels ?? {}, taints: source.taints ?? [] };
  return { ...template, ...(source.version ? { version: source.version } : {}), hash: templateHash(template) };
}

/**
 * The template hash a machine was made from. A machine made before hashes were recorded is taken as
 * made from the current template when its machine type and image are the template's (its labels and
 * taints cannot be told): an upgrade of Slipway does not roll every pool.
 */
export function machineTemplateHash(machine: MachineObject, template: PoolTemplate): string | undefined {
  // A machine of another Kubernetes version is rolled as one of another template is.
  if (!atVersion(machine, template.version)) return undefined;
  const recorded = machine.metadata.labels?.[LABEL_TEMPLATE_HASH];
  if (recorded !== undefined) return recorded;
  const sameMachine = machine.spec.machineType === template.machineType && (machine.spec.image ?? DEFAULT_IMAGE) === template.image;
  return sameMachine ? template.hash : undefined;
}

/**
 * Whether the machine runs `version`: the one it was made with, or (made before machines recorded one)
 * the one its node reports. No version wanted, or a machine whose version is not known yet, raises no question.
 */
export function atVersion(machine: MachineObject, version: string | undefined): boolean {
  const own = machine.spec.version ?? machine.status?.kubeletVersion;
  return version === undefined || own === undefined || sameVersion(own, version);
}

/**
 * What a scale set's launch template is made for: the template's hash and, when the pool names one, its
 * Kubernetes version. The SimMachinePool records it once its launch template is brought to the pool's
 * spec, so the pool knows which instances the cloud launches from the current template.
 */
export function launchTemplateKey(source: PoolTemplateSource): string {
  const template = poolTemplate(source);
  return template.version ? `${template.hash}@${template.version}` : template.hash;
}

export function isCurrent(machine: MachineObject, template: PoolTemplate): boolean {
  return machineTemplateHash(machine, template) === template.hash;
}
