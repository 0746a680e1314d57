// Trunk post_build hook: the page's Content-Security-Policy allows scripts from 'self' only,
// so Trunk's inline module loader is moved into boot.js and referenced by src. Runs in
// TRUNK_STAGING_DIR, before Trunk copies the build into dist/.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) throw new Error("trunk-csp.mjs runs as a Trunk post_build hook (no TRUNK_STAGING_DIR)");
const page = join(dir, "index.html");
const html = readFileSync(page, "utf8");
const inline = /<script type="module"(?: nonce="[^"]*")?>([\s\S]*?)<\/script>/;
const m = html.match(inline);
if (!m) throw new Error("trunk-csp.mjs: no inline module script in index.html");
writeFileSync(join(dir, "boot.js"), m[1].trim() + "\n");
writeFileSync(page, html.replace(inline, '<script type="module" src="./boot.js"></script>'));
