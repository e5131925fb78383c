// certificates.k8s.io/v1 CertificateSigningRequest of an emulated workload cluster, as kube-apiserver and
// the controller manager's signers serve it: a client posts a PKCS#10 request for a signer, someone
// allowed to approves it through the `approval` subresource (what `kubectl certificate approve` PUTs),
// and the kubernetes.io/kube-apiserver-client signer — the cluster CA — writes the certificate into
// status. That is how a client certificate for a user is had from a cluster whose CA key one does not
// hold (a cluster Slipway only registered), and Slipway asks every cluster alike.
import { Type } from "@sinclair/typebox";
import { ageColumn, computedColumn } from "../../api/columns.ts";
import { invalid, notSupported, required } from "../../api/field-errors.ts";
import { Struct, objectSchema, type ObjectOf } from "../../api/meta.ts";
import type { KindDefinition } from "../../api/registry.ts";
import type { AdmissionPlugin, PostWriteHook } from "../../apiserver/admission.ts";
import { BadRequestError, InvalidError, NotFoundError } from "../../apiserver/errors.ts";
import type { ObjectService } from "../../apiserver/objects.ts";
import type { SubresourceAction } from "../../apiserver/routes.ts";
import { certificateRequestSubject, signCertificateRequest, type KeyPairPem, type CertificateUsage } from "../../bootstrap/pki.ts";

const CERTIFICATES = { group: "certificates.k8s.io", version: "v1" } as const;
export const KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client";
/** What the client signer issues when a request asks for no expiry (kube-controller-manager's default, a year). */
const DEFAULT_EXPIRATION_SECONDS = 365 * 24 * 3600;
const CONDITION_TYPES = ["Approved", "Denied", "Failed"] as const;

const ConditionSchema = Struct(
  {
    type: Type.String({ description: "Approved, Denied or Failed." }),
    status: Type.String({ description: "True or False." }),
    reason: Type.Optional(Type.String({ description: "A brief reason." })),
    message: Type.Optional(Type.String({ description: "Details." })),
    lastUpdateTime: Type.Optional(Type.String({ description: "When the condition was last updated." })),
    lastTransitionTime: Type.Optional(Type.String({ description: "When the condition last changed status." })),
  },
  { description: "A condition of the request." },
);

export const CertificateSigningRequestSchema = objectSchema(`${CERTIFICATES.group}/${CERTIFICATES.version}`, "CertificateSigningRequest", "A request for a certificate from a signer.", {
  spec: Struct(
    {
      request: Type.String({ description: "A PEM PKCS#10 certificate request, base64-encoded." }),
      signerName: Type.String({ description: "The signer asked, e.g. kubernetes.io/kube-apiserver-client." }),
      usages: Type.Optional(Type.Array(Type.String(), { description: "Key usages asked for, e.g. client auth, digital signature." })),
      expirationSeconds: Type.Optional(Type.Integer({ minimum: 600, description: "Validity asked for (at least 600 s)." })),
      username: Type.Optional(Type.String({ description: "Who created the request (set by the server)." })),
      groups: Type.Optional(Type.Array(Type.String(), { description: "Groups of who created the request (set by the server)." })),
    },
    { description: "The request." },
  ),
  status: Type.Optional(
    Struct(
      {
        conditions: Type.Optional(Type.Array(ConditionSchema, { description: "Approved, Denied, Failed." })),
        certificate: Type.Optional(Type.String({ description: "The issued certificate, PEM, base64-encoded." })),
      },
      { description: "Approval and the certificate." },
    ),
  ),
});
export type CertificateSigningRequestObject = ObjectOf<typeof CertificateSigningRequestSchema>;

function conditionOf(csr: CertificateSigningRequestObject, type: string): boolean {
  return (csr.status?.conditions ?? []).some((c) => c.type === type && c.status === "True");
}

function conditionText(csr: CertificateSigningRequestObject): string {
  const states = (csr.status?.conditions ?? []).filter((c) => c.status === "True").map((c) => c.type);
  if (csr.status?.certificate) states.push("Issued");
  return states.length > 0 ? states.join(",") : "Pending";
}

export const certificateSigningRequestKind: KindDefinition<CertificateSigningRequestObject> = {
  ...CERTIFICATES,
  kind: "CertificateSigningRequest",
  plural: "certificatesigningrequests",
  singular: "certificatesigningrequest",
  shortNames: ["csr"],
  namespaced: false,
  schema: CertificateSigningRequestSchema,
  description: "A request for a certificate from a signer.",
  subresources: { status: true },
  printerColumns: [
    ageColumn,
    { name: "SIGNERNAME", type: "string", jsonPath: ".spec.signerName", description: "The signer asked." },
    { name: "REQUESTOR", type: "string", jsonPath: ".spec.username", description: "Who asked." },
    computedColumn<CertificateSigningRequestObject>("CONDITION", ".status", "Approved, Denied, Issued or Pending.", conditionText),
  ],
  validate(csr, old) {
    if (old) return [];
    const errors = [];
    let pem = "";
    try {
      pem = Buffer.from(csr.spec.request, "base64").toString("utf8");
    } catch {
      // Reported below: not a PEM request.
    }
    if (!pem.includes("-----BEGIN CERTIFICATE REQUEST-----")) errors.push(invalid("spec.request", "…", "must be a base64-encoded PEM CERTIFICATE REQUEST"));
    if (!csr.spec.signerName) errors.push(required("spec.signerName"));
    return errors;
  },
};

