// End-to-end tests of the charts, the grid's layout and the edit path in headless chromium: charts
// drawn at the width of their column (and again after a resize), labels inside the picture, an edit
// redrawing only the charts whose figures changed and writing no other box, the memory sweep after the
// edit's frame, and the two meshes at half height each in "Both".
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

const clean = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");
const CHARTS = ["#stage-chart", "#sweep-chart", "#step-chart"];

/** Waits until `sel`'s drawing has stayed the same element for a while (the sweep is the tools module's: its points
 *  come in tasks after the first frames, and a later sweep of the same plan may redraw it with the same markup, so
 *  neither a fixed wait nor an unchanged innerHTML shows it has settled; an unreplaced <svg> for 1.2 s does). */
const settled = async (page, sel) => {
  let same = 0;
  for (let i = 0; i < 200 && same < 8; i++) {
    const kept = await page.evaluate((s) => {
      const svg = document.querySelector(`${s} svg`);
      const was = window.__settling;
      window.__settling = svg;
      return svg !== null && svg === was;
    }, sel);
    same = kept ? same + 1 : 0;
    await page.waitForTimeout(150);
  }
};

/** Per chart: the SVG's width attribute, its box's width, and how far its text reaches past the SVG's right edge. */
const measure = (page, ids = CHARTS) => page.evaluate((ids) => ids.map((id) => {
  const div = document.querySelector(id);
  const svg = div.querySelector("svg");
  const overflow = Math.max(...[...svg.querySelectorAll("text")].map((t) => { const b = t.getBBox(); return b.x + b.width; })) - svg.width.baseVal.value;
  return { id, svg: Number(svg.getAttribute("width")), box: div.clientWidth, overflow };
}), ids);

test("charts are drawn at the width of their column, again after a resize, with every label inside", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  for (const c of await measure(page)) {
    assert.equal(c.svg, c.box, `${c.id} drawn at its column's width`);
    assert.ok(c.svg > 800, `${c.id}: ${c.svg} px fills the results column at 1280 px`);
    assert.ok(c.overflow <= 0, `${c.id}: a label reaches ${c.overflow} px past the right edge`);
  }
  await page.setViewportSize({ width: 1000, height: 800 });
  await page.waitForFunction(() => {
    const div = document.querySelector("#stage-chart");
    return Number(div.querySelector("svg").getAttribute("width")) === div.clientWidth;
  });
  for (const c of await measure(page)) {
    assert.equal(c.svg, c.box, `${c.id} redrawn at the new width`);
    assert.ok(c.svg < 700, `${c.id}: ${c.svg} px at 1000 px`);
  }
  assert.deepEqual(problems, clean);
  await context.close();

  const embed = await openApp(browser, `${server.url}#embed=1`, { viewport: { width: 800, height: 900 } });
  for (const c of await measure(embed.page, ["#stage-chart", "#sweep-chart"])) {
    assert.ok(c.svg === c.box && c.svg > 700 && c.svg < 800, `embed: ${c.id} ${c.svg} px`);
  }
  assert.deepEqual(embed.problems, clean);
  await embed.context.close();
});

const plan1024 = {
  model: "llama-3.1-70b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 128 },
  training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 2048, recompute_granularity: "selective", use_distributed_optimizer: true },
  parallelism: { tensor_model_parallel_size: 8, pipeline_model_parallel_size: 4, sequence_parallel: true },
};

