// The shape of core/v1 PodSpec and PodTemplateSpec, as Pods, DaemonSets and Deployments of an emulated
// workload cluster take them: every field Kubernetes 1.31 defines at the levels manifests fill in (pod,
// container, environment, mounts, volumes, tolerations, security context), so a misspelt or unknown
// field is refused with its path, as the real API server refuses it under strict field validation. The
// deep, rarely written parts (affinity, probes' handlers, exotic volume sources) are kept as sent.
import { Type, type TSchema } from "@sinclair/typebox";
import { FreeForm, MapOf, ObjectMeta, StringEnum, Struct } from "../../api/meta.ts";
import type { FieldError } from "../../api/registry.ts";

const text = (description: string) => Type.String({ description });
const flag = (description: string) => Type.Boolean({ description });
const integer = (description: string) => Type.Integer({ description });
const opt = <T extends TSchema>(schema: T) => Type.Optional(schema);

/** An integer or a string such as "25%" (IntOrString), as Kubernetes' OpenAPI marks it. */
export const IntOrString = (description: string) => Type.Union([Type.Integer(), Type.String()], { description, "x-kubernetes-int-or-string": true });
const Quantity = IntOrString("A quantity: 100m, 1Gi, 2.");

const KeyRef = (what: string) =>
  Struct({ name: opt(text(`Name of the ${what}.`)), key: text("The key to select."), optional: opt(flag(`Whether the ${what} or its key may be missing.`)) }, { description: `Selects a key of a ${what}.` });

const EnvVar = Struct(
  {
    name: text("Name of the environment variable."),
    value: opt(text("Its value.")),
    valueFrom: opt(
      Struct(
        {
          configMapKeyRef: opt(KeyRef("ConfigMap")),
          secretKeyRef: opt(KeyRef("Secret")),
          fieldRef: opt(Struct({ apiVersion: opt(text("Version of the schema the path is written in.")), fieldPath: text("Path of the field, e.g. metadata.name.") }, { description: "A field of the pod." })),
          resourceFieldRef: opt(Struct({ containerName: opt(text("Container name.")), resource: text("limits.cpu, requests.memory, …"), divisor: opt(Quantity) }, { description: "A resource of a container." })),
        },
        { description: "Where the value comes from." },
      ),
    ),
  },
  { description: "An environment variable of a container." },
);

const EnvFromSource = Struct(
  {
    prefix: opt(text("Prefix of every variable name.")),
    configMapRef: opt(Struct({ name: opt(text("ConfigMap name.")), optional: opt(flag("May be missing.")) }, { description: "A ConfigMap." })),
    secretRef: opt(Struct({ name: opt(text("Secret name.")), optional: opt(flag("May be missing.")) }, { description: "A Secret." })),
  },
  { description: "Every key of a ConfigMap or Secret as environment variables." },
);

const VolumeMount = Struct(
  {
    name: text("Name of the volume."),
    mountPath: text("Where it is mounted in the container."),
    readOnly: opt(flag("Mounted read-only.")),
    recursiveReadOnly: opt(text("Disabled, IfPossible or Enabled.")),
    subPath: opt(text("Path within the volume to mount.")),
    subPathExpr: opt(text("Like subPath, with $(VAR) expanded.")),
    mountPropagation: opt(text("None, HostToContainer or Bidirectional.")),
  },
  { description: "A volume mounted into a container." },
);

const ContainerPort = Struct(
  {
    containerPort: Type.Integer({ minimum: 1, maximum: 65535, description: "Port number on the pod's address." }),
    hostPort: opt(Type.Integer({ minimum: 1, maximum: 65535, description: "Port number on the host." })),
    hostIP: opt(text("Host address to bind the host port to.")),
    name: opt(text("Name of the port (an IANA_SVC_NAME).")),
    protocol: opt(StringEnum(["TCP", "UDP", "SCTP"], { description: "TCP, UDP or SCTP." })),
  },
  { description: "A port a container exposes." },
);

