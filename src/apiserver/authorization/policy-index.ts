// The RBAC objects of one API server, indexed for evaluation: roles by name, and bindings by the subjects
// they name, so a request looks only at the bindings that can apply to its user and groups instead of
// walking every binding. The owner keeps it current from informer-style events of the four kinds (it is
// an InformerHandler for each); objects of other kinds are ignored.
import { SERVICE_ACCOUNT_USER_PREFIX, type BindingObject, type PolicyRule, type RbacObject, type RoleObject, type RoleRef, type Subject, type UserInfo } from "./types.ts";

interface IndexedBinding {
  readonly kind: "RoleBinding" | "ClusterRoleBinding";
  readonly name: string;
  /** "" for a ClusterRoleBinding. */
  readonly namespace: string;
  readonly subjects: readonly Subject[];
  readonly roleRef: RoleRef;
}

/** A binding that applies to a user, and the first of its subjects that does (as Kubernetes reports it). */
export interface MatchedBinding {
  readonly binding: IndexedBinding;
  readonly subject: Subject;
}

/** Why a binding's role could not be resolved; evaluation goes on without its rules. */
export class RoleResolutionError extends Error {}

/** A Map of Sets that drops a key when its set empties. */
class MultiMap<V> {
  private readonly map = new Map<string, Set<V>>();
  add(key: string, value: V): void {
    let set = this.map.get(key);
    if (!set) this.map.set(key, (set = new Set()));
    set.add(value);
  }
  delete(key: string, value: V): void {
    const set = this.map.get(key);
    if (!set) return;
    set.delete(value);
    if (set.size === 0) this.map.delete(key);
  }
  get(key: string): ReadonlySet<V> | undefined {
    return this.map.get(key);
  }
  clear(): void {
    this.map.clear();
  }
}

const userKey = (name: string): string => `user:${name}`;
const groupKey = (name: string): string => `group:${name}`;

/**
 * The key under which a subject is found, or undefined when it can never apply. A ServiceAccount is the
 * user `system:serviceaccount:<namespace>:<name>`, its namespace defaulting to a RoleBinding's own; one
 * without a namespace in a ClusterRoleBinding applies to nobody.
 */
function subjectKey(subject: Subject, bindingNamespace: string): string | undefined {
  switch (subject.kind) {
    case "User":
      return userKey(subject.name);
    case "Group":
      return groupKey(subject.name);
    case "ServiceAccount": {
      const namespace = subject.namespace || bindingNamespace;
      return namespace ? userKey(`${SERVICE_ACCOUNT_USER_PREFIX}${namespace}:${subject.name}`) : undefined;
    }
    default:
      return undefined;
  }
}

function isBinding(object: RbacObject): object is BindingObject {
  return object.kind === "RoleBinding" || object.kind === "ClusterRoleBinding";
}

const MATCHED_CACHE_LIMIT = 4096;

function byName(a: IndexedBinding, b: IndexedBinding): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

export class PolicyIndex {
  private readonly clusterRoles = new Map<string, readonly PolicyRule[]>();
  /** namespace/name → rules */
  private readonly roles = new Map<string, readonly PolicyRule[]>();
  /** namespace/name ("/name" for cluster role bindings) → binding */
  private readonly bindings = new Map<string, IndexedBinding>();
  /** namespace + subject key → binding keys */
  private readonly bindingsBySubject = new MultiMap<string>();
  /** The bindings that apply, by namespace, user and groups; emptied whenever a binding changes. */
  private readonly matched = new Map<string, MatchedBinding[]>();

  added(object: RbacObject): void {
    this.put(object);
  }

  updated(previous: RbacObject, object: RbacObject): void {
    if (previous.metadata.name !== object.metadata.name || previous.metadata.namespace !== object.metadata.namespace) this.remove(previous);
    this.put(object);
  }

  deleted(object: RbacObject): void {
    this.remove(object);
  }

  /** Forgets everything (before the objects are read again). */
  clear(): void {
    this.clusterRoles.clear();
    this.roles.clear();
    this.bindings.clear();
    this.bindingsBySubject.clear();
    this.matched.clear();
  }

  /** The rules of a Role (in `namespace`) or ClusterRole, or why they cannot be had. */
  roleRules(ref: RoleRef, namespace: string): readonly PolicyRule[] | RoleResolutionError {
    switch (ref.kind) {
      case "Role":
        return this.roles.get(`${namespace}/${ref.name}`) ?? new RoleResolutionError(`role.rbac.authorization.k8s.io "${ref.name}" not found`);
      case "ClusterRole":
        return this.clusterRoles.get(ref.name) ?? new RoleResolutionError(`clusterrole.rbac.authorization.k8s.io "${ref.name}" not found`);
      default:
        return new RoleResolutionError(`unsupported role reference kind: "${ref.kind}"`);
    }
  }

