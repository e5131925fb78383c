// A host's bootstrap over SSH: the plan's scripts are copied to the host first (so a bootstrap cut short
// by a restart of Slipway resumes from the host alone, without the user data), then each step runs once,
// then the kubeadm command runs as the bootstrap unit and is followed to its end. What happens is told
// line by line to `report` — the machine's console output, as a cloud would show it.
import { BOOTSTRAP_UNIT, SLIPWAY_DIR, type BootstrapPlan, type HostStep } from "./plan.ts";
import { withSession, type SshSession, type SshTarget } from "./session.ts";
import { StepFailedError, asRoot, runPlanStep, startUnit, unitState } from "./steps.ts";

const PLAN_DIR = `${SLIPWAY_DIR}/plan`;

function heredoc(path: string, content: string, mode: string): string {
  const encoded = Buffer.from(content).toString("base64").replace(/(.{76})/g, "$1\n");
  return `base64 -d > ${path} <<'SLIPWAY_EOF'\n${encoded}\nSLIPWAY_EOF\nchmod ${mode} ${path}`;
}

/** Copies the plan's scripts to the host (readable by root only: they carry the cluster's secrets), once. */
async function copyPlan(session: SshSession, plan: BootstrapPlan): Promise<void> {
  const index = plan.steps.map((step, i) => `${String(i + 1).padStart(2, "0")}-${step.name}\t${step.service ?? ""}`).join("\n");
  const script = [
    `[ -e ${PLAN_DIR}/complete ] && exit 0`,
    `rm -rf ${PLAN_DIR} && mkdir -p ${PLAN_DIR} && chmod 0700 ${SLIPWAY_DIR} ${PLAN_DIR}`,
    ...plan.steps.map((step, i) => heredoc(`${PLAN_DIR}/${String(i + 1).padStart(2, "0")}-${step.name}.sh`, step.script, "0600")),
    heredoc(`${PLAN_DIR}/steps`, `${index}\n`, "0600"),
    ...(plan.unitCommand ? [heredoc(`${PLAN_DIR}/unit-command`, plan.unitCommand, "0600")] : []),
    `touch ${PLAN_DIR}/complete`,
  ].join("\n");
  const result = await asRoot(session, script);
  if (result.code !== 0) throw new StepFailedError(`${session.target.address}:${session.target.port}`, "copy-scripts", result.stderr.trim() || `exit ${result.code}`);
}

/** The plan as copied to the host (steps run the copied scripts), or undefined when none was copied. */
async function planOnHost(session: SshSession): Promise<BootstrapPlan | undefined> {
  const result = await asRoot(session, `[ -e ${PLAN_DIR}/complete ] || exit 3\ncat ${PLAN_DIR}/steps\necho ---\ncat ${PLAN_DIR}/unit-command 2>/dev/null; true`);
  if (result.code === 3) return undefined;
  const [index = "", unitCommand = ""] = result.stdout.split("\n---\n");
  const steps: HostStep[] = index
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => {
      const [file = "", service = ""] = line.split("\t");
      const name = file.replace(/^\d+-/, "");
      return { name, script: `. ${PLAN_DIR}/${file}.sh`, ...(service ? { service } : {}) };
    });
  return { steps, ...(unitCommand.trim() ? { unitCommand: unitCommand.trim() } : {}) };
}

export interface BootstrapControl {
  /** Set to stop between steps (the host is about to be cleaned). */
  cancelled: boolean;
  /** Pause between two looks at the bootstrap unit. */
  pollMs: number;
}

/**
 * Bootstraps a host: copies `plan` (when given; after a restart it is read back from the host), runs its
 * steps, then the bootstrap unit to its end. StepFailedError names the step and carries its output.
 */
export async function bootstrapHost(target: SshTarget, plan: BootstrapPlan | undefined, report: (line: string) => void, control: BootstrapControl): Promise<void> {
  await withSession(target, async (session) => {
    if (plan) await copyPlan(session, plan);
    const copied = await planOnHost(session);
    const where = `${target.address}:${target.port}`;
    if (!copied) throw new StepFailedError(where, "copy-scripts", "the bootstrap scripts never reached the host and the user data is no longer known");
    for (const step of copied.steps) {
      if (control.cancelled) return;
      const outcome = await runPlanStep(session, step);
      if (outcome === "detached") report(`${step.name}: no systemd on the host: started ${step.service} detached (setsid nohup) as unit slipway-${step.service}`);
      else if (outcome === "ran") report(`${step.name}: done`);
    }
    if (!copied.unitCommand || control.cancelled) return;
    const { started, manager } = await startUnit(session, BOOTSTRAP_UNIT, copied.unitCommand, { oneshot: true });
    if (started) report(`${copied.unitCommand.split(" --")[0]}: started as unit ${BOOTSTRAP_UNIT} (${manager === "systemd" ? "systemd" : "no systemd on the host: detached with setsid nohup"})`);
    while (!control.cancelled) {
      const state = await unitState(session, BOOTSTRAP_UNIT);
      if (state.state === "succeeded") {
        report(`${BOOTSTRAP_UNIT}: finished`);
        return;
      }
      if (state.state === "failed") throw new StepFailedError(where, BOOTSTRAP_UNIT, state.output);
      if (state.state === "absent") throw new StepFailedError(where, BOOTSTRAP_UNIT, "the unit disappeared");
      await new Promise((resolve) => setTimeout(resolve, control.pollMs));
    }
  });
}
