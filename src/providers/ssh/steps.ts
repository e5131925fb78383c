// Running a bootstrap plan's pieces on a host over SSH: steps that run once (a marker records each; its
// output is kept in a log beside it and its tail comes back on failure), units that outlive the session
// (systemd where the host runs it, else detached with setsid+nohup, their pid recorded), and the cleanup
// that stops the units, resets kubeadm, removes the packages Slipway installed and every path it added,
// puts back the files it changed, and finally removes its own directory: the host as it was found.
import { SLIPWAY_DIR, type HostStep } from "./plan.ts";
import { CommandFailedError, outputTail, type CommandResult, type SshSession } from "./session.ts";

const STEPS = `${SLIPWAY_DIR}/steps`;
const UNITS = `${SLIPWAY_DIR}/units`;
const ALREADY_DONE = "SLIPWAY_STEP_ALREADY_DONE";

/** A step failed on a host; the message names the host and the step and ends with the step's output. */
export class StepFailedError extends Error {
  override readonly name = "StepFailedError";
  constructor(
    readonly host: string,
    readonly step: string,
    readonly output: string,
  ) {
    super(`step ${step} failed on ${host}: ${output}`);
  }
}

/** Runs a script as root: directly when logged in as root, else through `sudo -n`. */
export function asRoot(session: SshSession, script: string): Promise<CommandResult> {
  return session.exec(session.target.user === "root" ? "sh -s" : "sudo -n sh -s", script);
}

function where(session: SshSession): string {
  return `${session.target.address}:${session.target.port}`;
}

/** Runs a step unless its marker says it ran; "skipped" when it had. StepFailedError carries its output. */
export async function runStep(session: SshSession, step: { name: string; script: string }): Promise<"ran" | "skipped"> {
  const log = `${STEPS}/${step.name}.log`;
  const wrapper = [
    `mkdir -p ${STEPS}`,
    // One step at a time on a host, whoever runs it (another replica resuming the same bootstrap).
    `exec 9> ${SLIPWAY_DIR}/lock; command -v flock >/dev/null 2>&1 && flock 9`,
    `if [ -e ${STEPS}/${step.name}.done ]; then echo ${ALREADY_DONE}; exit 0; fi`,
    `( set -e`,
    step.script,
    `) > ${log} 2>&1 < /dev/null`,
    "rc=$?",
    `if [ $rc -eq 0 ]; then touch ${STEPS}/${step.name}.done; else tail -n 20 ${log}; exit $rc; fi`,
  ].join("\n");
  const result = await asRoot(session, wrapper);
  if (result.code !== 0) throw new StepFailedError(where(session), step.name, outputTail(result));
  return result.stdout.includes(ALREADY_DONE) ? "skipped" : "ran";
}

/**
 * Runs one step of a bootstrap plan: a service step on a host without systemd starts the service's
 * program detached as unit `slipway-<service>` ("detached").
 */
export async function runPlanStep(session: SshSession, step: HostStep): Promise<"ran" | "skipped" | "detached"> {
  if (step.service && (await unitManagerOf(session)) === "nohup") {
    const { started } = await startUnit(session, `slipway-${step.service}`, step.service, { oneshot: false });
    return started ? "detached" : "skipped";
  }
  return runStep(session, step);
}

export type UnitManager = "systemd" | "nohup";
export type UnitState = { state: "absent" } | { state: "running" } | { state: "succeeded" } | { state: "failed"; output: string };

/** Whether the host runs systemd (as systemd itself tells: /run/systemd/system exists). */
export async function unitManagerOf(session: SshSession): Promise<UnitManager> {
  const result = await session.exec("test -d /run/systemd/system");
  return result.code === 0 ? "systemd" : "nohup";
}

/**
 * Starts `command` as unit `name` unless it was started before. `oneshot`: it runs to its end and its
 * exit code is kept; otherwise it is a service that keeps running.
 */
export async function startUnit(session: SshSession, name: string, command: string, options: { oneshot: boolean }): Promise<{ started: boolean; manager: UnitManager }> {
  const manager = await unitManagerOf(session);
  const runner = `${UNITS}/${name}.sh`;
  const body = options.oneshot ? `#!/bin/sh\n${command}\necho $? > ${UNITS}/${name}.exit\n` : `#!/bin/sh\nexec ${command}\n`;
  const install = [
    `mkdir -p ${UNITS}`,
    `if [ -e ${UNITS}/${name}.started ]; then echo ${ALREADY_DONE}; exit 0; fi`,
    `cat > ${runner} <<'SLIPWAY_EOF'\n${body}SLIPWAY_EOF`,
    `chmod 0700 ${runner}`,
  ];
  if (manager === "systemd") {
    const unit = [
      "[Unit]",
      `Description=Slipway ${name}`,
      "[Service]",
      options.oneshot ? "Type=oneshot\nRemainAfterExit=yes" : "Type=simple\nRestart=always",
      `ExecStart=/bin/sh ${runner}`,
      `StandardOutput=append:${UNITS}/${name}.log`,
      `StandardError=append:${UNITS}/${name}.log`,
      "[Install]",
      "WantedBy=multi-user.target",
      "",
    ].join("\n");
    install.push(`cat > /etc/systemd/system/${name}.service <<'SLIPWAY_EOF'\n${unit}SLIPWAY_EOF`, "systemctl daemon-reload", `systemctl enable --no-block --now ${name}.service`);
  } else {
    install.push(`setsid nohup sh ${runner} > ${UNITS}/${name}.log 2>&1 < /dev/null &`, `echo $! > ${UNITS}/${name}.pid`);
  }
  install.push(`echo ${manager} > ${UNITS}/${name}.started`);
  const result = await asRoot(session, install.join("\n"));
  if (result.code !== 0) throw new StepFailedError(where(session), `start unit ${name}`, outputTail(result));
  return { started: !result.stdout.includes(ALREADY_DONE), manager };
}

