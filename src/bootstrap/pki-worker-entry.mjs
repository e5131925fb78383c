// Starts a PKI worker thread: TypeScript sources run through tsx's loader, as in bin/slipway.mjs.
import { register } from "tsx/esm/api";

register();
await import("./pki-worker.ts");
