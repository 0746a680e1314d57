// End-to-end test of "Assumed settings" (issue 23: tuned defaults, stated; the page shows them together, each one
// click to change, and one switch asks for Megatron-Core's plain defaults).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startServer, launch, openApp, encode, CLEAN as clean, pagePlan as planOf } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });
const readme = JSON.parse(readFileSync("examples/llama-3.1-70b.json", "utf8"));

test("the settings a plan leaves out are listed with their source; State it writes one; the switch plans plain defaults", async () => {
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(readme)}`);
  // The README plan (Llama 3.1 70B, bf16, 64 H100) states no CUDA graph or overlap setting: meshplan takes them from
  // Megatron Bridge's performance recipe for Llama 3 70B on H100 in bf16 (llama3.py of the pinned revision), the
  // gradient-reduce dtype too (bf16: every perf recipe's _benchmark_common, perf_recipes/_common.py:73), and the FP8
  // weight gather from the bf16 mixed-precision recipe's default (false).
  await page.waitForSelector("#assumed-details summary", { timeout: 10_000 });
  await page.click("#assumed-details summary");
  const row = (key) => page.locator(`#assumed-table tbody tr[data-key="${key}"]`);
  assert.match(await row("tp_comm_overlap").innerText(), /tp_comm_overlap\s+true/);
  assert.match(await row("tp_comm_overlap").getAttribute("data-source"), /perf\.llama3_70b_pretrain_\w+_h100_bf16_config .*llama3\.py:\d+/);
  assert.match(await row("grad_reduce_in_fp32").innerText(), /false/);
  assert.match(await row("grad_reduce_in_fp32").getAttribute("data-source"), /perf\.llama3_70b_pretrain_\w+_h100_bf16_config/);
  assert.equal(await row("fp8_param_gather").getAttribute("data-source"), "Bridge mixed-precision recipe default");
  // One heading row per source, above its settings.
  assert.ok(await page.locator("#assumed-table tbody tr.assumed-source", { hasText: "Megatron-Core default" }).count() === 1);
  const n = await page.locator("#assumed-table tbody tr[data-key]").count();
  assert.match(await page.locator("#assumed-note").innerText(), new RegExp(`^${n} settings the plan does not state`));
  const step = await page.locator("#summary").innerText();
  // State it: the value is written into the plan, and the row leaves the list.
  await row("tp_comm_overlap").locator("button.state-it").click();
  await page.waitForFunction(() => !document.querySelector('#assumed-table tbody tr[data-key="tp_comm_overlap"]'), null, { timeout: 10_000 });
  assert.equal((await planOf(page)).training.tp_comm_overlap, true);
  // The README plan interleaves (VPP 5): the pipeline's p2p overlap is the launchers' default, not a recipe's nor
  // Megatron-Core's (ModelParallelConfig says False). State it writes it under parallelism, and the step keeps its time.
  const p2p = row("parallelism.overlap_p2p_comm");
  assert.match(await p2p.innerText(), /parallelism\.overlap_p2p_comm\s+true/);
  assert.equal(await p2p.getAttribute("data-source"), "Megatron-LM and Megatron Bridge default with virtual pipeline stages");
  const stepBefore = await page.locator("#summary").innerText();
  await p2p.locator("button.state-it").click();
  await page.waitForFunction(() => !document.querySelector('#assumed-table tbody tr[data-key="parallelism.overlap_p2p_comm"]'), null, { timeout: 10_000 });
  assert.equal((await planOf(page)).parallelism.overlap_p2p_comm, true);
  assert.equal(await page.locator("#summary").innerText(), stepBefore);
  // The switch: Megatron-Core's plain defaults are written as the plan's top-level `defaults`, and planned.
  await page.selectOption("#defaults", "megatron-core");
  await page.waitForFunction(() => document.querySelector('#assumed-table tbody tr[data-key="overlap_grad_reduce"]')?.dataset.source === "Megatron-Core default", null, { timeout: 10_000 });
  assert.equal((await planOf(page)).defaults, "megatron-core");
  assert.notEqual(await page.locator("#summary").innerText(), step, "plain defaults (no overlaps) plan another step time");
  await page.selectOption("#defaults", "tuned");
  await page.waitForFunction(() => /perf recipe/.test(document.querySelector('#assumed-table tbody tr[data-key="overlap_grad_reduce"]')?.dataset.source ?? ""), null, { timeout: 10_000 });
  assert.equal((await planOf(page)).defaults, undefined);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("a plan that runs a published perf recipe shows Bridge's measured throughput beside the prediction, until it changes the run", async () => {
  // Megatron Bridge's 26.08 performance summary measured Qwen3-30B-A3B on 8 GB300 in MXFP8 at 1,029 TFLOP/s and
  // 44,544 tokens/s per GPU (docs/performance-summary.md at the pinned revision): shown, never fitted to.
  const plan = { recipe: "perf.qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config" };
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan)}`);
  await page.waitForSelector("#step-published", { state: "attached", timeout: 10_000 });
  const text = await page.locator("#step-published").evaluate((e) => e.textContent);
  assert.match(text, /^Published \(Megatron Bridge 26\.08, perf\.qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config\): 1029 TFLOP\/s per GPU \(44544 tokens\/s per GPU\); meshplan predicts \d+ \([+-]\d+%\)\. github:NVIDIA-NeMo\/Megatron-Bridge@/);
  // Another micro-batch is another run: no published figure beside it.
  await page.fill("#f-training-micro-batch-size", "4");
  await page.waitForFunction(() => !document.querySelector("#step-published"), null, { timeout: 10_000 });
  assert.deepEqual(problems, clean);
  await context.close();
});

test("when Megatron Bridge's recipes cannot be had, every default says no tuned default was looked up", async () => {
  // The page's modules fetch the recipes after their first render (src/state/recipes.rs); a plan that names none is
  // planned without them meanwhile, or for good when the file cannot be had. Its defaults are then not "no recipe
  // speaks" but "no recipe was looked at", and the list says so instead of passing them off as settled.
  const prepare = (context) => context.route((u) => u.pathname.endsWith("/bridge-recipes.json"), (route) => route.fulfill({ status: 404, body: "" }));
  const { page, context } = await openApp(browser, `${server.url}#plan=${encode(readme)}`, { prepare });
  await page.waitForSelector("#assumed-details summary", { timeout: 10_000 });
  await page.click("#assumed-details summary");
  const sources = await page.locator("#assumed-table tbody tr[data-key]").evaluateAll((rows) => rows.map((r) => r.dataset.source));
  assert.ok(sources.length > 5, sources.join(" | "));
  // The one parallelism setting the launchers assume (overlap_p2p_comm with virtual stages) is no recipe's: it stays.
  for (const s of sources.filter((s) => !s.startsWith("Megatron-LM and Megatron Bridge default"))) {
    assert.match(s, /^(Megatron-Core default|Bridge mixed-precision recipe default) — Megatron Bridge's perf recipes are not loaded/);
  }
  await context.close();
});