/** Where a unit is: never started, running, or ended (with its output's tail when it failed). */
export async function unitState(session: SshSession, name: string): Promise<UnitState> {
  const script = [
    `[ -e ${UNITS}/${name}.started ] || { echo absent; exit 0; }`,
    `if [ -e ${UNITS}/${name}.exit ]; then code=$(cat ${UNITS}/${name}.exit); [ "$code" = 0 ] && echo succeeded || { echo failed; tail -n 20 ${UNITS}/${name}.log; }; exit 0; fi`,
    `if grep -q systemd ${UNITS}/${name}.started; then systemctl is-active --quiet ${name}.service && echo running || { echo failed; tail -n 20 ${UNITS}/${name}.log; }; exit 0; fi`,
    `kill -0 "$(cat ${UNITS}/${name}.pid)" 2>/dev/null && echo running || { echo failed; tail -n 20 ${UNITS}/${name}.log; }`,
  ].join("\n");
  const result = await asRoot(session, script);
  if (result.code !== 0) throw new CommandFailedError(where(session), `state of unit ${name}`, result);
  const [first = "", ...rest] = result.stdout.split("\n");
  if (first === "absent" || first === "running" || first === "succeeded") return { state: first };
  return { state: "failed", output: rest.filter((l) => l.trim()).slice(-8).join(" | ") || "(no output)" };
}

/** Stops a unit and forgets it (its log stays until the cleanup). */
export async function stopUnit(session: SshSession, name: string): Promise<void> {
  const script = [
    `[ -e ${UNITS}/${name}.started ] || exit 0`,
    `if [ -e /etc/systemd/system/${name}.service ]; then systemctl disable --now ${name}.service >/dev/null 2>&1; rm -f /etc/systemd/system/${name}.service; systemctl daemon-reload; fi`,
    `if [ -e ${UNITS}/${name}.pid ]; then kill -TERM -"$(cat ${UNITS}/${name}.pid)" 2>/dev/null; fi`,
    `rm -f ${UNITS}/${name}.pid ${UNITS}/${name}.started ${UNITS}/${name}.exit ${UNITS}/${name}.sh`,
  ].join("\n");
  const result = await asRoot(session, script);
  if (result.code !== 0) throw new StepFailedError(where(session), `stop unit ${name}`, outputTail(result));
}

/** The cleanup: the host as Slipway found it. Idempotent: on a host without Slipway's directory it does nothing. */
export const CLEANUP_SCRIPT = [
  `D=${SLIPWAY_DIR}`,
  `[ -d $D ] || { echo "nothing of Slipway's on this host"; exit 0; }`,
  "for u in /etc/systemd/system/slipway-*.service; do [ -e \"$u\" ] || continue; n=$(basename \"$u\"); systemctl disable --now \"$n\" >/dev/null 2>&1; rm -f \"$u\"; done",
  "[ -d /run/systemd/system ] && systemctl daemon-reload",
  `for p in ${UNITS}/*.pid; do [ -e "$p" ] || continue; kill -TERM -"$(cat "$p")" 2>/dev/null; done`,
  `if [ -e ${UNITS}/slipway-bootstrap.started ] && command -v kubeadm >/dev/null 2>&1; then kubeadm reset -f; fi`,
  `if [ -s $D/installed-packages ]; then DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $(cat $D/installed-packages); fi`,
  `if [ -f $D/found ]; then`,
  `  grep '^absent ' $D/found | cut -d' ' -f2- | sort -r | while read -r p; do rm -rf "$p"; done`,
  `  (cd $D/backup && find . -type f) | while read -r f; do cp -p "$D/backup/$f" "/\${f#./}"; done`,
  "fi",
  "rm -rf $D",
  "echo \"removed Slipway's files and units\"",
].join("\n");

export async function cleanHost(session: SshSession): Promise<string> {
  const result = await asRoot(session, CLEANUP_SCRIPT);
  if (result.code !== 0) throw new StepFailedError(where(session), "cleanup", outputTail(result));
  return outputTail(result, 3);
}

/** Lists Slipway's files and units left on a host (empty when the host is clean). */
export async function slipwayLeftovers(session: SshSession): Promise<string[]> {
  const result = await asRoot(session, `ls -d ${SLIPWAY_DIR} /etc/systemd/system/slipway-* 2>/dev/null; true`);
  return result.stdout.split("\n").filter((l) => l.trim().length > 0);
}

