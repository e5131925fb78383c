// The operation controller: keeps each Operation record honest about its target (see status.ts for the
// rules), as ARO-RP's asynchronous operation records are, and records an Event on the Operation for each
// phase it enters. It reconciles an Operation when the Operation changes and when its target does;
// an Operation shares the shard of its target, so one replica handles a cluster and its operations.
import type { KindDefinition } from "../../api/registry.ts";
import { apiVersionOf } from "../../api/registry.ts";
import type { KubeObject } from "../../api/meta.ts";
import type { OperationObject } from "../../api/kinds.ts";
import { operationKind } from "../../api/slipway/operation.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { machinePoolKind } from "../../api/slipway/machinepool.ts";
import type { Controller } from "../../runtime/controller.ts";
import type { Informer } from "../../runtime/informer.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { operationPhases, type OperationScope } from "./phases.ts";
import { awaitsRecovery, isTerminal, phaseEvent, recoveryEvent, type TargetObject } from "./status.ts";

export const OPERATION_CONTROLLER = "operation";
export const OPERATION_COMPONENT = "slipway.dev/operation-controller";
/** Index of the operations that follow their target (in progress, or Failed and not recovered), by target: "<apiVersion>/<kind>/<namespace>/<name>". */
export const TARGET_INDEX = "target";

/** Kinds whose objects operations act on (they follow the phase/observedGeneration convention). */
export const DEFAULT_TARGET_KINDS: readonly KindDefinition[] = [
  clusterKind as unknown as KindDefinition,
  machinePoolKind as unknown as KindDefinition,
];

export interface OperationControllerOptions {
  concurrency?: number;
  targetKinds?: readonly KindDefinition[];
}

function targetId(apiVersion: string, kind: string, namespace: string | undefined, name: string): string {
  return `${apiVersion}/${kind}/${namespace ?? ""}/${name}`;
}

export function registerOperationController(manager: ControllerManager, options: OperationControllerOptions = {}): Controller<OperationObject> {
  const operations = manager.informer(operationKind);
  // Ended operations never change again: only those in progress follow their target, and Failed ones
  // until their target recovers.
  operations.cache.addIndex(TARGET_INDEX, (op) => {
    if (isTerminal(op.status?.phase) && !awaitsRecovery(op.status)) return [];
    const t = op.spec.target;
    return [targetId(t.apiVersion, t.kind, op.metadata.namespace, t.name)];
  });
  const targets = (options.targetKinds ?? DEFAULT_TARGET_KINDS).map((kind) => ({
    apiVersion: apiVersionOf(kind),
    kind: kind.kind,
    def: kind,
    informer: manager.informer(kind) as Informer<KubeObject>,
  }));

  const reconcile = objectReconciler<OperationObject, OperationScope>({
    kind: operationKind,
    cache: operations.cache,
    phases: operationPhases,
    scope: async (ctx, base) => {
      const t = base.object.spec.target;
      const followed = targets.find((k) => k.apiVersion === t.apiVersion && k.kind === t.kind);
      let target = followed?.informer.cache.get(keyFor(base.object.metadata.namespace, t.name)) as TargetObject | undefined;
      // The cache may not hold the target yet: its watch is not the operation's, and can deliver later
      // than the operation made after it. An operation in progress is not ended on a target gone or
      // replaced before a read of the latest write says so.
      if (followed && !isTerminal(base.object.status?.phase) && target?.metadata.uid !== t.uid) {
        target = (await ctx.client.of(followed.def).tryGet(base.object.metadata.namespace, t.name)) as TargetObject | undefined;
      }
      return { ...base, target, followed: followed !== undefined };
    },
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      const phase = written.status?.phase;
      if (written.status?.recoveredTime && !previous.status?.recoveredTime) {
        const event = recoveryEvent(written);
        await ctx.event(written, event.type, event.reason, event.message);
      }
      if (!phase || phase === previous.status?.phase) return;
      const event = phaseEvent(written, phase);
      await ctx.event(written, event.type, event.reason, event.message);
    },
  });

  const controller = manager.add<OperationObject>({
    name: OPERATION_CONTROLLER,
    component: OPERATION_COMPONENT,
    informer: operations,
    reconcile,
    concurrency: options.concurrency,
    // An operation lives in the shard of its target.
    rootKey: (key) => {
      const op = operations.cache.get(key);
      return op ? keyFor(op.metadata.namespace, op.spec.target.name) : key;
    },
    // An ended operation changes only with its target (watched below), if at all.
    resyncs: (op) => !isTerminal(op.status?.phase),
  });
  for (const { apiVersion, kind, informer } of targets) {
    controller.watch(informer, (target) =>
      operations.cache.indexKeys(TARGET_INDEX, targetId(apiVersion, kind, target.metadata.namespace, target.metadata.name ?? "")),
    );
  }
  return controller;
}
