// Measures the release build in headless chromium and prints the figures (never asserts):
// the .wasm size gzipped, time to first render, and input change → re-rendered page for
// 1,024- and 16,384-GPU plans, plus a grid hover redraw at 16,384 GPUs.
//   node scripts/measure-web.mjs [DIR]        (after scripts/build-web.sh; DIR defaults to dist/, e.g. a saved
//                                             earlier build to compare before/after on the same machine state)
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { startServer, launch, openApp } from "../tests/e2e/harness.mjs";

const dir = process.argv[2] ?? "dist";
const EDITS = 60;
const wasm = readFileSync(`${dir}/meshplan-web_bg.wasm`);
const js = readFileSync(`${dir}/meshplan-web.js`);
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log(`release wasm: ${kb(wasm.length)} raw, ${kb(gzipSync(wasm, { level: 9 }).length)} gzipped; JS glue ${kb(gzipSync(js, { level: 9 }).length)} gzipped`);

const server = await startServer(dir);
const browser = await launch();
const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");
const plan = (nodes, tp, pp) => ({
  model: "llama-3.1-70b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: nodes },
  training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 2048, recompute_granularity: "selective", use_distributed_optimizer: true },
  parallelism: { tensor_model_parallel_size: tp, pipeline_model_parallel_size: pp, sequence_parallel: true },
});

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];

{
  const runs = [];
  for (let i = 0; i < 5; i++) {
    const { page, context } = await openApp(browser, server.url);
    runs.push(await page.evaluate(() => ({
      mounted: performance.getEntriesByName("meshplan-mounted")[0]?.startTime,
      fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime,
    })));
    await context.close();
  }
  console.log(`time to first render (default plan, 16 GPUs): mounted at ${median(runs.map((r) => r.mounted)).toFixed(0)} ms after navigation start (median of 5), first contentful paint ${median(runs.map((r) => r.fcp ?? NaN)).toFixed(0)} ms`);
}

