// Kubernetes' LabelSelector (metav1.LabelSelector) as a schema, its validation and its meaning: every
// matchLabels pair and every matchExpressions requirement must hold; an empty selector matches
// everything. Kinds that choose objects by label (ResourceSync and LogicalCloud choosing clusters) use it.
import { Type, type Static } from "@sinclair/typebox";
import { MapOf, Struct } from "./meta.ts";
import type { FieldError } from "./registry.ts";
import { invalid, notSupported, required } from "./field-errors.ts";
import { nodeLabelErrors } from "./slipway/nodes.ts";

export const SELECTOR_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"] as const;

export function labelSelectorSchema(description: string) {
  return Struct(
    {
      matchLabels: Type.Optional(MapOf(Type.String(), "Labels an object must carry with exactly these values.")),
      matchExpressions: Type.Optional(
        Type.Array(
          Struct(
            {
              key: Type.String({ description: "Label key." }),
              operator: Type.String({ description: "In, NotIn, Exists or DoesNotExist." }),
              values: Type.Optional(Type.Array(Type.String(), { description: "Values for In and NotIn." })),
            },
            { description: "A requirement on one label." },
          ),
          { description: "Requirements every chosen object meets." },
        ),
      ),
    },
    { description },
  );
}

export type LabelSelector = Static<ReturnType<typeof labelSelectorSchema>>;

export function labelSelectorErrors(field: string, selector: LabelSelector | undefined): FieldError[] {
  if (!selector) return [];
  const errors = nodeLabelErrors(`${field}.matchLabels`, selector.matchLabels);
  (selector.matchExpressions ?? []).forEach((expression, i) => {
    const at = `${field}.matchExpressions[${i}]`;
    errors.push(...nodeLabelErrors(`${at}.key`, { [expression.key]: "" }).map((e) => ({ ...e, field: `${at}.key` })));
    if (!(SELECTOR_OPERATORS as readonly string[]).includes(expression.operator)) {
      errors.push(notSupported(`${at}.operator`, expression.operator, SELECTOR_OPERATORS));
      return;
    }
    const values = expression.values ?? [];
    if ((expression.operator === "In" || expression.operator === "NotIn") && values.length === 0) {
      errors.push(required(`${at}.values`, `Required value: must be specified when operator is ${expression.operator}`));
    }
    if ((expression.operator === "Exists" || expression.operator === "DoesNotExist") && values.length > 0) {
      errors.push(invalid(`${at}.values`, values, `may not be specified when operator is ${expression.operator}`));
    }
  });
  return errors;
}

/** Whether labels satisfy the selector (an empty selector matches everything). */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string> | undefined): boolean {
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (have[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const present = Object.hasOwn(have, key);
    const holds =
      operator === "In" ? present && values.includes(have[key]!)
      : operator === "NotIn" ? !present || !values.includes(have[key]!)
      : operator === "Exists" ? present
      : operator === "DoesNotExist" ? !present
      : false;
    if (!holds) return false;
  }
  return true;
}

/** The selector in Kubernetes' string form (`a=b,c in (x,y),!d`), as a Scale's status.selector carries it. */
export function formatSelector(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    if (operator === "In") parts.push(`${key} in (${values.join(",")})`);
    else if (operator === "NotIn") parts.push(`${key} notin (${values.join(",")})`);
    else if (operator === "Exists") parts.push(key);
    else if (operator === "DoesNotExist") parts.push(`!${key}`);
  }
  return parts.join(",");
}