const ResourceRequirements = Struct(
  {
    limits: opt(MapOf(Quantity, "Most of each resource the container may use.")),
    requests: opt(MapOf(Quantity, "Least of each resource the container needs to be scheduled.")),
    claims: opt(Type.Array(Struct({ name: text("Name of a resource claim of the pod."), request: opt(text("A request of the claim.")) }, { description: "A resource claim." }), { description: "Resource claims used." })),
  },
  { description: "Compute resources of a container." },
);

const SeccompProfile = Struct({ type: text("RuntimeDefault, Unconfined or Localhost."), localhostProfile: opt(text("Profile file on the node.")) }, { description: "Seccomp profile." });
const AppArmorProfile = Struct({ type: text("RuntimeDefault, Unconfined or Localhost."), localhostProfile: opt(text("Profile name loaded on the node.")) }, { description: "AppArmor profile." });
const SELinuxOptions = Struct({ user: opt(text("SELinux user.")), role: opt(text("SELinux role.")), type: opt(text("SELinux type.")), level: opt(text("SELinux level.")) }, { description: "SELinux labels." });
const WindowsOptions = FreeForm("Windows-specific settings.");

const SecurityContext = Struct(
  {
    allowPrivilegeEscalation: opt(flag("Whether a process may gain more privileges than its parent.")),
    appArmorProfile: opt(AppArmorProfile),
    capabilities: opt(Struct({ add: opt(Type.Array(Type.String(), { description: "Capabilities added." })), drop: opt(Type.Array(Type.String(), { description: "Capabilities dropped." })) }, { description: "Linux capabilities." })),
    privileged: opt(flag("Run the container privileged.")),
    procMount: opt(text("Default or Unmasked.")),
    readOnlyRootFilesystem: opt(flag("Read-only root filesystem.")),
    runAsGroup: opt(integer("GID to run as.")),
    runAsNonRoot: opt(flag("Must run as a non-root user.")),
    runAsUser: opt(integer("UID to run as.")),
    seLinuxOptions: opt(SELinuxOptions),
    seccompProfile: opt(SeccompProfile),
    windowsOptions: opt(WindowsOptions),
  },
  { description: "Security settings of a container." },
);

const Probe = Struct(
  {
    exec: opt(FreeForm("A command to run.")),
    httpGet: opt(FreeForm("An HTTP GET to send.")),
    tcpSocket: opt(FreeForm("A TCP port to open.")),
    grpc: opt(FreeForm("A gRPC health check.")),
    initialDelaySeconds: opt(integer("Seconds before the first probe.")),
    periodSeconds: opt(integer("Seconds between probes.")),
    timeoutSeconds: opt(integer("Seconds before a probe times out.")),
    successThreshold: opt(integer("Successes in a row that count as success.")),
    failureThreshold: opt(integer("Failures in a row that count as failure.")),
    terminationGracePeriodSeconds: opt(integer("Grace period after a failed liveness probe.")),
  },
  { description: "A health check of a container." },
);

const containerFields = {
  name: text("Name of the container, unique in the pod (a DNS label)."),
  image: opt(text("Container image, e.g. registry.k8s.io/pause:3.10.")),
  imagePullPolicy: opt(StringEnum(["Always", "IfNotPresent", "Never"], { description: "When the image is pulled." })),
  command: opt(Type.Array(Type.String(), { description: "Entrypoint (replaces the image's)." })),
  args: opt(Type.Array(Type.String(), { description: "Arguments to the entrypoint." })),
  workingDir: opt(text("Working directory.")),
  env: opt(Type.Array(EnvVar, { description: "Environment variables." })),
  envFrom: opt(Type.Array(EnvFromSource, { description: "Environment variables from ConfigMaps and Secrets." })),
  ports: opt(Type.Array(ContainerPort, { description: "Ports the container exposes." })),
  resources: opt(ResourceRequirements),
  resizePolicy: opt(Type.Array(FreeForm("How a resource is resized."), { description: "Resize policies." })),
  restartPolicy: opt(text("Always (for a sidecar init container).")),
  volumeMounts: opt(Type.Array(VolumeMount, { description: "Volumes mounted into the container." })),
  volumeDevices: opt(Type.Array(Struct({ name: text("Name of a PVC of the pod."), devicePath: text("Device path in the container.") }, { description: "A raw block device." }), { description: "Raw block devices." })),
  livenessProbe: opt(Probe),
  readinessProbe: opt(Probe),
  startupProbe: opt(Probe),
  lifecycle: opt(FreeForm("Actions on start and stop (postStart, preStop).")),
  securityContext: opt(SecurityContext),
  terminationMessagePath: opt(text("File the termination message is written to.")),
  terminationMessagePolicy: opt(StringEnum(["File", "FallbackToLogsOnError"], { description: "How the termination message is read." })),
  stdin: opt(flag("Allocate a stdin buffer.")),
  stdinOnce: opt(flag("Close stdin after the first attach.")),
  tty: opt(flag("Allocate a TTY.")),
};

