// One rolling mechanism for every set of machines made from a template — a worker pool today, the
// control plane and scale-set pools later. Given the machines, each with the hash of the template it was
// made from, and the template wanted, it decides which machines to create and which to drain and delete,
// new ones first, within maxSurge and maxUnavailable, the way a Kubernetes Deployment (and Cluster API's
// MachineDeployment) rolls its replicas. It only decides: the caller creates and deletes (a deleted
// machine drains its node first) and asks again as the machines change. Nothing here knows about pools.

export interface RolloutStrategy {
  /** Machines that may exist beyond the wanted number while rolling, so new ones come first. */
  maxSurge: number;
  /** Wanted machines that may be unavailable while rolling. */
  maxUnavailable: number;
}

/** New machines first, one at a time, and never fewer available than wanted. */
export const DEFAULT_ROLLOUT_STRATEGY: RolloutStrategy = { maxSurge: 1, maxUnavailable: 0 };

/** A machine of the set, as the rollout sees it. */
export interface RolloutMachine {
  name: string;
  /** Hash of the template the machine was made from (undefined: not known). */
  templateHash: string | undefined;
  /** Serving (for a node: Ready): removing it lowers what the set offers. */
  available: boolean;
  /** Being deleted already: it still holds its instance until it is gone. */
  deleting: boolean;
  /** Failed for good: it is deleted and replaced whatever the limits say. */
  failed: boolean;
}

export interface RolloutInput {
  /** Machines wanted. */
  desired: number;
  /** Hash of the template wanted. */
  templateHash: string;
  /** The set's machines; among equals, those listed first are deleted first. */
  machines: readonly RolloutMachine[];
  strategy?: Partial<RolloutStrategy>;
}

export interface RolloutPlan {
  /** Machines to create now, from the wanted template. */
  create: number;
  /** Names of the machines to delete now: failed ones, surplus, then those of older templates. */
  delete: string[];
  /** Machines at the wanted template, not being deleted. */
  updated: number;
  /** Of those, the available ones. */
  updatedAvailable: number;
  /** Machines of another template, not being deleted. */
  outdated: number;
  /** Exactly the wanted number of machines exists, all at the wanted template, all available. */
  complete: boolean;
}

/** The strategy with its defaults; both limits at 0 could never roll, so the surge is then 1. */
export function rolloutStrategy(strategy: Partial<RolloutStrategy> | undefined): RolloutStrategy {
  const maxSurge = Math.max(0, Math.floor(strategy?.maxSurge ?? DEFAULT_ROLLOUT_STRATEGY.maxSurge));
  const maxUnavailable = Math.max(0, Math.floor(strategy?.maxUnavailable ?? DEFAULT_ROLLOUT_STRATEGY.maxUnavailable));
  return maxSurge === 0 && maxUnavailable === 0 ? { maxSurge: 1, maxUnavailable: 0 } : { maxSurge, maxUnavailable };
}

/** Unavailable machines first, then in the order given. */
function deletionOrder(machines: readonly RolloutMachine[]): RolloutMachine[] {
  return [...machines].sort((a, b) => Number(a.available) - Number(b.available));
}

export function planRollout(input: RolloutInput): RolloutPlan {
  const { maxSurge, maxUnavailable } = rolloutStrategy(input.strategy);
  const desired = Math.max(0, input.desired);
  const active = input.machines.filter((m) => !m.deleting);
  const leaving = input.machines.length - active.length;
  const failed = active.filter((m) => m.failed);
  const live = active.filter((m) => !m.failed);
  const fresh = live.filter((m) => m.templateHash === input.templateHash);
  const old = live.filter((m) => m.templateHash !== input.templateHash);
  const remove: RolloutMachine[] = [...failed];

  // New machines beyond the wanted number go at once (a scale-down), unavailable ones first.
  const surplus = deletionOrder(fresh).slice(0, Math.max(0, fresh.length - desired));
  remove.push(...surplus);
  const kept = fresh.filter((m) => !surplus.includes(m));
  const keptAvailable = kept.filter((m) => m.available).length;

  // New machines up to the wanted number, within desired + maxSurge machines in all: those being
  // deleted count until they are gone, as their instances are still there.
  const present = kept.length + old.length + leaving + failed.length;
  const create = Math.max(0, Math.min(desired - kept.length, desired + maxSurge - present));

  // Old machines go while enough stay available (as a Deployment scales its old replica sets down):
  // unavailable ones first, as they take nothing away, then available ones down to the minimum.
  const minAvailable = Math.max(0, desired - maxUnavailable);
  const newUnavailable = kept.length + create - keptAvailable;
  const maxScaledDown = kept.length + create + old.length - minAvailable - newUnavailable;
  if (maxScaledDown > 0) {
    const unavailableOld = old.filter((m) => !m.available).slice(0, maxScaledDown);
    remove.push(...unavailableOld);
    const availableOld = old.filter((m) => m.available);
    const removable = Math.min(maxScaledDown - unavailableOld.length, keptAvailable + availableOld.length - minAvailable);
    remove.push(...availableOld.slice(0, Math.max(0, removable)));
  }

  return {
    create,
    delete: remove.map((m) => m.name),
    updated: kept.length,
    updatedAvailable: keptAvailable,
    outdated: old.length,
    complete: leaving === 0 && failed.length === 0 && old.length === 0 && kept.length === desired && keptAvailable === desired && surplus.length === 0,
  };
}
