import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseCount, parseDuration, parseLogLevel, UsageError } from "./usage.ts";

describe("flag values", () => {
  it("takes a count of at least 1 and refuses anything else, naming the flag", () => {
    assert.equal(parseCount("1024", "--max-connections"), 1024);
    for (const text of ["0", "-1", "2.5", "ten", "", "1e3"]) {
      assert.throws(() => parseCount(text, "--max-connections"), (e: Error) => e instanceof UsageError && /--max-connections must be a whole number of at least 1/.test(e.message), text);
    }
  });

  it("reads durations with their unit", () => {
    assert.equal(parseDuration("10s", "--request-header-timeout"), 10_000);
    assert.throws(() => parseDuration("10", "--request-header-timeout"), /--request-header-timeout must be a duration/);
  });

  it("takes the log levels pino writes and names the flag for any other", () => {
    assert.equal(parseLogLevel("warn", "--log-level"), "warn");
    for (const text of ["verbose", "INFO", ""]) {
      assert.throws(() => parseLogLevel(text, "--log-level"), (e: Error) => e instanceof UsageError && /--log-level must be one of trace, debug, info, warn, error, fatal, silent \(got/.test(e.message), text);
    }
  });
});
