// Measures the cluster sizing in the page's search worker (issue 25) and screenshots its scaling picture (never
// asserts): DeepSeek-V3 on 14.8T tokens, global batch 8,192 of 4,096, over 16 … 2,048 nodes of 8 H100, a 60-day
// deadline and a 6M GPU-hour budget; the worker's own time ("ms" of its reply) of 5 runs after one warm-up.
//   node scripts/measure-size.mjs [DIR] [PNG]     (after scripts/build-web.sh; DIR defaults to dist/)
import { startServer, launch, openApp } from "../tests/e2e/harness.mjs";

const dir = process.argv[2] ?? "dist";
const png = process.argv[3] ?? "docs/screenshots/sizing.png";
const server = await startServer(dir);
const browser = await launch();
const plan = {
  model: "deepseek-v3",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 16 },
  training: { seq_length: 4096, global_batch_size: 8192 },
};
const { page, context } = await openApp(browser, `${server.url}#plan=${Buffer.from(JSON.stringify(plan)).toString("base64url")}`, { viewport: { width: 1280, height: 1000 } });
for (const [id, value] of [["#size-tokens", "14.8T"], ["#size-deadline", "60d"], ["#size-gpu-hours", "6M"], ["#size-nodes", "16..2048"], ["#size-efficiency", "0.8"]]) {
  await page.fill(id, value);
}
const times = [];
for (let i = 0; i < 6; i++) {
  await page.click("#size-cluster");
  await page.waitForFunction(() => document.querySelector("#sizing-status")?.dataset.ms, null, { timeout: 120_000 });
  const ms = Number(await page.locator("#sizing-status").getAttribute("data-ms"));
  if (i > 0) times.push(ms);
}
const sorted = [...times].sort((a, b) => a - b);
console.log(`sizing DeepSeek-V3 over 16..2048 nodes of 8 in the worker: median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms, min ${sorted[0].toFixed(0)}, max ${sorted.at(-1).toFixed(0)} (5 runs after a warm-up)`);
console.log(await page.locator("#sizing-status").innerText());
await page.locator("#sizing-h").scrollIntoViewIfNeeded();
const box = await page.evaluate(() => {
  const top = document.querySelector("#sizing-h").getBoundingClientRect().top + window.scrollY;
  // The legend right after the scaling chart (the Advisor's own charts have legends earlier in the same panel).
  const chart = document.querySelector("#scaling-chart ~ .chart-legend").getBoundingClientRect();
  const panel = document.querySelector("#advisor").getBoundingClientRect();
  return { x: panel.left, y: top - 8, width: panel.width, height: chart.bottom + window.scrollY - top + 16 };
});
await page.screenshot({ path: png, fullPage: true, clip: box });
console.log(`screenshot: ${png}`);
await context.close();
await browser.close();
server.stop();
