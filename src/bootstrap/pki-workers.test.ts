import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { certificateInfo, keyMatchesCertificate, PkiError, verifyIssuedBy } from "./pki.ts";
import { PkiWorkers } from "./pki-workers.ts";

describe("PkiWorkers", () => {
  const workers = new PkiWorkers(2);
  after(() => workers.close());

  it("makes the same certificates and keys as pki.ts, on worker threads", async () => {
    const [ca, sa] = await Promise.all([workers.createCertificateAuthority({ commonName: "kubernetes" }), workers.createServiceAccountKeyPair()]);
    assert.equal(certificateInfo(ca.certPem).isCA, true);
    assert.equal(certificateInfo(ca.certPem).commonName, "kubernetes");
    assert.ok(keyMatchesCertificate(ca));
    assert.match(sa.publicKeyPem, /BEGIN PUBLIC KEY/);

    const admins = await Promise.all(
      [1, 2, 3].map((i) => workers.issueCertificate(ca, { commonName: `admin-${i}`, organizations: ["system:masters"], usages: ["client"] })),
    );
    for (const [i, admin] of admins.entries()) {
      assert.equal(certificateInfo(admin.certPem).commonName, `admin-${i + 1}`);
      assert.deepEqual(certificateInfo(admin.certPem).organizations, ["system:masters"]);
      assert.ok(await verifyIssuedBy(admin.certPem, ca.certPem));
      assert.ok(keyMatchesCertificate(admin));
    }
  });

  it("answers a refused request with the PkiError pki.ts gives", async () => {
    await assert.rejects(workers.createCertificateAuthority({ commonName: "" }), (error: unknown) => error instanceof PkiError && /common name/i.test(error.message));
    // The worker is still there for the next request.
    assert.equal(certificateInfo((await workers.createCertificateAuthority({ commonName: "again" })).certPem).commonName, "again");
  });

  it("fails requests once closed", async () => {
    const closed = new PkiWorkers(1);
    await closed.close();
    await assert.rejects(closed.createServiceAccountKeyPair(), PkiError);
  });
});
