// End-to-end: a plan whose model is a Hugging Face config.json. The page's module is built without the core's
// families' mapping (meshplan-core feature `hf-config`, src/state/hf.rs): the tools module maps a config for it within
// the page's own planning call, so such a plan waits for the tools module, then plans as the CLI does.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startServer, launch, openApp, encode, CLEAN } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

// Qwen3-0.6B's config.json (a model card's, kept with the core's tests): 28 layers, hidden size 1,024, 16 query heads
// in 8 groups, head dim 128, vocabulary 151,936, tied embeddings, architecture Qwen3ForCausalLM.
const QWEN3 = JSON.parse(readFileSync(new URL("../../crates/core/tests/data/hf/Qwen--Qwen3-0.6B.config.json", import.meta.url), "utf8"));
const plan = (nodes) => ({
  model: { hf_config: QWEN3 },
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: nodes },
  training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: 64 },
  parallelism: { tensor_model_parallel_size: 1, pipeline_model_parallel_size: 1 },
});
const placeholder = (page, id) => page.locator(id).getAttribute("placeholder");
const fromConfig = (page) => page.waitForFunction(() => document.querySelector("#f-model-num-layers")?.placeholder === "28", null, { timeout: 15_000 });

test("a shared plan with a config.json waits for the tools module, then plans the config's model", async () => {
  let release;
  const held = new Promise((r) => { release = r; });
  const prepare = (context) => context.route((u) => u.pathname.endsWith("/meshplan-tools_bg.wasm"), async (route) => { await held; await route.continue(); });
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan(2))}`, { prepare, waitForTools: false });
  await page.waitForSelector("#input-error code", { timeout: 10_000 });
  assert.equal(await page.locator("#input-error code").innerText(), "hf-config-loading");
  release();
  await fromConfig(page);
  assert.equal(await page.locator("#input-error").count(), 0);
  assert.equal(await placeholder(page, "#f-model-hidden-size"), "1024");
  assert.equal(await placeholder(page, "#f-model-num-query-groups"), "8");
  assert.equal(await placeholder(page, "#f-model-vocab-size"), "151936");
  assert.match(await page.locator("#model-panel .summary").innerText(), /Qwen3ForCausalLM/);
  assert.equal((await page.locator("#d-world-size").innerText()).trim(), "16");
  assert.deepEqual(problems, CLEAN);
  await context.close();
});

test("a shared plan with a config.json that asks for too many GPUs is not opened, though its model waits for the tools module", async () => {
  // 8,200 nodes of 8: 65,600 GPUs, over the 65,536 a link may open (crates/core/src/limits.rs MAX_LINK_GPUS). The link
  // is vetted as the page opens, before the tools module that maps its config has loaded.
  const { page, context } = await openApp(browser, `${server.url}#plan=${encode(plan(8200))}`, { waitForTools: false });
  await page.waitForSelector("#notice", { timeout: 10_000 });
  assert.match(await page.locator("#notice").innerText(), /not opened: the link asks for 65600 GPUs/);
  await context.close();
});

test("the config.json box plans a pasted config", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  await page.click("text=Paste a Hugging Face config.json");
  await page.fill("#hf-config", JSON.stringify(QWEN3));
  await page.click("#use-hf");
  await fromConfig(page);
  assert.equal(await page.locator("#input-error").count(), 0);
  assert.equal(await placeholder(page, "#f-model-kv-channels"), "128");
  assert.match(await page.locator("#model-panel .summary").innerText(), /Qwen3ForCausalLM/);
  assert.deepEqual(problems, CLEAN);
  await context.close();
});
