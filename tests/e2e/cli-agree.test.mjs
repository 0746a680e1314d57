// The page and the CLI give the same answers (issue 22: "CLI and page agree"): each case is planned by `meshplan`
// (target/debug, built here) and by the page from the same plan, and what each shows is compared field by field:
// - "Explain an OOM" against `meshplan oom --format json`: per failing rank, the rank and its stage, the verdict, the
//   named tensor (kind, label, size), the implied value, and the ranked fixes (change, peak, fits);
// - the out-of-memory diagnostic's re-planned fixes against `meshplan plan`'s "re-planned:" lines under that error.
// Neither side is the oracle of the other's numbers (crates/core/tests/oom.rs and remedy.rs work those out by hand);
// this test fails when the two shells stop showing the core's one answer alike.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, launch, openApp, encode, CLEAN } from "./harness.mjs";

let server, browser, cli, dir;
before(async () => {
  execFileSync("cargo", ["build", "--quiet", "-p", "meshplan-cli"], { stdio: "inherit" });
  cli = "target/debug/meshplan";
  dir = mkdtempSync(join(tmpdir(), "meshplan-agree-"));
  server = await startServer();
  browser = await launch();
});
after(async () => { await browser?.close(); server?.stop(); });

const fixture = (path) => readFileSync(`crates/core/tests/data/${path}`, "utf8");
const GIB = 2 ** 30;
// The page prints sizes as "12.3 GiB" (src/format.rs `gib`); the CLI's JSON has bytes.
const pageGib = (s) => Number(/([\d.]+) GiB/.exec(s)?.[1]);
const camel = (snake) => snake.replace(/(^|_)([a-z0-9])/g, (_, __, c) => c.toUpperCase());

