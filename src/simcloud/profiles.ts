// Latency profiles: how long the sim cloud's asynchronous transitions take, how fast its API refills its
// throttling buckets, and how long kubeadm takes on its machines (read by the workload-cluster emulator).
//
// Figures are simulated milliseconds as [min, max]; each transition draws uniformly in between (seeded)
// and the time scale multiplies the result. `realistic` follows what public clouds document and what
// published measurements report:
// - Instance launch, pending → running 40–60 s: AWS EC2 user guide, "Instance lifecycle"; M. Mao and
//   M. Humphrey, "A Performance Study on the VM Startup Time in the Cloud" (IEEE CLOUD 2012: Linux VM
//   startup of tens of seconds to a few minutes on EC2, Azure and Rackspace); M. Sweet, "EC2 Launch
//   Times" (martysweet.co.uk, 2023: current instance types reach running in well under a minute).
// - Load balancer provisioning → active 60–90 s: AWS Elastic Load Balancing guide, Network Load
//   Balancer states provisioning → active, which commonly takes one to a few minutes; Azure and GCP
//   forwarding rules are quicker, so the range sits at the quick end of AWS.
// - Target health 25–35 s: a health-check interval of 10 s and a healthy threshold of 3, settings the
//   ELB guide documents for Network Load Balancer target groups.
// - Networks, subnets, security groups 1–3 s: EC2 VPC calls return at once with a short "pending"; GCP
//   network and subnetwork operations finish within a few seconds.
// - Stop 20–40 s and terminate 30–60 s: EC2 "stopping" and "shutting-down" typically last under a minute.
// - kubeadm init ≈ 30 s and join ≈ 15 s with images pulled beforehand: the kubeadm reference ("kubeadm
//   init" phases, wait-control-plane with a 4-minute limit) and commonly published install logs.
// - API throttling: EC2 request token buckets per API and per account and region ("Request throttling for
//   the Amazon EC2 API"): non-mutating actions 100 tokens refilled at 20/s, mutating actions 200 tokens
//   refilled at 5/s.
// `demo` keeps the same proportions at a pace where a 3-control-plane, 2-pool cluster is Ready in about
// 20–40 s; `fast` is sub-second for interactive tests; `instant` has no delay at all (next tick).

/** [min, max] in simulated milliseconds. */
export type DelayRange = readonly [number, number];

export interface TokenBucket {
  /** Tokens the bucket holds when full (the burst). */
  capacity: number;
  /** Tokens added per simulated second. */
  refillPerSecond: number;
}

export interface LatencyProfile {
  name: ProfileName;
  networkCreate: DelayRange;
  subnetCreate: DelayRange;
  securityGroupCreate: DelayRange;
  instanceBoot: DelayRange;
  instanceStop: DelayRange;
  instanceTerminate: DelayRange;
  loadBalancerProvision: DelayRange;
  loadBalancerDelete: DelayRange;
  /** From a target running (or being registered) until its health checks pass. */
  targetHealthy: DelayRange;
  /** `kubeadm init` on the first control-plane machine, after it is running. */
  kubeadmInit: DelayRange;
  /** `kubeadm join` of a further machine, after it is running. */
  kubeadmJoin: DelayRange;
  /** Per account, region and operation (EC2 keeps one bucket per API). */
  rateLimits: { mutating: TokenBucket; describe: TokenBucket };
}

export type ProfileName = "instant" | "fast" | "demo" | "realistic";

export type DelayName = {
  [K in keyof LatencyProfile]: LatencyProfile[K] extends DelayRange ? K : never;
}[keyof LatencyProfile];

const GENEROUS_LIMITS = {
  mutating: { capacity: 2000, refillPerSecond: 1000 },
  describe: { capacity: 5000, refillPerSecond: 2500 },
};

export const PROFILES: Record<ProfileName, LatencyProfile> = {
  instant: {
    name: "instant",
    networkCreate: [0, 0],
    subnetCreate: [0, 0],
    securityGroupCreate: [0, 0],
    instanceBoot: [0, 0],
    instanceStop: [0, 0],
    instanceTerminate: [0, 0],
    loadBalancerProvision: [0, 0],
    loadBalancerDelete: [0, 0],
    targetHealthy: [0, 0],
    kubeadmInit: [0, 0],
    kubeadmJoin: [0, 0],
    rateLimits: GENEROUS_LIMITS,
  },
  fast: {
    name: "fast",
    networkCreate: [20, 60],
    subnetCreate: [20, 60],
    securityGroupCreate: [20, 60],
    instanceBoot: [300, 600],
    instanceStop: [100, 200],
    instanceTerminate: [100, 300],
    loadBalancerProvision: [200, 500],
    loadBalancerDelete: [100, 200],
    targetHealthy: [100, 150],
    kubeadmInit: [400, 600],
    kubeadmJoin: [200, 300],
    rateLimits: GENEROUS_LIMITS,
  },
  demo: {
    name: "demo",
    networkCreate: [300, 800],
    subnetCreate: [300, 800],
    securityGroupCreate: [300, 800],
    instanceBoot: [3000, 6000],
    instanceStop: [1500, 3000],
    instanceTerminate: [2000, 4000],
    loadBalancerProvision: [3000, 5000],
    loadBalancerDelete: [1000, 2000],
    targetHealthy: [1000, 2000],
    kubeadmInit: [4000, 6000],
    kubeadmJoin: [2000, 3000],
    rateLimits: {
      mutating: { capacity: 500, refillPerSecond: 100 },
      describe: { capacity: 1000, refillPerSecond: 400 },
    },
  },
  realistic: {
    name: "realistic",
    networkCreate: [1000, 3000],
    subnetCreate: [1000, 3000],
    securityGroupCreate: [1000, 3000],
    instanceBoot: [40_000, 60_000],
    instanceStop: [20_000, 40_000],
    instanceTerminate: [30_000, 60_000],
    loadBalancerProvision: [60_000, 90_000],
    loadBalancerDelete: [10_000, 30_000],
    targetHealthy: [25_000, 35_000],
    kubeadmInit: [25_000, 35_000],
    kubeadmJoin: [12_000, 18_000],
    rateLimits: {
      mutating: { capacity: 200, refillPerSecond: 5 },
      describe: { capacity: 100, refillPerSecond: 20 },
    },
  },
};

export function isProfileName(value: string): value is ProfileName {
  return Object.hasOwn(PROFILES, value);
}

/** The profile of that name, or an Error listing the names. */
export function profileNamed(name: string): LatencyProfile {
  if (!isProfileName(name)) throw new Error(`unknown latency profile "${name}" (known: ${Object.keys(PROFILES).join(", ")})`);
  return PROFILES[name];
}
