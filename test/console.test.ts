// The web console in a real browser (Debian's chromium driven by playwright-core) against a real
// `slipway up`: sign in with the printed one-time link, watch a cluster go from Pending to Running with
// its timeline filling in, scale a pool, read an admission error with its field, create a cluster from
// the form after reading its plan, delete it. Screenshots of each page go to test-results/console (not
// tracked), or over the committed ones in docs/console/screenshots when SLIPWAY_UPDATE_SCREENSHOTS=1.
// test: runs alone (scripts/run-tests.mjs): Chromium aborts a navigation when interfaces change, as the
// tests of SSH hosts make them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { REPO, SLIPWAY_BIN, eventually, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

const CHROMIUM = "/usr/bin/chromium";
const SCREENSHOTS = join(REPO, process.env.SLIPWAY_UPDATE_SCREENSHOTS === "1" ? "docs/console/screenshots" : "test-results/console");
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const MANIFEST = `apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata: { name: sim-east }
spec: { provider: sim, region: sim-east-1 }
---
apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata: { name: sim-west }
spec: { provider: sim, region: sim-west-1 }
---
apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata: { name: shop, labels: { team: payments } }
spec:
  kubernetesVersion: v1.31.2
  controlPlane: { connection: sim-east, machineType: s1.medium, replicas: 1 }
  workers:
    - { name: east, connection: sim-east, machineType: s1.large, replicas: 1 }
    - { name: west, connection: sim-west, machineType: s1.large, replicas: 1 }
`;

function slipway(server: RunningSlipway, args: string[], input?: string) {
  const result = spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", server.kubeconfig, ...args], { input, encoding: "utf8" });
  assert.equal(result.status, 0, `slipway ${args.join(" ")}: ${result.stdout}${result.stderr}`);
  return result.stdout;
}

