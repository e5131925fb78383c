// Continue tokens of paged lists: the key a page ended at and the revision the first page read, so
// every page of one list reads one revision (a compacted one answers 410 Gone), and how many keys the
// page said remain, so the next one need not count the rest of the range again.
import { BadRequestError } from "./errors.ts";

export interface ContinueToken {
  key: string;
  rev: number;
  /** Keys after `key` at `rev`, when the page that ended there counted them. */
  remaining?: number;
}

export function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ k: token.key, r: token.rev, ...(token.remaining !== undefined ? { n: token.remaining } : {}) })).toString("base64url");
}

export function decodeContinue(text: string): ContinueToken {
  try {
    const parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as { k?: unknown; r?: unknown; n?: unknown };
    if (typeof parsed.k === "string" && typeof parsed.r === "number") {
      const counted = typeof parsed.n === "number" && Number.isSafeInteger(parsed.n) && parsed.n >= 0;
      return { key: parsed.k, rev: parsed.r, ...(counted ? { remaining: parsed.n as number } : {}) };
    }
  } catch {
    // fall through
  }
  throw new BadRequestError("invalid continue token");
}
