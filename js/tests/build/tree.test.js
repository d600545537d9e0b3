// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { TrtView } from "../../src/build/view.js";
import { el, fakeModel, mount, NB, phase, rowNamed, rows, sampleTree, stopBtn, txt, useDom } from "../helpers.js";

useDom();

describe("tree rendering", () => {
  it("reads the rows from the phases_json text Python syncs, keeping row nodes across updates", () => {
    const tree = sampleTree();
    const model = fakeModel({ status: "running", elapsed_s: 1, phases_json: JSON.stringify(tree) });
    mount(model);
    expect(rows()).toHaveLength(tree.length);
    const first = rowNamed("Fusing layers");
    const moved = tree.map((r) => (r.name === "Fusing layers" ? { ...r, step: 4 } : r));
    model.set("phases_json", JSON.stringify(moved));
    expect(rowNamed("Fusing layers")).toBe(first);
    expect(txt(first, ".trtw-steps")).toBe("4/8");
    model.set("phases_json", "not json");
    expect(rows()).toHaveLength(0);
  });

  it("applies row deltas and asks for the whole list once when it missed some", () => {
    const tree = sampleTree();
    const model = fakeModel({ status: "running", elapsed_s: 1, phases_json: JSON.stringify(tree), phases_seq: 4 });
    mount(model);
    const before = rows();
    model.set("phases_delta", JSON.stringify({ seq: 5, rows: [{ ...tree[3], step: 5 }] }));
    expect(rows()[3]).toBe(before[3]); // the same node, updated
    expect(txt(rows()[3], ".trtw-steps")).toBe(`5/${tree[3].num_steps}`);
    expect(model.sent).toEqual([]);
    model.set("phases_delta", JSON.stringify({ seq: 9, rows: [{ ...tree[3], step: 6 }] })); // 6..8 missed
    model.set("elapsed_s", 1.5);
    expect(model.sent).toEqual([{ type: "sync" }]); // asked once
    model.update({ phases_json: JSON.stringify([...tree.slice(0, 3), { ...tree[3], step: 7 }]), phases_seq: 9 });
    expect(txt(rows()[3], ".trtw-steps")).toBe(`7/${tree[3].num_steps}`);
  });

  it("ignores a `phases` list (Python syncs only phases_json)", () => {
    const model = fakeModel({ status: "succeeded", elapsed_s: 1, phases: sampleTree() });
    mount(model);
    expect(model.get("phases_json")).toBeUndefined();
    expect(rows()).toHaveLength(0);
    expect(el.querySelector(".trtw-empty").textContent).toBe("No build phases recorded.");
  });

  it("renders one treeitem per phase with nesting, n/N and %", () => {
    mount(fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() }));
    const tree = el.querySelector('[role="tree"]');
    expect(tree).not.toBeNull();
    expect(rows().map((r) => r.querySelector(".trtw-name").textContent)).toEqual([
      "Building engine",
      "Parsing network",
      "Optimizing",
      "Fusing layers",
    ]);
    expect(rows().map((r) => r.getAttribute("aria-level"))).toEqual(["1", "2", "2", "3"]);
    const fuse = rowNamed("Fusing layers");
    expect(fuse.style.getPropertyValue("--trtw-lvl")).toBe("2");
    expect(txt(fuse, ".trtw-steps")).toBe("2/8");
    expect(txt(fuse, ".trtw-pct")).toBe("25%");
    const bar = fuse.querySelector('[role="progressbar"]');
    expect(bar.getAttribute("aria-valuenow")).toBe("25");
    expect(bar.getAttribute("aria-valuemin")).toBe("0");
    expect(bar.getAttribute("aria-valuemax")).toBe("100");
    expect(bar.getAttribute("aria-label")).toBe("Fusing layers progress");
    expect(fuse.querySelector(".trtw-fill").style.width).toBe("25%");
    // expandable rows carry aria-expanded, leaves do not
    expect(rowNamed("Building engine").getAttribute("aria-expanded")).toBe("true");
    expect(fuse.hasAttribute("aria-expanded")).toBe(false);
  });

  it("shows 100% for done phases even if step < num_steps, and with num_steps 0", () => {
    mount(
      fakeModel({
        status: "succeeded",
        elapsed_s: 3,
        rows: [
          phase("A", { id: 1, step: 3, num_steps: 10, start_s: 0, end_s: 1.5 }),
          phase("B", { id: 2, step: 0, num_steps: 0, start_s: 1.5, end_s: 2 }),
        ],
      }),
    );
    const a = rowNamed("A");
    expect(txt(a, ".trtw-pct")).toBe("100%");
    expect(txt(a, ".trtw-steps")).toBe("10/10");
    expect(a.querySelector(".trtw-fill").style.width).toBe("100%");
    expect(txt(a, ".trtw-time")).toBe(`1.5${NB}s`);
    const b = rowNamed("B");
    expect(txt(b, ".trtw-pct")).toBe("100%");
    expect(b.querySelector(".trtw-fill").style.width).toBe("100%");
    expect(txt(b, ".trtw-time")).toBe(`500${NB}ms`);
  });

  it("draws a phase TensorRT ended before its last step as done, marks cancelled ones, keeps both visible", () => {
    mount(
      fakeModel({
        status: "cancelled",
        status_detail: "stopped by user",
        elapsed_s: 5,
        rows: [
          phase("Early", { id: 1, step: 2, num_steps: 5, start_s: 0, end_s: 1, status: "finished-early" }),
          phase("Cut", { id: 2, step: 1, num_steps: 4, start_s: 1, end_s: 5, status: "cancelled" }),
        ],
      }),
    );
    expect(txt(rowNamed("Early"), ".trtw-mark")).toBe("");
    expect(rowNamed("Early").querySelector(".trtw-mark").hidden).toBe(true);
    // "done", not "2/5 100%" (which reads as a contradiction); the true count is in the tooltip, explained
    expect(txt(rowNamed("Early"), ".trtw-steps")).toBe("done");
    expect(txt(rowNamed("Early"), ".trtw-pct")).toBe("");
    expect(rowNamed("Early").querySelector(".trtw-steps").title).toMatch(
      /after 2 of the 5 steps.*normal, not an error/,
    );
    expect(rowNamed("Early").querySelector(".trtw-bar").getAttribute("aria-valuetext")).toBe("done (2/5 steps)");
    expect(rowNamed("Early").querySelector(".trtw-fill").style.width).toBe("100%");
    expect(txt(rowNamed("Cut"), ".trtw-mark")).toBe("cancelled");
    expect(rowNamed("Cut").dataset.status).toBe("cancelled");
    expect(el.querySelector(".trtw-badge").textContent).toBe("Cancelled");
    expect(el.querySelector(".trtw-detail").textContent).toBe("stopped by user");
  });

  it("marks the phase a build failed in as failed, and a group by its failed member", () => {
    const members = [0, 1, 2, 3, 4].map((i) =>
      phase("Try", { id: 10 + i, parent: 1, depth: 1, start_s: i, end_s: i + 1, status: i === 4 ? "failed" : "done" }),
    );
    mount(
      fakeModel({
        status: "failed",
        elapsed_s: 5,
        rows: [phase("Parse", { id: 1, start_s: 0, end_s: 5, status: "failed" }), ...members],
      }),
    );
    expect(txt(rowNamed("Parse"), ".trtw-mark")).toBe("failed");
    expect(rowNamed("Parse").dataset.status).toBe("failed");
    const group = rowNamed("Try");
    expect(group.classList.contains("trtw-group")).toBe(true);
    expect(group.dataset.status).toBe("failed");
    expect(txt(group, ".trtw-mark")).toBe("1 failed");
  });

  it("survives a model with no traits at all", () => {
    mount(fakeModel({}));
    expect(rows()).toHaveLength(0);
    expect(el.querySelector(".trtw-badge").textContent).toBe("Idle");
    expect(stopBtn().disabled).toBe(true);
    expect(el.querySelector(".trtw-empty").textContent).toBe("No build running.");
  });
});

