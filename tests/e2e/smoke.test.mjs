// The release page loads under its Content-Security-Policy, mounts, and stays on its own origin.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

test("the page mounts with no console error and no foreign request", async () => {
  const { page, context, problems } = await openApp(browser, server.url);
  assert.match(await page.locator("h1").innerText(), /meshplan/);
  assert.deepEqual(problems, { consoleErrors: [], pageErrors: [], foreignRequests: [] });
  await context.close();
});

test("the tools module loads after the page has rendered, and what its panels write reaches the page", async () => {
  const { page, context, problems } = await openApp(browser, server.url, {
    prepare: (ctx) => ctx.addInitScript(() => {
      // When each wasm is asked for, against when the page mounted (browser::mark("meshplan-mounted")).
      window.__loads = [];
      const fetch0 = window.fetch;
      window.fetch = (u, ...rest) => { window.__loads.push([String(u).split("/").pop(), performance.getEntriesByName("meshplan-mounted").length]); return fetch0(u, ...rest); };
    }),
  });
  const loads = await page.evaluate(() => window.__loads.filter(([u]) => u.endsWith(".wasm")));
  const mountedWhen = Object.fromEntries(loads);
  assert.equal(mountedWhen["meshplan-web_bg.wasm"], 0, "the page's wasm is fetched before it mounts");
  assert.equal(mountedWhen["meshplan-tools_bg.wasm"], 1, "the tools' wasm is fetched after the page mounted");
  // A panel of the tools module (the Advisor's step time) shows the page's plan, and what one writes reaches the page:
  // a launch command pasted into the import box (the tools') becomes the plan the page edits and links.
  await page.locator("#step-total").waitFor();
  await page.locator("#import-box summary").click();
  await page.locator("#import-text").fill("torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention --num-query-groups 8 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --vocab-size 128256");
  await page.locator("#use-import").click();
  await page.waitForFunction(() => document.querySelector("#f-parallelism-tensor-model-parallel-size")?.value === "4");
  assert.match(page.url(), /#plan=/);
  assert.deepEqual(problems, { consoleErrors: [], pageErrors: [], foreignRequests: [] });
  await context.close();
});

test("a page copied without the tools module says which files to serve, and still plans", async () => {
  const { page, context } = await openApp(browser, server.url, {
    waitForTools: false,
    prepare: (ctx) => ctx.route((u) => u.pathname.endsWith("/meshplan-tools_loader.js"), (route) => route.fulfill({ status: 404, body: "" })),
  });
  await page.locator("#notice").waitFor();
  assert.match(await page.locator("#notice").innerText(), /tools .* did not load: serve meshplan-tools_loader\.js, meshplan-tools\.js and meshplan-tools_bg\.wasm/);
  assert.equal(await page.locator("#app[data-tools]").count(), 0);
  assert.equal(await page.locator("#d-world-size").innerText(), "16");
  await context.close();
});
