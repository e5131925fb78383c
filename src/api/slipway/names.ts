// The names of the objects Slipway makes for a cluster. They are part of the API: users and tools find
// these objects by name — the admin kubeconfig in Secret `<cluster>-kubeconfig` (key `value`), the
// Infrastructure of a connection, the machines of the control plane and of each pool.
export const names = {
  infrastructure: (cluster: string, connection: string) => `${cluster}-${connection}`,
  machinePool: (cluster: string, pool: string) => `${cluster}-${pool}`,
  controlPlaneMachine: (cluster: string, index: number) => `${cluster}-cp-${index}`,
  poolMachine: (poolObject: string, index: number) => `${poolObject}-${index}`,
  pkiSecret: (cluster: string) => `${cluster}-pki`,
  tokenSecret: (cluster: string) => `${cluster}-bootstrap-token`,
  kubeconfigSecret: (cluster: string) => `${cluster}-kubeconfig`,
  sshSecret: (cluster: string) => `${cluster}-ssh`,
  bootstrapSecret: (machine: string) => `${machine}-bootstrap`,
  operation: (cluster: string, type: string, generation: number) => `${cluster}-${type.toLowerCase()}-${generation}`,
};
