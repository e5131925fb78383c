// The 403 of a request the authorizer refused, worded exactly as kube-apiserver words it
// (responsewriters.Forbidden + apierrors.NewForbidden), because clients and people match on it:
//   pods "web" is forbidden: User "bob" cannot delete resource "pods" in API group "" in the namespace "team-a"
//   nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope
//   forbidden: User "bob" cannot get path "/metrics"
import { ForbiddenError } from "../errors.ts";
import { isResourceRequest, type RequestAttributes } from "./types.ts";

/** A string quoted as Go's %q quotes it (printable Unicode kept, the rest escaped). */
export function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** kube-apiserver keeps its error messages from reading as HTML. */
function sanitized(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** What the user cannot do, without the leading resource and name. */
export function forbiddenReason(request: RequestAttributes): string {
  const user = goQuote(request.identity.user);
  if (!isResourceRequest(request)) return `User ${user} cannot ${request.verb} path ${goQuote(request.path)}`;
  const { group, resource, subresource, namespace } = request.resource;
  const combined = subresource ? `${resource}/${subresource}` : resource;
  const scope = namespace ? `in the namespace ${goQuote(namespace)}` : "at the cluster scope";
  return `User ${user} cannot ${request.verb} resource ${goQuote(combined)} in API group ${goQuote(group)} ${scope}`;
}

/** The whole message; `reason` is the authorizer's (e.g. why a binding's role could not be resolved). */
export function forbiddenMessage(request: RequestAttributes, reason = ""): string {
  const detail = sanitized(forbiddenReason(request)) + (reason ? `: ${reason}` : "");
  if (!isResourceRequest(request)) return `forbidden: ${detail}`;
  const { group, resource, name } = request.resource;
  const qualified = group ? `${resource}.${group}` : resource;
  return name ? `${qualified} ${goQuote(name)} is forbidden: ${detail}` : `${qualified} is forbidden: ${detail}`;
}

/** The Forbidden error (403, Status details naming the resource) of a refused request. */
export function forbiddenError(request: RequestAttributes, reason = ""): ForbiddenError {
  const message = forbiddenMessage(request, reason);
  if (!isResourceRequest(request)) return new ForbiddenError(message);
  const { group, resource, name } = request.resource;
  return new ForbiddenError(message, { group, kind: "", plural: resource, name });
}
