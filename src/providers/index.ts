// The providers Slipway installs, one line each. A provider lives in its own folder and is added here;
// the control plane passes each its settings (the sim provider: which sim cloud to talk to).
import { ProviderRegistry } from "./registry.ts";
import { simProviderFactory, type SimProviderOptions } from "./sim/index.ts";
import { sshProviderFactory, type SshProviderSettings } from "./ssh/index.ts";

/** Settings of the installed providers, by provider. */
export interface ProviderSettings {
  sim?: SimProviderOptions;
  ssh?: SshProviderSettings;
}

export function installedProviders(settings: ProviderSettings = {}): ProviderRegistry {
  const registry = new ProviderRegistry();
  registry.register(simProviderFactory(settings.sim));
  registry.register(sshProviderFactory(settings.ssh));
  return registry;
}