export const Container = Struct(containerFields, { description: "A container of the pod." });
const EphemeralContainer = Struct({ ...containerFields, targetContainerName: opt(text("Container whose namespaces it shares.")) }, { description: "A debugging container." });

export const Toleration = Struct(
  {
    key: opt(text("Taint key it tolerates (all keys when empty with operator Exists).")),
    operator: opt(StringEnum(["Exists", "Equal"], { description: "Exists or Equal (default)." })),
    value: opt(text("Taint value to match with Equal.")),
    effect: opt(StringEnum(["NoSchedule", "PreferNoSchedule", "NoExecute"], { description: "Effect it tolerates (all when empty)." })),
    tolerationSeconds: opt(integer("How long a NoExecute taint is tolerated.")),
  },
  { description: "Lets the pod run on nodes with a matching taint." },
);

const KeyToPath = Struct({ key: text("The key."), path: text("Relative path of the file."), mode: opt(integer("File mode.")) }, { description: "A key projected to a path." });

const Volume = Struct(
  {
    name: text("Name of the volume, unique in the pod."),
    hostPath: opt(Struct({ path: text("Path on the host."), type: opt(text('"", DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice or BlockDevice.')) }, { description: "A file or directory of the host." })),
    configMap: opt(Struct({ name: opt(text("ConfigMap name.")), items: opt(Type.Array(KeyToPath, { description: "Keys to project." })), defaultMode: opt(integer("Mode of the files.")), optional: opt(flag("May be missing.")) }, { description: "A ConfigMap's keys as files." })),
    secret: opt(Struct({ secretName: opt(text("Secret name.")), items: opt(Type.Array(KeyToPath, { description: "Keys to project." })), defaultMode: opt(integer("Mode of the files.")), optional: opt(flag("May be missing.")) }, { description: "A Secret's keys as files." })),
    emptyDir: opt(Struct({ medium: opt(text('"" or Memory.')), sizeLimit: opt(Quantity) }, { description: "A scratch directory of the pod." })),
    persistentVolumeClaim: opt(Struct({ claimName: text("Name of the claim."), readOnly: opt(flag("Read-only.")) }, { description: "A persistent volume claim." })),
    projected: opt(FreeForm("Several sources in one directory.")),
    downwardAPI: opt(FreeForm("Pod fields as files.")),
    csi: opt(FreeForm("A CSI driver's volume.")),
    ephemeral: opt(FreeForm("A volume made for the pod by a claim template.")),
    image: opt(FreeForm("An OCI image's contents.")),
    nfs: opt(FreeForm("An NFS export.")),
    iscsi: opt(FreeForm("An iSCSI disk.")),
    fc: opt(FreeForm("A Fibre Channel disk.")),
    rbd: opt(FreeForm("A Ceph RBD image.")),
    cephfs: opt(FreeForm("A CephFS mount.")),
    glusterfs: opt(FreeForm("A Glusterfs mount.")),
    gitRepo: opt(FreeForm("A git repository (deprecated).")),
    awsElasticBlockStore: opt(FreeForm("An EBS volume (deprecated).")),
    gcePersistentDisk: opt(FreeForm("A GCE persistent disk (deprecated).")),
    azureDisk: opt(FreeForm("An Azure disk (deprecated).")),
    azureFile: opt(FreeForm("An Azure file share (deprecated).")),
    cinder: opt(FreeForm("A Cinder volume (deprecated).")),
    vsphereVolume: opt(FreeForm("A vSphere volume (deprecated).")),
    flexVolume: opt(FreeForm("A FlexVolume (deprecated).")),
    flocker: opt(FreeForm("A Flocker volume (deprecated).")),
    photonPersistentDisk: opt(FreeForm("A Photon disk (deprecated).")),
    portworxVolume: opt(FreeForm("A Portworx volume (deprecated).")),
    quobyte: opt(FreeForm("A Quobyte volume (deprecated).")),
    scaleIO: opt(FreeForm("A ScaleIO volume (deprecated).")),
    storageos: opt(FreeForm("A StorageOS volume (deprecated).")),
  },
  { description: "A volume the pod's containers can mount." },
);