/** `meshplan ARGS` with the plan (and message) written to files; stdout as text, whatever the exit status. */
function run(args, plan, message) {
  const planFile = join(dir, "plan.json");
  writeFileSync(planFile, JSON.stringify(plan));
  const files = [planFile];
  if (message !== undefined) {
    files.push(join(dir, "message.txt"));
    writeFileSync(files[1], message);
  }
  const r = spawnSync(cli, [args[0], ...files, ...args.slice(1)], { encoding: "utf8" });
  assert.ok(r.status === 0 || r.status === 1, `meshplan ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** What the page's "Explain an OOM" shows for `message` on `plan`, one entry per failing rank. */
async function pageExplains(plan, message, rank) {
  const { page, problems } = await openApp(browser, `${server.url}#plan=${encode(plan)}`);
  await page.click("#oom-panel summary");
  await page.fill("#oom-message", message);
  if (rank !== undefined) await page.fill("#oom-rank", String(rank));
  await page.click("#oom-explain");
  await page.locator(".oom-rank").first().waitFor();
  const shown = await page.$$eval(".oom-rank", (ranks) => ranks.map((r) => {
    const t = (sel) => r.querySelector(sel)?.textContent.trim() ?? null;
    return {
      rank: Number(r.dataset.rank),
      where: t("#oom-where"),
      cause: r.querySelector("#oom-cause")?.dataset.cause,
      culpritKind: r.querySelector(".oom-culprit")?.dataset.kind ?? null,
      culpritLabel: t(".oom-culprit strong"),
      culpritText: t(".oom-culprit"),
      implied: t(".oom-implied"),
      fixes: [...r.querySelectorAll("#oom-fixes tr.fix-row")].map((row) => ({
        change: row.querySelector("th").firstChild.textContent.trim(),
        peak: row.querySelector("td").textContent.trim(),
        fits: row.dataset.fits === "true",
      })),
    };
  }));
  assert.deepEqual(problems, CLEAN);
  await page.context().close();
  return shown;
}

/** Asserts that the page's explanations are the CLI's, rank by rank. */
function assertAgree(shown, cliJson, what) {
  // The JSON contract: the first failing rank's explanation, the others in its `other_ranks`.
  const first = JSON.parse(cliJson);
  const xs = [first, ...first.other_ranks];
  assert.equal(shown.length, xs.length, `${what}: failing ranks`);
  xs.forEach((x, i) => {
    const p = shown[i];
    assert.equal(p.rank, x.rank, `${what}: rank`);
    assert.match(p.where, new RegExp(`^Rank ${x.rank} \\(.*\\): pipeline stage ${x.pipeline_stage}\\b`), `${what}: where`);
    assert.equal(p.cause, x.cause.replaceAll("_", "-"), `${what}: verdict`);
    const c = x.named.culprit;
    assert.equal(p.culpritKind, c ? camel(c.kind) : null, `${what}: culprit kind`);
    assert.equal(p.culpritLabel, c ? c.label : null, `${what}: culprit label`);
    if (c) assert.ok(Math.abs(pageGib(p.culpritText) - c.predicted_bytes / GIB) <= 0.05 + 1e-9, `${what}: culprit size ${p.culpritText} vs ${c.predicted_bytes}`);
    assert.equal(p.implied, x.named.implied ? x.named.implied.text : null, `${what}: implied`);
    assert.equal(p.fixes.length, x.fixes.length, `${what}: fixes`);
    x.fixes.forEach((f, j) => {
      assert.equal(p.fixes[j].change, f.change, `${what}: fix ${j}`);
      assert.equal(p.fixes[j].fits, f.fits, `${what}: fix ${j} fits`);
      assert.ok(Math.abs(pageGib(p.fixes[j].peak) - f.peak_bytes / GIB) <= 0.05 + 1e-9, `${what}: fix ${j} peak ${p.fixes[j].peak} vs ${f.peak_bytes}`);
    });
  });
  return xs;
}

// Issue 22's GPT-2 case, with the run's own configuration (Megatron-LM #525: fp16, `--transformer-impl local`,
// micro-batch 4, seq 1,024, GPT-2's 50,257-token vocabulary), as crates/core/tests/oom.rs builds it.
const gpt2 = (training = {}) => ({
  model: { name: "gpt2-large-like", num_layers: 36, hidden_size: 1280, num_attention_heads: 20, ffn_hidden_size: 5120,
           vocab_size: 50257, make_vocab_size_divisible_by: 128, position_embedding_type: "learned_absolute",
           max_position_embeddings: 1024, normalization: "LayerNorm", gated_linear_unit: false, activation_func: "gelu" },
  cluster: { gpu: "a100-sxm-40gb", gpus_per_node: 1, num_nodes: 1 },
  training: { seq_length: 1024, micro_batch_size: 4, global_batch_size: 4, precision: "fp16", ...training },
  parallelism: { tensor_model_parallel_size: 1 },
});

test("Explain an OOM and `meshplan oom` agree: fp32 logits named on the GPT-2 run (a plan that does not fit)", async () => {
  const plan = gpt2({ transformer_impl: "local" });
  const message = fixture("oom/megatron_lm_issue525.txt");
  const xs = assertAgree(await pageExplains(plan, message), run(["oom", "--format", "json"], plan, message), "GPT-2 #525");
  // The case is what it is meant to be (oom.rs works it out by hand): the fp32 logits, 786.00 MiB.
  assert.equal(xs[0].named.culprit.kind, "logits_fp32");
  assert.equal(xs[0].named.culprit.predicted_bytes, 4 * 1024 * 50304 * 4);
});

test("Explain an OOM and `meshplan oom` agree: the request implies the vocabulary when the plan assumed 32,000", async () => {
  const plan = gpt2();
  delete plan.model.vocab_size;
  const message = fixture("oom/megatron_lm_issue525.txt");
  const xs = assertAgree(await pageExplains(plan, message), run(["oom", "--format", "json"], plan, message), "GPT-2 default vocabulary");
  assert.equal(xs[0].named.implied.implied_value, 50304);
});

test("Explain an OOM and `meshplan oom` agree: two [rankN] messages on README's plan, one explanation each", async () => {
  // README's example plan (Llama 3.1 70B on 64 H100), so that rank 35 is inside the world.
  const plan = JSON.parse(readFileSync("examples/llama-3.1-70b.json", "utf8"));
  // Two ranks' messages in one log, PyTorch 2.x wording behind torchrun's "[rankN]:" prefixes (our own text).
  const message = [
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. Of the allocated memory 74.21 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch but unallocated.",
    "[rank35]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.00 GiB is free. Of the allocated memory 67.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.",
  ].join("\n");
  const xs = assertAgree(await pageExplains(plan, message), run(["oom", "--format", "json"], plan, message), "two ranks");
  assert.deepEqual(xs.map((x) => x.rank), [3, 35]);
});

test("Explain an OOM and `meshplan oom` agree: a rank given by hand, HIP's wording", async () => {
  const plan = { model: "llama-3.1-70b", cluster: { gpu: "mi300x", gpus_per_node: 8, num_nodes: 4 },
                 training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 32, use_distributed_optimizer: true },
                 parallelism: { tensor_model_parallel_size: 8, pipeline_model_parallel_size: 2 } };
  // ROCm's HIP allocator message (our own text in its form: "HIP out of memory. Tried to allocate …").
  const message = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 896.00 MiB. GPU 5 has a total capacity of 191.98 GiB of which 512.00 MiB is free. Of the allocated memory 180.40 GiB is allocated by PyTorch, and 6.20 GiB is reserved by PyTorch but unallocated.";
  const shown = await pageExplains(plan, message, 13);
  const xs = assertAgree(shown, run(["oom", "--format", "json", "--rank", "13"], plan, message), "HIP rank 13");
  assert.equal(xs[0].rank, 13);
});

