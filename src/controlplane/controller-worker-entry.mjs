// Starts the controllers' worker thread: TypeScript sources run through tsx's loader, as in bin/slipway.mjs.
import { register } from "tsx/esm/api";

register();
await import("./controller-worker-thread.ts");
