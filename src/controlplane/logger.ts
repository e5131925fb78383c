// The process logger: structured JSON lines (pino) into a file, or to stderr with `--log-file -`. The
// controllers' worker thread logs with the same settings, its lines written to the main thread's file.
import pino, { type DestinationStream, type Logger } from "pino";

export function createLogger(options: { file: string; level?: string }): Logger {
  const destination = options.file === "-" ? pino.destination(2) : pino.destination({ dest: options.file, mkdir: true, sync: false });
  return processLogger(destination, options.level);
}

export function processLogger(destination: DestinationStream, level = "info"): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Credentials never reach the log, whatever a caller passes in.
      redact: { paths: ["*.authorization", "*.token", "*.password", "*.data", "*.stringData", "headers"], censor: "[redacted]" },
    },
    destination,
  );
}
