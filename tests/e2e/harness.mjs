// Shared set-up for the end-to-end tests: a static server for dist/ on 127.0.0.1 and
// headless Debian chromium through playwright-core (no browser download).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

export const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

/** Starts scripts/static-server.mjs on a free port; resolves to { url, stop }. */
export async function startServer(dir = "dist") {
  if (process.env.MESHPLAN_URL) return { url: process.env.MESHPLAN_URL, stop() {} };
  const child = spawn(process.execPath, ["scripts/static-server.mjs", dir, "0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [line] = await once(createInterface({ input: child.stdout }), "line");
  return { url: line.trim(), stop: () => child.kill() };
}

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: CHROMIUM_ARGS,
  });
}

/**
 * A page that records console errors and page errors (its own and its workers'), and every request outside
 * `origin` (the context's, so that requests from workers count too).
 * `prepare(context)` runs before navigation. Resolves once the app has mounted (#app[data-ready]) and, unless
 * `waitForTools` is false, the tools module's panels too (#app[data-tools]).
 */
export async function openApp(browser, url, { viewport = { width: 1280, height: 800 }, prepare, waitForTools = true } = {}) {
  const context = await browser.newContext({ viewport });
  // For example routes, set before the page (and its workers) request anything.
  await prepare?.(context);
  const page = await context.newPage();
  const problems = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
  const origin = new URL(url).origin;
  page.on("console", (m) => { if (m.type() === "error") problems.consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => problems.pageErrors.push(String(e)));
  page.on("worker", (w) => w.on("console", (m) => { if (m.type() === "error") problems.consoleErrors.push(`worker: ${m.text()}`); }));
  context.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:")) problems.foreignRequests.push(u);
  });
  await page.goto(url);
  await page.waitForSelector("#app[data-ready]", { timeout: 30_000 });
  // The panels of the tools module (src/tools.rs) mount once it has loaded, after the first render.
  if (waitForTools) await page.waitForSelector("#app[data-tools]", { timeout: 30_000 });
  return { page, context, problems };
}

/**
 * measured_memory.json m26-020: DeepSeek-V3 (61 layers, 1 MTP) on 256 GB300, PP 2, EP 32, with `layout` as its
 * pipeline_model_parallel_layout (Megatron Bridge's GB300 perf recipe uses "Et*4|(t*4|)*14tmL"); none when undefined.
 */
export function deepseekV3Gb300(layout) {
  const parallelism = { tensor_model_parallel_size: 1, pipeline_model_parallel_size: 2, expert_model_parallel_size: 32,
                        expert_tensor_parallel_size: 1, sequence_parallel: false };
  if (layout !== undefined) parallelism.pipeline_model_parallel_layout = layout;
  return {
    model: "deepseek-v3",
    cluster: { gpu: "gb300", gpus_per_node: 4, num_nodes: 64 },
    training: { seq_length: 4096, micro_batch_size: 2, global_batch_size: 4096, precision: "fp4",
                use_distributed_optimizer: true, recompute_granularity: "selective" },
    parallelism,
  };
}

/** A plan as a share link's `plan=` parameter (base64url of its JSON). */
export const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");

/** What a test page reports as clean: no console error, page error or request outside its origin. */
export const CLEAN = Object.freeze({ consoleErrors: [], pageErrors: [], foreignRequests: [] });

/** The plan the page holds now: its answer to the tools module's pull (src/state/bridge.rs), no URL-hash delay. */
export const pagePlan = (page) => page.evaluate(() => {
  const d = {};
  window.dispatchEvent(new CustomEvent("meshplan:pull", { detail: d }));
  return JSON.parse(d.state).plan;
});
