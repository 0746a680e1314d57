// End-to-end tests of the release build in headless chromium: editing, the grid, charts,
// exports, share links, hostile links, history, embed mode, the keyboard and the JS API.
// Every test also checks that the page logged no error and asked no other origin for anything.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startServer, launch, openApp } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

const TP = "#f-parallelism-tensor-model-parallel-size";
const NODES = "#f-cluster-num-nodes";
const clean = { consoleErrors: [], pageErrors: [], foreignRequests: [] };

/** base64url of a plan, as the app writes it into `#plan=`. */
const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");

async function text(page, selector) {
  return (await page.locator(selector).innerText()).trim();
}

test("pick a preset and change TP: diagnostics, DP, grid cells and groups, chart and exports follow", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  await page.selectOption("#model-preset", "llama-3.1-70b");
  await page.fill(NODES, "4");
  await page.fill(TP, "8");
  assert.equal(await text(page, "#d-world-size"), "32");
  assert.equal(await text(page, "#d-dp"), "2"); // 32 / (TP 8 · PP 2 · CP 1)
  assert.match(await text(page, "#model-panel .summary"), /Llama 3\.1 70B/);

  const grid = page.locator("#grid-dense");
  assert.equal(await grid.getAttribute("data-cells"), "32");
  assert.equal(await grid.getAttribute("data-kind"), "tp");
  assert.equal(await grid.getAttribute("data-groups"), "4"); // 32 / 8 TP groups
  // Hover the first GPU: its groups and coordinates are listed.
  const cell = Number(await grid.getAttribute("data-cell"));
  await grid.hover({ position: { x: cell / 2, y: cell / 2 } });
  assert.match(await text(page, "#grid-info-head"), /GPU rank 0 · node 0 · local GPU 0/);
  assert.match(await text(page, "#grid-info"), /TP \(tp\)\s+group 0 · coordinate 0 of 8 · ranks 0–7/);
  assert.match(await text(page, "#grid-info"), /PP stage \(pp\)\s+group 0 · coordinate 0 of 2 · rank/);

  // Colour by PP stage: two stages in the legend.
  await page.selectOption("#color-dense", "pp");
  assert.equal(await grid.getAttribute("data-kind"), "pp");
  assert.match(await text(page, "#grid-panel .legend"), /2 pipeline stages/);

  // The stacked-bar chart has two stages of five terms, plus the capacity line.
  const bars = await page.locator("#stage-chart svg rect").count();
  assert.ok(bars >= 10, `stage chart rects: ${bars}`);
  // The exports sit below the fold, where content-visibility skips rendering (and innerText): scroll to them.
  await page.locator("#export-bridge").scrollIntoViewIfNeeded();
  // Rendering after the scroll can lag a loaded machine: wait until each export has been laid out with its text.
  await page.waitForFunction((sels) => sels.every((s) => document.querySelector(s)?.innerText.trim()), ["#export-bridge", "#export-megatron", "#export-slurm", "#export-plan"]);
  assert.match(await text(page, "#export-bridge"), /cfg\.model\.tensor_model_parallel_size = 8/);
  assert.match(await text(page, "#export-megatron"), /--tensor-model-parallel-size 8/);
  assert.match(await text(page, "#export-slurm"), /#SBATCH --nodes=4/);
  assert.match(await text(page, "#export-plan"), /"tensor_model_parallel_size": 8/);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("an invalid TP is flagged, not blocked, and its one-click fix applies", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  await page.fill(TP, "3");
  assert.match(await text(page, "#status"), /error/);
  const heads = page.locator('#diagnostics li[data-code="heads-not-divisible-by-tp"]');
  assert.match(await heads.innerText(), /ERROR/i);
  assert.equal(await page.locator(TP).inputValue(), "3", "the typed value stays");
  assert.equal(await page.locator(TP).getAttribute("aria-invalid"), "true");
  await heads.locator("button.apply").click();
  assert.equal(await page.locator(TP).inputValue(), "2");
  assert.match(await text(page, "#status"), /valid/);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("a share link reopens exactly the plan, and back/forward walk the edits", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  await page.fill(TP, "4");
  await page.waitForTimeout(1100); // edits within a second share one history entry
  await page.fill(NODES, "8");
  await page.waitForTimeout(1100);
  const link = page.url();
  assert.match(link, /#plan=[A-Za-z0-9_-]+$/);

  const other = await openApp(browser, link);
  assert.equal(await other.page.locator(TP).inputValue(), "4");
  assert.equal(await other.page.locator(NODES).inputValue(), "8");
  assert.equal(await text(other.page, "#d-world-size"), "64");
  assert.equal(await other.page.locator("#notice").count(), 0);
  assert.deepEqual(other.problems, clean);
  await other.context.close();

  await page.goBack();
  await page.waitForFunction(() => document.querySelector("#f-cluster-num-nodes").value === "2");
  assert.equal(await page.locator(TP).inputValue(), "4");
  await page.goForward();
  await page.waitForFunction(() => document.querySelector("#f-cluster-num-nodes").value === "8");
  assert.deepEqual(problems, clean);
  await context.close();
});

test("hostile links fall back to the default plan with a notice and never inject markup", async () => {
  const hostile = [
    "#plan=%%%not-base64",
    `#plan=${Buffer.from("{not json").toString("base64url")}`,
    `#plan=${encode({ model: { preset: "llama-3.1-8b", name: "<img src=x onerror=window.__pwned=1>" }, cluster: { gpus_per_node: 8, num_nodes: 1 } })}`,
    `#plan=${encode({ model: "llama-3.1-8b", cluster: { gpus_per_node: 8, num_nodes: 1e300 } })}`,
    `#plan=${encode({ model: "llama-3.1-8b", cluster: { gpus_per_node: 8, num_nodes: 1000000 } })}`,
    `#plan=${encode({ model: "<script>window.__pwned=1</script>", cluster: {} })}`,
  ];
  for (const hash of hostile) {
    const { page, context, problems } = await openApp(browser, server.url + hash);
    assert.match(await text(page, "#notice"), /not opened/, hash);
    assert.equal(await page.locator(TP).inputValue(), "2", "the default plan");
    assert.equal(await page.locator("#app img, #app script").count(), 0);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.deepEqual(problems, clean, hash);
    await context.close();
  }
});

test("embed mode shows the compact planner with a link to the full one", async () => {
  const { page, context, problems } = await openApp(browser, `${server.url}#embed=1&plan=${encode({
    model: "qwen3-30b-a3b",
    cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 2 },
    training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: 64 },
    parallelism: { tensor_model_parallel_size: 4, pipeline_model_parallel_size: 2, expert_model_parallel_size: 4, expert_tensor_parallel_size: 1, sequence_parallel: true },
  })}`, { viewport: { width: 800, height: 900 } });
  assert.equal(await page.locator("#app.embed").count(), 1);
  assert.equal(await page.locator("#model-panel").count(), 0);
  assert.equal(await page.locator("#parallelism-panel").count(), 1);
  const open = page.locator("a", { hasText: "Open the full planner" });
  assert.doesNotMatch(await open.getAttribute("href"), /embed/);
  // The expert mesh of the same GPUs.
  await page.check('input[name="mesh"][value="both"]');
  const expert = page.locator("#grid-expert");
  assert.equal(await expert.getAttribute("data-kind"), "ep");
  assert.equal(await expert.getAttribute("data-groups"), "4"); // 16 GPUs / EP 4
  assert.equal(await page.locator("#grid-dense").getAttribute("data-cells"), "16");
  assert.deepEqual(problems, clean);
  await context.close();
});

test("the grid is keyboard usable and every control is labelled", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  await page.focus("#grid-dense");
  assert.match(await text(page, "#grid-info-head"), /GPU rank 0/);
  await page.keyboard.press("ArrowRight");
  assert.match(await text(page, "#grid-info-head"), /GPU rank 1 /);
  await page.keyboard.press("End");
  assert.match(await text(page, "#grid-info-head"), /GPU rank 15 /);
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea")]
      .filter((el) => !(el.labels?.length || el.getAttribute("aria-label") || el.closest("label")))
      .map((el) => el.id || el.outerHTML.slice(0, 60)));
  assert.deepEqual(unlabelled, []);
  const tooltip = await page.locator(TP).getAttribute("title");
  assert.match(tooltip, /^Megatron: tensor_model_parallel_size — /);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("the JS API plans JSON in and out", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  const report = await page.evaluate(async () => {
    const api = await import("./meshplan-tools.js");
    return JSON.parse(api.plan(JSON.stringify({
      model: "llama-3.1-8b",
      cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 1 },
      parallelism: { tensor_model_parallel_size: 2 },
    })));
  });
  assert.equal(report.derived.world_size, 8);
  assert.equal(report.derived.data_parallel_size, 4);
  assert.equal(report.layout.groups.tp.length, 4);
  const error = await page.evaluate(async () => JSON.parse((await import("./meshplan-tools.js")).plan("{oops")));
  assert.equal(error.error.code, "invalid-json");
  // The page's own module exports none of it: its first render does not carry the report's JSON.
  assert.equal(await page.evaluate(async () => typeof (await import("./meshplan-web.js")).plan), "undefined");
  assert.deepEqual(problems, clean);
  await context.close();
});

test("a docs page importing meshplan-tools.js gets the JS API alone: no panels, no requests but the module's", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const requests = [];
  page.on("request", (r) => requests.push(new URL(r.url()).pathname.split("/").pop()));
  // A document of the same origin without <body data-meshplan-app>: the stylesheet, as a docs page would be.
  await page.goto(`${server.url}main.css`);
  const out = await page.evaluate(async () => {
    const api = await import("./meshplan-tools.js");
    await api.default();
    const report = JSON.parse(api.plan(JSON.stringify({ model: "llama-3.1-8b", cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 2 } })));
    const catalogue = JSON.parse(api.presets());
    const h100 = catalogue.gpus.find((g) => g.key === "h100-sxm-80gb");
    return { world: report.derived.world_size, models: catalogue.models.length, search: typeof api.search,
             sourced: Object.keys(h100.sources ?? {}).length > 0 && catalogue.models.every((m) => m.source), mounted: document.querySelector("#app, .panel") !== null };
  });
  assert.equal(out.world, 16);
  assert.ok(out.models > 10, `${out.models} presets`);
  // `presets` keeps every source (the page's own module is built without them: meshplan-core's `catalogue-sources`).
  assert.ok(out.sourced, "each GPU's sources and each preset's source");
  assert.equal(out.search, "function", "the search half of the JS API is there too");
  assert.equal(out.mounted, false, "no panel mounted");
  assert.deepEqual(requests.filter((r) => r !== "main.css").sort(), ["meshplan-tools.js", "meshplan-tools_bg.wasm"]);
  await context.close();
});

