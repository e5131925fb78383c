import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:https";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from "../bootstrap/pki.ts";
import { OidcTokenAuthenticator } from "./oidc-authentication.ts";

type Key = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];

describe("OIDC ID tokens as bearer tokens", () => {
  let server: Server;
  let ca: KeyPairPem;
  let issuer = "";
  let signing: { key: Key; kid: string };
  const published: JWK[] = [];
  let jwksFetches = 0;

  const newKey = async (kid: string) => {
    const { privateKey, publicKey } = await generateKeyPair("RS256");
    published.push({ ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" });
    return { key: privateKey, kid };
  };
  const token = (claims: Record<string, unknown>, options: { key?: { key: Key; kid: string }; audience?: string; iss?: string; expiresIn?: string } = {}) => {
    const key = options.key ?? signing;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: key.kid })
      .setIssuer(options.iss ?? issuer)
      .setAudience(options.audience ?? "client-1")
      .setIssuedAt()
      .setExpirationTime(options.expiresIn ?? "5m")
      .sign(key.key);
  };
  const bearer = (t: string) => ({ authorization: `Bearer ${t}`, clientCertificate: () => undefined });
  let authenticator: OidcTokenAuthenticator;

  before(async () => {
    ca = await createCertificateAuthority({ commonName: "test-ca" });
    const serving = await issueCertificate(ca, { commonName: "issuer", ipAddresses: ["127.0.0.1"], usages: ["server"] });
    signing = await newKey("k1");
    server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req, res) => {
      if (req.url === "/realms/corp/.well-known/openid-configuration") return void res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      if (req.url === "/realms/corp/jwks") {
        jwksFetches++;
        return void res.end(JSON.stringify({ keys: published }));
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    issuer = `https://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/realms/corp`;
    authenticator = new OidcTokenAuthenticator({ issuerUrl: issuer, clientId: "client-1", usernameClaim: "preferred_username", usernamePrefix: "oidc:", groupsClaim: "groups", groupsPrefix: "oidc:", caPem: ca.certPem });
  });
  after(() => server.close());

  it("accepts a token of the issuer for the client, with the prefixed username and groups", async () => {
    const identity = await authenticator.authenticate(bearer(await token({ preferred_username: "carol", groups: ["admins", "ops"] })));
    assert.deepEqual(identity, { user: "oidc:carol", groups: ["oidc:admins", "oidc:ops"] });
  });

  it("proves nothing with a token for another client, of another issuer, expired, forged, or without the username claim", async () => {
    const claims = { preferred_username: "carol", groups: ["admins"] };
    const good = await token(claims);
    const [header, , signature] = good.split(".");
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, iss: issuer, aud: "client-1", exp: Math.floor(Date.now() / 1000) + 300, groups: ["system:masters"] })).toString("base64url")}.${signature}`;
    const refused = [
      await token(claims, { audience: "client-2" }),
      await token(claims, { iss: "https://127.0.0.1:1/realms/other" }),
      await token(claims, { expiresIn: "-1m" }),
      forged,
      await token({ groups: ["admins"] }),
      "not-a-jwt",
    ];
    for (const t of refused) assert.equal(await authenticator.authenticate(bearer(t)), undefined, t);
    assert.equal(await authenticator.authenticate({ clientCertificate: () => undefined }), undefined);
  });

  it("does not fetch the keys again for every unknown key id: a new key counts once the keys are read again", async () => {
    const fetched = jwksFetches;
    const other = await newKey("k2");
    // Just fetched: a token of a new key is refused until the keys may be fetched again.
    assert.equal(await authenticator.authenticate(bearer(await token({ preferred_username: "dave" }, { key: other }))), undefined);
    assert.equal(jwksFetches, fetched);
    const later = new OidcTokenAuthenticator({ issuerUrl: issuer, clientId: "client-1", usernameClaim: "preferred_username", usernamePrefix: "", groupsPrefix: "", caPem: ca.certPem });
    assert.deepEqual(await later.authenticate(bearer(await token({ preferred_username: "dave" }, { key: other }))), { user: "dave", groups: [] });
  });
});
