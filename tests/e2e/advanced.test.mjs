// End-to-end: the Training panel's "Advanced memory" section (one control per row of the core's settings table,
// collapsed by default), the memory terms it moves, the layer strip and the presets grouped by family.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

const clean = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");
/** The plan the page holds, from its URL hash (written 150 ms after the last edit). */
const planOf = (page) => page.evaluate(() => {
  const b64 = new URLSearchParams(location.hash.slice(1)).get("plan").replace(/-/g, "+").replace(/_/g, "/");
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))));
});
/** Bytes of each labelled term of the shown stage, by key, with where it lives. */
const terms = (page) => page.evaluate(() => Object.fromEntries(
  [...document.querySelectorAll("#memory-terms tbody tr")].map((tr) => [tr.dataset.key, { bytes: Number(tr.dataset.bytes), where: tr.dataset.location }])));
/** The same stage's terms as the JS API (the core's plan function) reports them for `plan`. */
const apiTerms = (page, plan, stage) => page.evaluate(async ([plan, stage]) => {
  const { plan: run } = await import("./meshplan-tools.js");
  const r = JSON.parse(run(JSON.stringify(plan)));
  return Object.fromEntries(r.memory.stages[stage].terms.map((t) => [t.key, { bytes: t.bytes, where: t.location }]));
}, [plan, stage]);

