// The sim cloud's extension point: one descriptor per kind of resource (its path, its create schema, the
// service that implements it, its view, its extra actions, what it counts against quotas). From the
// registered descriptors come the HTTP routes, the typed client, the in-process API, the operation names
// that throttling and fault injection key on, the id prefixes, and the listing of every resource.
import type { Static, TSchema } from "@sinclair/typebox";
import type { CloudCore } from "./core.ts";
import type { Transition } from "./records.ts";
import type { ListFilter, Tags } from "./schemas.ts";
import type { QuotaLimits } from "./types.ts";

/** The common fields of every resource's view. */
export interface ResourceView<K extends string = string> {
  id: string;
  kind: K;
  account: string;
  region: string;
  tags: Tags;
  createdAt: string;
  state: string;
}

/** What every stored resource has: its view's common fields and, while one is due, its next transition. */
export interface StoredResource<K extends string = string> extends ResourceView<K> {
  transition?: Transition;
}

/** A service object: the code of one or more kinds, built once per cloud from its factory. */
export type ServiceFactory<Svc> = (core: CloudCore) => Svc;

/** An operation on one resource besides create, get, list and delete: POST …/{collection}/{id}/{path}. */
export interface ActionSpec<Svc, Args extends unknown[], R> {
  /** Path under the resource, e.g. "stop" or "targets/register". */
  path: string;
  /** The request body the client sends for the arguments. */
  body(...args: Args): object;
  /** The arguments a request body carries; refuses a malformed body with InvalidParameter naming the field. */
  parse(body: unknown): Args;
  /** Runs the action as an account (resources of other accounts or regions are NotFound). */
  run(service: Svc, account: string, region: string, id: string, ...args: Args): R;
}

/** A kind's actions by operation name (the name is the method of `CloudApi` and the throttling bucket). */
export type ActionMap<Svc> = Record<string, ActionSpec<Svc, unknown[], unknown>>;

/** DELETE …/{id}: a removal that answers nothing, or one of the kind's actions `Del` (an instance's terminate). */
export type DeleteSpec<Svc, Del extends string> = { run(service: Svc, account: string, region: string, id: string): void } | { action: Del };

export interface ResourceDescriptor<
  K extends string,
  One extends string,
  Many extends string,
  S extends TSchema,
  Rec extends StoredResource<K>,
  V extends ResourceView<K>,
  Svc,
  A extends ActionMap<Svc>,
  Del extends string = never,
> {
  /** The kind as stored and shown (`kind` of every record and view), e.g. "securityGroup". */
  kind: K;
  /** How messages name one, e.g. "security group". */
  noun: string;
  /** Stems of the operation names: create<One>, get<One>, list<Many>, delete<One>. */
  names: { one: One; many: Many };
  /** The collection's path segment under /v1/regions/{region}/, e.g. "security-groups". */
  collection: string;
  /** Id prefix, as public clouds write them: "sg" gives sg-0123456789abcdef0. */
  idPrefix: string;
  /** Builds the service; kinds naming the same factory share one service per cloud. */
  service: ServiceFactory<Svc>;
  create: {
    /** The create input's schema (with `tags` and `clientToken`); bodies and in-process calls are checked against it. */
    input: S;
    /** Checks of the input alone, made before the idempotency token is looked up. */
    check?(input: Static<S>): void;
    /** Makes and stores the resource; runs once per idempotency token, inside the token's transaction. */
    build(service: Svc, account: string, region: string, input: Static<S>): Rec;
  };
  delete: DeleteSpec<Svc, Del>;
  /** What callers see of a record: internal fields dropped, derived ones computed, a copy they may keep. */
  view(core: CloudCore, record: Rec): V;
  actions: A;
  /** What a record counts against its account's quota in its region (nothing when absent). */
  quota?(record: Rec): Partial<QuotaLimits> | undefined;
}

/** Any descriptor, its types erased: what the registry, the routes and the generic API hold. */
export type AnyDescriptor = ResourceDescriptor<string, string, string, TSchema, StoredResource, ResourceView, unknown, ActionMap<unknown>, string>;

/** Checks a descriptor's parts against each other and keeps its literal types. */
export function defineResource<
  K extends string,
  One extends string,
  Many extends string,
  S extends TSchema,
  Rec extends StoredResource<K>,
  V extends ResourceView<K>,
  Svc,
  A extends ActionMap<Svc> = Record<never, never>,
  Del extends keyof A & string = never,
>(descriptor: ResourceDescriptor<K, One, Many, S, Rec, V, Svc, A, Del>): ResourceDescriptor<K, One, Many, S, Rec, V, Svc, A, Del> {
  return descriptor;
}

