// Measures the Advisor's layout search in headless chromium and prints the figures (never asserts):
// the core search through the JS API (`search` of meshplan-search.js, the worker's module, on the page's thread), timed with performance.now() around the call, and the
// page's Find layouts click → ranked table (the search in the Web Worker), for the default plan and the criterion
// benchmarks' cases: DeepSeek-V3 on 2,048 and 16,384 H100s, Llama-3.1-405B on 16,384.
//   node scripts/measure-advisor.mjs        (after scripts/build-web.sh)
import { startServer, launch, openApp } from "../tests/e2e/harness.mjs";
import { readFileSync } from "node:fs";

const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// The page's default plan (src/plan_doc.rs default_plan): Llama 3.1 8B on 2 × 8 H100.
const defaultPlan = {
  model: "llama-3.1-8b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 2 },
  training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 128, recompute_granularity: "selective", use_distributed_optimizer: true, precision: "bf16" },
  parallelism: { tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2, context_parallel_size: 1, expert_model_parallel_size: 1, sequence_parallel: true, order: "tp-cp-ep-dp-pp" },
};
// The criterion benchmarks' cases (crates/core/benches/search.rs): H100 nodes of 8, seq 4096.
const bench = (model, gpus, gbs) => ({
  model,
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: gpus / 8 },
  training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: gbs, recompute_granularity: "selective", use_distributed_optimizer: true, precision: "bf16" },
});
const cases = [
  ["default plan (llama-3.1-8b, 16 × H100)", defaultPlan],
  ["deepseek-v3, 2,048 × H100, global batch 4096", bench("deepseek-v3", 2048, 4096)],
  ["deepseek-v3, 16,384 × H100, global batch 16384", bench("deepseek-v3", 16384, 16384)],
  ["llama-3.1-405b, 16,384 × H100, global batch 16384", bench("llama-3.1-405b", 16384, 16384)],
];

const server = await startServer();
const browser = await launch();
for (const [label, plan] of cases) {
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan)}`);
  // The page first: Find layouts runs the search in the worker; the first click is the worker's cold start.
  const ui = [];
  for (let i = 0; i < 4; i++) {
    ui.push(await page.evaluate(() => new Promise((resolve) => {
      const status = document.querySelector("#advisor-status");
      status.dataset.ms = "";
      const t0 = performance.now();
      const seen = new MutationObserver(() => {
        if (status.dataset.ms) {
          seen.disconnect();
          // The table is in the DOM after the same update; wait one frame for it to paint.
          requestAnimationFrame(() => resolve({ total: performance.now() - t0, core: Number(status.dataset.ms), rows: document.querySelectorAll("#advisor-table tbody tr.candidate").length }));
        }
      });
      seen.observe(status, { attributes: true });
      document.querySelector("#find-layouts").click();
    })));
  }
  // Then the JS API on the page's own thread.
  const api = await page.evaluate(async (text) => {
    // The search half of the JS API: the worker's module, imported on the page.
    const m = await import("./meshplan-search.js");
    await m.default();
    const times = [];
    let out;
    for (let i = 0; i < 6; i++) {
      const t0 = performance.now();
      out = m.search(text, 10);
      times.push(performance.now() - t0);
    }
    const r = JSON.parse(out);
    return { times, evaluated: r.evaluated, valid: r.valid, candidates: r.candidates?.length, pareto: r.pareto?.length, error: r.error, best: r.candidates?.[0] };
  }, JSON.stringify(plan));
  if (api.error) { console.log(`${label}: error ${JSON.stringify(api.error)}`); continue; }
  const warm = api.times.slice(1);
  const b = api.best?.parallelism;
  console.log(`${label}:`);
  console.log(`  JS API search(): first ${api.times[0].toFixed(1)} ms, then median ${median(warm).toFixed(1)} ms (min ${Math.min(...warm).toFixed(1)}, max ${Math.max(...warm).toFixed(1)}); evaluated ${api.evaluated}, valid ${api.valid}, ${api.candidates} shown, Pareto ${api.pareto}`);
  const warmUi = ui.slice(1);
  console.log(`  page: Find layouts → table painted: first (cold worker) ${ui[0].total.toFixed(1)} ms, of which the search ${ui[0].core.toFixed(1)} ms; then median ${median(warmUi.map((u) => u.total)).toFixed(1)} ms, of which the search ${median(warmUi.map((u) => u.core)).toFixed(1)} ms; ${ui[0].rows} rows`);
  if (b) console.log(`  best: TP ${b.tensor_model_parallel_size} PP ${b.pipeline_model_parallel_size} VPP ${b.virtual_pipeline_model_parallel_size ?? "-"} CP ${b.context_parallel_size} EP ${b.expert_model_parallel_size} ETP ${b.expert_tensor_parallel_size} mbs ${api.best.training.micro_batch_size} — ${api.best.tokens_per_s_per_gpu.toFixed(0)} tokens/s/GPU`);
  const bad = [...problems.consoleErrors, ...problems.pageErrors, ...problems.foreignRequests];
  if (bad.length) console.log(`  problems: ${bad.join("; ")}`);
  await context.close();
}
await browser.close();
server.stop();
