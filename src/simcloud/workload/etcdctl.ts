// `etcdctl` in a control-plane node's etcd pod, through the pods/exec subresource of the emulated
// cluster's API: how Slipway (as Cluster API's control-plane controller does through its etcd client)
// lists etcd's members and removes the member of a control-plane machine before the machine goes. The
// emulator's exec takes the command as JSON (`{"command": ["etcdctl", "member", "list"]}`) and answers
// with what the command printed and its exit code, instead of streaming them; `kubectl create --raw`
// can send it. Commands: `etcdctl member list` (etcd's JSON: header and members) and
// `etcdctl member remove <hex ID>`. Only a running etcd pod of a member answers, and only while etcd
// has quorum.
import { BadRequestError, NotFoundError } from "../../apiserver/errors.ts";
import type { SubresourceAction } from "../../apiserver/routes.ts";
import type { WorkloadEmulator } from "./emulator.ts";
import { memberList } from "./etcd.ts";
import type { ClusterRecord } from "./records.ts";

export interface ExecResult {
  kind: "ExecResult";
  exitCode: number;
  stdout: string;
  stderr: string;
}

const result = (exitCode: number, stdout: string, stderr = ""): ExecResult => ({ kind: "ExecResult", exitCode, stdout, stderr });

async function etcdctl(emulator: WorkloadEmulator, cluster: ClusterRecord, namespace: string | undefined, pod: string, raw: unknown): Promise<ExecResult> {
  const command = (raw as { command?: unknown } | undefined)?.command;
  if (!Array.isArray(command) || command.length === 0 || !command.every((c) => typeof c === "string")) {
    throw new BadRequestError('the body must give the command as a list of strings, e.g. {"command": ["etcdctl", "member", "list"]}');
  }
  const node = pod.startsWith("etcd-") ? pod.slice("etcd-".length) : undefined;
  const etcd = cluster.etcd;
  const member = etcd?.members.find((m) => m.name === node);
  if (namespace !== "kube-system" || !node || !etcd || !member || !emulator.memberHealthy(member)) {
    throw new NotFoundError({ group: "", kind: "Pod", plural: "pods", name: pod }, `pods "${pod}" not found or not running (the emulator runs commands only in the etcd pod of a healthy member)`);
  }
  const [program, ...args] = command as string[];
  if (program !== "etcdctl") return result(127, "", `exec: "${program}": executable file not found in $PATH`);
  if (!emulator.etcdHasQuorum(cluster)) return result(1, "", "Error: context deadline exceeded (etcdserver: no leader)");
  const words = args.filter((a) => !a.startsWith("-"));
  if (words[0] === "member" && words[1] === "list") return result(0, JSON.stringify(memberList(etcd, cluster.id)));
  if (words[0] === "member" && words[1] === "remove" && words[2]) {
    const id = words[2].toLowerCase();
    if (etcd.learner?.id === id) {
      // A learner left by a join that did not finish: removing it lets the next join add its member.
      const learner = etcd.learner;
      delete etcd.learner;
      await emulator.etcdChanged(cluster, `learner ${learner.name} removed`);
      return result(0, `Member ${learner.id} removed from cluster ${cluster.id}\n`);
    }
    const removed = etcd.members.find((m) => m.id === id);
    if (!removed) return result(1, "", `Error: etcdserver: member not found`);
    if (etcd.members.length === 1) return result(1, "", "Error: etcdserver: re-configuration failed due to not enough started members");
    etcd.members = etcd.members.filter((m) => m !== removed);
    await emulator.etcdChanged(cluster, `member ${removed.name} removed`);
    return result(0, `Member ${removed.id} removed from cluster ${cluster.id}\n`);
  }
  return result(1, "", `Error: unknown command "${args.join(" ")}" for "etcdctl" (the emulator knows member list and member remove)`);
}

/** The pods/exec subresource of a cluster, run in the cluster's queue. */
export function execSubresource(emulator: WorkloadEmulator, cluster: ClusterRecord): SubresourceAction {
  return {
    path: "/pods/exec",
    discovery: { group: "", version: "v1", kind: "PodExecOptions" },
    handle: ({ namespace, name, body }) => {
      const current = emulator.records.cluster(cluster.id) ?? cluster;
      return emulator.exclusive(current.endpoint, () => etcdctl(emulator, current, namespace, name, body));
    },
  };
}
