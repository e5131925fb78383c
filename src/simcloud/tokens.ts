// The tokens of a sim cloud embedded in `slipway up`: random per installation (a fixed default would let
// anyone on the machine drive the cloud), kept in the data directory, readable by its user only.
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Where `slipway up` keeps the embedded sim cloud's tokens (random per installation, private to the user). */
export const SIM_TOKENS_FILE = "simcloud-tokens.json";

export interface SimCloudTokens {
  /** The default account's token (what the sim provider and `slipway sim-cloud resources` present). */
  token: string;
  /** The token of the cloud's /admin/v1 endpoints. */
  adminToken: string;
}

/** The embedded sim cloud's tokens of this data directory, made at first start. */
export function embeddedSimTokens(dataDir: string): SimCloudTokens {
  const file = join(dataDir, SIM_TOKENS_FILE);
  try {
    return JSON.parse(readFileSync(file, "utf8")) as SimCloudTokens;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  const tokens: SimCloudTokens = { token: `sim-${randomBytes(24).toString("base64url")}`, adminToken: `sim-admin-${randomBytes(24).toString("base64url")}` };
  try {
    writeFileSync(file, JSON.stringify(tokens), { mode: 0o600, flag: "wx" });
    return tokens;
  } catch (e) {
    // Another replica on the same directory made them first.
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return JSON.parse(readFileSync(file, "utf8")) as SimCloudTokens;
    throw e;
  }
}

/** The default account's token of the sim cloud embedded in `slipway up --data-dir DIR` (read, never made). */
export function embeddedToken(dataDir: string): string {
  const file = join(dataDir, SIM_TOKENS_FILE);
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as SimCloudTokens).token;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new Error(`${file} does not exist: is ${dataDir} the data directory of a \`slipway up\` with an embedded sim cloud?`);
    throw e;
  }
}
