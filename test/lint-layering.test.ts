// The layering of docs/DESIGN.md is enforced by lint: an import in the wrong direction, written in a
// file of a folder, is reported by `npm run lint` (and so fails `npm test`); one in the right direction
// is not. Each case is a file that does not exist, linted as if it did.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ESLint } from "eslint";
import { REPO } from "./support/slipway.ts";

const eslint = new ESLint({ cwd: REPO });

/** The layering messages for `source` written at `file`. */
async function layeringErrors(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: join(REPO, file) });
  assert.ok(result, `${file} was linted`);
  const fatal = result.messages.filter((m) => m.fatal);
  assert.deepEqual(fatal, [], `${file} parses`);
  return result.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

const importing = (path: string) => `import { thing } from "${path}";\nexport const used = thing;\n`;

describe("the layering is enforced by lint", () => {
  const wrong: [file: string, imported: string][] = [
    ["src/api/zz-layering.ts", "../store/store.ts"],
    ["src/api/zz-layering.ts", "../bootstrap/pki.ts"],
    ["src/store/zz-layering.ts", "../apiserver/objects.ts"],
    ["src/apiserver/zz-layering.ts", "../runtime/client.ts"],
    ["src/apiserver/zz-layering.ts", "../controlplane/namespaces.ts"],
    ["src/runtime/zz-layering.ts", "../controllers/contract.ts"],
    ["src/controllers/cluster/zz-layering.ts", "../../controlplane/controlplane.ts"],
    ["src/controllers/cluster/zz-layering.ts", "../../simcloud/cloud.ts"],
    ["src/controllers/cluster/zz-layering.ts", "../../cli/output.ts"],
    ["src/providers/sim/zz-layering.ts", "../../controllers/contract.ts"],
    ["src/providers/sim/zz-layering.ts", "../../runtime/client.ts"],
    ["src/simcloud/zz-layering.ts", "../controllers/contract.ts"],
    ["src/simcloud/workload/zz-layering.ts", "../../runtime/informer.ts"],
    ["src/simcloud/workload/zz-layering.ts", "../../providers/provider.ts"],
    ["src/bootstrap/zz-layering.ts", "../store/store.ts"],
    ["src/kubeclient/zz-layering.ts", "../api/kinds.ts"],
    ["src/kubeclient/zz-layering.ts", "../cli/connect.ts"],
    ["src/views/zz-layering.ts", "../kubeclient/index.ts"],
    ["src/views/zz-layering.ts", "../controllers/contract.ts"],
    ["src/cli/zz-layering.ts", "../controlplane/controlplane.ts"],
    ["src/cli/zz-layering.ts", "../apiserver/errors.ts"],
    ["src/cli/zz-layering.ts", "../store/sqlite.ts"],
    ["src/cli/zz-layering.ts", "../simcloud/profiles.ts"],
    ["src/console/src/zz-layering.ts", "../../cli/output.ts"],
    ["src/console/src/pages/zz-layering.tsx", "../../../controllers/contract.ts"],
  ];
  for (const [file, imported] of wrong) {
    it(`reports ${imported} imported from ${file}`, async () => {
      const errors = await layeringErrors(file, importing(imported));
      assert.equal(errors.length, 1, `one error for ${imported} in ${file}`);
      const [from, to] = [file.split("/")[1], imported.replace(/^(\.\.\/)+/, "").split("/")[0]];
      assert.match(errors[0]!, new RegExp(`src/${from} may not depend on src/${to}`));
    });
  }

  it("reports type-only imports and re-exports too", async () => {
    assert.equal((await layeringErrors("src/views/zz-layering.ts", `import type { KubeClient } from "../kubeclient/index.ts";\nexport type C = KubeClient;\n`)).length, 1);
    assert.equal((await layeringErrors("src/api/zz-layering.ts", `export * from "../controllers/contract.ts";\n`)).length, 1);
  });

  const right: [file: string, imported: string][] = [
    ["src/store/zz-layering.ts", "../api/meta.ts"],
    ["src/apiserver/zz-layering.ts", "../store/store.ts"],
    ["src/runtime/zz-layering.ts", "../apiserver/objects.ts"],
    ["src/controllers/cluster/zz-layering.ts", "../../runtime/reconciler.ts"],
    ["src/controllers/cluster/zz-layering.ts", "../../providers/provider.ts"],
    ["src/controllers/cluster/zz-layering.ts", "../../kubeclient/index.ts"],
    ["src/controllers/cluster/zz-layering.ts", "../machine/phases.ts"],
    ["src/controllers/machine/zz-layering.test.ts", "../../simcloud/cloud.ts"],
    ["src/providers/sim/zz-layering.ts", "../../simcloud/client.ts"],
    ["src/simcloud/workload/zz-layering.ts", "../../apiserver/objects.ts"],
    ["src/simcloud/workload/zz-layering.ts", "../../bootstrap/pki.ts"],
    ["src/bootstrap/zz-layering.ts", "../api/cidr.ts"],
    ["src/kubeclient/zz-layering.ts", "../bootstrap/kubeconfig.ts"],
    ["src/views/zz-layering.ts", "../api/kinds.ts"],
    ["src/cli/zz-layering.ts", "../kubeclient/index.ts"],
    ["src/cli/zz-layering.ts", "../views/describe.ts"],
    ["src/cli/zz-layering.ts", "./output.ts"],
    ["src/cli/up.ts", "../controlplane/controlplane.ts"],
    ["src/controlplane/zz-layering.ts", "../controllers/index.ts"],
    ["src/console/src/pages/zz-layering.tsx", "../../../views/describe.ts"],
    ["src/console/src/api/zz-layering.ts", "../../../kubeclient/errors.ts"],
  ];
  for (const [file, imported] of right) {
    it(`lets ${file} import ${imported}`, async () => {
      assert.deepEqual(await layeringErrors(file, importing(imported)), []);
    });
  }
});
