// Screenshots of the release build in headless chromium, for looking at what ships:
// docs/screenshots/{default,moe-expert-mesh,gpus-4096,embed,dark,layout,layout-error}.png at 1280×800 (embed at 800),
// advisor.png: the Advisor panel after Find layouts; advanced.png: the Training panel with its Advanced memory section open
// (Nemotron 3 Nano on PP 4, recompute_modules and optimizer offload set); strip-hybrid.png: its Memory panel, the
// layer strip above the chart; compare.png: the Compare panel with a baseline pinned (base=); oom.png: the Explain an
// OOM panel on issue 13's message; schedule.png: the Schedule panel of the README plan; schedule-long.png: its whole
// step with a break at 1,440 px; phone.png, phone-advisor.png, phone-schedule.png: at 390×844.
//   node scripts/screenshots.mjs [NAME...]        (after scripts/build-web.sh; names pick some of the shots)
import { mkdirSync, readFileSync } from "node:fs";
import { startServer, launch, openApp, deepseekV3Gb300 } from "../tests/e2e/harness.mjs";

const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");
const moe = {
  model: "qwen3-30b-a3b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 4 },
  training: { seq_length: 4096, micro_batch_size: 1, global_batch_size: 512, recompute_granularity: "selective",
              use_distributed_optimizer: true },
  parallelism: { tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2, expert_model_parallel_size: 8,
                 expert_tensor_parallel_size: 1, sequence_parallel: true },
};
const big = {
  model: "llama-3.1-405b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 512 },
  training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 2048, recompute_granularity: "full",
              recompute_method: "uniform", recompute_num_layers: 1, use_distributed_optimizer: true },
  parallelism: { tensor_model_parallel_size: 8, pipeline_model_parallel_size: 8, virtual_pipeline_model_parallel_size: 2,
                 context_parallel_size: 2, sequence_parallel: true,
                 num_layers_in_first_pipeline_stage: 16, num_layers_in_last_pipeline_stage: 14 },
};

// Nemotron 3 Nano 30B-A3B (hybrid Mamba-2 / attention / MoE) on PP 4: the layer strip above the memory chart.
const hybrid = {
  model: "nemotron-3-nano-30b-a3b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 4 },
  training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 256, use_distributed_optimizer: true },
  parallelism: { tensor_model_parallel_size: 1, pipeline_model_parallel_size: 4, expert_model_parallel_size: 8 },
};
const readme = JSON.parse(readFileSync("examples/llama-3.1-70b.json", "utf8"));
const small = { ...readme, training: { ...readme.training, global_batch_size: 32 } };
const readmeBase = { ...readme, parallelism: { ...readme.parallelism, tensor_model_parallel_size: 4, pipeline_model_parallel_size: 8,
  virtual_pipeline_model_parallel_size: null } };

const PHONE = { width: 390, height: 844 };