  /** The ClusterRoleBindings that apply to the user, by name. */
  clusterBindingsFor(identity: UserInfo): MatchedBinding[] {
    return this.matching(identity, "");
  }

  /** The RoleBindings of `namespace` that apply to the user, by name. */
  namespaceBindingsFor(identity: UserInfo, namespace: string): MatchedBinding[] {
    return namespace ? this.matching(identity, namespace) : [];
  }

  private matching(identity: UserInfo, namespace: string): MatchedBinding[] {
    // The same callers ask again and again (a controller, a user's kubectl): their bindings are kept
    // until the policy changes.
    const cacheKey = `${namespace}\n${identity.user}\n${identity.groups.join("\n")}`;
    const cached = this.matched.get(cacheKey);
    if (cached) return cached;
    const found = this.match(identity, namespace);
    if (this.matched.size >= MATCHED_CACHE_LIMIT) this.matched.clear();
    this.matched.set(cacheKey, found);
    return found;
  }

  private match(identity: UserInfo, namespace: string): MatchedBinding[] {
    const keys = new Set<string>();
    for (const key of [userKey(identity.user), ...identity.groups.map(groupKey)]) {
      for (const bindingKey of this.bindingsBySubject.get(`${namespace}\n${key}`) ?? []) keys.add(bindingKey);
    }
    const found: MatchedBinding[] = [];
    for (const key of keys) {
      const binding = this.bindings.get(key);
      const subject = binding?.subjects.find((s) => appliesTo(identity, s, namespace));
      if (binding && subject) found.push({ binding, subject });
    }
    return found.sort((a, b) => byName(a.binding, b.binding));
  }

  private put(object: RbacObject): void {
    const name = object.metadata.name;
    const namespace = object.metadata.namespace ?? "";
    if (!name || (namespace === "" && (object.kind === "Role" || object.kind === "RoleBinding"))) return;
    switch (object.kind) {
      case "ClusterRole":
        this.clusterRoles.set(name, (object as RoleObject).rules ?? []);
        return;
      case "Role":
        this.roles.set(`${namespace}/${name}`, (object as RoleObject).rules ?? []);
        return;
    }
    if (!isBinding(object)) return;
    const cluster = object.kind === "ClusterRoleBinding";
    const binding: IndexedBinding = {
      kind: object.kind as IndexedBinding["kind"],
      name,
      namespace: cluster ? "" : namespace,
      subjects: object.subjects ?? [],
      roleRef: object.roleRef,
    };
    this.removeBinding(`${binding.namespace}/${name}`);
    this.matched.clear();
    this.bindings.set(`${binding.namespace}/${name}`, binding);
    for (const key of this.subjectKeys(binding)) this.bindingsBySubject.add(key, `${binding.namespace}/${name}`);
  }

  private remove(object: RbacObject): void {
    const name = object.metadata.name;
    if (!name) return;
    const namespace = object.metadata.namespace ?? "";
    switch (object.kind) {
      case "ClusterRole":
        this.clusterRoles.delete(name);
        return;
      case "Role":
        this.roles.delete(`${namespace}/${name}`);
        return;
      case "ClusterRoleBinding":
        this.removeBinding(`/${name}`);
        return;
      case "RoleBinding":
        this.removeBinding(`${namespace}/${name}`);
        return;
    }
  }

  private removeBinding(key: string): void {
    const old = this.bindings.get(key);
    if (!old) return;
    this.matched.clear();
    this.bindings.delete(key);
    for (const subjectKey of this.subjectKeys(old)) this.bindingsBySubject.delete(subjectKey, key);
  }

  private subjectKeys(binding: IndexedBinding): string[] {
    const keys: string[] = [];
    for (const subject of binding.subjects) {
      const key = subjectKey(subject, binding.namespace);
      if (key) keys.push(`${binding.namespace}\n${key}`);
    }
    return keys;
  }
}

/** Whether a binding's subject names the user, as Kubernetes' appliesToUser decides it. */
export function appliesTo(identity: UserInfo, subject: Subject, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case "User":
      return identity.user === subject.name;
    case "Group":
      return identity.groups.includes(subject.name);
    case "ServiceAccount": {
      const namespace = subject.namespace || bindingNamespace;
      return namespace !== "" && identity.user === `${SERVICE_ACCOUNT_USER_PREFIX}${namespace}:${subject.name}`;
    }
    default:
      return false;
  }
}
