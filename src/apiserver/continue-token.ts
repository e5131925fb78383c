// Continue tokens of paged lists: the key a page ended at and the revision the first page read, so
// every page of one list reads one revision (a compacted one answers 410 Gone).
import { BadRequestError } from "./errors.ts";

export interface ContinueToken {
  key: string;
  rev: number;
}

export function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ k: token.key, r: token.rev })).toString("base64url");
}

export function decodeContinue(text: string): ContinueToken {
  try {
    const parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as { k?: unknown; r?: unknown };
    if (typeof parsed.k === "string" && typeof parsed.r === "number") return { key: parsed.k, rev: parsed.r };
  } catch {
    // fall through
  }
  throw new BadRequestError("invalid continue token");
}