test("switching to the expert mesh and resizing the window keeps the page alive", async () => {
  // The dense canvas unmounts when only the expert mesh is shown; its resize listener must go with it.
  const moe = {
    model: "qwen3-30b-a3b", cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 2 },
    training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: 256 },
    parallelism: { tensor_model_parallel_size: 1, pipeline_model_parallel_size: 2, expert_model_parallel_size: 8, expert_tensor_parallel_size: 1 },
  };
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(moe)}`);
  await page.check("input[name=mesh][value=expert]");
  assert.equal(await page.locator("#grid-dense").count(), 0);
  const grid = page.locator("#grid-expert");
  assert.equal(await grid.getAttribute("data-cells"), "16");
  assert.equal(await grid.getAttribute("data-groups"), "2"); // 16 / 8 EP groups
  await page.setViewportSize({ width: 1000, height: 700 });
  await page.waitForTimeout(100);
  await page.check("input[name=mesh][value=both]");
  assert.equal(await page.locator("#grid-dense").count(), 1);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("charts follow the system colour scheme when it changes with the page open", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  // The labels' ink, as the browser paints it (the SVG sets it once, on a group).
  const ink = () => page.locator("#stage-chart svg text").first().evaluate((t) => getComputedStyle(t).fill);
  await page.emulateMedia({ colorScheme: "light" });
  await page.waitForTimeout(100);
  const light = await ink();
  await page.emulateMedia({ colorScheme: "dark" });
  await page.waitForTimeout(100);
  const dark = await ink();
  // charts.rs ink: #222222 on light, #e8e8e8 on dark.
  assert.equal(light, "rgb(34, 34, 34)");
  assert.equal(dark, "rgb(232, 232, 232)");
  assert.deepEqual(problems, clean);
  await context.close();
});

test("the embed link in docs/web.md opens its plan in the compact layout, with no notice", async () => {
  const doc = readFileSync(new URL("../../docs/web.md", import.meta.url), "utf8");
  const src = doc.match(/<iframe src="([^"]+)"/)?.[1];
  assert.ok(src, "docs/web.md has an iframe");
  const hash = src.slice(src.indexOf("#"));
  // The documented plan JSON is what the link carries.
  const documented = JSON.parse(doc.match(/```json\n(\{"model".*\})\n```/)[1]);
  const carried = JSON.parse(Buffer.from(new URLSearchParams(hash.slice(1)).get("plan"), "base64url").toString());
  assert.deepEqual(carried, documented);
  const { page, context, problems } = await openApp(browser, server.url + hash, { viewport: { width: 820, height: 900 } });
  assert.equal(await page.locator("#notice").count(), 0, "the link opened without the fallback notice");
  assert.equal(await page.locator("#app.embed").count(), 1);
  assert.equal(await page.locator(TP).inputValue(), "8");
  assert.equal(await text(page, "#d-world-size"), "64");
  assert.equal(await text(page, "#d-dp"), "2"); // 64 / (TP 8 · PP 4)
  assert.match(await text(page, "#status"), /valid/);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("a link with 16,777,216 pipeline stages is refused before it is planned, and the page stays responsive", async () => {
  // Llama 3.1 8B on 8 GPUs with PP = 2^24 and 32 layers on the first stage: planned as it stands, the core
  // builds 2^24 stages (48 s and 6.7 GB natively; a tab dies). The link's own size checks must come first.
  const huge = {
    model: "llama-3.1-8b",
    cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 1 },
    parallelism: { pipeline_model_parallel_size: 16777216, num_layers_in_first_pipeline_stage: 32 },
  };
  const hash = `#plan=${encode(huge)}`;
  const { page, context, problems } = await openApp(browser, server.url + hash);
  assert.match(await text(page, "#notice"), /not opened: the link's pipeline_model_parallel_size is 16777216/);
  assert.equal(await page.locator(TP).inputValue(), "2", "the default plan");
  // Still answering: an edit re-plans.
  await page.fill(TP, "4");
  assert.equal(await text(page, "#d-dp"), "2"); // 16 / (TP 4 · PP 2)

  // The same link followed from the open page (an edited hash), and the same plan kept in localStorage.
  await page.locator("#notice button").click();
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForSelector("#notice");
  assert.match(await text(page, "#notice"), /not opened: the link's pipeline_model_parallel_size is 16777216/);
  await page.waitForTimeout(300); // the default plan written back to the hash and localStorage
  await page.evaluate((plan) => localStorage.setItem("meshplan.plan", JSON.stringify(plan)), huge);
  await page.goto(server.url);
  await page.waitForSelector("#app[data-ready]");
  assert.equal(await page.locator(TP).inputValue(), "2", "a kept plan that a link could not open is not opened either");
  assert.equal(await text(page, "#d-world-size"), "16");
  assert.deepEqual(problems, clean);
  await context.close();
});

