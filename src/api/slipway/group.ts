// The slipway.dev/v1alpha1 API group: its name, and what every kind in it shares.
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import type { KindDefinition } from "../registry.ts";
import { Condition, type KubeObject } from "../meta.ts";

export const SLIPWAY_GROUP = "slipway.dev";
export const SLIPWAY_VERSION = "v1alpha1";
export const SLIPWAY_API_VERSION = `${SLIPWAY_GROUP}/${SLIPWAY_VERSION}`;

/** Group, version and category of every Slipway kind (`kubectl get slipway` lists them all). */
export const slipwayKindBase = {
  group: SLIPWAY_GROUP,
  version: SLIPWAY_VERSION,
  namespaced: true,
  categories: ["slipway"],
  subresources: { status: true },
} satisfies Partial<KindDefinition>;

/**
 * A defaults hook that fills the spec's schema defaults, so that an object built in process (by a
 * controller or a test) comes out complete even when it never passed through the API server.
 */
export function specDefaults<T extends KubeObject & { spec?: unknown }>(specSchema: TSchema): (object: T) => void {
  return (object) => {
    if (object.spec !== undefined) object.spec = Value.Default(specSchema, object.spec);
  };
}

/** `status.observedGeneration`, as every kind with a spec reports it. */
export const ObservedGeneration = Type.Optional(Type.Integer({ description: "The spec generation this status describes." }));

/**
 * The status fields saying why an object is not where it should be (`reason`, `message`), with its
 * `conditions` and `observedGeneration`; the descriptions say what each holds for the kind.
 */
export function reportedState(describe: { reason: string; message?: string; conditions: string }) {
  return {
    reason: Type.Optional(Type.String({ description: describe.reason })),
    message: Type.Optional(Type.String({ description: describe.message ?? "Human-readable details of the reason." })),
    conditions: Type.Optional(Type.Array(Condition, { description: describe.conditions })),
    observedGeneration: ObservedGeneration,
  };
}
