// Sets of field paths, as Kubernetes records who manages what (metadata.managedFields) and encodes it
// as "FieldsV1": a tree whose keys name one step each — `f:<field>`, `k:<json of the key fields>` for
// an item of a list keyed by some of its fields, `v:<json value>` for an item of a set, `i:<index>` —
// where `{}` marks a leaf of the set and `".": {}` a step that is in the set and has children too.

/** One step of a path, in its FieldsV1 spelling (`f:spec`, `k:{"name":"a"}`, `v:"x"`, `i:0`). */
export type PathElement = string;

export const field = (name: string): PathElement => `f:${name}`;
export const value = (v: unknown): PathElement => `v:${JSON.stringify(v)}`;
export const index = (i: number): PathElement => `i:${i}`;
/** The step to an item of a list keyed by `keys` (names sorted, as Kubernetes sorts them). */
export function key(keys: Record<string, unknown>): PathElement {
  const sorted: Record<string, unknown> = {};
  for (const name of Object.keys(keys).sort()) sorted[name] = keys[name];
  return `k:${JSON.stringify(sorted)}`;
}

/** A step as Kubernetes prints it in messages: `.spec`, `[name="a"]`, `[="x"]`, `[0]`. */
export function displayElement(element: PathElement): string {
  const body = element.slice(2);
  switch (element[0]) {
    case "f":
      return `.${body}`;
    case "k": {
      const keys = JSON.parse(body) as Record<string, unknown>;
      return `[${Object.entries(keys).map(([k, v]) => `${k}=${displayValue(v)}`).join(",")}]`;
    }
    case "v":
      return `[=${displayValue(JSON.parse(body))}]`;
    default:
      return `[${body}]`;
  }
}

function displayValue(v: unknown): string {
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}

export function displayPath(path: readonly PathElement[]): string {
  return path.map(displayElement).join("");
}

/** Kubernetes orders the steps of a level: fields, then keys, then values, then indexes. */
const KIND_ORDER: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

function compareElements(a: PathElement, b: PathElement): number {
  const byKind = (KIND_ORDER[a[0]!] ?? 4) - (KIND_ORDER[b[0]!] ?? 4);
  if (byKind !== 0) return byKind;
  if (a[0] === "i") return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

const VALID_ELEMENT = /^[fkvi]:/;

/** A set of paths, kept as a tree: a node is in the set when `member`; its children extend its path. */
const NO_CHILDREN: ReadonlyMap<PathElement, FieldSet> = new Map();

export class FieldSet {
  member = false;
  /** Most nodes are leaves: their map of children is made when the first one comes. */
  private kids: Map<PathElement, FieldSet> | undefined;

  get children(): ReadonlyMap<PathElement, FieldSet> {
    return this.kids ?? NO_CHILDREN;
  }

  setChild(step: PathElement, node: FieldSet): void {
    (this.kids ??= new Map()).set(step, node);
  }

  /** Reads a FieldsV1 document; throws on one that is not (unknown step kinds, non-object nodes). */
  static fromFieldsV1(document: unknown): FieldSet {
    const set = new FieldSet();
    set.read(document, 0);
    return set;
  }

  private read(document: unknown, depth: number): void {
    if (typeof document !== "object" || document === null || Array.isArray(document)) throw new Error("a FieldsV1 node must be an object");
    if (depth > 100) throw new Error("FieldsV1 nests too deeply");
    for (const [step, child] of Object.entries(document as Record<string, unknown>)) {
      if (step === ".") {
        this.member = true;
        continue;
      }
      if (!VALID_ELEMENT.test(step)) throw new Error(`unknown FieldsV1 step "${step}"`);
      const node = this.child(step);
      const childObject = child as Record<string, unknown>;
      if (typeof child === "object" && child !== null && Object.keys(childObject).length === 0) node.member = true;
      else node.read(child, depth + 1);
    }
  }

  /** The FieldsV1 document of the set, its steps in Kubernetes' order. */
  toFieldsV1(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (this.member && this.children.size > 0) out["."] = {};
    for (const step of [...this.children.keys()].sort(compareElements)) {
      const node = this.children.get(step)!;
      if (node.isEmpty()) continue;
      out[step] = node.children.size === 0 ? {} : node.toFieldsV1();
    }
    return out;
  }

  child(step: PathElement): FieldSet {
    let node = this.kids?.get(step);
    if (!node) {
      node = new FieldSet();
      this.setChild(step, node);
    }
    return node;
  }

  insert(path: readonly PathElement[]): void {
    path.reduce((node: FieldSet, step) => node.child(step), this).member = true;
  }

  has(path: readonly PathElement[]): boolean {
    return this.at(path)?.member ?? false;
  }

  /** The node at a path, if the set has anything there or below. */
  at(path: readonly PathElement[]): FieldSet | undefined {
    const node = path.reduce((n: FieldSet | undefined, step) => n?.children.get(step), this);
    return node && !node.isEmpty() ? node : undefined;
  }

  isEmpty(): boolean {
    if (this.member) return false;
    for (const child of this.children.values()) if (!child.isEmpty()) return false;
    return true;
  }

  /** Every path in the set, parents before children. */
  paths(prefix: PathElement[] = []): PathElement[][] {
    const out: PathElement[][] = [];
    if (this.member) out.push(prefix);
    for (const step of [...this.children.keys()].sort(compareElements)) out.push(...this.children.get(step)!.paths([...prefix, step]));
    return out;
  }

  // The results of these share no nodes with their operands, except that of a difference with an empty
  // set, which is the set itself: results are not to be changed in place.
  union(other: FieldSet): FieldSet {
    return combine(this, other, (a, b) => a || b, true, true);
  }

  difference(other: FieldSet): FieldSet {
    if (!other.member && other.children.size === 0) return this;
    return combine(this, other, (a, b) => a && !b, true, false);
  }

  intersection(other: FieldSet): FieldSet {
    return combine(this, other, (a, b) => a && b, false, false);
  }

  equals(other: FieldSet): boolean {
    return this.difference(other).isEmpty() && other.difference(this).isEmpty();
  }
}

/** Combines two sets node by node; `keepLeft`/`keepRight` say whether a subtree only one side has survives. */
function combine(a: FieldSet | undefined, b: FieldSet | undefined, member: (a: boolean, b: boolean) => boolean, keepLeft: boolean, keepRight: boolean): FieldSet {
  const out = new FieldSet();
  out.member = member(a?.member ?? false, b?.member ?? false);
  const steps = new Set([...(a?.children.keys() ?? []), ...(b?.children.keys() ?? [])]);
  for (const step of steps) {
    const left = a?.children.get(step);
    const right = b?.children.get(step);
    if (!right && !keepLeft) continue;
    if (!left && !keepRight) continue;
    const child = combine(left, right, member, keepLeft, keepRight);
    // A result holds no empty nodes, so whether a child is empty shows at its top.
    if (child.member || child.children.size > 0) out.setChild(step, child);
  }
  return out;
}
