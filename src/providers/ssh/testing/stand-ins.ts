// Stand-ins the SSH host lab installs in /usr/local/sbin of each host (the fixture installs them, not
// Slipway): the programs a node's bootstrap runs whose real effect would reach the kernel of the machine
// running the tests (swap, modules, sysctls) or needs a container runtime (containerd, kubelet, kubeadm).
// Each records its command line in the lab's log of the host; kubeadm writes and removes the files the
// real one does, and fails with a message when the lab's `fail-kubeadm` file exists.

export const STAND_IN_PROGRAMS = ["swapoff", "modprobe", "sysctl", "apt-mark", "containerd", "kubelet", "kubeadm"] as const;

const KUBERNETES_VERSION = "v1.31.2";

function recorder(log: string): string {
  return `#!/bin/sh\necho "$(basename "$0") $*" >> ${log}\n`;
}

/** The stand-ins' scripts by program name; `hostDir` is the lab's directory of the host. */
export function standIns(hostDir: string): Record<(typeof STAND_IN_PROGRAMS)[number], string> {
  const log = `${hostDir}/calls.log`;
  const head = recorder(log);
  return {
    swapoff: head,
    modprobe: head,
    sysctl: head,
    "apt-mark": head,
    containerd: `${head}[ "$1 $2" = "config default" ] && printf '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\\n  SystemdCgroup = false\\n'\nexit 0\n`,
    kubelet: `${head}[ "$1" = "--version" ] && echo "Kubernetes ${KUBERNETES_VERSION}"\nexit 0\n`,
    kubeadm: [
      head,
      'case "$1" in',
      `  version) echo "${KUBERNETES_VERSION}" ;;`,
      "  init|join)",
      `    if [ -e ${hostDir}/fail-kubeadm ]; then cat ${hostDir}/fail-kubeadm >&2; exit 1; fi`,
      '    config="$3"; [ -f "$config" ] || { echo "open $config: no such file or directory" >&2; exit 1; }',
      "    mkdir -p /etc/kubernetes/manifests /var/lib/kubelet",
      '    echo "apiVersion: v1" > /etc/kubernetes/kubelet.conf',
      '    echo "kind: KubeletConfiguration" > /var/lib/kubelet/config.yaml',
      '    if [ "$1" = init ]; then echo "apiVersion: v1" > /etc/kubernetes/admin.conf; echo "kind: Pod" > /etc/kubernetes/manifests/kube-apiserver.yaml;',
      '      echo "Your Kubernetes control-plane has initialized successfully!"; else echo "This node has joined the cluster"; fi ;;',
      "  reset)",
      "    [ -e /etc/kubernetes/manifests/etcd.yaml ] && rm -rf /var/lib/etcd",
      "    rm -rf /etc/kubernetes/manifests /etc/kubernetes/pki /etc/kubernetes/*.conf /var/lib/kubelet",
      '    echo "[reset] Deleted contents of the etc directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]" ;;',
      '  *) echo "kubeadm stand-in: $1 is not emulated" >&2; exit 1 ;;',
      "esac",
      "",
    ].join("\n"),
  };
}