test("the Advanced memory section: recompute_modules and optimizer_cpu_offload move the terms they should", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  const section = page.locator("#advanced-memory");
  assert.equal(await section.evaluate((d) => d.open), false, "collapsed by default");
  assert.equal(await page.locator("#advanced-memory .setting").count(), 0, "rows mount on first open");
  await page.click("#advanced-memory > summary");
  // The rows mount on the open's next render (on a loaded machine after the click returns: seen empty once).
  await page.waitForSelector("#advanced-memory fieldset.settings-group legend");
  // One fieldset per group of the settings table, every row labelled with its Megatron / Bridge key.
  const legends = await page.locator("#advanced-memory fieldset.settings-group legend").allInnerTexts();
  for (const g of ["Optimizer & gradients", "Low precision", "Recompute", "Offloading", "FSDP & buffers", "CUDA graphs", "MoE dispatch"]) {
    assert.ok(legends.includes(g), `${g} in ${legends}`);
  }
  assert.ok(await page.locator('#advanced-memory .setting[data-key="exp_avg_sq_dtype"] select option[value="bf16"]').count() === 1);
  assert.equal((await page.locator('.setting[data-key="grad_reduce_in_fp32"] label code').innerText()).trim(), "grad_reduce_in_fp32");
  assert.match(await page.locator("#f-training-grad-reduce-in-fp32").getAttribute("title"), /Default: null: true for bf16/);
  // Unset, recompute_modules shows what selective recompute runs: Megatron-Core's ["core_attn"].
  const mlp = "#f-training-recompute-modules-mlp";
  assert.equal(await page.isChecked("#f-training-recompute-modules-core-attn"), true);
  assert.equal(await page.isChecked(mlp), false);

  await page.click("#memory-terms-box > summary");
  // The peak stage is shown first; pick the last stage, so that the table stays on it when the peak moves.
  assert.match(await page.locator("#terms-stage option:checked").innerText(), /peak/);
  const stage = 1;
  await page.selectOption("#terms-stage", String(stage));
  const before = await terms(page);
  assert.ok(before.activations.bytes > 0 && before.optimizer_moments.bytes > 0 && !before.host_optimizer_state);

  // Tick mlp: the plan gets ["core_attn", "mlp"]; only the saved activations (and what follows them: fragmentation,
  // the recompute working set) change, and they fall.
  await page.check(mlp);
  await page.waitForFunction((b) => Number(document.querySelector('#memory-terms tr[data-key="activations"]').dataset.bytes) !== b, before.activations.bytes);
  const withMlp = await terms(page);
  assert.ok(withMlp.activations.bytes < before.activations.bytes, `${withMlp.activations.bytes} < ${before.activations.bytes}`);
  for (const key of ["weights", "gradients", "master_weights", "optimizer_moments", "cuda_context", "nccl_buffers"]) {
    assert.deepEqual(withMlp[key], before[key], key);
  }
  await new Promise((r) => setTimeout(r, 300));
  const plan = await planOf(page);
  assert.deepEqual(plan.training.recompute_modules, ["core_attn", "mlp"]);
  assert.deepEqual(withMlp, await apiTerms(page, plan, stage), "the page shows the core's terms for the plan it wrote");

  // optimizer_cpu_offload: the Adam moments leave the device, the offloaded state appears on the host, and the host
  // memory per node is no longer zero.
  await page.check("#f-training-optimizer-cpu-offload");
  await page.locator('#memory-terms tr[data-key="host_optimizer_state"]').waitFor();
  const offloaded = await terms(page);
  assert.equal(offloaded.optimizer_moments, undefined);
  assert.equal(offloaded.host_optimizer_state.where, "host");
  assert.ok(offloaded.host_optimizer_state.bytes >= before.optimizer_moments.bytes);
  assert.deepEqual(offloaded.weights, before.weights);
  assert.doesNotMatch(await page.locator("#memory-summary").innerText(), /host 0\.0 GiB per node/);
  // Megatron-LM's assertion about the offload is listed under the setting.
  assert.ok(await page.locator('.setting[data-key="optimizer_cpu_offload"] .field-diags li').count() >= 1);

  // "default" unsets it: the host term goes, the moments come back; the reset is disabled again.
  await page.click('.setting[data-key="optimizer_cpu_offload"] button.reset');
  await page.locator('#memory-terms tr[data-key="optimizer_moments"]').waitFor();
  assert.equal(await page.locator('#memory-terms tr[data-key="host_optimizer_state"]').count(), 0);
  assert.equal(await page.isDisabled('.setting[data-key="optimizer_cpu_offload"] button.reset'), true);

  // A fraction without the offload: the core's warning under both rows, the value typed kept.
  await page.fill("#f-training-optimizer-offload-fraction", "0.5");
  const under = page.locator('.setting[data-key="optimizer_offload_fraction"] .field-diags li[data-code="offload-fraction-without-offload"]');
  await under.waitFor();
  assert.equal(await page.locator('.setting[data-key="optimizer_cpu_offload"] .field-diags li[data-code="offload-fraction-without-offload"]').count(), 1);

  // A select's first option is the resolved default; picking a value writes it, picking the default unsets it.
  const dtype = "#f-training-exp-avg-dtype";
  assert.match(await page.locator(`${dtype} option[value=""]`).innerText(), /default \(fp32\)/);
  await page.selectOption(dtype, "bf16");
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await planOf(page)).training.exp_avg_dtype, "bf16");
  await page.selectOption(dtype, "");
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await planOf(page)).training.exp_avg_dtype, undefined);

  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("#advanced-memory input, #advanced-memory select, #advanced-memory button")]
      .filter((el) => !(el.innerText?.trim() || el.labels?.length || el.getAttribute("aria-label")))
      .map((el) => el.outerHTML.slice(0, 80)));
  assert.deepEqual(unlabelled, []);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("the layer strip draws a hybrid model's kinds per pipeline rank, and presets are grouped by family", async () => {
  // Nemotron 3 Nano 30B-A3B on PP 4: its 52-symbol pattern in four ranks of 13 (Megatron's even split).
  const plan = {
    model: "nemotron-3-nano-30b-a3b",
    cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 4 },
    training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 256, use_distributed_optimizer: true },
    parallelism: { tensor_model_parallel_size: 1, pipeline_model_parallel_size: 4, expert_model_parallel_size: 8 },
  };
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan)}`);
  const titles = await page.locator("#layer-strip svg g > title").allTextContents();
  assert.deepEqual(titles, [
    "pp 0: embedding · M E M E M * E M E M E M *",
    "pp 1: E M E M E M * E M E M E M",
    "pp 2: * E M E M E M * E M E M E",
    "pp 3: M E M * E M E M E M E M E · loss",
  ]);
  // The legend lists the kinds the model has: attention, Mamba-2, MoE.
  const symbols = await page.locator("#strip-legend li[data-symbol]").evaluateAll((els) => els.map((e) => e.dataset.symbol));
  assert.deepEqual(symbols, ["*", "M", "E"]);

  // The model picker groups presets in <optgroup>s; each preset sits in exactly one.
  const groups = await page.locator("#model-preset optgroup").evaluateAll((gs) => gs.map((g) => [g.label, g.querySelectorAll("option").length]));
  assert.ok(groups.length >= 8, JSON.stringify(groups));
  const inGroups = groups.reduce((n, g) => n + g[1], 0);
  assert.equal(inGroups, await page.locator("#model-preset option").count());
  const llama = await page.locator('#model-preset option[value="llama-3.1-70b"]').evaluate((o) => o.parentElement.label);
  assert.equal(await page.locator('#model-preset option[value="llama-3.1-8b"]').evaluate((o) => o.parentElement.label), llama);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("the recipe picker offers the model's Megatron Bridge recipes, starts the plan from one, and none keeps the run", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  await page.selectOption("#model-preset", "qwen3-30b-a3b");
  const name = "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config";
  // The picker follows the resolved plan, which is planned once per edit a frame after it: wait for the model's recipes.
  await page.waitForFunction((n) => [...document.querySelectorAll("#recipe option")].some((o) => o.value === n), name, { timeout: 10000 }).catch(() => {});
  const offered = await page.locator("#recipe option").evaluateAll((os) => os.map((o) => o.value));
  assert.equal(offered[0], "");
  assert.ok(offered.includes(name), offered.join(", "));
  await page.selectOption("#recipe", name);
  // The recipe states 16 H100s: the plan is the recipe alone, and its note names its source.
  await page.waitForFunction(() => document.querySelector("#d-world-size")?.innerText.trim() === "16");
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(await planOf(page), { recipe: name });
  assert.match(await page.locator("#recipe-note").innerText(), /qwen3_moe\.py:\d+/);
  const peak = await page.locator("#memory-summary").innerText();
  // None: the recipe's values are written into the plan; the run is the same.
  await page.selectOption("#recipe", "");
  await new Promise((r) => setTimeout(r, 300));
  const plan = await planOf(page);
  assert.equal(plan.recipe, undefined);
  assert.equal(plan.model, "qwen3-30b-a3b");
  assert.equal(await page.locator("#d-world-size").innerText(), "16");
  assert.equal(await page.locator("#memory-summary").innerText(), peak);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("a shared plan that names a recipe waits for the recipes, then plans; the page's own wasm carries none", async () => {
  // The page's module is built without Megatron Bridge's recipes (src/state/recipes.rs): it fetches
  // bridge-recipes.json once a plan names one. Hold that reply until the page has shown it is waiting.
  let release;
  const held = new Promise((r) => { release = r; });
  const prepare = (context) => context.route((u) => u.pathname.endsWith("/bridge-recipes.json"), async (route) => { await held; await route.continue(); });
  const plan = { recipe: "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config" };
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan)}`, { prepare, waitForTools: false });
  await page.waitForSelector('#input-error code', { timeout: 10_000 });
  assert.equal(await page.locator("#input-error code").innerText(), "recipes-loading");
  release();
  // The recipe's 16 H100s, planned once the recipes are in.
  await page.waitForFunction(() => document.querySelector("#d-world-size")?.innerText.trim() === "16", null, { timeout: 10_000 });
  assert.equal(await page.locator("#input-error").count(), 0);
  assert.deepEqual(problems, clean);
  await context.close();
});

test("when the recipes cannot be fetched, a plan that names one says why instead of planning without it", async () => {
  const prepare = (context) => context.route((u) => u.pathname.endsWith("/bridge-recipes.json"), (route) => route.fulfill({ status: 404, body: "" }));
  const plan = { recipe: "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config" };
  const { page, context } = await openApp(browser, `${server.url}#plan=${encode(plan)}`, { prepare, waitForTools: false });
  await page.waitForFunction(() => /could not be loaded: the server answered HTTP 404/.test(document.querySelector("#input-error")?.innerText ?? ""), null, { timeout: 10_000 });
  assert.equal(await page.locator("#input-error code").innerText(), "recipes-loading");
  assert.match(await page.locator("#input-error .fix").innerText(), /serve bridge-recipes\.json beside index\.html/);
  await context.close();
});