describe("grouping", () => {
  function tactics(n, { running = false } = {}) {
    const out = [phase("Build", { id: 100, depth: 0, start_s: 0 })];
    for (let i = 0; i < n; i++) {
      const last = running && i === n - 1;
      out.push(
        phase("Measuring tactic time", {
          id: 200 + i,
          parent: 100,
          depth: 1,
          step: last ? 0 : 1,
          num_steps: 1,
          start_s: i,
          end_s: last ? null : i + 0.5,
        }),
      );
    }
    out.push(phase("Other", { id: 300, parent: 100, depth: 1, start_s: n, end_s: n + 1 }));
    return out;
  }

  it("folds >= 5 same-name siblings into one collapsed group row with ×count and total", () => {
    mount(fakeModel({ status: "succeeded", elapsed_s: 10, rows: tactics(6) }));
    const names = rows().map((r) => r.querySelector(".trtw-name").textContent);
    expect(names).toEqual(["Build", "Measuring tactic time", "Other"]);
    const g = rowNamed("Measuring tactic time");
    expect(g.classList.contains("trtw-group")).toBe(true);
    expect(txt(g, ".trtw-count")).toBe("\u00d76");
    expect(txt(g, ".trtw-time")).toBe(`3.0${NB}s`); // 6 × 0.5 s
    expect(g.querySelector(".trtw-time").title).toBe(`6 instances: 3.0${NB}s in total, 500${NB}ms on average`);
    expect(txt(g, ".trtw-steps")).toBe(""); // the ×6 says it; no % for a group: it cannot know its total
    expect(txt(g, ".trtw-pct")).toBe("");
    expect(g.querySelector(".trtw-bar").style.visibility).toBe("hidden");
    expect(g.getAttribute("aria-expanded")).toBe("false");
  });

  it("expands to show its members and keeps its key stable while the run grows", () => {
    const model = fakeModel({ status: "running", elapsed_s: 5.2, rows: tactics(6, { running: true }) });
    mount(model);
    const g = rowNamed("Measuring tactic time");
    expect(txt(g, ".trtw-steps")).toBe("5 done");
    expect(txt(g, ".trtw-pct")).toBe("");
    expect(txt(g, ".trtw-time")).toBe(`2.7${NB}s`); // 5 × 0.5 + (5.2 − 5) live
    // collapsed, the group still shows its running member inline: where the build is is never hidden
    const inline = rows().filter((r) => r.getAttribute("aria-level") === "3");
    expect(inline).toHaveLength(1);
    expect(inline[0].dataset.status).toBe("running");
    g.querySelector(".trtw-twisty").click();
    expect(g.getAttribute("aria-expanded")).toBe("true");
    let members = rows().filter((r) => r.getAttribute("aria-level") === "3");
    expect(members).toHaveLength(6);
    expect(members.every((m) => m.querySelector(".trtw-name").textContent === "Measuring tactic time")).toBe(true);

    model.update({ elapsed_s: 6.5, rows: tactics(7, { running: true }) });
    expect(rowNamed("Measuring tactic time")).toBe(g); // same group row node
    expect(txt(g, ".trtw-count")).toBe("\u00d77");
    expect(g.getAttribute("aria-expanded")).toBe("true"); // state kept
    members = rows().filter((r) => r.getAttribute("aria-level") === "3");
    expect(members).toHaveLength(7);
  });

  it("opens a group that forms around a member the user had opened", () => {
    const four = tactics(4, { running: true });
    const model = fakeModel({ status: "running", elapsed_s: 4, rows: four });
    mount(model);
    const member = rows().find((r) => r.querySelector(".trtw-name").textContent === "Measuring tactic time");
    const memberId = four.find((r) => r.name === "Measuring tactic time").id;
    model.update({ rows: four.map((r) => (r.parent === memberId ? r : r)) });
    member.querySelector(".trtw-label").click(); // a member without children: nothing to open
    const view = new TrtView(model, document.createElement("div"));
    view.tree.expanded.set(String(memberId), true); // as if the user had opened it
    model.update({ elapsed_s: 6, rows: tactics(6, { running: true }) });
    view.updateTree();
    const g = [...view.tree.el.querySelectorAll(".trtw-group")][0];
    expect(g.getAttribute("aria-expanded")).toBe("true");
    view.destroy();
  });

  it("pins where the build is in the header and reveals it in the tree on click", () => {
    const rowsNow = [
      phase("Building engine", { id: 0, step: 4, num_steps: 6 }),
      phase("Timing graph nodes", { id: 1, parent: 0, depth: 1, step: 0, num_steps: 1 }),
    ];
    for (let i = 0; i < 8; i++) {
      rowsNow.push(
        phase("Evaluating tactic times", {
          id: 2 + i,
          parent: 1,
          depth: 2,
          start_s: i,
          ...(i < 7 ? { end_s: i + 0.9, status: "done", step: 20, num_steps: 20 } : { step: 55, num_steps: 153 }),
        }),
      );
    }
    rowsNow.push(phase("Measuring tactic time", { id: 10, parent: 9, depth: 3, start_s: 7.5, step: 1, num_steps: 4 }));
    const model = fakeModel({ status: "running", elapsed_s: 8, rows: rowsNow });
    mount(model);
    const path = el.querySelector(".trtw-path");
    expect(path.hidden).toBe(false);
    expect(path.textContent).toBe(
      "Now: Building engine 4/6 \u203a Timing graph nodes \u203a Evaluating tactic times 55/153 \u203a Measuring tactic time 1/4",
    );
    rowNamed("Timing graph nodes").querySelector(".trtw-label").click(); // the user closes the running branch
    expect(rowNamed("Measuring tactic time")).toBeUndefined();
    path.click();
    expect(rowNamed("Measuring tactic time").dataset.status).toBe("running");
    model.update({ status: "succeeded", rows: rowsNow.map((r) => ({ ...r, status: "done", end_s: 9 })) });
    expect(path.hidden).toBe(true);
  });

  it("does not group runs shorter than 5", () => {
    mount(fakeModel({ status: "succeeded", elapsed_s: 10, rows: tactics(4) }));
    expect(rows()).toHaveLength(6);
    expect(el.querySelector(".trtw-group")).toBeNull();
  });
});