test("an edit redraws only the charts whose figures changed", async () => {
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan1024)}`);
  await settled(page, "#sweep-chart");
  const keep = () => page.evaluate((ids) => { window.__charts = ids.map((id) => [document.querySelector(id), document.querySelector(`${id} svg`)]); }, CHARTS);
  const same = () => page.evaluate(() => window.__charts.map(([div, svg]) => [div === document.getElementById(div.id), svg === div.querySelector("svg")]));
  await keep();
  // A larger global batch: more microbatches, so a longer step, and the same memory per stage.
  await page.fill("#f-training-global-batch-size", "4096");
  await page.waitForTimeout(100);
  const [stage, sweep, step] = await same();
  assert.deepEqual(stage, [true, true], "the memory per stage did not change: its chart is untouched");
  assert.deepEqual(sweep, [true, true], "nor did the sweep's peaks");
  assert.deepEqual(step, [true, false], "the step-time chart is redrawn in place");
  await keep();
  await page.fill("#f-training-micro-batch-size", "2");
  await page.waitForTimeout(100);
  assert.deepEqual(await same(), [[true, false], [true, false], [true, false]], "a micro-batch of 2 changes all three");
  assert.deepEqual(problems, clean);
  await context.close();
});

test("an edit writes only what it changed: no other text box, no unchanged chart", async () => {
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan1024)}`);
  await settled(page, "#sweep-chart");
  // Count writes of input values and of inner HTML, by element id, from here on.
  await page.evaluate(() => {
    window.__writes = {};
    const count = (proto, prop) => {
      const d = Object.getOwnPropertyDescriptor(proto, prop);
      Object.defineProperty(proto, prop, { ...d, set(v) { const k = `${prop} ${this.id || this.parentElement?.id}`; window.__writes[k] = (window.__writes[k] ?? 0) + 1; d.set.call(this, v); } });
    };
    count(HTMLInputElement.prototype, "value");
    count(Element.prototype, "innerHTML");
  });
  await page.locator("#f-training-global-batch-size").pressSequentially("4", { delay: 0 }); // 20484
  await page.waitForTimeout(100);
  const writes = await page.evaluate(() => window.__writes);
  // The typed box gets its own value back once; the step time is redrawn (a larger batch takes longer);
  // no other box is written, and the memory and the sweep charts do not change.
  assert.deepEqual(writes, { "value f-training-global-batch-size": 1, "innerHTML step-chart": 1 });
  assert.deepEqual(problems, clean);
  await context.close();
});

test("recipes that arrive late: the sweep and a pinned baseline are planned again with their tuned defaults", async () => {
  // Tuned defaults come from Megatron Bridge's recipes, which each module fetches after its first render
  // (src/state/recipes.rs). The sweep and the baseline plan plans of their own with the core: a slow reply must not
  // leave them planned without the recipes while the plan's own report has them (the clean-clone CI of 611e3c0 saw the
  // sweep redrawn by an edit that changed no peak: its points had been planned before the recipes came).
  const ref = await openApp(browser, `${server.url}#plan=${encode(plan1024)}`);
  await settled(ref.page, "#sweep-chart");
  const tuned = await ref.page.locator("#sweep-chart svg").innerHTML();
  await ref.context.close();

  let release;
  const held = new Promise((r) => { release = r; });
  const prepare = (context) => context.route((u) => u.pathname.endsWith("/bridge-recipes.json"), async (route) => { await held; await route.continue(); });
  const { page, context, problems } = await openApp(browser, `${server.url}#base=${encode(plan1024)}&plan=${encode(plan1024)}`, { prepare });
  await settled(page, "#sweep-chart");
  const plain = await page.locator("#sweep-chart svg").innerHTML();
  assert.notEqual(plain, tuned, "without the recipes the sweep's peaks are Megatron-Core's plain defaults' (an fp32 gradient buffer)");
  release();
  await page.waitForFunction((want) => document.querySelector("#sweep-chart svg")?.innerHTML === want, tuned, { timeout: 10_000 });
  // The baseline is the same plan: once both are planned with the recipes, nothing differs.
  await page.waitForFunction(() => /The plans are the same\./.test(document.querySelector("#compare")?.innerText ?? ""), null, { timeout: 10_000 });
  assert.deepEqual(problems, clean);
  await context.close();
});