/** Serves the page with a permissions policy that blocks the Clipboard API (as a docs site's iframe without allow="clipboard-write" does). */
const denyClipboard = (context) => context.route((u) => u.pathname === "/" || u.pathname.endsWith("/index.html"), async (route) => {
  const response = await route.fetch();
  await route.fulfill({ response, headers: { ...response.headers(), "permissions-policy": "clipboard-write=()" } });
});

test("a clipboard write the browser refuses says so instead of \"Copied\"", async () => {
  const { page, context, problems } = await openApp(browser, server.url, { prepare: denyClipboard });
  await page.click("#copy-link");
  await page.waitForSelector("#copy-link-failed");
  assert.match(await text(page, "#copy-link"), /Copy failed/);
  assert.match(await text(page, "#copy-link-failed"), /blocked.*copy the link from the address bar/);
  const plan = page.locator("#export .export").filter({ has: page.locator("#export-plan") });
  await plan.locator("button.copy").click();
  await plan.locator(".copy-failed").waitFor();
  assert.match(await plan.locator("button.copy").innerText(), /Copy failed/);
  assert.doesNotMatch(await page.locator("#export").innerText(), /Copied/);
  // The browser reports the policy violation itself; the page has no unhandled error.
  assert.deepEqual(problems.pageErrors, []);
  assert.ok(problems.consoleErrors.every((e) => /permissions policy/i.test(e)), problems.consoleErrors.join("\n"));
  await context.close();
});

test("Copy share link and Copy put the link and the export on the clipboard", async () => {
  const prepare = (context) => context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const { page, context, problems } = await openApp(browser, server.url, { prepare });
  await page.fill(TP, "4");
  await page.click("#copy-link");
  await page.waitForFunction(() => document.querySelector("#copy-link").innerText.includes("copied"));
  const link = await page.evaluate(() => navigator.clipboard.readText());
  const carried = JSON.parse(Buffer.from(new URL(link).hash.slice("#plan=".length), "base64url").toString());
  assert.equal(carried.parallelism.tensor_model_parallel_size, 4);
  const plan = page.locator("#export .export").filter({ has: page.locator("#export-plan") });
  await plan.locator("button.copy").click();
  await page.waitForFunction(() => [...document.querySelectorAll("#export button.copy")].some((b) => b.innerText.includes("Copied")));
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), await page.locator("#export-plan").textContent());
  assert.deepEqual(problems, clean);
  await context.close();
});
