"""``GET /``: one self-contained page listing the server's builds with their live status (a failed build's reason
under it) and current phase, a Cancel button for a build that runs (Force stop while it cancels) and a download
of a succeeded build's engine.

The page reads the token from its own URL (``/?token=...``) and sends it in an ``Authorization`` header with
``fetch``; events are read from ``fetch`` streams (EventSource cannot send headers). Names from requests are
untrusted: they only ever reach the page as ``textContent``. A strict Content-Security-Policy allows this
page's one script (by nonce) and requests to this server only.
"""

from __future__ import annotations

import secrets

from starlette.responses import HTMLResponse

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>trt-widget builds</title>
<style nonce="{nonce}">
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #222; background: #fff; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #ddd; vertical-align: top; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
.running, .cancelling {{ color: #0a58ca; }} .succeeded {{ color: #137333; }}
.failed {{ color: #b3261e; }} .cancelled {{ color: #8a6d00; }}
.why {{ color: #666; font-size: 12px; max-width: 40rem; white-space: pre-wrap; overflow-wrap: anywhere; }}
#note {{ color: #666; }} #note.error {{ color: #b3261e; }} code {{ font-size: 12px; color: #666; }}
button {{ font: inherit; padding: 0 .6rem; }}
@media (prefers-color-scheme: dark) {{ body {{ color: #ddd; background: #151515; }} th, td {{ border-color: #333; }} }}
</style></head>
<body><h1>TensorRT builds</h1><p id="note"></p>
<table><thead><tr><th>model</th><th>status</th><th>current phase</th><th>time (s)</th><th>engine</th><th>id</th>
<th></th></tr></thead><tbody id="builds"></tbody></table>
<script nonce="{nonce}">
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const headers = {{ Authorization: "Bearer " + token }};
const rows = new Map();
const note = document.getElementById("note");
const body = document.getElementById("builds");

function row(build) {{
  let r = rows.get(build.id);
  if (!r) {{
    const tr = document.createElement("tr");
    const cells = [0, 1, 2, 3, 4, 5, 6].map(() => tr.appendChild(document.createElement("td")));
    cells[3].className = cells[4].className = "num";
    const act = document.createElement("button");
    act.type = "button";
    act.hidden = true;
    act.addEventListener("click", () => action(build.id, r));
    cells[6].appendChild(act);
    r = {{ tr, cells, act, status: "", force: false, following: false, running: new Map(), origin: null }};
    rows.set(build.id, r);
    body.insertBefore(tr, body.firstChild);
  }}
  return r;
}}

// the row's one action: Cancel a build that runs, Force stop one that is cancelling, download a built engine
function actions(r, status, hasEngine) {{
  r.status = status;
  const live = ["queued", "running", "cancelling"].includes(status);
  r.act.hidden = !(live || (status === "succeeded" && hasEngine));
  r.act.textContent = status === "cancelling" ? "Force stop" : live ? "Cancel" : "Download engine";
  r.act.title = status === "cancelling" ? "Terminate the builder process now" : live
    ? "Stop the build after the current step" : "Save the engine file";
}}

async function action(id, r) {{
  if (r.act.disabled) return;
  r.act.disabled = true;
  try {{
    if (r.status === "succeeded") await download(id);
    else {{
      const force = r.status === "cancelling" ? "?force=1" : "";
      const reply = await fetch(`/builds/${{encodeURIComponent(id)}}/cancel${{force}}`, {{
        method: "POST", headers: {{ ...headers, "Content-Type": "application/json" }},
        body: JSON.stringify({{ reason: "stopped from the service page" }}),
      }});
      const data = await reply.json().catch(() => ({{}}));
      if (!reply.ok) say(`cannot cancel ${{id}}: ${{data.error || reply.statusText}}`, true);
      else {{ say(`${{id}}: ${{force ? "force stop" : "cancel"}} asked`, false); actions(r, data.status, false); }}
    }}
  }} catch (err) {{
    say(`${{id}}: ${{err}}`, true);
  }} finally {{
    r.act.disabled = false;
  }}
}}

// the engine comes with the token in a header (a plain link cannot send one): fetched, then saved from memory
async function download(id) {{
  const reply = await fetch(`/builds/${{encodeURIComponent(id)}}/engine`, {{ headers }});
  if (!reply.ok) {{
    const data = await reply.json().catch(() => ({{}}));
    say(`cannot download the engine of ${{id}}: ${{data.error || reply.statusText}}`, true);
    return;
  }}
  const url = URL.createObjectURL(await reply.blob());
  const a = document.createElement("a");
  a.href = url;
  // the file name the server gives (the model's, sanitized there), else the build id
  const named = /filename="([^"]+)"/.exec(reply.headers.get("Content-Disposition") || "");
  const filename = named ? named[1] : `${{id}}.engine`;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  say(`${{filename}} saved`, false);
}}

function show(r, build) {{
  r.cells[0].textContent = build.name || "";
  status(r, build.status, build.error || build.detail);
  actions(r, build.status, Boolean(build.engine_bytes));
  if (build.phase !== undefined) r.cells[2].textContent = build.phase ? label(build.phase) : "";
  if (typeof build.elapsed_s === "number") r.cells[3].textContent = build.elapsed_s.toFixed(1);
  r.cells[4].textContent = build.engine_bytes ? size(build.engine_bytes) : "";
  const code = document.createElement("code");
  code.textContent = build.id;
  r.cells[5].replaceChildren(code);
}}

// the status, and under a failed or cancelled build's the reason (untrusted text: textContent only)
// a size as everywhere else (trt_widget._format.fmt_bytes, the widget): "97.9 MiB", one decimal, its number and
// unit joined by a no-break space (a line never wraps between them)
function size(bytes) {{
  let value = bytes;
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {{
    if (value < 1024 || unit === "GiB") {{
      return unit === "B" ? `${{value.toFixed(0)}}\u00a0B` : `${{value.toFixed(1)}}\u00a0${{unit}}`;
    }}
    value /= 1024;
  }}
  return `${{bytes}}\u00a0B`;
}}

function status(r, value, reason) {{
  r.cells[1].className = value;
  const shown = document.createElement("span");
  shown.textContent = value;
  r.cells[1].replaceChildren(shown);
  if ((value === "failed" || value === "cancelled") && reason) {{
    const why = document.createElement("div");
    why.className = "why";
    why.textContent = String(reason);
    r.cells[1].appendChild(why);
  }}
}}

function label(phase) {{
  return phase.num_steps ? `${{phase.name}} (${{phase.step}}/${{phase.num_steps}})` : phase.name;
}}

function apply(r, event) {{
  if (event.event === "phase_start") r.running.set(event.id, event);
  else if (event.event === "phase_finish") r.running.delete(event.id);
  else if (event.event === "step" && r.running.has(event.id)) r.running.get(event.id).step = event.step;
  if (event.event === "build_end") {{
    status(r, event.status, event.error || event.detail);
    r.cells[4].textContent = event.engine_bytes ? size(event.engine_bytes) : "";
    actions(r, event.status, Boolean(event.engine_bytes));
  }}
  let current = null;
  for (const phase of r.running.values()) if (!current || phase.depth >= current.depth) current = phase;
  r.cells[2].textContent = current ? label({{ step: 0, ...current }}) : "";
  r.cells[3].textContent = Number(event.t).toFixed(1);
  r.origin = event.event === "build_end" ? null : performance.now() - 1000 * event.t;  // the clock runs on
}}

function tick() {{
  for (const r of rows.values()) {{
    if (r.origin) r.cells[3].textContent = ((performance.now() - r.origin) / 1000).toFixed(1);
  }}
}}

function say(text, failed) {{
  note.textContent = text;
  note.className = failed ? "error" : "";
}}

async function follow(id, r) {{
  r.following = true;
  try {{
    const response = await fetch(`/builds/${{encodeURIComponent(id)}}/events`, {{ headers }});
    if (!response.ok || !response.body) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {{
      const {{ value, done }} = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\\n\\n")) >= 0) {{
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\\n");
        if (data && !block.startsWith("event:")) apply(r, JSON.parse(data));
      }}
    }}
  }} catch (err) {{
    say("stream of " + id + " ended: " + err, true);
  }} finally {{
    r.following = false;
    r.origin = null;
  }}
}}

async function refresh() {{
  try {{
    const response = await fetch("/builds", {{ headers }});
    const data = await response.json();
    if (!response.ok) {{ say(data.error || response.statusText, true); return; }}
    say(`${{data.running}} of at most ${{data.max_concurrent}} builds running`, false);
    for (const build of data.builds.slice().reverse()) {{
      const r = row(build);
      const live = ["queued", "running", "cancelling"].includes(build.status);
      if (!r.following) show(r, build);
      if (live && !r.following) follow(build.id, r);
    }}
  }} catch (err) {{
    say("cannot reach the server: " + err, true);
  }}
}}
refresh();
setInterval(refresh, 2000);
setInterval(tick, 250);
</script></body></html>
"""


def page() -> HTMLResponse:
    """The page, with a fresh CSP nonce."""
    nonce = secrets.token_urlsafe(16)
    policy = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    headers = {"Content-Security-Policy": policy, "Referrer-Policy": "no-referrer"}
    return HTMLResponse(_PAGE.format(nonce=nonce), headers=headers)
