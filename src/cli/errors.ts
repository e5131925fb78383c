// What the CLI says when something goes wrong: one line naming the object, the field and the problem.
import { KubeconfigError } from "../bootstrap/kubeconfig.ts";
import {
  KubeApiError,
  KubeForbiddenError,
  KubeInvalidError,
  KubeNotFoundError,
  KubeUnauthorizedError,
  KubeUnreachableError,
  type ApiResource,
} from "../kubeclient/index.ts";

/** A command failed (exit code 1); the message is printed as it is. */
export class CliError extends Error {
  override readonly name: string = "CliError";
}

/** The object a command names does not exist. */
export class ObjectNotFoundError extends CliError {
  override readonly name = "ObjectNotFoundError";
  constructor(
    readonly resource: Pick<ApiResource, "singularName" | "namespaced">,
    readonly objectName: string,
    readonly namespace: string,
  ) {
    super(`${resource.singularName} "${objectName}" not found${resource.namespaced ? ` in namespace ${namespace}` : ""}`);
  }
}

/** Runs `request` and reports a 404 as the named object missing. */
export async function orNotFound<T>(request: Promise<T>, resource: Pick<ApiResource, "singularName" | "namespaced">, name: string, namespace: string): Promise<T> {
  try {
    return await request;
  } catch (error) {
    if (error instanceof KubeNotFoundError) throw new ObjectNotFoundError(resource, name, namespace);
    throw error;
  }
}

/** `Cluster "demo" is invalid: spec.controlPlane.replicas: Unsupported value: 2: …`, every cause on one line. */
function invalidLine(error: KubeInvalidError): string {
  const details = error.status?.details;
  const causes = error.causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  if (!details?.kind || !details.name || causes.length === 0) return error.message;
  return `${details.kind} "${details.name}" is invalid: ${causes.join("; ")}`;
}

/** Why a request got no answer: the socket's own words (ECONNREFUSED, certificate errors, time limit). */
function unreachableWhy(error: KubeUnreachableError): string {
  const cause = error.cause;
  if (cause instanceof Error && cause.message) return cause.message;
  return error.message;
}

/** The one line (without `error: `) that tells a user what went wrong. */
export function errorLine(error: unknown): string {
  if (error instanceof KubeUnreachableError) {
    return `cannot reach the Slipway API at ${error.server}: ${unreachableWhy(error)} (is slipway up running?)`;
  }
  if (error instanceof KubeInvalidError) return invalidLine(error);
  if (error instanceof KubeUnauthorizedError) return `the Slipway API refused the kubeconfig's credentials (${error.message}); is it the kubeconfig of this control plane?`;
  if (error instanceof KubeForbiddenError) return `forbidden: ${error.message}`;
  if (error instanceof KubeApiError) return error.message;
  if (error instanceof KubeconfigError) return `invalid kubeconfig: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** The command failed and has already said why (exit code 1, nothing more printed). */
export class ReportedFailure extends Error {
  override readonly name = "ReportedFailure";
  constructor() {
    super("the command failed");
  }
}