test("the embed view shows the figures the page shows, tuned defaults included", async () => {
  // The embed view fetched Megatron Bridge's recipes only for a plan naming one, so a shared plan embedded in a docs
  // page was planned with Megatron-Core's plain defaults while the page used the perf recipes' (a bf16 gradient buffer).
  const full = await openApp(browser, `${server.url}#plan=${encode(plan1024)}`);
  const embed = await openApp(browser, `${server.url}#embed=1&plan=${encode(plan1024)}`, { viewport: { width: 800, height: 900 } });
  const summary = (page) => page.locator("#memory-summary").innerText();
  await full.page.waitForTimeout(500);
  const want = await summary(full.page);
  await embed.page.waitForFunction((w) => document.querySelector("#memory-summary")?.innerText === w, want, { timeout: 10_000 })
    .catch(async () => assert.equal(await summary(embed.page), want, "the embed's memory summary"));
  for (const p of [full.problems, embed.problems]) assert.deepEqual(p, clean);
  await Promise.all([full.context.close(), embed.context.close()]);
});

test("the memory sweep follows an edit, after the edit's frame has painted", async () => {
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan1024)}`);
  await page.waitForTimeout(100);
  const before = await page.locator("#sweep-chart svg").innerHTML();
  const order = await page.evaluate(async () => {
    const events = [];
    new MutationObserver(() => events.push("sweep")).observe(document.querySelector("#sweep-chart"), { childList: true, subtree: true });
    const input = document.querySelector("#f-training-micro-batch-size");
    input.value = "2";
    input.dispatchEvent(new Event("input", { bubbles: true }));
    for (let k = 0; k < 4; k++) await Promise.resolve(); // the edit's effects
    requestAnimationFrame(() => events.push("frame"));
    await new Promise((r) => setTimeout(r, 300));
    return events;
  });
  // Five re-plans of the whole plan must not hold back the frame that shows the edit (nor be dropped).
  assert.deepEqual(order.slice(0, 2), ["frame", "sweep"]);
  assert.notEqual(await page.locator("#sweep-chart svg").innerHTML(), before, "twice the micro-batch, higher peaks");
  assert.deepEqual(problems, clean);
  await context.close();
});

test("Both draws the dense and the expert mesh at half height each", async () => {
  const moe = {
    model: "qwen3-30b-a3b",
    cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 256 },
    training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: 4096 },
    parallelism: { tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2, expert_model_parallel_size: 8, expert_tensor_parallel_size: 1, sequence_parallel: true },
  };
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(moe)}`);
  const height = (id) => page.locator(id).evaluate((c) => c.getBoundingClientRect().height);
  const alone = await height("#grid-dense");
  assert.ok(alone > 280, `2,048 GPUs alone: ${alone} px`);
  await page.check('input[name="mesh"][value="both"]');
  const [dense, expert] = [await height("#grid-dense"), await height("#grid-expert")];
  assert.ok(dense <= 280 && expert <= 280, `both: ${dense} and ${expert} px, at most half of 560 each`);
  assert.equal(await page.locator("#grid-dense").getAttribute("data-cells"), "2048");
  assert.deepEqual(problems, clean);
  await context.close();
});

test("the memory legend names the vision encoder's terms only for a model that has one", async () => {
  const legend = (page) => page.locator("#memory-legend li:visible").allInnerTexts();
  // The default plan (Llama 3.1 8B): the stage's five figures and the GPU's capacity, no encoder or DSA indexer terms.
  const plain = await openApp(browser, server.url);
  const items = await legend(plain.page);
  for (const t of ["parameters", "gradients", "optimizer", "activations", "overhead"]) assert.ok(items.includes(t), `${t} in ${items}`);
  assert.ok(!items.some((t) => /vision encoder|DSA indexer/.test(t)), items.join(" | "));
  // Qwen3-VL 8B builds its vision encoder on the first stage: its weights are named, and with 256 image tokens per
  // sample its activations too.
  const vl = await openApp(browser, `${server.url}#plan=${encode({
    model: "qwen3-vl-8b", cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 1 },
    training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: 64, image_tokens_per_sample: 256 },
    parallelism: { tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2 },
  })}`);
  const vlItems = await legend(vl.page);
  assert.ok(vlItems.includes("vision encoder weights") && vlItems.includes("vision encoder activations"), vlItems.join(" | "));
  assert.ok(!vlItems.includes("DSA indexer activations"), vlItems.join(" | "));
  assert.deepEqual(plain.problems, clean);
  assert.deepEqual(vl.problems, clean);
  await Promise.all([plain.context.close(), vl.context.close()]);
});
