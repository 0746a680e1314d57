// The pipeline schedule drawn whole (issue 24 item 7): a long step is drawn with its warm-up, a labelled break
// standing for the repeated steady state, and its cool-down — the last backward of every stage is drawn, and a stage
// is grey (idle) only where it idles. Failed on main before: the page drew the first microbatches and left the rest
// of the step grey.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp, encode, CLEAN } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

/** Llama 3.1 8B (32 layers) with TP 1 and PP 4 on `gpus` H100s, micro-batch 1: m = GBS / (gpus / 4). */
const plan = (gpus, gbs, vpp) => ({
  model: "llama-3.1-8b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: Math.min(gpus, 8), num_nodes: Math.max(1, gpus / 8) },
  training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: gbs, recompute_granularity: "none" },
  parallelism: { tensor_model_parallel_size: 1, pipeline_model_parallel_size: 4, virtual_pipeline_model_parallel_size: vpp },
});

async function openSchedule(p) {
  const opened = await openApp(browser, `${server.url}#plan=${encode(p)}`);
  await opened.page.click("#schedule-panel summary");
  await opened.page.waitForSelector("#schedule-chart svg", { timeout: 10_000 });
  return opened;
}

/** Per stage (row of 14 + 22 + 6 px): the last microbatch of its backward paths, and its steady-state busy share. */
const rows = (page) => page.locator("#schedule-chart svg").evaluate((svg) => {
  const out = [];
  for (const p of svg.querySelectorAll("path.ops[data-kind=B]")) {
    const stage = Math.round(Number(p.getAttribute("d").match(/^M[\d.]+ ([\d.]+)/)[1]) / 42);
    out[stage] = Math.max(out[stage] ?? -1, Number(p.dataset.last));
  }
  return { lastBackward: out, busy: [...svg.querySelectorAll("path.steady[data-busy]")].map((p) => p.dataset.busy) };
});

test("GBS 8,192 at DP 64, PP 4 · VPP 2: 128 microbatches drawn to the last backward, with a labelled break", async () => {
  // 256 GPUs = PP 4 × DP 64; 8,192 / 64 = 128 microbatches; 2 · VPP 2 · 128 = 512 operations a stage, over the 256
  // drawn one by one, so the steady state is cut.
  const { page, context, problems } = await openSchedule(plan(256, 8192, 2));
  const summary = (await page.locator("#schedule-summary").textContent()).trim();
  assert.match(summary, /^interleaved 1F1B, PP 4 · VPP 2 \(groups of 4\) · 128 microbatches: /);
  const brk = page.locator("#schedule-chart g.break");
  const n = Number(await brk.getAttribute("data-microbatches"));
  // The break stands for whole groups of 4 microbatches, and the summary and the label both say how many.
  assert.ok(n > 0 && n < 128 && n % 4 === 0, `the break stands for ${n} microbatches`);
  assert.match(await brk.locator("text").textContent(), new RegExp(`^⋯ ${n} microbatches, [\\d.]+ (ms|s) ⋯$`));
  assert.match(summary, new RegExp(`the break \\(⋯\\) stands for ${n} more microbatches of the steady state`));
  const { lastBackward, busy } = await rows(page);
  assert.deepEqual(lastBackward, [127, 127, 127, 127], "every stage's last backward is drawn");
  // Equal stages (8 layers each): no stage idles in the steady state, so the break has no grey.
  assert.deepEqual(busy, ["1.0000", "1.0000", "1.0000", "1.0000"]);
  assert.ok(Number(await page.locator("#schedule-chart svg").getAttribute("data-ops")) <= 4 * 256);
  assert.deepEqual(problems, CLEAN);
  await context.close();
});

test("16,384 microbatches (PP 4, DP 1): drawn in bounded work and DOM, the step's end included", async () => {
  const { page, context, problems } = await openSchedule(plan(4, 16384));
  assert.match((await page.locator("#schedule-summary").textContent()).trim(), /^1F1B, PP 4 · 16384 microbatches: bubble 0\.0% of busy time/);
  const { lastBackward } = await rows(page);
  assert.deepEqual(lastBackward, [16383, 16383, 16383, 16383]);
  const ops = Number(await page.locator("#schedule-chart svg").getAttribute("data-ops"));
  assert.ok(ops <= 4 * 256, `${ops} operations drawn`);
  const bytes = await page.locator("#schedule-chart").evaluate((el) => el.innerHTML.length);
  assert.ok(bytes < 100_000, `${bytes} characters of SVG`);
  const ms = await page.evaluate(() => performance.getEntriesByName("meshplan-schedule").at(-1)?.duration);
  assert.ok(ms < 100, `laid out in ${ms} ms`);
  assert.deepEqual(problems, CLEAN);
  await context.close();
});

test("grey is idle only: the drawn idle over busy width is the bubble the page reports (uneven stages, drawn whole)", async () => {
  // PP 4 with a first stage of 5 layers beside three of 9 (27 / 3), 32 microbatches, drawn whole (as on main before,
  // where this held too: it guards the drawing against grey that is not idle time).
  const p = plan(4, 32);
  p.parallelism.num_layers_in_first_pipeline_stage = 5;
  const { page, context, problems } = await openSchedule(p);
  const bubble = Number((await page.locator("#schedule-summary").textContent()).match(/bubble ([\d.]+)% of busy time/)[1]) / 100;
  const drawn = await page.locator("#schedule-chart svg").evaluate((svg) => {
    const width = Number(svg.querySelector("rect.bg").getAttribute("width"));
    const busy = {};
    for (const path of svg.querySelectorAll("path.ops")) {
      const y = path.getAttribute("d").match(/^M[\d.]+ ([\d.]+)/)[1];
      busy[y] = (busy[y] ?? 0) + [...path.getAttribute("d").matchAll(/h([\d.]+)v/g)].reduce((s, m) => s + Number(m[1]), 0);
    }
    const b = Object.values(busy);
    return { rows: b.length, idle: b.reduce((s, x) => s + width - x, 0), busy: b.reduce((s, x) => s + x, 0) };
  });
  assert.equal(drawn.rows, 4);
  // Stage 0 idles in the steady state too, so the bubble is over even stages' (PP − 1)/m = 3/32.
  assert.ok(bubble > 3 / 32, `uneven stages idle: bubble ${bubble}`);
  assert.ok(Math.abs(drawn.idle / drawn.busy - bubble) < 0.002, `drawn idle/busy ${drawn.idle / drawn.busy} vs the page's ${bubble}`);
  assert.deepEqual(problems, CLEAN);
  await context.close();
});
