// End-to-end test of "Size the cluster" (issue 25): the sizing runs in the search worker, lists every node count it
// tried with its best layout, time to train and GPU-hours, draws the scaling picture, and Apply loads a count's plan.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp, CLEAN, pagePlan } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

test("Size the cluster lists the node counts with their layouts, the GPU-hour arithmetic holds, and Apply loads one", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  await page.fill("#size-tokens", "100B");
  await page.fill("#size-deadline", "30d");
  await page.fill("#size-nodes", "1..8");
  await page.click("#size-cluster");
  await page.waitForSelector("#sizing-table tbody tr.size-row", { timeout: 30_000 });
  // The counts tried over 1..8 nodes: the range's ends, the powers of two and three times them: 1, 2, 3, 4, 6, 8.
  const nodes = await page.locator("#sizing-table tbody tr.size-row").evaluateAll((rs) => rs.map((r) => Number(r.dataset.nodes)));
  assert.deepEqual(nodes, [1, 2, 3, 4, 6, 8]);
  // Each row that runs: GPU-hours = days · 24 · GPUs (the table rounds days to 0.1 and GPU-hours to 1).
  const rows = await page.locator("#sizing-table tbody tr.size-row:not(.no-fit)").evaluateAll((rs) => rs.map((r) => [...r.children].map((c) => c.innerText.trim())));
  assert.ok(rows.length >= 3, JSON.stringify(rows));
  for (const [n, gpus, , , days, hours] of rows) {
    assert.equal(Number(gpus), Number(n) * 8);
    const expected = Number(days) * 24 * Number(gpus);
    assert.ok(Math.abs(Number(hours) - expected) <= 0.05 * 24 * Number(gpus) + 1, `${n} nodes: ${hours} GPU-hours vs ${days} days on ${gpus} GPUs`);
  }
  assert.match(await page.locator("#sizing-status").innerText(), /6 node counts sized/);
  assert.ok((await page.locator("#scaling-chart svg circle").count()) > 0, "the scaling picture is drawn");
  // Apply the 4-node row: its node count, batch and layout become the plan.
  const row = page.locator('#sizing-table tbody tr.size-row[data-nodes="4"]');
  const layout = await row.locator("td").nth(2).innerText();
  const tp = Number(layout.match(/TP (\d+)/)[1]);
  await row.locator("button.apply-size").click();
  // textContent: the page is scrolled to the sizing, and a panel off screen is not rendered (content-visibility).
  await page.waitForFunction(() => document.querySelector("#d-world-size")?.textContent.trim() === "32", null, { timeout: 10_000 });
  const plan = await pagePlan(page);
  assert.equal(plan.cluster.num_nodes, 4);
  assert.equal(plan.parallelism.tensor_model_parallel_size, tp);
  assert.deepEqual(problems, CLEAN);
  await context.close();
});