/** Checks an action's parts against each other (its arguments are inferred from `run`). */
export function action<Svc, Args extends unknown[], R>(spec: ActionSpec<Svc, Args, R>): ActionSpec<Svc, Args, R> {
  return spec;
}

export type RecordOf<D extends AnyDescriptor> = Parameters<D["view"]>[1];
export type ViewOf<D extends AnyDescriptor> = ReturnType<D["view"]>;
export type InputOf<D extends AnyDescriptor> = Static<D["create"]["input"]>;
export type ServiceOf<D extends AnyDescriptor> = ReturnType<D["service"]>;

type ActionArgs<S> = S extends ActionSpec<never, infer Args, unknown> ? Args : never;
type ActionResult<S> = S extends ActionSpec<never, unknown[], infer R> ? R : never;

/** The kind's actions as calls: (region, id, …arguments). */
export type ActionApi<D extends AnyDescriptor> = {
  [N in keyof D["actions"] & string]: (region: string, id: string, ...args: ActionArgs<D["actions"][N]>) => Promise<ActionResult<D["actions"][N]>>;
};

/** The action that stands for deleting, if one does. */
type DeleteActionOf<D extends AnyDescriptor> = D["delete"] extends infer X ? (X extends { action: infer N } ? N : never) : never;

/** What DELETE answers: nothing, or what the action it stands for answers. */
export type DeleteResultOf<D extends AnyDescriptor> = [DeleteActionOf<D>] extends [never]
  ? void
  : DeleteActionOf<D> extends keyof D["actions"]
    ? ActionResult<D["actions"][DeleteActionOf<D>]>
    : never;

/** One kind's operations, the same in process and over HTTP. */
export type ResourceApi<D extends AnyDescriptor> = {
  /** Creates a resource; the same `clientToken` returns the same resource. */
  create(region: string, input: InputOf<D>): Promise<ViewOf<D>>;
  /** Returns a resource or throws NotFound. */
  get(region: string, id: string): Promise<ViewOf<D>>;
  /** Lists resources, optionally only those carrying every given tag. */
  list(region: string, filter?: ListFilter): Promise<ViewOf<D>[]>;
  /** Deletes a resource (or runs the action that stands for deleting it). */
  delete(region: string, id: string): Promise<DeleteResultOf<D>>;
} & ActionApi<D>;

type FlatResourceApi<D extends AnyDescriptor> = {
  [P in `create${D["names"]["one"]}`]: ResourceApi<D>["create"];
} & {
  [P in `get${D["names"]["one"]}`]: ResourceApi<D>["get"];
} & {
  [P in `list${D["names"]["many"]}`]: ResourceApi<D>["list"];
} & ([DeleteActionOf<D>] extends [never] ? { [P in `delete${D["names"]["one"]}`]: (region: string, id: string) => Promise<void> } : unknown) &
  ActionApi<D>;

type UnionToIntersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void ? I : never;

/** The operations of every kind of a list of descriptors, by name: createNetwork, listNetworks, stopInstance, … */
export type ResourcesApi<Ds extends readonly AnyDescriptor[]> = UnionToIntersection<Ds[number] extends infer D ? (D extends AnyDescriptor ? FlatResourceApi<D> : never) : never>;

/** The names of a kind's operations: create, get, list, delete (or the action that stands for it), actions. */
export interface OperationNames {
  create: string;
  get: string;
  list: string;
  /** The operation of DELETE …/{id}: delete<One>, or the action that stands for deleting. */
  delete: string;
  /** True when `delete` is one of the actions rather than an operation of its own. */
  deleteIsAction: boolean;
  actions: string[];
}

export function operationNames(descriptor: AnyDescriptor): OperationNames {
  const { one, many } = descriptor.names;
  const byAction = "action" in descriptor.delete ? descriptor.delete.action : undefined;
  return {
    create: `create${one}`,
    get: `get${one}`,
    list: `list${many}`,
    delete: byAction ?? `delete${one}`,
    deleteIsAction: byAction !== undefined,
    actions: Object.keys(descriptor.actions),
  };
}

/**
 * The flat methods (createNetwork, stopInstance, …) of every kind, each one of that kind's ResourceApi, for
 * the in-process cloud and the HTTP client alike.
 */
export function flatMethods(descriptors: readonly AnyDescriptor[], apiOf: (descriptor: AnyDescriptor) => Record<string, unknown>): Record<string, unknown> {
  const methods: Record<string, unknown> = {};
  for (const descriptor of descriptors) {
    const names = operationNames(descriptor);
    const api = apiOf(descriptor);
    methods[names.create] = api.create;
    methods[names.get] = api.get;
    methods[names.list] = api.list;
    if (!names.deleteIsAction) methods[names.delete] = api.delete;
    for (const name of names.actions) methods[name] = api[name];
  }
  return methods;
}
