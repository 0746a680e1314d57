// Profiles the edit path (the same micro-batch edits as scripts/measure-web.mjs) in headless
// chromium through the Chrome DevTools protocol and prints where the time goes (never asserts):
// the CPU profile's self time by function, and the browser's own work (style, layout, HTML parsing)
// from a devtools.timeline trace.
//   node scripts/profile-web.mjs [DIR] [NODES]     (DIR defaults to dist/, NODES to 128 = 1,024 GPUs)
// dist/ has no function names (wasm-opt strips them). For a build with names:
//   D=$(mktemp -d) && cp dist/index.html dist/boot.js dist/main.css $D/ && sed -i 's/ integrity="[^"]*"//g' $D/index.html &&
//   wasm-bindgen --target web --no-typescript --out-dir $D --out-name meshplan-web target/wasm32-unknown-unknown/release/meshplan-web.wasm &&
//   node scripts/profile-web.mjs $D
import { startServer, launch, openApp } from "../tests/e2e/harness.mjs";

const dir = process.argv[2] ?? "dist";
const nodes = Number(process.argv[3] ?? 128);
const EDITS = 60;
const encode = (plan) => Buffer.from(JSON.stringify(plan)).toString("base64url");
const plan = {
  model: "llama-3.1-70b",
  cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: nodes },
  training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 2048, recompute_granularity: "selective", use_distributed_optimizer: true },
  parallelism: { tensor_model_parallel_size: 8, pipeline_model_parallel_size: 4, sequence_parallel: true },
};

const server = await startServer(dir);
const browser = await launch();
const { page, context } = await openApp(browser, `${server.url}#plan=${encode(plan)}`);
const cdp = await context.newCDPSession(page);

// The edits, each followed by a task (the sweep) and a frame, as in measure-web.mjs; the profile
// covers all of it, the `edit` measures mark the synchronous part.
const edits = () => page.evaluate(async (n) => {
  const input = document.querySelector("#f-training-micro-batch-size");
  for (let i = 0; i < n; i++) {
    performance.mark("edit-start");
    input.value = String(1 + (i % 2));
    input.dispatchEvent(new Event("input", { bubbles: true }));
    for (let k = 0; k < 4; k++) await Promise.resolve();
    void document.body.offsetHeight;
    performance.measure("edit", "edit-start");
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => requestAnimationFrame(() => r()));
  }
}, EDITS);

await edits(); // warm up
await cdp.send("Profiler.enable");
await cdp.send("Profiler.setSamplingInterval", { interval: 50 });
await cdp.send("Profiler.start");
await edits();
const { profile } = await cdp.send("Profiler.stop");

const self = new Map();
const dt = profile.timeDeltas;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
profile.samples.forEach((id, i) => {
  const f = byId.get(id).callFrame;
  const name = f.functionName || `(anonymous ${f.url.split("/").pop()}:${f.lineNumber})`;
  self.set(name, (self.get(name) ?? 0) + (dt[i + 1] ?? 0) / 1000);
});
const total = [...self.values()].reduce((a, b) => a + b, 0);
console.log(`CPU profile over ${EDITS} edits at ${nodes * 8} GPUs: ${total.toFixed(0)} ms sampled; self time per edit:`);
for (const [name, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`  ${(ms / EDITS).toFixed(3).padStart(7)} ms  ${name.slice(0, 110)}`);
}

// Inclusive time of the app's own functions (a function counted once per sample however deep it recurses).
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map();
profile.samples.forEach((id, i) => {
  const seen = new Set();
  for (let n = id; n !== undefined; n = parent.get(n)) {
    const name = byId.get(n).callFrame.functionName.replace(/::h[0-9a-f]{16}$/, "");
    if (!/meshplan|charts|serde_json|__wbg_set|innerHTML|plotters/.test(name) || seen.has(name)) continue;
    seen.add(name);
    incl.set(name, (incl.get(name) ?? 0) + (dt[i + 1] ?? 0) / 1000);
  }
});
console.log(`inclusive time per edit of the app's functions:`);
for (const [name, ms] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`  ${(ms / EDITS).toFixed(3).padStart(7)} ms  ${name.slice(0, 140)}`);

// Browser work from a trace: top-level durations of style, layout, parsing, paint, per edit.
const events = [];
cdp.on("Tracing.dataCollected", ({ value }) => events.push(...value));
const done = new Promise((r) => cdp.once("Tracing.tracingComplete", r));
await cdp.send("Tracing.start", { categories: "devtools.timeline,blink.user_timing", transferMode: "ReportEvents" });
await edits();
await cdp.send("Tracing.end");
await done;
// Self time per event name on the page's main thread, inside the edits' synchronous windows
// (the `edit` measures) and outside them (the sweep's task, the frame: style, layout, paint).
const main = events.filter((e) => e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => e.tid);
const windows = events.filter((e) => e.name === "edit" && e.ph === "b").map((b) => {
  const end = events.find((e) => e.name === "edit" && e.ph === "e" && e.id2?.local === b.id2?.local && e.ts >= b.ts) ?? events.find((e) => e.name === "edit" && e.ph === "e" && e.ts >= b.ts);
  return [b.ts, end?.ts ?? b.ts];
});
const inside = (ts) => windows.some(([a, b]) => ts >= a && ts <= b);
const slices = events.filter((e) => e.ph === "X" && e.dur && main.includes(e.tid)).sort((a, b) => a.ts - b.ts || b.dur - a.dur);
const selfTime = new Map();
const stack = [];
for (const e of slices) {
  while (stack.length && stack.at(-1).ts + stack.at(-1).dur <= e.ts) stack.pop();
  const parent = stack.at(-1);
  if (parent) parent.self -= e.dur;
  e.self = e.dur;
  stack.push(e);
}
for (const e of slices) {
  const key = `${inside(e.ts) ? "edit " : "after"} ${e.name}`;
  selfTime.set(key, (selfTime.get(key) ?? 0) + e.self / 1000);
}
console.log(`trace: self time per edit by event on the main thread ("edit" = inside the synchronous edit, "after" = the sweep task and the frame):`);
for (const [name, ms] of [...selfTime].sort((a, b) => b[1] - a[1]).slice(0, 24)) console.log(`  ${(ms / EDITS).toFixed(3).padStart(7)} ms  ${name}`);
// What the edits' layouts had to do: objects needing layout of all objects.
const layouts = slices.filter((e) => e.name === "Layout" && inside(e.ts));
if (layouts.length) {
  const avg = (f) => (layouts.reduce((a, e) => a + (f(e) ?? 0), 0) / layouts.length).toFixed(0);
  console.log(`layouts in the edits: ${layouts.length}, on average ${avg((e) => e.args?.beginData?.dirtyObjects)} dirty of ${avg((e) => e.args?.beginData?.totalObjects)} objects, ${(layouts.reduce((a, e) => a + e.dur, 0) / layouts.length / 1000).toFixed(2)} ms each`);
}
const measures = await page.evaluate(() => performance.getEntriesByName("edit").slice(-60).map((e) => e.duration));
measures.sort((a, b) => a - b);
console.log(`edit (input → microtasks → forced layout): median ${measures[Math.floor(measures.length / 2)].toFixed(1)} ms, p90 ${measures[Math.floor(measures.length * 0.9)].toFixed(1)} ms (profiling and tracing on)`);
await browser.close();
server.stop();
