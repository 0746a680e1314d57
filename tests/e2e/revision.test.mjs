// One plan per edit (issue 20, ask 4): the tools module follows the page by its revision number (no tools read was
// marked on main before); and the tools' messages are not stale (issue 24): an import message says when the plan moved on and
// Reset clears it (it stayed as it was on main). Every test also checks that the page logged no error and asked no other origin.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

const TP = "#f-parallelism-tensor-model-parallel-size";
const clean = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
const DESKTOP = { width: 1440, height: 900 };

test("one plan per edit: the tools module reads the page's state once per frame, after it, keyed on the revision", async () => {
  const { page, context, problems } = await openApp(browser, server.url, { viewport: DESKTOP });
  // Wait for the mirror's first read, then make five edits within one task.
  await page.waitForFunction(() => performance.getEntriesByName("meshplan-tools-pulled").length > 0);
  const pulls = await page.evaluate(async () => {
    const before = performance.getEntriesByName("meshplan-tools-pulled").length;
    const box = document.querySelector("#f-training-micro-batch-size");
    for (const v of ["2", "3", "4", "5", "2"]) { box.value = v; box.dispatchEvent(new Event("input", { bubbles: true })); }
    // Within the edits' task and its microtasks the tools module has read nothing.
    for (let k = 0; k < 20; k++) await Promise.resolve();
    const during = performance.getEntriesByName("meshplan-tools-pulled").length - before;
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50)));
    return { during, after: performance.getEntriesByName("meshplan-tools-pulled").length - before };
  });
  assert.deepEqual(pulls, { during: 0, after: 1 });
  // The tools' panels show the last edit.
  await page.locator("#export-plan").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /"micro_batch_size": 2/.test(document.querySelector("#export-plan")?.textContent ?? ""));
  assert.deepEqual(problems, clean);
  await context.close();
});

test("no stale state: an import message says when the plan moved on, and Reset clears it", async () => {
  const { page, context, problems } = await openApp(browser, server.url, { viewport: DESKTOP });
  await page.click("#import-box > summary");
  await page.fill("#import-text", "torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention --num-query-groups 8 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --vocab-size 128256");
  await page.click("#use-import");
  await page.waitForSelector("#import-summary");
  await page.fill(TP, "2");
  await page.waitForSelector("#import-stale");
  await page.click("#reset");
  await page.waitForFunction(() => !document.querySelector("#import-summary") && document.querySelector("#import-text").value === "");
  assert.deepEqual(problems, clean);
  await context.close();
});
