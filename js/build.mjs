// Bundle the anywidget front end into ../trt_widget/static/ (committed: users have no Node).
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.resolve(here, "..", "trt_widget", "static");

await build({
  entryPoints: [path.join(here, "widget.js")],
  outfile: path.join(outdir, "widget.js"),
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  legalComments: "none",
  logLevel: "info",
});
await build({
  entryPoints: [path.join(here, "widget.css")],
  outfile: path.join(outdir, "widget.css"),
  bundle: true,
  minify: true,
  logLevel: "info",
});
