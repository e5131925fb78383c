// What a plan asks each connection's cloud, without changing anything: zones, machine types with prices,
// images, quota, other prices and usual durations. A connection that cannot be asked is reported as
// unusable (with why), as dynamic validation reports it, so that the plan still shows every problem.
import type { ConnectionObject } from "../../api/kinds.ts";
import { isProviderError, type Catalogue, type CloudEstimates } from "../../providers/provider.ts";
import type { ConnectionFacts } from "../cluster/preflight.ts";
import { ConnectionUnusableError } from "../providers.ts";

export interface PlanConnectionFacts extends ConnectionFacts {
  connection?: ConnectionObject;
  zones?: string[];
  estimates?: CloudEstimates;
}

export async function connectionFacts(
  names: readonly string[],
  connectionNamed: (name: string) => ConnectionObject | undefined,
  open: (connection: ConnectionObject) => Promise<Catalogue>,
  namespace: string,
): Promise<Map<string, PlanConnectionFacts>> {
  const facts = new Map<string, PlanConnectionFacts>();
  await Promise.all(
    names.map(async (name) => {
      const connection = connectionNamed(name);
      if (!connection) {
        facts.set(name, { unusable: `connection "${name}" does not exist in namespace ${namespace}` });
        return;
      }
      try {
        const provider = await open(connection);
        const zones = await provider.zones();
        const [machineTypes, images, quota, estimates] = await Promise.all([provider.machineTypes(), provider.images(), provider.quota(), provider.estimates?.()]);
        facts.set(name, { connection, zones, machineTypes, images, quota, ...(estimates ? { estimates } : {}) });
      } catch (e) {
        if (e instanceof ConnectionUnusableError || (isProviderError(e) && !e.retryable)) {
          facts.set(name, { connection, unusable: `connection "${name}": ${(e as Error).message}` });
          return;
        }
        // A cloud that is busy now is not a problem with the cluster; the plan says so and can be asked again.
        if (isProviderError(e)) {
          facts.set(name, { connection, unusable: `connection "${name}" could not be asked now (${(e as Error).message}); plan again in a moment` });
          return;
        }
        throw e;
      }
    }),
  );
  return facts;
}
