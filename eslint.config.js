import js from "@eslint/js";
import tseslint from "typescript-eslint";

// The layering of docs/DESIGN.md: which top-level folders of src/ each folder may import from.
// Dependencies point one way (api ← store ← apiserver ← runtime ← controllers → providers); bootstrap
// sits on api and every layer above may use it; simcloud uses api, store and apiserver; realms (the
// OpenID Connect issuers) sit on runtime's client, and controllers use them; kubeclient is
// the way to an API over HTTP; views may use api only; cli talks HTTP only, through kubeclient.
const LAYERS = {
  api: [],
  bootstrap: ["api"],
  store: ["api", "bootstrap"],
  apiserver: ["api", "store", "bootstrap"],
  runtime: ["api", "store", "apiserver", "bootstrap"],
  providers: ["api", "bootstrap", "simcloud"],
  controllers: ["api", "store", "apiserver", "runtime", "providers", "bootstrap", "kubeclient", "realms"],
  realms: ["api", "store", "apiserver", "runtime", "bootstrap"],
  simcloud: ["api", "store", "apiserver", "bootstrap"],
  kubeclient: ["bootstrap"],
  views: ["api"],
  controlplane: ["api", "store", "apiserver", "runtime", "controllers", "providers", "simcloud", "bootstrap", "kubeclient", "realms"],
  cli: ["api", "bootstrap", "kubeclient", "views"],
  console: ["api", "kubeclient", "views"],
};

// Files that may reach further than their folder, and why. A file's last matching entry applies, so an
// entry for one file repeats what a broader entry above gives it.
const EXTRA = [
  // The commands that run the servers themselves.
  { files: ["src/cli/up.ts", "src/cli/start.ts"], layers: ["controlplane", "simcloud"] },
  // Controllers' tests reconcile against the emulated cloud.
  { files: ["src/controllers/**/*.test.ts", "src/controllers/**/testing.ts", "src/controllers/**/test-support.ts"], layers: ["simcloud"] },
  // Tests that need a neighbour from another layer: "not there" is told for every family of errors, so
  // its test makes one of each; the request path's tests write through the controllers' in-process client.
  { files: ["src/api/presence.test.ts"], layers: ["apiserver", "kubeclient", "providers"] },
  { files: ["src/apiserver/admission.test.ts", "src/apiserver/authorization/authorizer.test.ts"], layers: ["runtime"] },
  // The network plugins Slipway renders are the ones the emulated clusters know how to run.
  { files: ["src/bootstrap/cni.test.ts"], layers: ["simcloud"] },
  // Known breaches, each to be removed by moving the thing to its layer:
  // ensureDefaultNamespaces (controlplane/namespaces.ts) belongs to the API server;
  { files: ["src/apiserver/objects.test.ts"], layers: ["controlplane"] },
  { files: ["src/controllers/testing.ts", "src/controllers/workload.test.ts"], layers: ["simcloud", "controlplane"] },
  { files: ["src/apiserver/event-expiry.test.ts"], layers: ["controlplane", "runtime"] },
];

const MAX_DEPTH = 4;

/** no-restricted-imports for files `depth` folders below src/<layer>/: one pattern per layer they may not import. */
function layerRule(layer, allowed, depth) {
  const forbidden = Object.keys(LAYERS).filter((other) => other !== layer && !allowed.includes(other));
  const up = `(\\.\\./){${depth + 1}}`;
  return [
    "error",
    {
      patterns: forbidden.map((other) => ({
        regex: `^${up}${other}(/|$)`,
        message: `src/${layer} may not depend on src/${other}: it may use ${allowed.length > 0 ? allowed.join(", ") : "nothing outside itself"} (the layering in docs/DESIGN.md).`,
      })),
    },
  ];
}

function layering() {
  const configs = [];
  for (const [layer, allowed] of Object.entries(LAYERS)) {
    for (let depth = 0; depth <= MAX_DEPTH; depth++) {
      configs.push({ files: [`src/${layer}/${"*/".repeat(depth)}*.{ts,tsx,mjs}`], rules: { "no-restricted-imports": layerRule(layer, allowed, depth) } });
    }
  }
  for (const extra of EXTRA) {
    for (const file of extra.files) {
      const [, layer, ...rest] = file.split("/");
      const depths = rest.includes("**") ? [...Array(MAX_DEPTH + 1).keys()] : [rest.length - 1];
      for (const depth of depths) {
        const name = rest.at(-1);
        const pattern = rest.includes("**") ? `src/${layer}/${"*/".repeat(depth)}${name}` : file;
        configs.push({ files: [pattern], rules: { "no-restricted-imports": layerRule(layer, [...LAYERS[layer], ...extra.layers], depth) } });
      }
    }
  }
  return configs;
}

export default tseslint.config(
  { ignores: ["node_modules/", "coverage/", ".data/", ".scratch*", "dist/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", Buffer: "readonly", setTimeout: "readonly", clearTimeout: "readonly", setInterval: "readonly", clearInterval: "readonly", setImmediate: "readonly", URL: "readonly", AbortController: "readonly", AbortSignal: "readonly", TextEncoder: "readonly", TextDecoder: "readonly", crypto: "readonly", fetch: "readonly" } },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-constant-condition": ["error", { checkLoops: false }],
    },
  },
  ...layering(),
);
