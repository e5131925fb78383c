// kubeadm's configuration file as kubeadm reads it: YAML documents of kubeadm.k8s.io/v1beta4
// (InitConfiguration, ClusterConfiguration, JoinConfiguration, and the Reset and Upgrade kinds), decoded
// strictly against the v1beta4 types — an unknown field, or a value of the wrong type, refuses the
// file, naming the field — plus the component configurations a kubeadm file may carry
// (KubeletConfiguration, KubeProxyConfiguration), which their components check. A reader of its own:
// bootstrap/kubeadm.ts writes these files, and must not be the one to judge them.
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { parseAllDocuments } from "yaml";
import { StringEnum, Struct } from "../../api/meta.ts";
import { schemaErrors } from "../../apiserver/validation.ts";

export const KUBEADM_V1BETA4 = "kubeadm.k8s.io/v1beta4";

const Duration = Type.String({ description: 'A Go duration, e.g. "4m0s".' });
const Arg = Struct({ name: Type.String(), value: Type.String() });
const EnvVar = Struct({ name: Type.String(), value: Type.Optional(Type.String()), valueFrom: Type.Optional(Type.Object({})) });

const Taint = Struct({
  key: Type.String(),
  value: Type.Optional(Type.String()),
  effect: StringEnum(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
  timeAdded: Type.Optional(Type.String()),
});

const NodeRegistrationOptions = Struct({
  name: Type.Optional(Type.String()),
  criSocket: Type.Optional(Type.String()),
  taints: Type.Optional(Type.Union([Type.Array(Taint), Type.Null()])),
  kubeletExtraArgs: Type.Optional(Type.Array(Arg)),
  ignorePreflightErrors: Type.Optional(Type.Array(Type.String())),
  imagePullPolicy: Type.Optional(StringEnum(["Always", "IfNotPresent", "Never"])),
  imagePullSerial: Type.Optional(Type.Boolean()),
});

const APIEndpoint = Struct({
  advertiseAddress: Type.Optional(Type.String()),
  bindPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
});

const Patches = Struct({ directory: Type.Optional(Type.String()) });

const Timeouts = Struct({
  controlPlaneComponentHealthCheck: Type.Optional(Duration),
  kubeletHealthCheck: Type.Optional(Duration),
  kubernetesAPICall: Type.Optional(Duration),
  etcdAPICall: Type.Optional(Duration),
  tlsBootstrap: Type.Optional(Duration),
  discovery: Type.Optional(Duration),
  upgradeManifests: Type.Optional(Duration),
});

const BootstrapToken = Struct({
  token: Type.String(),
  description: Type.Optional(Type.String()),
  ttl: Type.Optional(Duration),
  expires: Type.Optional(Type.String()),
  usages: Type.Optional(Type.Array(Type.String())),
  groups: Type.Optional(Type.Array(Type.String())),
});

const TypeMeta = { apiVersion: Type.String(), kind: Type.String() };

const InitConfigurationSchema = Struct({
  ...TypeMeta,
  bootstrapTokens: Type.Optional(Type.Array(BootstrapToken)),
  dryRun: Type.Optional(Type.Boolean()),
  nodeRegistration: Type.Optional(NodeRegistrationOptions),
  localAPIEndpoint: Type.Optional(APIEndpoint),
  certificateKey: Type.Optional(Type.String()),
  skipPhases: Type.Optional(Type.Array(Type.String())),
  patches: Type.Optional(Patches),
  timeouts: Type.Optional(Timeouts),
});

const HostPathMount = Struct({
  name: Type.String(),
  hostPath: Type.String(),
  mountPath: Type.String(),
  readOnly: Type.Optional(Type.Boolean()),
  pathType: Type.Optional(Type.String()),
});

const ControlPlaneComponent = {
  extraArgs: Type.Optional(Type.Array(Arg)),
  extraVolumes: Type.Optional(Type.Array(HostPathMount)),
  extraEnvs: Type.Optional(Type.Array(EnvVar)),
};

const ClusterConfigurationSchema = Struct({
  ...TypeMeta,
  etcd: Type.Optional(
    Struct({
      local: Type.Optional(
        Struct({
          imageRepository: Type.Optional(Type.String()),
          imageTag: Type.Optional(Type.String()),
          dataDir: Type.Optional(Type.String()),
          extraArgs: Type.Optional(Type.Array(Arg)),
          extraEnvs: Type.Optional(Type.Array(EnvVar)),
          serverCertSANs: Type.Optional(Type.Array(Type.String())),
          peerCertSANs: Type.Optional(Type.Array(Type.String())),
        }),
      ),
      external: Type.Optional(
        Struct({ endpoints: Type.Array(Type.String()), caFile: Type.String(), certFile: Type.String(), keyFile: Type.String() }),
      ),
    }),
  ),
  networking: Type.Optional(
    Struct({ serviceSubnet: Type.Optional(Type.String()), podSubnet: Type.Optional(Type.String()), dnsDomain: Type.Optional(Type.String()) }),
  ),
  kubernetesVersion: Type.Optional(Type.String()),
  controlPlaneEndpoint: Type.Optional(Type.String()),
  apiServer: Type.Optional(Struct({ ...ControlPlaneComponent, certSANs: Type.Optional(Type.Array(Type.String())) })),
  controllerManager: Type.Optional(Struct(ControlPlaneComponent)),
  scheduler: Type.Optional(Struct(ControlPlaneComponent)),
  dns: Type.Optional(Struct({ imageRepository: Type.Optional(Type.String()), imageTag: Type.Optional(Type.String()), disabled: Type.Optional(Type.Boolean()) })),
  proxy: Type.Optional(Struct({ disabled: Type.Optional(Type.Boolean()) })),
  certificatesDir: Type.Optional(Type.String()),
  imageRepository: Type.Optional(Type.String()),
  featureGates: Type.Optional(Type.Record(Type.String(), Type.Boolean())),
  clusterName: Type.Optional(Type.String()),
  encryptionAlgorithm: Type.Optional(StringEnum(["RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256", "ECDSA-P384"])),
  certificateValidityPeriod: Type.Optional(Duration),
  caCertificateValidityPeriod: Type.Optional(Duration),
});

const JoinConfigurationSchema = Struct({
  ...TypeMeta,
  dryRun: Type.Optional(Type.Boolean()),
  nodeRegistration: Type.Optional(NodeRegistrationOptions),
  caCertPath: Type.Optional(Type.String()),
  discovery: Struct({
    bootstrapToken: Type.Optional(
      Struct({
        token: Type.String(),
        apiServerEndpoint: Type.Optional(Type.String()),
        caCertHashes: Type.Optional(Type.Array(Type.String())),
        unsafeSkipCAVerification: Type.Optional(Type.Boolean()),
      }),
    ),
    file: Type.Optional(Struct({ kubeConfigPath: Type.String() })),
    tlsBootstrapToken: Type.Optional(Type.String()),
  }),
  controlPlane: Type.Optional(Struct({ localAPIEndpoint: Type.Optional(APIEndpoint), certificateKey: Type.Optional(Type.String()) })),
  skipPhases: Type.Optional(Type.Array(Type.String())),
  patches: Type.Optional(Patches),
  timeouts: Type.Optional(Timeouts),
});

const ResetConfigurationSchema = Struct({
  ...TypeMeta,
  cleanupTmpDir: Type.Optional(Type.Boolean()),
  certificatesDir: Type.Optional(Type.String()),
  criSocket: Type.Optional(Type.String()),
  dryRun: Type.Optional(Type.Boolean()),
  force: Type.Optional(Type.Boolean()),
  ignorePreflightErrors: Type.Optional(Type.Array(Type.String())),
  skipPhases: Type.Optional(Type.Array(Type.String())),
  unmountFlags: Type.Optional(Type.Array(Type.String())),
  timeouts: Type.Optional(Timeouts),
});

export type InitConfiguration = Static<typeof InitConfigurationSchema>;
export type ClusterConfiguration = Static<typeof ClusterConfigurationSchema>;
export type JoinConfiguration = Static<typeof JoinConfigurationSchema>;
export type NodeRegistration = Static<typeof NodeRegistrationOptions>;

const KUBEADM_KINDS: Record<string, TSchema> = {
  InitConfiguration: InitConfigurationSchema,
  ClusterConfiguration: ClusterConfigurationSchema,
  JoinConfiguration: JoinConfigurationSchema,
  ResetConfiguration: ResetConfigurationSchema,
  UpgradeConfiguration: Type.Object({ ...TypeMeta }, { additionalProperties: true }),
};

/** Component configurations a kubeadm file may carry; their own components check them. */
const COMPONENT_CONFIGS: Record<string, string> = {
  KubeletConfiguration: "kubelet.config.k8s.io/v1beta1",
  KubeProxyConfiguration: "kubeproxy.config.k8s.io/v1alpha1",
};

/** What one kubeadm configuration file holds. */
export interface KubeadmConfig {
  init?: InitConfiguration;
  cluster?: ClusterConfiguration;
  join?: JoinConfiguration;
  /** The kubelet's `failSwapOn` (true unless the file's KubeletConfiguration says otherwise). */
  failSwapOn: boolean;
}

/** A configuration kubeadm refuses to load: the message it prints. */
export class KubeadmConfigError extends Error {
  override readonly name = "KubeadmConfigError";
}

function gvk(kind: string): string {
  return `schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta4", Kind:"${kind}"}`;
}

/** Reads a kubeadm configuration file (one or several YAML documents), strictly. */
export function readKubeadmConfig(text: string): KubeadmConfig {
  const out: KubeadmConfig = { failSwapOn: true };
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new KubeadmConfigError(`error converting YAML to JSON: ${doc.errors[0]!.message.split("\n")[0]}`);
    const value = doc.toJSON() as Record<string, unknown> | null;
    if (value === null || value === undefined) continue;
    if (typeof value !== "object" || Array.isArray(value)) throw new KubeadmConfigError("a kubeadm configuration document must be a mapping");
    const kind = String(value.kind ?? "");
    const apiVersion = String(value.apiVersion ?? "");
    if (kind === "" || apiVersion === "") throw new KubeadmConfigError(`Object 'Kind' is missing in '${JSON.stringify(value).slice(0, 80)}'`);
    if (COMPONENT_CONFIGS[kind] !== undefined) {
      if (apiVersion !== COMPONENT_CONFIGS[kind]) throw new KubeadmConfigError(`no kind "${kind}" is registered for version "${apiVersion}"`);
      if (kind === "KubeletConfiguration" && value.failSwapOn === false) out.failSwapOn = false;
      continue;
    }
    const schema = KUBEADM_KINDS[kind];
    if (!schema || !apiVersion.startsWith("kubeadm.k8s.io/")) throw new KubeadmConfigError(`no kind "${kind}" is registered for version "${apiVersion}" in scheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31"`);
    if (apiVersion !== KUBEADM_V1BETA4) {
      throw new KubeadmConfigError(`your configuration file uses an old or unsupported API version "${apiVersion}"; this kubeadm reads ${KUBEADM_V1BETA4}. Please use 'kubeadm config migrate --old-config old-config-file --new-config new-config-file'`);
    }
    const errors = schemaErrors(schema, value);
    if (errors.length > 0) {
      const unknown = errors.filter((e) => e.message.startsWith("unknown field"));
      const detail = unknown.length > 0 ? unknown.map((e) => `unknown field "${e.field}"`).join(", ") : errors.map((e) => `${e.field}: ${e.message}`).join(", ");
      throw new KubeadmConfigError(`error unmarshaling configuration ${gvk(kind)}: strict decoding error: ${detail}`);
    }
    if (kind === "InitConfiguration") out.init = value as InitConfiguration;
    else if (kind === "ClusterConfiguration") out.cluster = value as ClusterConfiguration;
    else if (kind === "JoinConfiguration") out.join = value as JoinConfiguration;
  }
  return out;
}