describe("collapse state", () => {
  it("is kept across phases updates", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    const opt = rowNamed("Optimizing");
    opt.querySelector(".trtw-twisty").click();
    expect(opt.getAttribute("aria-expanded")).toBe("false");
    expect(rowNamed("Fusing layers")).toBeUndefined();

    const next = sampleTree();
    next.push(phase("Selecting tactics", { id: 5, parent: 3, depth: 2, start_s: 1.2 }));
    next.push(phase("Serializing", { id: 6, parent: 1, depth: 1, start_s: 1.3 }));
    model.update({ elapsed_s: 1.4, rows: next });
    expect(rowNamed("Optimizing")).toBe(opt);
    expect(opt.getAttribute("aria-expanded")).toBe("false");
    expect(rowNamed("Fusing layers")).toBeUndefined();
    expect(rowNamed("Selecting tactics")).toBeUndefined();
    expect(rowNamed("Serializing")).toBeDefined();

    opt.querySelector(".trtw-name").click();
    expect(opt.getAttribute("aria-expanded")).toBe("true");
    expect(rows().map((r) => r.querySelector(".trtw-name").textContent)).toEqual([
      "Building engine",
      "Parsing network",
      "Optimizing",
      "Fusing layers",
      "Selecting tactics",
      "Serializing",
    ]);
  });

  it("is operable from the keyboard (Enter/Space, ArrowLeft/Right, ArrowUp/Down)", () => {
    mount(fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() }));
    const root = rowNamed("Building engine");
    expect(root.tabIndex).toBe(0); // roving tab stop on the first row
    expect(rowNamed("Optimizing").tabIndex).toBe(-1);
    const key = (target, k) => target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
    root.focus();
    key(root, "ArrowLeft");
    expect(root.getAttribute("aria-expanded")).toBe("false");
    expect(rows()).toHaveLength(1);
    key(root, "ArrowRight");
    expect(root.getAttribute("aria-expanded")).toBe("true");
    expect(rows()).toHaveLength(4);
    key(root, "Enter");
    expect(root.getAttribute("aria-expanded")).toBe("false");
    key(root, " ");
    expect(root.getAttribute("aria-expanded")).toBe("true");
    key(root, "ArrowDown");
    expect(document.activeElement).toBe(rowNamed("Parsing network"));
    expect(rowNamed("Parsing network").tabIndex).toBe(0);
    expect(root.tabIndex).toBe(-1);
    key(document.activeElement, "ArrowDown");
    key(document.activeElement, "ArrowDown");
    expect(document.activeElement).toBe(rowNamed("Fusing layers"));
    key(document.activeElement, "ArrowLeft"); // leaf: move to parent
    expect(document.activeElement).toBe(rowNamed("Optimizing"));
    key(document.activeElement, "ArrowUp");
    expect(document.activeElement).toBe(rowNamed("Parsing network"));
  });
});