test("the out-of-memory diagnostic lists the same re-planned fixes as `meshplan plan`", async () => {
  // Llama 3.1 70B, TP 8 · PP 4 · DP 2 at seq 8,192 without the distributed optimizer: over 80 GB on H100
  // (crates/core/tests/remedy.rs works the peak and the first fix out by hand).
  const plan = { model: "llama-3.1-70b", cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 8 },
                 training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 64, use_distributed_optimizer: false },
                 parallelism: { tensor_model_parallel_size: 8, pipeline_model_parallel_size: 4 } };
  const table = run(["plan"], plan);
  const lines = table.split("\n");
  const at = lines.findIndex((l) => l.includes("error[out-of-memory]"));
  assert.ok(at >= 0, table);
  const cliFixes = [];
  for (let i = at + 2; i < lines.length && /^\s+re-planned: /.test(lines[i]); i++) {
    cliFixes.push(lines[i].trim().replace(/^re-planned: /, "").split(" → "));
  }
  assert.ok(cliFixes.length >= 1, table);

  const { page, problems } = await openApp(browser, `${server.url}#plan=${encode(plan)}`);
  const item = page.locator('li.diag[data-code="out-of-memory"]');
  await item.locator("ol.remedies").waitFor();
  const pageFixes = await item.locator("ol.remedies li").evaluateAll((lis) => lis.map((li) => [
    li.querySelector("button").textContent.trim().replace(/^Apply: /, ""),
    li.querySelector(".prediction").textContent.trim(),
  ]));
  assert.deepEqual(pageFixes, cliFixes);
  // The first fix listed clears the error: it fits.
  assert.match(pageFixes[0][1], /^valid · fits · peak/);
  assert.deepEqual(problems, CLEAN);
  await page.context().close();
});

test("the JS API plans as `meshplan plan --format json` once a docs page gives it Bridge's recipes, and says what is missing before", async () => {
  // The tools module is built without Megatron Bridge's recipes (src/state/recipes.rs); a docs page importing it for
  // the JS API fetched nothing, so `plan` silently used Megatron-Core's defaults where the CLI uses the tuned ones.
  const plan = {
    model: "llama-3.1-70b",
    cluster: { gpu: "h100-sxm-80gb", gpus_per_node: 8, num_nodes: 8 },
    training: { seq_length: 8192, micro_batch_size: 1, global_batch_size: 512 },
    parallelism: { tensor_model_parallel_size: 8, pipeline_model_parallel_size: 4, sequence_parallel: true },
  };
  // And a plan with errors, whose fixes are re-planned (`remedies`): TP 3 divides neither 64 heads nor 8 GPUs a node.
  const wrong = { ...plan, parallelism: { ...plan.parallelism, tensor_model_parallel_size: 3 } };
  const cliReport = JSON.parse(run(["plan", "--format", "json"], plan));
  const cliWrong = JSON.parse(run(["plan", "--format", "json"], wrong));
  assert.ok(cliWrong.remedies.length > 0, "the CLI re-plans TP 3's fixes");
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.url}main.css`);
  const out = await page.evaluate(async ([p, w]) => {
    const api = await import("./meshplan-tools.js");
    await api.default();
    const before = JSON.parse(api.plan(JSON.stringify(p)));
    const named = JSON.parse(api.plan(JSON.stringify({ recipe: "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config" })));
    const installed = api.installRecipes(await (await fetch("./bridge-recipes.json")).text());
    const junk = api.installRecipes("not the recipes");
    const after = JSON.parse(api.plan(JSON.stringify(p)));
    const recipe = JSON.parse(api.plan(JSON.stringify({ recipe: "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config" })));
    return { before, named, installed, junk, after, recipeWorld: recipe.derived?.world_size, wrong: JSON.parse(api.plan(JSON.stringify(w))) };
  }, [plan, wrong]);
  // Before: every default says why no tuned default was looked up; a named recipe waits, and the fix says how.
  assert.ok(out.before.assumptions.length > 5 && out.before.assumptions.every((a) => /perf recipes are not loaded/.test(a.source)));
  assert.equal(out.named.error.code, "recipes-loading");
  assert.match(out.named.error.fix, /installRecipes/);
  // After: the CLI's report, field for field; the recipe's 16 H100s. A second text does not replace the first.
  assert.ok(out.installed > 200, `${out.installed} recipes`);
  assert.equal(out.junk, out.installed);
  assert.deepEqual(out.after, cliReport);
  assert.deepEqual(out.wrong, cliWrong);
  assert.equal(out.recipeWorld, 16);
  await context.close();
});
