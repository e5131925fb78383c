// Input schemas of the sim cloud's operations. The same schemas check in-process calls and HTTP bodies, so
// both paths refuse the same inputs with the same InvalidParameter message naming the offending field.
import { Type, type Static, type TSchema, type TProperties } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { InvalidParameterError } from "./errors.ts";
import "../api/formats.ts";

/** An object schema that refuses fields it does not name. */
export function Strict<T extends TProperties>(properties: T) {
  return Type.Object(properties, { additionalProperties: false });
}

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Port = Type.Integer({ minimum: 0, maximum: 65535 });

export const TagsSchema = Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Type.String({ maxLength: 256 }), {
  maxProperties: 50,
});

/** Fields every create accepts: tags, and an idempotency token (the same token returns the same resource). */
export const CreateCommon = {
  tags: Type.Optional(TagsSchema),
  clientToken: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
};

export const CreateNetworkInputSchema = Strict({
  cidr: Type.String({ description: "IPv4 range of the network, /16 to /28." }),
  ...CreateCommon,
});

export const CreateSubnetInputSchema = Strict({
  networkId: Id,
  zone: Type.String({ minLength: 1 }),
  cidr: Type.String({ description: "IPv4 range inside the network's range, /16 to /28." }),
  ...CreateCommon,
});

export const SecurityGroupRuleSchema = Strict({
  direction: Type.Union([Type.Literal("ingress"), Type.Literal("egress")]),
  protocol: Type.Union([Type.Literal("tcp"), Type.Literal("udp"), Type.Literal("icmp"), Type.Literal("all")]),
  fromPort: Port,
  toPort: Port,
  cidr: Type.String(),
});

/** A security group's whole set of rules, as its setRules action replaces them. */
export const SecurityGroupRulesSchema = Strict({ rules: Type.Array(SecurityGroupRuleSchema, { maxItems: 60 }) });

export const CreateSecurityGroupInputSchema = Strict({
  networkId: Id,
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Type.String({ maxLength: 255 })),
  rules: Type.Array(SecurityGroupRuleSchema, { maxItems: 60 }),
  ...CreateCommon,
});

export const CreateKeyPairInputSchema = Strict({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  publicKey: Type.String({ minLength: 1, maxLength: 16384, description: "An OpenSSH public key line." }),
  ...CreateCommon,
});

/** Largest user data accepted, in bytes (Azure's custom-data limit; EC2 allows 16 KB, GCE 256 KB). */
export const MAX_USER_DATA_BYTES = 64 * 1024;

export const CreateInstanceInputSchema = Strict({
  subnetId: Id,
  machineType: Type.String({ minLength: 1 }),
  imageId: Id,
  keyPairId: Type.Optional(Id),
  securityGroupIds: Type.Optional(Type.Array(Id, { maxItems: 5 })),
  userData: Type.Optional(Type.String({ description: "Read by the instance at boot (cloud-init)." })),
  assignPublicIp: Type.Optional(Type.Boolean({ description: "Give the instance an address of its own." })),
  publicIpId: Type.Optional(Id),
  reservationId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: "Capacity reservation to launch into (active, same zone and machine type)." })),
  ...CreateCommon,
});

export const ListenerSchema = Strict({
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  protocol: Type.Union([Type.Literal("tcp"), Type.Literal("udp")]),
  targetPort: Type.Integer({ minimum: 1, maximum: 65535 }),
});

export const CreateLoadBalancerInputSchema = Strict({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 32, pattern: "^[a-zA-Z0-9-]+$" })),
  subnetIds: Type.Array(Id, { minItems: 1, maxItems: 6 }),
  listeners: Type.Array(ListenerSchema, { minItems: 1, maxItems: 10 }),
  scheme: Type.Optional(Type.Union([Type.Literal("internet-facing"), Type.Literal("internal")])),
  ...CreateCommon,
});

export const CreatePublicIpInputSchema = Strict({ ...CreateCommon });

export const TargetsInputSchema = Strict({ instanceIds: Type.Array(Id, { minItems: 1, maxItems: 100 }) });

export const ListFilterSchema = Strict({
  tags: Type.Optional(TagsSchema),
});

export const ResourceFilterSchema = Strict({
  tags: Type.Optional(TagsSchema),
  region: Type.Optional(Type.String()),
});

const Limit = Type.Integer({ minimum: 0, maximum: 1_000_000 });
export const QuotaLimitsPatchSchema = Strict({
  vcpus: Type.Optional(Limit),
  instances: Type.Optional(Limit),
  networks: Type.Optional(Limit),
  loadBalancers: Type.Optional(Limit),
  publicIps: Type.Optional(Limit),
});

export type Tags = Static<typeof TagsSchema>;
export type CreateNetworkInput = Static<typeof CreateNetworkInputSchema>;
export type CreateSubnetInput = Static<typeof CreateSubnetInputSchema>;
export type SecurityGroupRule = Static<typeof SecurityGroupRuleSchema>;
export type CreateSecurityGroupInput = Static<typeof CreateSecurityGroupInputSchema>;
export type CreateKeyPairInput = Static<typeof CreateKeyPairInputSchema>;
export type CreateInstanceInput = Static<typeof CreateInstanceInputSchema>;
export type Listener = Static<typeof ListenerSchema>;
export type CreateLoadBalancerInput = Static<typeof CreateLoadBalancerInputSchema>;
export type CreatePublicIpInput = Static<typeof CreatePublicIpInputSchema>;
export type ListFilter = Static<typeof ListFilterSchema>;
export type ResourceFilter = Static<typeof ResourceFilterSchema>;
export type QuotaLimitsPatch = Static<typeof QuotaLimitsPatchSchema>;

/** Checks `value` against `schema`; throws InvalidParameter naming the first offending field. */
export function checkInput<T extends TSchema>(schema: T, value: unknown, what: string): Static<T> {
  if (Value.Check(schema, value)) return value;
  const first = Value.Errors(schema, value).First();
  const field = first?.path ? first.path.slice(1).replaceAll("/", ".") : "";
  const where = field ? `${what}.${field}` : what;
  throw new InvalidParameterError(`${where}: ${first?.message ?? "invalid value"}`, { details: { field: where } });
}