mkdirSync("docs/screenshots", { recursive: true });
const server = await startServer();
const browser = await launch();
const shots = [
  ["default", "", {}],
  ["moe-expert-mesh", `#plan=${encode(moe)}`, { mesh: "expert" }],
  ["gpus-4096", `#plan=${encode(big)}`, {}],
  ["embed", `#plan=${encode(moe)}&embed=1`, { viewport: { width: 800, height: 900 } }],
  ["dark", "", { dark: true }],
  ["advisor", "", { advisor: true }],
  // DeepSeek-V3 with Megatron Bridge's perf-recipe layout (PP 2 × VPP 8), and the same layout without its MTP layer.
  ["layout", `#plan=${encode(deepseekV3Gb300("Et*4|(t*4|)*14tmL"))}`, {}],
  ["layout-error", `#plan=${encode(deepseekV3Gb300("Et*4|(t*4|)*14tL"))}`, {}],
  // The Compare panel: the README's Llama 3.1 70B plan (TP 8 · PP 4 · VPP 5) against a baseline of TP 4 · PP 8, no VPP.
  ["compare", `#base=${encode(readmeBase)}&plan=${encode(readme)}`, { panel: "#compare" }],
  // Explain an OOM: issue 13's message on the README plan.
  ["oom", `#plan=${encode(readme)}`, { panel: "#oom-panel", oom: readFileSync("crates/core/tests/data/oom/meshplan_issue13.txt", "utf8") }],
  // The Schedule panel: the README plan (PP 4 · VPP 5) at a global batch of 32 (16 microbatches, so that each can be
  // seen) against a baseline of PP 4 without VPP.
  ["schedule", `#base=${encode({ ...small, parallelism: { ...readme.parallelism, virtual_pipeline_model_parallel_size: null } })}&plan=${encode(small)}`,
    { panel: "#schedule-panel", open: "#schedule-panel summary" }],
  // The README plan as it is (256 microbatches, PP 4 · VPP 5) at 1,440 px: the whole step, its steady state as a break.
  ["schedule-long", `#plan=${encode(readme)}`, { panel: "#schedule-panel", open: "#schedule-panel summary", viewport: { width: 1440, height: 900 } }],
  // A phone (390×844): the top of the page, the Advisor's ranked layouts as cards, the long schedule.
  ["phone", "", { viewport: PHONE, top: true }],
  ["phone-advisor", "", { viewport: PHONE, advisor: true }],
  ["phone-schedule", `#plan=${encode(readme)}`, { panel: "#schedule-panel", open: "#schedule-panel summary", viewport: PHONE }],
  // The Training panel's Advanced memory section open, with recompute_modules and optimizer offload set.
  ["advanced", `#plan=${encode({ ...hybrid, training: { ...hybrid.training, recompute_granularity: "selective",
    recompute_modules: ["core_attn", "moe_act"], optimizer_cpu_offload: true } })}`, { advanced: true }],
  ["strip-hybrid", `#plan=${encode(hybrid)}`, { memory: true }],
];
const only = process.argv.slice(2);
for (const [name, hash, opts] of shots.filter(([n]) => !only.length || only.includes(n))) {
  const { page, context, problems } = await openApp(browser, server.url + hash, opts.viewport ? { viewport: opts.viewport } : {});
  if (opts.dark) await page.emulateMedia({ colorScheme: "dark" });
  if (opts.mesh) {
    await page.check(`input[name=mesh][value=${opts.mesh}]`);
  }
  if (opts.advanced) {
    await page.click("#advanced-memory > summary");
    await page.click("#memory-terms-box > summary");
  }
  if (opts.advisor) {
    await page.click("#find-layouts");
    await page.waitForSelector("#advisor-table tbody tr", { timeout: 30_000 });
  }
  if (opts.open) await page.click(opts.open);
  if (opts.oom) {
    await page.click("#oom-panel summary");
    await page.fill("#oom-message", opts.oom);
    await page.click("#oom-explain");
  }
  await page.waitForTimeout(300);
  // A panel's picture without the summary bar, which stays at the top of the window and would cover the panel's top.
  if (opts.panel || opts.advisor || opts.memory || opts.advanced) await page.locator("#summary").evaluate((el) => { el.style.position = "static"; });
  if (opts.panel) await page.locator(opts.panel).screenshot({ path: `docs/screenshots/${name}.png` });
  else if (opts.advisor) await page.locator("#advisor").screenshot({ path: `docs/screenshots/${name}.png` });
  else if (opts.memory) await page.locator("#memory").screenshot({ path: `docs/screenshots/${name}.png` });
  else if (opts.advanced) await page.locator("#training-panel").screenshot({ path: `docs/screenshots/${name}.png` });
  else if (opts.top) await page.screenshot({ path: `docs/screenshots/${name}.png` });
  else {
    // Result panels off the screen are not rendered (content-visibility: auto): make the window as tall
    // as the page, until the page's height settles, so that every panel is drawn as a reader scrolling
    // down would see it.
    const width = page.viewportSize().width;
    for (let i = 0, h = 0; i < 5; i++) {
      const full = await page.evaluate(() => document.documentElement.scrollHeight);
      if (full === h) break;
      h = full;
      await page.setViewportSize({ width, height: h });
      await page.waitForTimeout(200);
    }
    await page.screenshot({ path: `docs/screenshots/${name}.png`, fullPage: true });
  }
  const bad = [...problems.consoleErrors, ...problems.pageErrors, ...problems.foreignRequests];
  console.log(`${name}: docs/screenshots/${name}.png${bad.length ? ` problems: ${bad.join("; ")}` : ""}`);
  await context.close();
}
await browser.close();
server.stop();
