// `npm run build`: each service's main.ts bundled with the workspace code it
// imports into services/<name>/dist/main.mjs, which production (deploy/Dockerfile)
// and the process stack (fault injection, soak) run with plain `node`.
//
// Why: running TypeScript through tsx costs each process a loader thread (and its
// RSS) and, on a cold cache, an esbuild child (docs/design-choices.md#bundles-run-with-plain-node). Packages from
// node_modules stay external (native addons, lazy imports); only @orvado/* code
// is bundled. The bundle sits one directory below the service root, as src/
// does, so paths taken relative to a src/ file (migrations, SQL functions, the console's files)
// resolve to the same place from the bundle, and so do its chunks (below).
//
// Code splitting keeps a dynamic import() lazy: a module loaded only when it is used
// (PGlite, kafkajs, the S3 client, sharp, a provider's package) goes into a chunk of
// its own beside main.mjs, loaded on first use. Without it esbuild inlined such a
// module and hoisted its packages' imports to the bundle's top, so every process
// loaded them at start (docs/performance.md#where-the-memory-goes).
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type BuildOptions, type OutputFile, type Plugin } from "esbuild";
import { SERVICE_NODE_FLAGS } from "./node-flags.ts";

/** Every service with a main.ts, in dependency order (the process stack starts them so). */
export const BUNDLED_SERVICES = ["auth", "billing", "generation", "edge"] as const;
export type BundledService = (typeof BUNDLED_SERVICES)[number];

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** Where a service's bundle lives. */
export const bundlePath = (name: BundledService) => join(ROOT, "services", name, "dist", "main.mjs");

/** The file beside a bundle with the Node flags its process runs with (node-flags.ts), for deploy/Dockerfile's command. */
export const nodeFlagsPath = (name: BundledService) => join(ROOT, "services", name, "dist", "node-flags");

/** Bare imports outside the workspace are loaded from node_modules at run time, as with tsx. */
const externalPackages: Plugin = {
  name: "external-packages",
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@orvado/") ? undefined : { path: args.path, external: true }));
  },
};

/**
 * In a bundle of several services' code (bundleOneProcess), each workspace file's
 * import.meta.url is its own source file's, so the paths it takes relative to
 * itself (migrations, SQL functions, the console's files) resolve as they do from
 * the sources, wherever the bundle is written.
 */
const sourceFileUrls: Plugin = {
  name: "source-file-urls",
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, async (args) => ({
      contents: (await readFile(args.path, "utf8")).replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)),
      loader: "ts",
    }));
  },
};

/** ESM for this Node, packages external, a lazy import() kept lazy in a chunk of its own. */
const BUNDLE_OPTIONS: BuildOptions = {
  outExtension: { ".js": ".mjs" },
  // Named by their content: a build never rewrites a chunk that a running or starting process loads.
  chunkNames: "chunk-[hash]",
  splitting: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  sourcemap: "linked",
  write: false,
  logLevel: "silent",
};

/**
 * Files are written beside their final name and renamed, so a process starting
 * while another build runs (parallel test files) never loads half a file;
 * concurrent builds of the same sources write the same bytes. The chunks first,
 * the entry last: a process that loads the new entry finds every chunk it names.
 */
function writeBundle(outputs: OutputFile[], entry: string, extra: { path: string; contents: string }[] = []): void {
  mkdirSync(dirname(entry), { recursive: true });
  const ordered = [...outputs].sort((a, b) => Number(a.path === entry) - Number(b.path === entry));
  for (const file of [...extra, ...ordered.map((output) => ({ path: output.path, contents: output.contents }))]) {
    const temporary = `${file.path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
}

/** Builds one service. */
export async function buildService(name: BundledService): Promise<string> {
  const outfile = bundlePath(name);
  const result = await build({ ...BUNDLE_OPTIONS, entryPoints: { main: join(ROOT, "services", name, "src", "main.ts") }, outdir: dirname(outfile), plugins: [externalPackages] });
  writeBundle(result.outputFiles ?? [], outfile, [{ path: nodeFlagsPath(name), contents: `${SERVICE_NODE_FLAGS[name].join(" ")}\n` }]);
  return outfile;
}

/**
 * The whole stack in one process (npm start, the benchmarks' Orvado): `entry`
 * (a .ts file) and all the workspace code it imports, bundled into `outdir` as
 * <entry's name>.mjs, run with plain node. The same code through tsx took more CPU
 * per request at 100 connections (tsx compiles with keepNames: every closure made on
 * the hot path is also named through Object.defineProperty;
 * docs/design-choices.md#bundles-run-with-plain-node). Must be written inside this
 * repository: its packages are found from node_modules above it.
 */
export async function bundleOneProcess(entry: string, outdir: string): Promise<string> {
  const name = basename(entry, ".ts");
  const outfile = join(outdir, `${name}.mjs`);
  const result = await build({ ...BUNDLE_OPTIONS, entryPoints: { [name]: entry }, outdir, plugins: [externalPackages, sourceFileUrls] });
  writeBundle(result.outputFiles ?? [], outfile);
  return outfile;
}

export async function buildServices(): Promise<string[]> {
  return Promise.all(BUNDLED_SERVICES.map((name) => buildService(name)));
}

let built: Promise<string[]> | undefined;
/** Builds every service once per process (the process stack calls this before its first start). */
export function buildServicesOnce(): Promise<string[]> {
  built ??= buildServices();
  return built;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  const files = await buildServices();
  process.stdout.write(`built ${files.length} services in ${Math.round(performance.now() - started)} ms:\n${files.map((file) => `  ${file}`).join("\n")}\n`);
}
