// Measures the Advisor's layout search in headless chromium and prints the figures (never asserts):
// the core search through the JS API (`search` of meshplan-search.js, the worker's module, on the page's thread), timed with performance.now() around the call, and the
// page's Find layouts click → ranked table, for the default plan and DeepSeek-V3 on 16,384 H100s.
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
const deepseek = (gbs, seq) => ({
  model: "deepseek-v3",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 2048 },
  training: { seq_length: seq, micro_batch_size: 1, global_batch_size: gbs, recompute_granularity: "selective", use_distributed_optimizer: true, precision: "bf16" },
  parallelism: { tensor_model_parallel_size: 1, pipeline_model_parallel_size: 16, expert_model_parallel_size: 64, expert_tensor_parallel_size: 1, sequence_parallel: false },
});
const cases = [
  ["default plan (llama-3.1-8b, 16 × H100)", defaultPlan],
  ["deepseek-v3, 16,384 × H100 (2048 × 8), seq 4096, global batch 8192", deepseek(8192, 4096)],
  ["deepseek-v3, 16,384 × H100 (2048 × 8), seq 8192, global batch 16384", deepseek(16384, 8192)],
];

const server = await startServer();
const browser = await launch();
for (const [label, plan] of cases) {
  const { page, context, problems } = await openApp(browser, `${server.url}#plan=${encode(plan)}`);
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
  const ui = [];
  for (let i = 0; i < 3; i++) {
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
  if (api.error) { console.log(`${label}: error ${JSON.stringify(api.error)}`); continue; }
  const warm = api.times.slice(1);
  const b = api.best?.parallelism;
  console.log(`${label}:`);
  console.log(`  JS API search(): first ${api.times[0].toFixed(1)} ms, then median ${median(warm).toFixed(1)} ms (min ${Math.min(...warm).toFixed(1)}, max ${Math.max(...warm).toFixed(1)}); evaluated ${api.evaluated}, valid ${api.valid}, ${api.candidates} shown, Pareto ${api.pareto}`);
  console.log(`  page: Find layouts → table painted: median ${median(ui.map((u) => u.total)).toFixed(1)} ms, of which the search ${median(ui.map((u) => u.core)).toFixed(1)} ms; ${ui[0].rows} rows`);
  if (b) console.log(`  best: TP ${b.tensor_model_parallel_size} PP ${b.pipeline_model_parallel_size} VPP ${b.virtual_pipeline_model_parallel_size ?? "-"} CP ${b.context_parallel_size} EP ${b.expert_model_parallel_size} ETP ${b.expert_tensor_parallel_size} mbs ${api.best.training.micro_batch_size} — ${api.best.tokens_per_s_per_gpu.toFixed(0)} tokens/s/GPU`);
  const bad = [...problems.consoleErrors, ...problems.pageErrors, ...problems.foreignRequests];
  if (bad.length) console.log(`  problems: ${bad.join("; ")}`);
  await context.close();
}
await browser.close();
server.stop();
