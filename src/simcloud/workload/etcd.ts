// The etcd cluster behind an emulated control plane. `kubeadm init` starts it with one member; each
// `kubeadm join --control-plane` adds one ("[etcd] Announced new etcd member joining"); a member leaves
// only when someone removes it (`etcdctl member remove`, as Cluster API and `kubeadm reset` do before a
// control-plane machine goes). A member whose machine is down or gone still counts towards the quorum:
// lose more than half and etcd stops answering, and so does the cluster's API. Every change of membership
// or health is kept, in order, so that a test can tell whether quorum ever was lost.
import { createHash } from "node:crypto";

export interface EtcdMember {
  /** etcd's member ID, 16 hex digits. */
  id: string;
  /** The member's name: its node's. */
  name: string;
  instanceId: string;
  peerURL: string;
}

/** The membership and health after one change. */
export interface EtcdSnapshot {
  at: string;
  /** What changed, e.g. "member cp-3 added", "member cp-0 removed", "cp-1 unreachable". */
  event: string;
  members: string[];
  healthy: string[];
  /** More than half of the members are healthy. */
  quorum: boolean;
}

export interface EtcdRecord {
  members: EtcdMember[];
  /**
   * The member a control-plane join added as a learner, not yet promoted: it does not vote, and etcd
   * takes no other learner until it is promoted or removed (etcd's --max-learners, 1).
   */
  learner?: EtcdMember;
  history: EtcdSnapshot[];
  /** Why the control plane is broken, once it is: quorum lost, or a member whose machine went without being removed. */
  broken?: string;
}

/** Snapshots kept per cluster (the oldest go first). */
const HISTORY_LIMIT = 1000;

export function memberId(instanceId: string): string {
  return createHash("sha256").update(instanceId).digest("hex").slice(0, 16);
}

export function hasQuorum(members: readonly EtcdMember[], healthy: (m: EtcdMember) => boolean): boolean {
  return members.length === 0 || members.filter(healthy).length * 2 > members.length;
}

/** Records the membership as it is now, after `event`; marks the control plane broken when quorum is lost. */
export function snapshot(etcd: EtcdRecord, event: string, healthy: (m: EtcdMember) => boolean, at: string): EtcdSnapshot {
  const quorum = hasQuorum(etcd.members, healthy);
  const entry = { at, event, members: etcd.members.map((m) => m.name), healthy: etcd.members.filter(healthy).map((m) => m.name), quorum };
  etcd.history.push(entry);
  if (etcd.history.length > HISTORY_LIMIT) etcd.history.splice(0, etcd.history.length - HISTORY_LIMIT);
  if (!quorum) etcd.broken ??= `etcd lost quorum at ${at} (${entry.healthy.length} of ${entry.members.length} members healthy after: ${event})`;
  return entry;
}

export function addMember(etcd: EtcdRecord, member: { name: string; instanceId: string; address: string }): EtcdMember {
  const existing = etcd.members.find((m) => m.instanceId === member.instanceId);
  if (existing) return existing;
  const added = { id: memberId(member.instanceId), name: member.name, instanceId: member.instanceId, peerURL: `https://${member.address}:2380` };
  etcd.members.push(added);
  return added;
}

/**
 * `member add --learner`, as a control-plane join does first: the member, or etcd's refusal while another
 * learner is pending (one join's member add at a time).
 */
export function addLearner(etcd: EtcdRecord, member: { name: string; instanceId: string; address: string }): EtcdMember | { refused: string } {
  if (etcd.learner && etcd.learner.instanceId !== member.instanceId) return { refused: "etcdserver: too many learner members in cluster" };
  etcd.learner ??= { id: memberId(member.instanceId), name: member.name, instanceId: member.instanceId, peerURL: `https://${member.address}:2380` };
  return etcd.learner;
}

/** What `etcdctl member list -w json` prints. */
export function memberList(etcd: EtcdRecord, clusterId: string): unknown {
  return {
    header: { cluster_id: memberId(clusterId), member_id: etcd.members[0]?.id ?? "" },
    members: [
      ...etcd.members.map((m) => ({ ID: m.id, name: m.name, peerURLs: [m.peerURL], clientURLs: [m.peerURL.replace(/:2380$/, ":2379")] })),
      ...(etcd.learner ? [{ ID: etcd.learner.id, name: etcd.learner.name, peerURLs: [etcd.learner.peerURL], isLearner: true }] : []),
    ],
  };
}
