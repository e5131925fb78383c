// The RBAC authorizer, with kube-apiserver's semantics: members of system:masters may do anything; anyone
// else may do what a rule of a role bound to them allows — ClusterRoleBindings everywhere, RoleBindings
// (to a Role of their namespace or to a ClusterRole) only within their own namespace. A binding whose role
// cannot be resolved grants nothing, and a denial says why ("RBAC: role.rbac.authorization.k8s.io "x" not
// found"). Also the rules that apply to a user in a namespace, for SelfSubjectRulesReview.
import { RoleResolutionError, type MatchedBinding, type PolicyIndex } from "./policy-index.ts";
import { ruleAllows } from "./rules.ts";
import { goQuote } from "./forbidden.ts";
import { GROUP_MASTERS, isResourceRequest, type PolicyRule, type RbacDecision, type RequestAttributes, type Subject, type UserInfo } from "./types.ts";

/** A rule about resources, as SelfSubjectRulesReview reports it. */
export interface ResourceRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

/** A rule about paths outside the resources, as SelfSubjectRulesReview reports it. */
export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs?: string[];
}

/** The `status` of a SelfSubjectRulesReview. */
export interface SubjectRulesReviewStatus {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  /** True when some binding's role could not be resolved, so the user may hold fewer rules than bound. */
  incomplete: boolean;
  evaluationError?: string;
}

function describeSubject(subject: Subject, bindingNamespace: string): string {
  if (subject.kind === "ServiceAccount") return `${subject.kind} ${goQuote(`${subject.name}/${subject.namespace || bindingNamespace}`)}`;
  return `${subject.kind} ${goQuote(subject.name)}`;
}

/** Each binding's "allowed by" text per subject, made once: an allowed request names its source every time. */
const sources = new WeakMap<MatchedBinding["binding"], Map<MatchedBinding["subject"], string>>();

/** "ClusterRoleBinding "x" of ClusterRole "view" to User "bob"", as Kubernetes names a rule's source. */
function describeSource({ binding, subject }: MatchedBinding): string {
  let bySubject = sources.get(binding);
  if (!bySubject) sources.set(binding, (bySubject = new Map()));
  let text = bySubject.get(subject);
  if (text === undefined) {
    const name = binding.kind === "ClusterRoleBinding" ? binding.name : `${binding.name}/${binding.namespace}`;
    text = `RBAC: allowed by ${binding.kind} ${goQuote(name)} of ${binding.roleRef.kind} ${goQuote(binding.roleRef.name)} to ${describeSubject(subject, binding.namespace)}`;
    bySubject.set(subject, text);
  }
  return text;
}

/** Kubernetes' aggregate error text: one message as it is, several (without repeats) in brackets. */
export function aggregateErrors(errors: readonly string[]): string {
  const unique = [...new Set(errors)];
  return unique.length === 1 ? (unique[0] ?? "") : `[${unique.join(", ")}]`;
}

export class RbacAuthorizer {
  constructor(readonly policy: PolicyIndex) {}

  authorize(request: RequestAttributes): RbacDecision {
    const { identity } = request;
    if (identity.groups.includes(GROUP_MASTERS)) return { allowed: true, reason: `RBAC: allowed as a member of group ${goQuote(GROUP_MASTERS)}` };
    const namespace = isResourceRequest(request) ? (request.resource.namespace ?? "") : "";
    const errors: string[] = [];
    for (const matched of this.bindingsFor(identity, namespace)) {
      const rules = this.policy.roleRules(matched.binding.roleRef, matched.binding.namespace);
      if (rules instanceof RoleResolutionError) {
        errors.push(rules.message);
        continue;
      }
      if (rules.some((rule) => ruleAllows(request, rule))) return { allowed: true, reason: describeSource(matched) };
    }
    return { allowed: false, reason: errors.length > 0 ? `RBAC: ${aggregateErrors(errors)}` : "" };
  }

  /** Every rule bound to the user in `namespace` ("" for cluster-wide bindings only), and resolution errors. */
  rulesFor(identity: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[] } {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    for (const matched of this.bindingsFor(identity, namespace)) {
      const found = this.policy.roleRules(matched.binding.roleRef, matched.binding.namespace);
      if (found instanceof RoleResolutionError) errors.push(found.message);
      else rules.push(...found);
    }
    return { rules, errors };
  }

  /** What SelfSubjectRulesReview (`kubectl auth can-i --list`) answers for the user in `namespace`. */
  rulesReview(identity: UserInfo, namespace: string): SubjectRulesReviewStatus {
    const { rules, errors } = this.rulesFor(identity, namespace);
    const status: SubjectRulesReviewStatus = {
      resourceRules: rules.filter((r) => (r.resources ?? []).length > 0).map(resourceRuleOf),
      nonResourceRules: rules.filter((r) => (r.nonResourceURLs ?? []).length > 0).map((r) => ({ verbs: [...r.verbs], nonResourceURLs: [...(r.nonResourceURLs ?? [])] })),
      incomplete: errors.length > 0,
    };
    if (errors.length > 0) status.evaluationError = aggregateErrors(errors);
    return status;
  }

  /** ClusterRoleBindings first, then the RoleBindings of the namespace, each by name. */
  private bindingsFor(identity: UserInfo, namespace: string): MatchedBinding[] {
    return [...this.policy.clusterBindingsFor(identity), ...this.policy.namespaceBindingsFor(identity, namespace)];
  }
}

function resourceRuleOf(rule: PolicyRule): ResourceRule {
  const out: ResourceRule = { verbs: [...rule.verbs] };
  if (rule.apiGroups?.length) out.apiGroups = [...rule.apiGroups];
  if (rule.resources?.length) out.resources = [...rule.resources];
  if (rule.resourceNames?.length) out.resourceNames = [...rule.resourceNames];
  return out;
}