describe("web console in chromium", { timeout: 180_000 }, () => {
  let server: RunningSlipway;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const pageErrors: string[] = [];

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
    if (!existsSync(join(REPO, "dist/console/index.html"))) {
      const build = spawnSync("npm", ["run", "build:console"], { cwd: REPO, encoding: "utf8" });
      assert.equal(build.status, 0, build.stderr);
    }
    mkdirSync(SCREENSHOTS, { recursive: true });
    server = await startSlipway({ args: ["--sim-profile", "fast", "--poll-interval", "200ms"] });
    profile = mkdtempSync(join(tmpdir(), "slipway-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => pageErrors.push(error.message));
  });

  after(async () => {
    await context?.close();
    await server?.stop();
    if (server) removeDir(server.dataDir);
    if (profile) removeDir(profile);
  });

  it("signs in, follows, scales, refuses, plans, creates and deletes", async () => {
    // slipway up prints the console and a one-time link whose code rides in the fragment.
    const out = server.output();
    assert.match(out, new RegExp(`console: https://127\\.0\\.0\\.1:${server.port}/\\n`));
    const link = /sign-in[^\n]*?(https:\/\/127\.0\.0\.1:\d+\/#login=[\w-]+)/.exec(out)?.[1];
    assert.ok(link, out);

    await page.goto(link);
    await page.getByRole("heading", { name: "Clusters" }).waitFor();
    assert.ok(!page.url().includes("login="), "the code leaves the address bar once used");
    // The link is spent: a second browser tab with it lands on the sign-in page with the reason.
    const second = await context.newPage();
    await second.goto(link);
    await second.getByText("the sign-in code is not valid").waitFor();
    await second.close();

    // A cluster made from the CLI appears without a reload and goes from Pending to Running.
    slipway(server, ["apply", "-f", "-"], MANIFEST);
    const row = page.locator('tr[data-cluster="shop"]');
    await row.waitFor();
    await page.locator('tr[data-cluster="shop"] a').click();
    await page.getByRole("heading", { name: /shop/ }).waitFor();
    const phases = new Set<string>();
    const stepCounts: number[] = [];
    await eventually(
      async () => {
        phases.add((await page.locator("h1 .badge").first().getAttribute("data-phase")) ?? "");
        stepCounts.push(await page.locator(".gantt-row").count());
        return phases.has("Running");
      },
      { timeoutMs: 60_000, intervalMs: 50, what: "the cluster page to show Running" },
    );
    assert.ok([...phases].some((p) => p !== "Running"), `the page saw the cluster before Running: ${[...phases].join(", ")}`);
    assert.ok(stepCounts[0]! < stepCounts.at(-1)!, `the timeline filled in while the page was open: ${stepCounts[0]} → ${stepCounts.at(-1)} steps`);
    await eventually(async () => (await page.locator('.gantt-row[data-critical="true"]').count()) > 1, { what: "a critical path of several steps" });
    assert.equal(await page.locator('.gantt-row[data-step="Ready"]').getAttribute("data-critical"), "true", "the last step is on the critical path");
    await page.locator('[data-condition="Ready"] [data-phase="True"]').waitFor();

    // Scale the east pool from 1 to 2 machines: the new one appears, then runs.
    const pool = page.locator('section[data-pool="east"]');
    await pool.getByLabel("Replicas").fill("2");
    await pool.getByRole("button", { name: "Scale" }).click();
    await pool.locator('tr[data-machine="shop-east-1"]').waitFor({ timeout: 30_000 });
    await pool.locator('tr[data-machine="shop-east-1"] [data-phase="Running"]').waitFor({ timeout: 60_000 });
    await page.locator('tr[data-machine="shop-east-1"]').scrollIntoViewIfNeeded();

    // An admission error names its field: a pool of -1 machines is refused with spec.workers[0].replicas.
    await page.getByRole("link", { name: "Create", exact: true }).click();
    await page.getByRole("heading", { name: "Create a cluster" }).waitFor();
    await page.locator("input[name=name]").fill("web");
    await page.locator("[data-testid=plan]").waitFor();
    await page.locator("input[name=pool-0-replicas]").fill("-1");
    const refusal = page.locator("[data-testid=api-error]").filter({ hasText: "The plan cannot be made" });
    await refusal.locator('code[data-field="spec.workers[0].replicas"]').waitFor();
    assert.equal(await page.locator('label[data-field="spec.workers[0].replicas"]').getAttribute("class"), "invalid", "the field is marked");
    await page.screenshot({ path: join(SCREENSHOTS, "create-error.png"), fullPage: true });

    // Read the plan of a valid cluster, then create it from the form.
    await page.locator("input[name=pool-0-replicas]").fill("2");
    await page.locator("[data-testid=plan-hourly]").waitFor();
    await eventually(async () => (await page.locator("[data-testid=plan-machines] tbody tr").count()) === 3, { what: "the plan of 1 + 2 machines" });
    const hourly = await page.locator("[data-testid=plan-hourly]").textContent();
    // 1 × s1.medium + 2 × s1.large in sim-east-1, and the API load balancer: catalogue prices.
    assert.equal(hourly, `$${(0.0416 + 2 * 0.0832 + 0.0225).toFixed(4)}`);
    assert.match((await page.locator("[data-testid=plan-time]").textContent()) ?? "", /^\d+\.\ds$/);
    await page.screenshot({ path: join(SCREENSHOTS, "create.png"), fullPage: true });
    await page.getByRole("button", { name: "Create", exact: true }).click();
    await page.getByRole("heading", { name: /^web/ }).waitFor();
    await page.locator('h1 .badge[data-phase="Running"]').waitFor({ timeout: 60_000 });

    // Delete it, after typing its name.
    await page.getByRole("button", { name: "Delete…" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel(/Type web to confirm/).fill("web");
    await dialog.getByRole("button", { name: "Delete cluster" }).click();
    await page.getByRole("heading", { name: "Clusters" }).waitFor();
    await page.locator('tr[data-cluster="web"]').waitFor({ state: "detached", timeout: 60_000 });
    assert.match(slipway(server, ["get", "clusters"]), /^NAME[^\n]*\nshop /, "only shop is left");

    // The pages as they look now, for the README.
    await page.locator('tr[data-cluster="shop"] [data-testid=cost-per-hour]').filter({ hasText: "$" }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "clusters.png"), fullPage: true });
    await page.locator('tr[data-cluster="shop"] a').click();
    await page.locator('h1 .badge[data-phase="Running"]').waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "cluster.png"), fullPage: true });
    await page.selectOption("select[name=theme]", "dark");
    await page.screenshot({ path: join(SCREENSHOTS, "cluster-dark.png"), fullPage: false });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(SCREENSHOTS, "cluster-phone.png"), fullPage: false });
    await page.selectOption("select[name=theme]", "light");
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to Slipway" }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "sign-in.png") });
    assert.deepEqual(pageErrors, [], "no script errors on any page");
  });
});
