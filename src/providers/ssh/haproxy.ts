// The control plane's load balancer where there is no cloud to ask for one: haproxy on the leader
// control-plane host, in front of every control-plane member's API server. Slipway renders the
// configuration (TCP passthrough: TLS ends at the API servers; members are health-checked on /readyz
// over TLS, as kubeadm's HA guide does), checks it with `haproxy -c`, and (re)loads haproxy only when
// the members changed: a soft reload (SIGUSR2 to haproxy's master) keeps open connections.
import { createHash } from "node:crypto";
import { SLIPWAY_DIR } from "./plan.ts";
import type { SshSession } from "./session.ts";
import { StepFailedError, asRoot, startUnit, unitManagerOf } from "./steps.ts";

export const HAPROXY_UNIT = "slipway-haproxy";
/** The port clients reach the API at on the leader host (its own API server keeps 6443). */
export const API_LOAD_BALANCER_PORT = 8443;
const HAPROXY_DIR = `${SLIPWAY_DIR}/haproxy`;
const CONFIG = `${HAPROXY_DIR}/haproxy.cfg`;

export interface ApiServerMember {
  /** The member's name (its Host), for haproxy's server line and messages. */
  name: string;
  address: string;
  port: number;
}

export interface ApiLoadBalancerSpec {
  members: ApiServerMember[];
  /** Where haproxy listens (default API_LOAD_BALANCER_PORT). */
  port?: number;
}

/** haproxy's configuration for the members, in a fixed order so that the same members render the same text. */
export function renderHaproxyConfig(spec: ApiLoadBalancerSpec): string {
  const members = [...spec.members].sort((a, b) => a.name.localeCompare(b.name));
  return [
    "# Rendered by Slipway: the control plane's API servers behind one endpoint. Changes are overwritten.",
    "global",
    "  log stderr format short local0 notice",
    "  maxconn 4096",
    "defaults",
    "  mode tcp",
    "  log global",
    "  option tcplog",
    "  timeout connect 5s",
    "  timeout client 1h",
    "  timeout server 1h",
    "  timeout check 3s",
    "frontend kube-apiserver",
    `  bind *:${spec.port ?? API_LOAD_BALANCER_PORT}`,
    "  default_backend kube-apiserver",
    "backend kube-apiserver",
    "  option httpchk GET /readyz",
    "  http-check expect status 200",
    "  balance roundrobin",
    ...members.map((m) => `  server ${m.name} ${m.address}:${m.port} check check-ssl verify none inter 2s fall 3 rise 2`),
    "",
  ].join("\n");
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

export type LoadBalancerChange = "started" | "reloaded" | "unchanged";

/**
 * Makes haproxy on `session`'s host serve `spec`: writes and checks the configuration, starts haproxy as
 * unit slipway-haproxy the first time, and reloads it when the configuration changed.
 */
export async function ensureApiLoadBalancer(session: SshSession, spec: ApiLoadBalancerSpec): Promise<LoadBalancerChange> {
  const config = renderHaproxyConfig(spec);
  const where = `${session.target.address}:${session.target.port}`;
  const write = [
    `mkdir -p ${HAPROXY_DIR}`,
    `[ -f ${CONFIG} ] && [ "$(sha256sum ${CONFIG} | cut -d' ' -f1)" = "${digest(config)}" ] && { echo unchanged; exit 0; }`,
    `cat > ${CONFIG}.new <<'SLIPWAY_EOF'\n${config}SLIPWAY_EOF`,
    `haproxy -c -q -f ${CONFIG}.new || exit 1`,
    `mv ${CONFIG}.new ${CONFIG}`,
    "echo written",
  ].join("\n");
  const written = await asRoot(session, write);
  if (written.code !== 0) throw new StepFailedError(where, "haproxy configuration", `${written.stdout}\n${written.stderr}`.trim() || `exit ${written.code}`);
  // -W: master-worker, so SIGUSR2 to the master reloads; -db: stays in the foreground of its unit.
  const { started } = await startUnit(session, HAPROXY_UNIT, `haproxy -W -db -f ${CONFIG}`, { oneshot: false });
  if (started) return "started";
  if (written.stdout.trim() === "unchanged") return "unchanged";
  const manager = await unitManagerOf(session);
  const master = manager === "systemd" ? `$(systemctl show -p MainPID --value ${HAPROXY_UNIT}.service)` : `$(cat ${SLIPWAY_DIR}/units/${HAPROXY_UNIT}.pid)`;
  const reload = await asRoot(session, `kill -USR2 ${master}`);
  if (reload.code !== 0) throw new StepFailedError(where, "haproxy reload", reload.stderr.trim() || `exit ${reload.code}`);
  return "reloaded";
}
