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
