// A stand-in for the controllers' thread (controller-worker-thread.ts) speaking its messages: it says it
// started, answers what it is asked, stops when told — and, started with the replica name "fails",
// then fails as a thread with an uncaught error does (controller-worker.test.ts).
import { parentPort, workerData } from "node:worker_threads";

parentPort.on("message", (message) => {
  if (message.t === "ask") parentPort.postMessage({ t: "answer", id: message.id, value: undefined });
  if (message.t === "stop") {
    parentPort.postMessage({ t: "stopped" });
    parentPort.close();
  }
});
parentPort.postMessage({ t: "started" });
if (workerData.replica === "fails") {
  setTimeout(() => {
    throw new Error("a controller's bug");
  }, 20);
}
