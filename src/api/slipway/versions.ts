// Kubernetes versions and the version-skew rules an upgrade follows
// (https://kubernetes.io/releases/version-skew-policy/): no downgrade; the control plane moves one minor
// version at a time; kubelets are never newer than the API servers (Slipway upgrades the workers only
// once every control-plane machine runs the new version). A refusal names the rule it breaks.
import { invalid } from "../field-errors.ts";
import type { FieldError } from "../registry.ts";

/** [major, minor, patch] of v1.31.2 (undefined when it does not look like one). */
export function parseVersion(version: string | undefined): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version ?? "");
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

/** Negative, 0 or positive as a is older than, the same as or newer than b (unparsable versions are equal). */
export function compareVersions(a: string, b: string): number {
  const [x, y] = [parseVersion(a), parseVersion(b)];
  if (!x || !y) return 0;
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
}

/** The oldest of the versions given, if any. */
export function oldestVersion(versions: readonly (string | undefined)[]): string | undefined {
  return versions.filter((v): v is string => parseVersion(v) !== undefined).sort(compareVersions)[0];
}

/** The same version, whether or not it was written with the leading "v". */
export function sameVersion(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a.replace(/^v/, "") === b.replace(/^v/, "");
}

/**
 * Why `wanted` may not replace `running` (the version the control plane runs, or was asked to): a
 * downgrade, or a jump of more than one minor version.
 */
export function upgradeErrors(field: string, wanted: string | undefined, running: string | undefined): FieldError[] {
  const to = parseVersion(wanted);
  const from = parseVersion(running);
  if (!to || !from || wanted === undefined || running === undefined) return [];
  if (compareVersions(wanted, running) < 0) {
    return [invalid(field, wanted, `version skew rule "no downgrade": the cluster runs ${running}, and a Kubernetes cluster cannot be downgraded`)];
  }
  if (to[1] > from[1] + 1) {
    return [
      invalid(field, wanted, `version skew rule "one minor version at a time": the cluster runs ${running}, so the next upgrade is to v${from[0]}.${from[1] + 1}.x; upgrade to it first`),
    ];
  }
  return [];
}
