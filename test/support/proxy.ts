// A TCP proxy on loopback that a test can cut and restore: a network path to a server that goes away and
// comes back (connections in flight are reset, new ones refused while cut), without touching the server.
// It runs in a process of its own, so it keeps forwarding while the test waits on a synchronous kubectl.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";

const PROXY = `
const net = require("node:net");
const [host, port] = [process.argv[1], Number(process.argv[2])];
let open = true;
const sockets = new Set();
const track = (s) => { sockets.add(s); s.on("close", () => sockets.delete(s)); s.on("error", () => s.destroy()); };
const server = net.createServer((client) => {
  track(client);
  if (!open) return client.destroy();
  const upstream = net.createConnection({ host, port });
  track(upstream);
  client.pipe(upstream); upstream.pipe(client);
  client.on("close", () => upstream.destroy()); upstream.on("close", () => client.destroy());
});
process.stdin.on("data", (data) => {
  for (const command of String(data).split("\\n").filter(Boolean)) {
    if (command === "cut") { open = false; for (const s of sockets) s.destroy(); }
    if (command === "restore") open = true;
    process.stdout.write("ok " + command + "\\n");
  }
});
process.stdin.on("end", () => process.exit(0));
server.listen(0, "127.0.0.1", () => process.stdout.write("port " + server.address().port + "\\n"));
`;

export interface CuttableProxy {
  port: number;
  /** Resets every connection and refuses new ones. */
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

function nextLine(child: ChildProcess, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    const onData = (data: Buffer) => {
      buffer += String(data);
      const line = buffer.split("\n").find((l) => l.startsWith(prefix));
      if (line === undefined) return;
      child.stdout!.off("data", onData);
      resolve(line.slice(prefix.length).trim());
    };
    child.stdout!.on("data", onData);
    child.once("exit", () => reject(new Error(`the proxy exited before saying "${prefix}"`)));
  });
}

export async function startProxy(target: { host: string; port: number }): Promise<CuttableProxy> {
  const child = spawn(process.execPath, ["-e", PROXY, target.host, String(target.port)], { stdio: ["pipe", "pipe", "inherit"] });
  const port = Number(await nextLine(child, "port "));
  const command = async (name: string) => {
    const done = nextLine(child, `ok ${name}`);
    child.stdin!.write(`${name}\n`);
    await done;
  };
  return {
    port,
    cut: () => command("cut"),
    restore: () => command("restore"),
    async close() {
      if (child.exitCode !== null) return;
      child.stdin!.end();
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}