// One edit = set the value, fire `input`, let Leptos' effects run (they are microtasks), then force
// style and layout; the canvas and charts are redrawn inside that window. 10 edits first warm the page
// up (wasm tier-up); a check counts DOM changes in the 20 microtasks after the window (there should be none).
// The memory sweep runs in a task after the edit's frame: from its "meshplan-sweep-start" mark to its
// chart redrawn and laid out (builds before 2026-12-03 have no mark and ran the sweep before the frame). With the
// Schedule panel open, its layout runs in a task after the frame too: from its "meshplan-schedule-start" mark to
// the page settled (this includes the sweep's task when that runs after it).
const edit = (page, box = "#f-training-micro-batch-size", values = ["1", "2"]) => page.evaluate(async ({ edits, warmup, box, values }) => {
  const input = document.querySelector(box);
  const render = [], sweep = [], schedule = [];
  let late = 0, marked = true;
  const watch = new MutationObserver(() => {});
  watch.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  const sweeps = () => performance.getEntriesByName("meshplan-sweep-start");
  const settle = async () => { for (let k = 0; k < 4; k++) await Promise.resolve(); void document.body.offsetHeight; };
  const schedules = () => performance.getEntriesByName("meshplan-schedule-start");
  const scheduleOpen = !!document.querySelector("#schedule-panel details[open]");
  for (let i = 0; i < warmup + edits; i++) {
    const before = sweeps().length, schedulesBefore = schedules().length;
    const t0 = performance.now();
    input.value = values[i % 2];
    input.dispatchEvent(new Event("input", { bubbles: true }));
    // The page re-renders in the event and its microtasks.
    await settle();
    const t1 = performance.now();
    watch.takeRecords();
    for (let k = 0; k < 20; k++) await Promise.resolve();
    late += watch.takeRecords().length;
    // Wait for the sweep's task (and the open Schedule panel's, builds after 2026-12-03), then let their charts redraw.
    for (let w = 0; marked && w < 200 && sweeps().length === before; w++) await new Promise((r) => setTimeout(r, 2));
    marked = sweeps().length > before;
    const drawsSchedule = scheduleOpen && schedules().length > 0;
    for (let w = 0; drawsSchedule && w < 200 && schedules().length === schedulesBefore; w++) await new Promise((r) => setTimeout(r, 2));
    await settle();
    if (i >= warmup) {
      render.push(t1 - t0);
      const end = performance.now();
      if (marked) sweep.push(end - sweeps().at(-1).startTime);
      if (drawsSchedule && schedules().length > schedulesBefore) schedule.push(end - schedules().at(-1).startTime);
    }
    await new Promise((r) => requestAnimationFrame(() => r()));
  }
  watch.disconnect();
  return { render, sweep, schedule, late };
}, { edits: EDITS, warmup: 10, box, values });
const report = (what, times) => console.log(`input change → re-rendered page, ${what}: median ${median(times.render).toFixed(1)} ms, p90 ${p90(times.render).toFixed(1)} ms over ${times.render.length} edits; then the memory sweep's re-plans after the frame: ${times.sweep.length ? `median ${median(times.sweep).toFixed(1)} ms` : "not marked in this build"}${times.schedule.length ? `; the schedule's layout and drawing after the frame: median ${median(times.schedule).toFixed(1)} ms, p90 ${p90(times.schedule).toFixed(1)} ms` : ""}${times.late ? `; ${times.late} DOM changes came after the window` : ""}`);

for (const [nodes, label] of [[128, "1,024"], [2048, "16,384"]]) {
  const { page, context } = await openApp(browser, `${server.url}#plan=${encode(plan(nodes, 8, 4))}`);
  const times = await edit(page);
  const world = await page.locator("#d-world-size").innerText();
  const svg = await page.evaluate(() => ["stage-chart", "sweep-chart", "step-chart"].map((id) => {
    const el = document.getElementById(id);
    return `${id} ${el ? (el.innerHTML.length / 1024).toFixed(1) : "-"} KiB (${el?.querySelectorAll("*").length ?? 0} elements, ${el?.firstElementChild?.getAttribute("width") ?? "-"} px wide)`;
  }).join(", "));
  console.log(`chart SVG at ${label} GPUs: ${svg}`);
  report(`${label} GPUs (world ${world}, micro-batch edits, top of the page)`, times);
  if (nodes === 128) {
    // Scrolled down to the memory charts, with the micro-batch box still on the screen: the charts are laid out too.
    await page.evaluate(() => window.scrollTo(0, document.querySelector("#memory").getBoundingClientRect().top + window.scrollY - 420));
    await page.waitForTimeout(200);
    report(`${label} GPUs, scrolled to the memory charts`, await edit(page));
  }
  if (nodes === 128) {
    // A comparison pinned (base=, TP 4 · PP 8 on the same GPUs): every edit also diffs the plan against the baseline
    // and redraws the Compare panel.
    const cmp = await openApp(browser, `${server.url}#base=${encode(plan(nodes, 4, 8))}&plan=${encode(plan(nodes, 8, 4))}`);
    report(`${label} GPUs with a baseline pinned (Compare panel shown)`, await edit(cmp.page));
    // The Schedule panel open as well: this plan's schedule laid out and drawn on every edit (after the edit's frame
    // since 2026-12-03; in it before), the baseline's once per pin.
    await cmp.page.click("#schedule-panel summary");
    report(`${label} GPUs with a baseline pinned and the Schedule panel open`, await edit(cmp.page));
    await cmp.context.close();
  }
  if (nodes === 2048) {
    const hover = await page.evaluate(async () => {
      const c = document.querySelector("#grid-dense");
      const r = c.getBoundingClientRect();
      const out = [];
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        c.dispatchEvent(new MouseEvent("mousemove", { clientX: r.left + 3 + (i * 37) % (r.width - 6), clientY: r.top + 3 + (i * 13) % (r.height - 6), bubbles: true }));
        await new Promise((res) => setTimeout(res, 0));
        out.push(performance.now() - t0);
      }
      return out;
    });
    console.log(`grid hover redraw, 16,384 GPUs: median ${median(hover).toFixed(1)} ms, p90 ${p90(hover).toFixed(1)} ms`);
  }
  await context.close();
}
// The layer strip at 128 pipeline stages: Llama 3.1 70B widened to 256 layers, TP 8 · PP 128 on 1,024 GPUs; micro-batch
// edits (the strip's memo stays: no redraw), then VPP 1 ↔ 2 edits (every chunk moves: the strip is redrawn each time).
{
  const wide = { ...plan(128, 8, 128), model: { preset: "llama-3.1-70b", num_layers: 256 } };
  const { page, context } = await openApp(browser, `${server.url}#plan=${encode(wide)}`);
  const strip = await page.evaluate(() => {
    const el = document.getElementById("layer-strip");
    return el ? `${(el.innerHTML.length / 1024).toFixed(1)} KiB (${el.querySelectorAll("rect").length} rectangles)` : "none in this build";
  });
  console.log(`layer strip at 128 stages: ${strip}`);
  report("1,024 GPUs, 128 stages (micro-batch edits)", await edit(page));
  report("1,024 GPUs, 128 stages (VPP 1 ↔ 2 edits: the strip redrawn)", await edit(page, "#f-parallelism-virtual-pipeline-model-parallel-size", ["", "2"]));
  await context.close();
}

await browser.close();
server.stop();
