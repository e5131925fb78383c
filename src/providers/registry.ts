// The providers one control plane has installed, by name. The control plane builds one registry at start
// (`index.ts`) and hands it to whoever needs to know: the controllers open Connections through it, and
// Connection admission refuses a provider it does not hold. Nothing is registered process-wide, so two
// control planes (or tests) in one process each have their own.
import type { ProviderFactory } from "./provider.ts";

export class DuplicateProviderError extends Error {
  override readonly name = "DuplicateProviderError";
}

export class ProviderRegistry {
  private readonly factories = new Map<string, ProviderFactory>();

  /** Installs a provider; a second provider of the same name is a mistake of assembly, refused. */
  register(factory: ProviderFactory): this {
    if (this.factories.has(factory.name)) throw new DuplicateProviderError(`provider "${factory.name}" is registered twice`);
    this.factories.set(factory.name, factory);
    return this;
  }

  factory(name: string): ProviderFactory | undefined {
    return this.factories.get(name);
  }

  /** The names of the installed providers, sorted. */
  names(): string[] {
    return [...this.factories.keys()].sort();
  }
}
