#!/usr/bin/env node
// Entry point of the `slipway` command: TypeScript sources run through tsx's loader.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