const PodSecurityContext = Struct(
  {
    appArmorProfile: opt(AppArmorProfile),
    fsGroup: opt(integer("Group owning the pod's volumes.")),
    fsGroupChangePolicy: opt(text("OnRootMismatch or Always.")),
    runAsGroup: opt(integer("GID containers run as.")),
    runAsNonRoot: opt(flag("Containers must run as non-root.")),
    runAsUser: opt(integer("UID containers run as.")),
    seLinuxChangePolicy: opt(text("MountOption or Recursive.")),
    seLinuxOptions: opt(SELinuxOptions),
    seccompProfile: opt(SeccompProfile),
    supplementalGroups: opt(Type.Array(Type.Integer(), { description: "Further groups of the first process." })),
    supplementalGroupsPolicy: opt(text("Merge or Strict.")),
    sysctls: opt(Type.Array(Struct({ name: text("Sysctl name."), value: text("Its value.") }, { description: "A namespaced sysctl." }), { description: "Sysctls set for the pod." })),
    windowsOptions: opt(WindowsOptions),
  },
  { description: "Security settings of the pod." },
);

export const PodSpec = Struct(
  {
    containers: Type.Array(Container, { description: "The pod's containers (at least one)." }),
    initContainers: opt(Type.Array(Container, { description: "Containers run to completion, in order, before the others." })),
    ephemeralContainers: opt(Type.Array(EphemeralContainer, { description: "Debugging containers added to a running pod." })),
    volumes: opt(Type.Array(Volume, { description: "Volumes the containers can mount." })),
    nodeName: opt(text("The node the pod is bound to (set by the scheduler).")),
    nodeSelector: opt(MapOf(Type.String(), "Labels a node must have to run the pod.")),
    affinity: opt(FreeForm("Node affinity, pod affinity and anti-affinity.")),
    tolerations: opt(Type.Array(Toleration, { description: "Taints the pod tolerates." })),
    topologySpreadConstraints: opt(Type.Array(FreeForm("How to spread the pods over a topology."), { description: "Spread constraints." })),
    schedulerName: opt(text("Scheduler that places the pod.")),
    schedulingGates: opt(Type.Array(Struct({ name: text("Name of the gate.") }, { description: "A scheduling gate." }), { description: "Gates the pod waits on before it is scheduled." })),
    priority: opt(integer("Priority value (set from the priority class).")),
    priorityClassName: opt(text("Priority class, e.g. system-node-critical.")),
    preemptionPolicy: opt(text("PreemptLowerPriority or Never.")),
    restartPolicy: opt(StringEnum(["Always", "OnFailure", "Never"], { description: "Always, OnFailure or Never." })),
    terminationGracePeriodSeconds: opt(integer("Seconds a pod gets to stop.")),
    activeDeadlineSeconds: opt(integer("Seconds the pod may be active.")),
    dnsPolicy: opt(StringEnum(["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"], { description: "How the pod's DNS is set up." })),
    dnsConfig: opt(FreeForm("DNS settings merged into the pod's.")),
    hostNetwork: opt(flag("Use the node's network namespace.")),
    hostPID: opt(flag("Use the node's PID namespace.")),
    hostIPC: opt(flag("Use the node's IPC namespace.")),
    hostUsers: opt(flag("Use the node's user namespace.")),
    shareProcessNamespace: opt(flag("Containers share one PID namespace.")),
    hostname: opt(text("Hostname of the pod.")),
    subdomain: opt(text("Subdomain of the pod's hostname.")),
    setHostnameAsFQDN: opt(flag("Hostname set to the fully qualified name.")),
    hostAliases: opt(Type.Array(Struct({ ip: text("Address."), hostnames: opt(Type.Array(Type.String(), { description: "Names." })) }, { description: "A hosts-file entry." }), { description: "Entries added to /etc/hosts." })),
    serviceAccountName: opt(text("Service account the pod runs as.")),
    serviceAccount: opt(text("Deprecated alias of serviceAccountName.")),
    automountServiceAccountToken: opt(flag("Mount the service account's token.")),
    securityContext: opt(PodSecurityContext),
    imagePullSecrets: opt(Type.Array(Struct({ name: opt(text("Secret name.")) }, { description: "A pull secret." }), { description: "Secrets for pulling images." })),
    enableServiceLinks: opt(flag("Inject service environment variables.")),
    runtimeClassName: opt(text("Runtime class of the pod.")),
    overhead: opt(MapOf(Quantity, "Resources the pod's sandbox uses.")),
    readinessGates: opt(Type.Array(Struct({ conditionType: text("Condition type that must be True.") }, { description: "A readiness gate." }), { description: "Further conditions for readiness." })),
    os: opt(Struct({ name: text("linux or windows.") }, { description: "The pod's operating system." })),
    resourceClaims: opt(Type.Array(FreeForm("A resource claim of the pod."), { description: "Resource claims." })),
  },
  { description: "What the pod runs, and how and where it runs." },
);