describe("keyed reconciliation", () => {
  it("reuses the same DOM node for unchanged rows and only appends new ones", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    const before = rows();
    const parseName = before[1].querySelector(".trtw-name");
    const next = sampleTree();
    next.push(phase("Serializing", { id: 9, parent: 1, depth: 1, start_s: 1.5 }));
    next[3] = { ...next[3], step: 5 }; // progress on a running row
    model.update({ elapsed_s: 2, rows: next });
    const after = rows();
    expect(after).toHaveLength(5);
    for (let i = 0; i < 4; i++) expect(after[i]).toBe(before[i]);
    expect(after[1].querySelector(".trtw-name")).toBe(parseName);
    expect(txt(after[3], ".trtw-steps")).toBe("5/8");
    expect(after[4].querySelector(".trtw-name").textContent).toBe("Serializing");
  });

  it("handles a 1,200-instance tree and removes rows that vanish", () => {
    const view = new TrtView(fakeModel({ status: "running", elapsed_s: 100 }), document.createElement("div"));
    const big = [phase("Build", { id: 0 })];
    for (let i = 1; i <= 1200; i++)
      big.push(phase(`Layer ${i % 7}`, { id: i, parent: 0, start_s: i / 20, end_s: i / 20 + 0.04 }));
    view.applyPhases(big.slice(0, 300));
    expect(view.tree.el.querySelectorAll('[role="treeitem"]')).toHaveLength(300); // short: every row in the DOM
    const keep = view.tree.el.children[5];
    view.applyPhases(big);
    // long: only the rows in view (and a margin) are in the DOM; spacers stand for the rest
    const shown = view.tree.el.querySelectorAll('[role="treeitem"]');
    expect(shown.length).toBeLessThan(100);
    expect(view.tree.flat).toHaveLength(1201);
    const spacers = [...view.tree.el.querySelectorAll(".trtw-spacer")].map((s) =>
      Number.parseInt(/** @type {HTMLElement} */ (s).style.height, 10),
    );
    expect(spacers[0] + spacers[1] + shown.length * 20).toBe(1201 * 20);
    expect(keep.parentNode).toBe(view.tree.el); // the same node, still shown
    view.applyPhases(big.slice(0, 200));
    expect(view.tree.el.querySelectorAll('[role="treeitem"]')).toHaveLength(200);
    expect(view.tree.el.querySelectorAll(".trtw-spacer")).toHaveLength(0);
    expect(view.tree.rows.size).toBeLessThanOrEqual(200); // the vanished rows are forgotten
    view.destroy();
  });

  it("renders 10,000 expanded rows as a window and reaches the last one from the keyboard", () => {
    const host = document.createElement("div");
    document.body.append(host);
    const view = new TrtView(fakeModel({ status: "running", elapsed_s: 100 }), host);
    const big = [phase("Build", { id: 0 })];
    for (let i = 1; i <= 10000; i++)
      big.push(phase(`Layer ${i % 3}`, { id: i, parent: 0, start_s: i / 200, end_s: i / 200 + 0.004 }));
    view.applyPhases(big);
    expect(view.tree.el.querySelectorAll('[role="treeitem"]').length).toBeLessThan(100);
    const first = /** @type {HTMLElement} */ (view.tree.el.querySelector('[role="treeitem"]'));
    first.focus();
    first.dispatchEvent(new KeyboardEvent("keydown", { key: "End", bubbles: true }));
    expect(document.activeElement.querySelector(".trtw-name").textContent).toBe("Layer 1"); // 10000 % 3
    expect(view.tree.indexOf.get(view.tree.tabKey)).toBe(10000);
    document.activeElement.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp", bubbles: true }));
    expect(view.tree.indexOf.get(view.tree.tabKey)).toBe(9999);
    view.destroy();
    host.remove();
  });
});

describe("the Steps column's width (issue 39, eighth trial 2)", () => {
  it("is set from the longest count in the tree, so that a narrow widget never cuts '4502/4502'", () => {
    const tree = [
      phase("Building engine", { id: 1, step: 1, num_steps: 6 }),
      phase("Timing tactics", { id: 2, parent: 1, depth: 1, step: 4502, num_steps: 4502 }),
    ];
    const model = fakeModel({ status: "running", elapsed_s: 1, phases_json: JSON.stringify(tree) });
    mount(model);
    const widths = () =>
      [".trtw-tree", ".trtw-colhead"].map((s) => el.querySelector(s).style.getPropertyValue("--trtw-steps-ch"));
    expect(txt(rowNamed("Timing tactics"), ".trtw-steps")).toBe("4502/4502");
    expect(widths()).toEqual(["9", "9"]); // "4502/4502": nine characters, in the rows and their heading
    model.set("phases_json", JSON.stringify([...tree, phase("Fusing", { id: 3, parent: 1, num_steps: 13502 })]));
    expect(widths()).toEqual(["11", "11"]);
    model.set("phases_json", JSON.stringify([tree[0]]));
    expect(widths()).toEqual(["4", "4"]); // "done", "1/6": the column's own minimum then holds
  });
});
