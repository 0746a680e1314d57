// End-to-end tests of the charts and the grid's layout in headless chromium: the two meshes at half
// height each in "Both".
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

const clean = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");
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