test("the summary says when its figures wait for the tuned defaults, and when they cannot have them", async () => {
  // Until Megatron Bridge's recipes arrive the core plans with Megatron-Core's defaults: the bar says so beside the
  // figures, and the note goes (and the figures move) once they are in.
  let release;
  const held = new Promise((r) => { release = r; });
  const hold = (context) => context.route((u) => u.pathname.endsWith("/bridge-recipes.json"), async (route) => { await held; await route.continue(); });
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(readme)}`, { prepare: hold, waitForTools: false });
  await page.waitForSelector("#s-defaults", { timeout: 10_000 });
  assert.equal(await page.locator("#s-defaults").innerText(), "tuned defaults loading…");
  const plainPeak = await page.locator("#s-peak").innerText();
  release();
  await page.waitForSelector("#s-defaults", { state: "detached", timeout: 10_000 });
  // The README plan with the perf recipe's bf16 gradient buffer: a lower peak than with Bridge's bf16_mixed fp32 one.
  assert.notEqual(await page.locator("#s-peak").innerText(), plainPeak);
  assert.deepEqual(problems, clean);
  await context.close();

  // Plain defaults asked for: nothing is waited for.
  const plain = await openApp(browser, `${server.url}#plan=${encode({ ...readme, defaults: "megatron-core" })}`, { prepare: hold, waitForTools: false });
  await plain.page.waitForTimeout(300);
  assert.equal(await plain.page.locator("#s-defaults").count(), 0);
  await plain.context.close();

  // The file cannot be had: the bar says the figures are plain defaults.
  const refuse = (context) => context.route((u) => u.pathname.endsWith("/bridge-recipes.json"), (route) => route.fulfill({ status: 404, body: "" }));
  const failed = await openApp(browser, `${server.url}#plan=${encode(readme)}`, { prepare: refuse, waitForTools: false });
  await failed.page.waitForFunction(() => document.querySelector("#s-defaults")?.innerText === "plain defaults: Bridge's recipes not loaded", null, { timeout: 10_000 });
  assert.match(await failed.page.locator("#s-defaults").getAttribute("title"), /HTTP 404/);
  await failed.context.close();
});
