// Pods, services, claims and quotas for the tests of this folder, written the way a manifest would say them.
import type { QuotaCountedObject } from "./evaluators.ts";
import type { ResourceQuotaLike } from "./quota-object.ts";

type Resources = { requests?: Record<string, string>; limits?: Record<string, string> };

export interface PodOptions {
  containers?: ({ name: string } & Resources)[];
  initContainers?: ({ name: string; restartPolicy?: string } & Resources)[];
  phase?: string;
  resourceVersion?: string;
  spec?: Record<string, unknown>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
}

const withResources = ({ requests, limits, ...rest }: { name: string; restartPolicy?: string } & Resources) => ({
  ...rest,
  image: "nginx",
  resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) },
});

export function pod(name: string, options: PodOptions = {}): QuotaCountedObject & { kind: string } {
  return {
    kind: "Pod",
    metadata: {
      name,
      ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}),
      ...(options.deletionTimestamp ? { deletionTimestamp: options.deletionTimestamp } : {}),
      ...(options.deletionGracePeriodSeconds !== undefined ? { deletionGracePeriodSeconds: options.deletionGracePeriodSeconds } : {}),
    },
    spec: {
      containers: (options.containers ?? [{ name: "app" }]).map(withResources),
      ...(options.initContainers ? { initContainers: options.initContainers.map(withResources) } : {}),
      ...options.spec,
    },
    ...(options.phase ? { status: { phase: options.phase } } : {}),
  };
}

/** A pod of one container "app" with these requests (and limits, if given). */
export function podRequesting(name: string, requests: Record<string, string>, limits?: Record<string, string>): QuotaCountedObject & { kind: string } {
  return pod(name, { containers: [{ name: "app", requests, ...(limits ? { limits } : {}) }] });
}

export function service(name: string, spec: Record<string, unknown> = {}, resourceVersion?: string): QuotaCountedObject & { kind: string } {
  return { kind: "Service", metadata: { name, ...(resourceVersion ? { resourceVersion } : {}) }, spec: { ports: [{ port: 80 }], ...spec } };
}

export function claim(name: string, storage: string, storageClassName?: string, resourceVersion?: string): QuotaCountedObject & { kind: string } {
  return {
    kind: "PersistentVolumeClaim",
    metadata: { name, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: { resources: { requests: { storage } }, ...(storageClassName ? { storageClassName } : {}) },
  };
}

/** A quota whose controller has computed its status: enforced limits `hard`, current usage `used`. */
export function quota(name: string, hard: Record<string, string>, used: Record<string, string>, spec: Record<string, unknown> = {}): ResourceQuotaLike {
  return { metadata: { name, namespace: "team-a", resourceVersion: "7" }, spec: { hard, ...spec }, status: { hard, used } };
}
