// Preloaded into a child process (NODE_OPTIONS="--import .../cpu-profile.mjs", which accepts no
// --cpu-prof): profiles the whole process with the inspector and writes a .cpuprofile (the format of
// `node --cpu-prof`, readable by Chrome DevTools) to $BENCH_CPU_PROFILE when the process exits.
import { Session } from "node:inspector";
import { writeFileSync } from "node:fs";

const target = process.env.BENCH_CPU_PROFILE;
if (target) {
  const session = new Session();
  session.connect();
  // The main thread's session answers synchronously, so the profile can be taken from the exit handler.
  session.post("Profiler.enable");
  session.post("Profiler.setSamplingInterval", { interval: 1000 });
  session.post("Profiler.start");
  process.on("exit", () => {
    session.post("Profiler.stop", (error, result) => {
      if (!error) writeFileSync(target, JSON.stringify(result.profile));
    });
  });
}
