// Takes a CPU profile of a Node process that is already running — a `slipway up` or sim cloud in the
// middle of a long fleet run — without restarting it: SIGUSR1 opens the process's inspector on
// 127.0.0.1:9229, the Chrome DevTools protocol starts and stops the sampling profiler, and the inspector
// is closed again. The profile is read with cpu-summary.ts. Only one process may have its inspector on
// that port at a time; sampling costs the process a few percent while it runs.
//
//   node --experimental-websocket --import tsx bench/support/profile-running.ts PID SECONDS OUT.cpuprofile
//   node --experimental-websocket --import tsx bench/support/profile-running.ts PID SECONDS OUT.heapprofile
//   node --experimental-websocket --import tsx bench/support/profile-running.ts PID --memory
//
// An OUT ending in `.heapprofile` takes a sampling heap profile instead (what the objects allocated
// meanwhile and still alive at the end were allocated by); read it with heap-summary.ts.
// `--memory` prints where the process's memory is instead: `process.memoryUsage()` (RSS, V8 heap, memory
// outside the heap held by buffers) and the size of each V8 heap space, as JSON.
import { writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

const INSPECTOR = "http://127.0.0.1:9229";

interface Answer {
  id?: number;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/** A CDP session over the inspector's WebSocket: `call` sends a method and waits for its answer. */
async function connect(url: string): Promise<{ call: (method: string, params?: Record<string, unknown>) => Promise<Record<string, unknown>>; close: () => void }> {
  const socket = new WebSocket(url);
  const waiting = new Map<number, { resolve: (value: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  socket.addEventListener("message", (message) => {
    const answer = JSON.parse(String(message.data)) as Answer;
    const pending = answer.id === undefined ? undefined : waiting.get(answer.id);
    if (!pending) return;
    waiting.delete(answer.id!);
    if (answer.error) pending.reject(new Error(answer.error.message));
    else pending.resolve(answer.result ?? {});
  });
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error(`cannot reach the inspector at ${url}`)), { once: true });
  });
  let next = 0;
  return {
    call: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = ++next;
        waiting.set(id, { resolve, reject });
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

/** The inspector's WebSocket address, once the process has opened it (it takes a moment after SIGUSR1). */
async function inspectorTarget(pid: number): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      const targets = (await (await fetch(`${INSPECTOR}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
      if (targets[0]) return targets[0].webSocketDebuggerUrl;
    } catch {
      // Not open yet.
    }
    await sleep(100);
  }
  throw new Error(`process ${pid} opened no inspector on ${INSPECTOR} (is another process's inspector there?)`);
}

type Session = Awaited<ReturnType<typeof connect>>;

/** Opens the inspector of a running process, runs `work` in a session with it, and closes it again. */
async function withInspector<T>(pid: number, work: (session: Session) => Promise<T>): Promise<T> {
  // Another process's inspector on the port would be the one this session talked to, and closed.
  const open = await fetch(`${INSPECTOR}/json/list`).then(
    () => true,
    () => false,
  );
  if (open) throw new Error(`an inspector is already open on ${INSPECTOR} (another profile running?); not opening process ${pid}'s`);
  process.kill(pid, "SIGUSR1");
  const session = await connect(await inspectorTarget(pid));
  try {
    return await work(session);
  } finally {
    // Closes the inspector once this session has gone, so the port is free for the next process.
    await session.call("Runtime.evaluate", { expression: "setTimeout(() => process._debugEnd(), 100), undefined" }).catch(() => undefined);
    session.close();
  }
}

export function profileRunning(pid: number, seconds: number): Promise<unknown> {
  return withInspector(pid, async (session) => {
    await session.call("Profiler.enable");
    await session.call("Profiler.setSamplingInterval", { interval: 1000 });
    await session.call("Profiler.start");
    await sleep(seconds * 1000);
    const { profile } = await session.call("Profiler.stop");
    await session.call("Profiler.disable");
    return profile;
  });
}

/**
 * A sampling heap profile of a running process: where the objects allocated in the next `seconds` and
 * still alive at its end were allocated (one sample per 64 KiB allocated on average), as DevTools writes
 * it (`.heapprofile`). Cheap enough for a process in the middle of a fleet run, unlike a heap snapshot.
 */
export function heapProfileRunning(pid: number, seconds: number): Promise<unknown> {
  return withInspector(pid, async (session) => {
    await session.call("HeapProfiler.enable");
    await session.call("HeapProfiler.startSampling", { samplingInterval: 65_536 });
    await sleep(seconds * 1000);
    const { profile } = await session.call("HeapProfiler.stopSampling");
    await session.call("HeapProfiler.disable");
    return profile;
  });
}

/** What `process.memoryUsage()` and `v8.getHeapSpaceStatistics()` say in a running process, in bytes. */
export function memoryOfRunning(pid: number): Promise<{ usage: Record<string, number>; spaces: Record<string, number> }> {
  // `require` is the inspector's command-line API's (the process itself may be an ES module).
  const expression = `JSON.stringify({ usage: process.memoryUsage(), spaces: Object.fromEntries(require("node:v8").getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size])) })`;
  return withInspector(pid, async (session) => {
    const { result } = (await session.call("Runtime.evaluate", { expression, includeCommandLineAPI: true })) as { result: { value?: string; description?: string } };
    if (typeof result.value !== "string") throw new Error(`process ${pid} could not report its memory: ${result.description ?? "no answer"}`);
    return JSON.parse(result.value) as { usage: Record<string, number>; spaces: Record<string, number> };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [pid, seconds, out] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
  if (Number.isInteger(pid) && process.argv[3] === "--memory") {
    process.stdout.write(`${JSON.stringify(await memoryOfRunning(pid), null, 2)}\n`);
    process.exit(0);
  }
  if (!Number.isInteger(pid) || !(seconds > 0) || !out) {
    process.stderr.write("usage: node --experimental-websocket --import tsx bench/support/profile-running.ts PID (SECONDS OUT.cpuprofile|OUT.heapprofile | --memory)\n");
    process.exit(2);
  }
  writeFileSync(out, JSON.stringify(out.endsWith(".heapprofile") ? await heapProfileRunning(pid, seconds) : await profileRunning(pid, seconds)));
  process.stdout.write(`${out}: ${seconds} s of process ${pid}; read it with bench/support/${out.endsWith(".heapprofile") ? "heap" : "cpu"}-summary.ts\n`);
}
