// Builds the web console into dist/console, which `slipway up` serves at `/`. Preact's JSX is compiled
// by Vite's own transform (no Babel); everything the page loads is bundled: no CDN, no remote fonts.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  base: "/",
  publicDir: "public",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../../dist/console", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: false,
  },
});
