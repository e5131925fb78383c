// The `ssh` provider's factory. A Connection with `spec.provider: ssh` builds on the Host objects
// labelled with its name; the control plane hands the factory the directory of hosts it reads them from.
import type { ConnectionTarget, ProviderFactory } from "../provider.ts";
import type { HostDirectory } from "./hosts.ts";
import { SSH_PROVIDER, SshProvider, type SshProviderOptions } from "./provider.ts";

export { SSH_PROVIDER, SshProvider, HOST_MACHINE_TYPE } from "./provider.ts";
export type { HostDirectory, HostRecord } from "./hosts.ts";

export interface SshProviderSettings extends SshProviderOptions {
  /** Where the hosts are read and claimed; until the control plane sets it, every host list is empty. */
  directory?: () => HostDirectory | undefined;
}

const NO_HOSTS: HostDirectory = {
  hosts: async () => [],
  claim: async () => Promise.reject(new Error("no host directory")),
  markReleasing: async () => undefined,
  release: async () => undefined,
};

/** The `ssh` provider: each Connection's region is the zone of its hosts. Installed in `../index.ts`. */
export function sshProviderFactory(settings: SshProviderSettings = {}): ProviderFactory & { open(target: ConnectionTarget): SshProvider } {
  const directory: HostDirectory = {
    hosts: (c) => (settings.directory?.() ?? NO_HOSTS).hosts(c),
    claim: (c, h, claim, cluster) => (settings.directory?.() ?? NO_HOSTS).claim(c, h, claim, cluster),
    markReleasing: (c, h, t) => (settings.directory?.() ?? NO_HOSTS).markReleasing(c, h, t),
    release: (c, h, t) => (settings.directory?.() ?? NO_HOSTS).release(c, h, t),
  };
  return { name: SSH_PROVIDER, open: (target) => new SshProvider(directory, target.name, target.region, settings) };
}
