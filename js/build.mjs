// Bundle the anywidget front end (src/) into ../trt_widget/static/ (committed: users have no Node), and
// the benchmark bundle into dist/ (not committed, not shipped): the same code plus a `createView` export
// that bench/p7_page.js uses to drive the view. `node build.mjs --bench` builds only the latter (what
// bench/run_all.py runs: it leaves the committed bundle alone).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.resolve(here, "..", "trt_widget", "static");
const dist = path.join(here, "dist");

/** @type {import("esbuild").BuildOptions} */
const js = {
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  legalComments: "none",
  logLevel: "info",
};

const benchOnly = process.argv.includes("--bench");
// `--check`: build the shipped bundle in memory and fail when it differs from the committed one (a source
// change without `npm run build` would ship stale code: scripts/check.sh runs this)
const checkOnly = process.argv.includes("--check");

/** @type {import("esbuild").BuildOptions[]} */
const shipped = [
  { ...js, entryPoints: [path.join(here, "src", "build", "widget.js")], outfile: path.join(outdir, "widget.js") },
  {
    entryPoints: [path.join(here, "widget.css")],
    outfile: path.join(outdir, "widget.css"),
    bundle: true,
    minify: true,
    logLevel: "info",
  },
  // The build matrix widget (MatrixWidget): its own entry, reusing the view above for expanded rows.
  { ...js, entryPoints: [path.join(here, "src", "matrix", "matrix.js")], outfile: path.join(outdir, "matrix.js") },
  {
    entryPoints: [path.join(here, "matrix.css")],
    outfile: path.join(outdir, "matrix.css"),
    bundle: true,
    minify: true,
    logLevel: "info",
  },
];

if (checkOnly) {
  const stale = [];
  for (const options of shipped) {
    const result = await build({ ...options, write: false, logLevel: "warning" });
    for (const file of result.outputFiles ?? []) {
      const committed = existsSync(file.path) ? readFileSync(file.path, "utf8") : null;
      if (committed !== file.text) stale.push(path.relative(path.resolve(here, ".."), file.path));
    }
  }
  if (stale.length) {
    process.stderr.write(`stale bundle (run: cd js && npm run build): ${stale.join(", ")}\n`);
    process.exit(1);
  }
  process.exit(0);
}

if (!benchOnly) {
  for (const options of shipped) await build(options);
}
// P7 times this one (minified like the shipped bundle) ...
await build({ ...js, entryPoints: [path.join(here, "src", "bench.js")], outfile: path.join(dist, "bench.js") });
// ... and `p7_frontend.py --profile` serves this one, so CPU profiles name functions and lines.
await build({
  ...js,
  minify: false,
  entryPoints: [path.join(here, "src", "bench.js")],
  outfile: path.join(dist, "bench.debug.js"),
});
