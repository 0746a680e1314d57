// Accessibility audit (issue 24): axe-core (npm, a maintained checker) run inside the page in real Chromium, on the
// default plan at desktop and phone width, on a plan with errors, and with the tool panels opened; no serious or
// critical violation of WCAG 2.x A/AA rules is allowed. A violation names its rule, its help and the first nodes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { startServer, launch, openApp, encode } from "./harness.mjs";

// Evaluated through the DevTools protocol: the page's Content-Security-Policy (no inline script) stays as it ships.
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

/** Serious and critical violations of WCAG 2.x A and AA on the page as it is now, as short lines. */
async function audit(page) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () =>
    // eslint-disable-next-line no-undef
    axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } }));
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}${v.nodes.length > 3 ? ` and ${v.nodes.length - 3} more` : ""}`);
}

async function openEverything(page) {
  for (const d of await page.locator("details:not([open]) > summary").all()) {
    if (await d.isVisible()) await d.click();
  }
}

test("axe-core: no serious or critical violation on the default plan, its panels open (desktop)", async () => {
  const { page, context } = await openApp(browser, server.url);
  await openEverything(page);
  assert.deepEqual(await audit(page), []);
  await context.close();
});

test("axe-core: no serious or critical violation at phone width, in the dark theme", async () => {
  const { page, context } = await openApp(browser, server.url, { viewport: { width: 390, height: 844 } });
  await page.selectOption("#theme", "dark").catch(() => {});
  assert.deepEqual(await audit(page), []);
  await context.close();
});

test("axe-core: no serious or critical violation on a plan with errors and a bad field", async () => {
  const bad = { model: "deepseek-v3", cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 128 },
                training: { global_batch_size: 4096, seq_length: 4096, micro_batch_size: 1 },
                parallelism: { tensor_model_parallel_size: 2, pipeline_model_parallel_size: 16, expert_model_parallel_size: 64 } };
  const { page, context } = await openApp(browser, `${server.url}#plan=${encode(bad)}`);
  await page.fill("#f-parallelism-context-parallel-size", "abc");
  await page.waitForSelector("#diagnostics .diag.error");
  assert.deepEqual(await audit(page), []);
  await context.close();
});

test("axe-core: no serious or critical violation with the Advisor's table and an OOM explanation", async () => {
  const { page, context } = await openApp(browser, server.url);
  await page.click("#find-layouts");
  await page.waitForSelector("#advisor-table tbody tr.candidate", { timeout: 30_000 });
  await page.click("#oom-panel summary");
  await page.fill("#oom-message", "Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. Of the allocated memory 48.00 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch but unallocated.");
  await page.click("#oom-explain");
  await page.waitForSelector("#oom-cause");
  assert.deepEqual(await audit(page), []);
  await context.close();
});
