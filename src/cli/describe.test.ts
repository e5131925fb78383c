import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { NOW, family } from "../views/testing.ts";
import { describeClusterText } from "./describe.ts";

describe("describeClusterText", () => {
  it("draws the cluster's objects as a tree with READY, REASON, SINCE and MESSAGE", () => {
    const lines = describeClusterText(family(), NOW).split("\n");
    assert.deepEqual(lines.slice(0, 9), [
      "NAME                         READY   REASON       SINCE   MESSAGE",
      "Cluster/tree                 False   NotReady     45s     waiting for 1 worker(s)",
      "├─Infrastructure/tree-east   True    AllTrue      45s",
      "├─ControlPlane               True    Ready        3m      1/1 control-plane nodes Ready",
      "│ └─Machine/tree-cp-0        True    NodeReady    45s     node tree-cp-0 is Ready",
      "└─Workers                    False   Scaling      2m      1/2 worker nodes Ready",
      "  └─MachinePool/tree-east    False   ScalingUp    10m     1/2 machines ready",
      "    ├─Machine/tree-east-0    True    Running      10m     node tree-east-0",
      "    └─Machine/tree-east-1    False   BootFailed   10m     the instance did not boot within 5m",
    ]);
  });

  it("then sums up the phase and lists the cluster's conditions", () => {
    const text = describeClusterText(family(), NOW);
    assert.match(text, /\nPhase:\s+Provisioning\nVersion:\s+v1\.31\.2\n/);
    assert.match(text, /\nConditions:\n {2}TYPE\s+STATUS\s+REASON\s+SINCE\s+MESSAGE\n {2}Validated\s+True\s+Validated\s+9m59s\s+checked\n/);
    assert.match(text, /\n {2}WorkersReady\s+False\s+Scaling\s+2m\s+1\/2 worker nodes Ready\n/);
  });
});
