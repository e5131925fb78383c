// An API error as a person reads it: the message, and each offending field with what is wrong with it.
import { KubeApiError, KubeUnreachableError } from "../../../kubeclient/errors.ts";

export interface FieldProblem {
  field?: string;
  message: string;
}

/** The fields an Invalid (or BadRequest) answer names, from its Status causes. */
export function fieldProblems(error: unknown): FieldProblem[] {
  if (!(error instanceof KubeApiError)) return [];
  return (error.status?.details?.causes ?? []).map((c) => ({ ...(c.field ? { field: c.field } : {}), message: c.message }));
}

export function ErrorNotice({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const problems = fieldProblems(error);
  const reason = error instanceof KubeApiError ? error.reason : error instanceof KubeUnreachableError ? "Unreachable" : "Error";
  const message = (error as Error).message;
  return (
    <div class="notice error" role="alert" data-testid="api-error">
      <strong>{title ?? reason}</strong>
      {problems.length === 0 || !message.includes(":") ? <p>{message}</p> : <p>{message.split(":")[0]}</p>}
      {problems.length > 0 && (
        <ul class="causes">
          {problems.map((p, i) => (
            <li key={i}>
              {p.field && <code class="field" data-field={p.field}>{p.field}</code>} {p.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
