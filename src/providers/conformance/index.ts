// The suite every provider must pass: each MUST rule of `../provider.ts`, checked as a controller relies
// on it, capability by capability. A provider runs the suites of the capabilities it declares; a
// capability it does not declare is reported as skipped, so a provider of hosts passes with machines only.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CAPABILITY_DESCRIPTIONS, capabilitiesOf, type CapabilityName } from "../provider.ts";
import { caseStarter, type CaseStarter, type ProviderConformanceOptions, type ProviderUnderTest } from "./case.ts";
import { bootstrapSecretsConformance } from "./bootstrap-secrets.ts";
import { catalogueConformance } from "./catalogue.ts";
import { clusterInfrastructureConformance } from "./cluster-infrastructure.ts";
import { dnsConformance } from "./dns.ts";
import { machinesConformance } from "./machines.ts";
import { poolInfrastructureConformance } from "./pool-infrastructure.ts";
import { reservationsConformance } from "./reservations.ts";

export { conformancePublicKey, type FaultOperation, type InjectedFault, type MachineTemplate, type ProviderConformanceOptions, type ProviderUnderTest } from "./case.ts";

/** The suite of each capability; a new capability adds its suite here. */
const SUITES: Record<CapabilityName, (start: CaseStarter) => void> = {
  catalogue: catalogueConformance,
  clusterInfrastructure: clusterInfrastructureConformance,
  machines: machinesConformance,
  reservations: reservationsConformance,
  dns: dnsConformance,
  poolInfrastructure: poolInfrastructureConformance,
  bootstrapSecrets: bootstrapSecretsConformance,
};

/**
 * Runs the conformance suites for the capabilities the provider declares. `declares` is what the test
 * expects the provider to declare: the suite checks it, so that a capability dropped by mistake fails
 * instead of being skipped quietly.
 */
export function runProviderConformance(
  name: string,
  open: () => Promise<ProviderUnderTest>,
  declares: readonly CapabilityName[],
  options: ProviderConformanceOptions = {},
): void {
  const start = caseStarter(open, options);
  describe(`provider conformance: ${name}`, () => {
    it("names itself and its region and declares its capabilities", async (t) => {
      const { provider } = await start(t, "declare");
      assert.ok(provider.region.length > 0 && provider.provider.length > 0);
      assert.deepEqual(capabilitiesOf(provider), [...declares].sort(byContractOrder), "the capabilities it declares");
    });
    for (const capability of Object.keys(SUITES) as CapabilityName[]) {
      describe(`${capability}: ${CAPABILITY_DESCRIPTIONS[capability]}`, { skip: declares.includes(capability) ? false : "not declared" }, () => {
        SUITES[capability](start);
      });
    }
  });
}

function byContractOrder(a: CapabilityName, b: CapabilityName): number {
  const order = Object.keys(CAPABILITY_DESCRIPTIONS);
  return order.indexOf(a) - order.indexOf(b);
}
