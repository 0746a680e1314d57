// End-to-end: the pipeline layout field. Typing Megatron Bridge's DeepSeek-V3 layout re-splits the stages (and the
// VPP follows the layout); a broken layout shows Megatron's error next to the field and in the diagnostics.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp, deepseekV3Gb300 } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

const LAYOUT = "#f-parallelism-pipeline-model-parallel-layout";
const VPP = "#f-parallelism-virtual-pipeline-model-parallel-size";
const clean = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");

const text = async (page, selector) => (await page.locator(selector).innerText()).trim();

test("typing DeepSeek-V3's layout splits its stages as Megatron does, and a broken one says why", async () => {
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(deepseekV3Gb300())}`);
  // Without a layout 61 layers do not divide over PP 2: an error, and no split to show.
  assert.equal(await page.locator('#diagnostics li[data-code="layers-not-divisible-by-pp"]').count(), 1);
  assert.equal(await text(page, "#d-layers-per-stage"), "");

  // Bridge's GB300 perf-recipe layout: 16 stages → VPP 8; pp 0 builds 8 chunks of 4 (32 layers), pp 1 7 of 4 and the
  // last stage `tmL` (29 layers, the MTP layer, the output and loss).
  await page.fill(LAYOUT, "Et*4|(t*4|)*14tmL");
  await page.waitForFunction(() => document.querySelector("#d-layers-per-stage").innerText.trim() === "32 · 29");
  assert.equal(await text(page, "#d-layers-per-chunk"),
    "E 4 · 4 · 4 · 4 · 4 · 4 · 4 · 4 | 4 · 4 · 4 · 4 · 4 · 4 · 4 · 1 m L");
  assert.equal(await page.locator(VPP).getAttribute("placeholder"), "8", "the VPP the layout implies");
  assert.equal(await page.locator('#diagnostics li[data-code="layers-not-divisible-by-pp"]').count(), 0);
  assert.equal(await page.locator("#layout-diagnostics li").count(), 0);
  const rows = page.locator(".memory-table tbody tr");
  assert.equal(await rows.count(), 2);
  // The table sits in a closed <details>: its text, not its rendering.
  assert.equal(await rows.nth(1).locator("td.chunks").textContent(), "4 · 4 · 4 · 4 · 4 · 4 · 4 · 1 m L");
  // The exports sit below the fold, where content-visibility skips rendering (and innerText): scroll to them.
  await page.locator("#export-bridge").scrollIntoViewIfNeeded();
  // Rendering after the scroll can lag a loaded machine: wait until each export has been laid out with its text.
  await page.waitForFunction((sels) => sels.every((s) => document.querySelector(s)?.innerText.trim()), ["#export-bridge", "#export-megatron"]);
  assert.match(await text(page, "#export-bridge"), /cfg\.model\.pipeline_model_parallel_layout = "Et\*4\|\(t\*4\|\)\*14tmL"/);
  assert.match(await text(page, "#export-megatron"), /--pipeline-model-parallel-layout 'Et\*4\|\(t\*4\|\)\*14tmL'/);

  // Without the `m`: Megatron's "Number of mtp layers in layout must match mtp_num_layers", under the field and in the
  // diagnostics panel; the field is flagged and keeps what was typed.
  await page.fill(LAYOUT, "Et*4|(t*4|)*14tL");
  const under = page.locator('#layout-diagnostics li[data-code="layout-mtp-count"]');
  await under.waitFor();
  assert.match(await under.innerText(), /Number of mtp layers in layout must match mtp_num_layers/);
  assert.equal(await page.locator('#diagnostics li[data-code="layout-mtp-count"]').count(), 1);
  assert.equal(await page.locator(LAYOUT).getAttribute("aria-invalid"), "true");
  assert.equal(await page.locator(LAYOUT).inputValue(), "Et*4|(t*4|)*14tL");

  // An invalid character names itself, as Megatron's message does.
  await page.fill(LAYOUT, "Et*4|(t*4|)*14tmX");
  await page.locator('#layout-diagnostics li[data-code="layout-char"]').waitFor();
  assert.match(await text(page, "#layout-diagnostics"), /Invalid layer character: X/);

  // Clearing the field drops the layout: back to the even split's error.
  await page.fill(LAYOUT, "");
  await page.locator('#diagnostics li[data-code="layers-not-divisible-by-pp"]').waitFor();
  assert.equal(await page.locator("#layout-diagnostics li").count(), 0);
  assert.deepEqual(problems, clean);
  await context.close();
});