interface Signing {
  /** The cluster CA that signs for kubernetes.io/kube-apiserver-client. */
  ca: () => KeyPairPem | undefined;
  now: () => Date;
}

/**
 * The `approval` subresource: a PUT of the request with Approved or Denied among its conditions records
 * them (nothing else of the object changes), as `kubectl certificate approve|deny` does.
 */
export function approvalSubresource(objects: () => ObjectService | undefined, kind: KindDefinition): SubresourceAction {
  return {
    path: `${CERTIFICATES.group}/certificatesigningrequests/approval`,
    method: "PUT",
    handle: async ({ name, body }) => {
      const service = objects();
      if (!service) throw new NotFoundError({ group: CERTIFICATES.group, kind: "CertificateSigningRequest", plural: "certificatesigningrequests", name }, `certificatesigningrequests.certificates.k8s.io "${name}" not found`);
      const wanted = ((body as CertificateSigningRequestObject | undefined)?.status?.conditions ?? []).filter((c) => c.type === "Approved" || c.type === "Denied");
      if (wanted.length === 0) throw new BadRequestError("an approval must carry an Approved or Denied condition in status.conditions");
      const current = (await service.get(kind, undefined, name)) as CertificateSigningRequestObject;
      const unknown = (body as CertificateSigningRequestObject).status?.conditions?.find((c) => !(CONDITION_TYPES as readonly string[]).includes(c.type));
      if (unknown) {
        throw new InvalidError({ group: CERTIFICATES.group, kind: "CertificateSigningRequest", plural: "certificatesigningrequests", name }, [notSupported("status.conditions[].type", unknown.type, CONDITION_TYPES)]);
      }
      if ((conditionOf(current, "Approved") && wanted.some((c) => c.type === "Denied")) || (conditionOf(current, "Denied") && wanted.some((c) => c.type === "Approved"))) {
        throw new InvalidError({ group: CERTIFICATES.group, kind: "CertificateSigningRequest", plural: "certificatesigningrequests", name }, [
          invalid("status.conditions", "Approved and Denied", "Approved and Denied conditions are mutually exclusive"),
        ]);
      }
      const at = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
      const kept = (current.status?.conditions ?? []).filter((c) => !wanted.some((w) => w.type === c.type));
      const conditions = [...kept, ...wanted.map((c) => ({ ...c, status: c.status || "True", lastUpdateTime: at, lastTransitionTime: at }))];
      // The route authorized the caller for the approval; the write itself is the server's.
      const written = await service.updateStatus(kind, undefined, name, { ...current, status: { ...current.status, conditions } });
      return written.object;
    },
  };
}

/** Records who asked on a new request (spec.username and groups), as the API server does. */
export function requestorAdmission(kind: KindDefinition): AdmissionPlugin {
  return {
    name: "CertificateRequestor",
    mutate: ({ def, operation, object, request }) => {
      if (def !== kind || operation !== "CREATE") return;
      const spec = (object as CertificateSigningRequestObject).spec;
      spec.username = request.identity.user;
      spec.groups = [...request.identity.groups];
    },
  };
}

/** The client signer: an approved request for kubernetes.io/kube-apiserver-client gets its certificate. */
export function clientSigner(kind: KindDefinition, signing: Signing): PostWriteHook {
  return {
    name: "CertificateSigner",
    afterWrite: async ({ def, object, operation, objects }) => {
      if (def !== kind || operation === "DELETE") return;
      const csr = object as CertificateSigningRequestObject;
      if (csr.spec.signerName !== KUBE_APISERVER_CLIENT_SIGNER || !conditionOf(csr, "Approved") || conditionOf(csr, "Denied") || csr.status?.certificate || conditionOf(csr, "Failed")) return;
      const ca = signing.ca();
      if (!ca) return;
      const name = csr.metadata.name!;
      const at = signing.now().toISOString().replace(/\.\d{3}Z$/, "Z");
      let status: CertificateSigningRequestObject["status"];
      try {
        const pem = Buffer.from(csr.spec.request, "base64").toString("utf8");
        const subject = await certificateRequestSubject(pem);
        if (subject.organizations.includes("system:masters")) throw new Error("the client signer does not sign for group system:masters");
        const usages: CertificateUsage[] = ["client"];
        const days = (csr.spec.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS) / 86_400;
        const certPem = await signCertificateRequest(ca, pem, { usages, validityDays: days });
        status = { ...csr.status, certificate: Buffer.from(certPem).toString("base64") };
      } catch (error) {
        const failed = { type: "Failed", status: "True", reason: "SignerValidationFailure", message: (error as Error).message, lastUpdateTime: at, lastTransitionTime: at };
        status = { ...csr.status, conditions: [...(csr.status?.conditions ?? []), failed] };
      }
      await objects.updateStatus(kind, undefined, name, { ...csr, status });
    },
  };
}