export const PodTemplateSpec = Struct(
  { metadata: opt(ObjectMeta), spec: PodSpec },
  { description: "The pod each replica is made from." },
);

export const LabelSelector = Struct(
  {
    matchLabels: opt(MapOf(Type.String(), "Labels a pod must have.")),
    matchExpressions: opt(
      Type.Array(
        Struct({ key: text("Label key."), operator: StringEnum(["In", "NotIn", "Exists", "DoesNotExist"], { description: "In, NotIn, Exists or DoesNotExist." }), values: opt(Type.Array(Type.String(), { description: "Values for In and NotIn." })) }, { description: "A requirement on a label." }),
        { description: "Requirements on labels (all must hold)." },
      ),
    ),
  },
  { description: "Selects objects by their labels." },
);

export interface ContainerView {
  name: string;
  image?: string;
}

export interface PodSpecView {
  containers: ContainerView[];
  initContainers?: ContainerView[];
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: { key?: string; operator?: string; value?: string; effect?: string }[];
  hostNetwork?: boolean;
}

/** What Kubernetes' validation asks of a pod spec beyond its shape: containers with images, unique names. */
export function podSpecErrors(spec: PodSpecView | undefined, path: string): FieldError[] {
  const errors: FieldError[] = [];
  if (!spec) return [{ field: path, reason: "FieldValueRequired", message: "Required value" }];
  if (spec.containers.length === 0) errors.push({ field: `${path}.containers`, reason: "FieldValueRequired", message: "Required value" });
  const seen = new Set<string>();
  for (const [group, list] of [["containers", spec.containers], ["initContainers", spec.initContainers ?? []]] as const) {
    list.forEach((c, i) => {
      const field = `${path}.${group}[${i}]`;
      if (!c.image) errors.push({ field: `${field}.image`, reason: "FieldValueRequired", message: "Required value" });
      if (seen.has(c.name)) errors.push({ field: `${field}.name`, reason: "FieldValueDuplicate", message: `Duplicate value: "${c.name}"` });
      seen.add(c.name);
    });
  }
  return errors;
}

/** Whether labels satisfy a selector's matchLabels and matchExpressions. */
export function selectorMatches(selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] } | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = e.key in labels;
    const value = labels[e.key];
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
    if (e.operator === "In" && (!has || !(e.values ?? []).includes(value!))) return false;
    if (e.operator === "NotIn" && has && (e.values ?? []).includes(value!)) return false;
  }
  return true;
}
