// A Map that forgets its oldest entries past a size: for caches keyed by what clients present
// (certificates, server names), which must not grow without bound.
export class BoundedCache<V> extends Map<string, V> {
  constructor(private readonly limit: number) {
    super();
  }

  override set(key: string, value: V): this {
    if (!this.has(key) && this.size >= this.limit) {
      const oldest = this.keys().next().value;
      if (oldest !== undefined) this.delete(oldest);
    }
    return super.set(key, value);
  }
}
