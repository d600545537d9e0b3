// Bundle the anywidget front end (src/) into ../trt_widget/static/ (committed: users have no Node), and
// the benchmark bundle into dist/ (not committed, not shipped): the same code plus a `createView` export
// that bench/p7_page.js uses to drive the view.
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

await build({
  ...js,
  entryPoints: [path.join(here, "src", "build", "widget.js")],
  outfile: path.join(outdir, "widget.js"),
});
await build({
  entryPoints: [path.join(here, "widget.css")],
  outfile: path.join(outdir, "widget.css"),
  bundle: true,
  minify: true,
  logLevel: "info",
});
// The build matrix widget (MatrixWidget): its own entry, reusing the view above for expanded rows.
await build({
  ...js,
  entryPoints: [path.join(here, "src", "matrix", "matrix.js")],
  outfile: path.join(outdir, "matrix.js"),
});
await build({
  entryPoints: [path.join(here, "matrix.css")],
  outfile: path.join(outdir, "matrix.css"),
  bundle: true,
  minify: true,
  logLevel: "info",
});
// P7 times this one (minified like the shipped bundle) ...
await build({ ...js, entryPoints: [path.join(here, "src", "bench.js")], outfile: path.join(dist, "bench.js") });
// ... and `p7_frontend.py --profile` serves this one, so CPU profiles name functions and lines.
await build({
  ...js,
  minify: false,
  entryPoints: [path.join(here, "src", "bench.js")],
  outfile: path.join(dist, "bench.debug.js"),
});
