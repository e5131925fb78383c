import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { summarizeHeap, type HeapProfile } from "./heap-summary.ts";

const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });

describe("heap-summary", () => {
  it("counts bytes by allocating function and by the innermost own function above it", () => {
    const profile: HeapProfile = {
      head: {
        callFrame: frame("(root)", ""),
        selfSize: 0,
        children: [
          {
            callFrame: frame("set", "file:///work/main/src/runtime/cache.ts"),
            selfSize: 100,
            children: [
              { callFrame: frame("parse", ""), selfSize: 600, children: [] },
              { callFrame: frame("decode", "file:///work/main/node_modules/yaml/dist/index.js"), selfSize: 200, children: [] },
            ],
          },
          { callFrame: frame("(program)", ""), selfSize: 100, children: [] },
        ],
      },
    };
    const { total, allocators, owners } = summarizeHeap(profile);
    assert.equal(total, 1000);
    assert.deepEqual(
      allocators.map((a) => [a.name.split(" ")[0], a.bytes]),
      [["parse", 600], ["decode", 200], ["set", 100], ["(program)", 100]],
    );
    assert.equal(owners[0]!.bytes, 900, "JSON.parse and the library's bytes are the cache's");
    assert.match(owners[0]!.name, /^set .*src\/runtime\/cache\.ts$/);
    assert.deepEqual([owners[1]!.name, owners[1]!.share], ["(no own function on the stack)", 0.1]);
  });
});
