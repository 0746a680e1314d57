// A tiny static file server for dist/ on 127.0.0.1 (no dependencies): serves the release
// build for scripts/serve.sh and the end-to-end tests, with the right MIME type for .wasm, and an ETag as any
// static host sends: a file asked for again (the tools module, started again as the Advisor's worker) is a 304.
//   node scripts/static-server.mjs DIR [PORT]    (PORT 0 = any free port; prints the URL)
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";

const root = resolve(process.argv[2] ?? "dist");
const port = Number(process.argv[3] ?? 8080);
const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
};

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    let path = normalize(join(root, decodeURIComponent(url.pathname)));
    if (path !== root && !path.startsWith(root + sep)) throw new Error("outside root");
    let info = await stat(path);
    if (info.isDirectory()) {
      path = join(path, "index.html");
      info = await stat(path);
    }
    const headers = {
      "content-type": types[extname(path)] ?? "application/octet-stream",
      "cache-control": "no-cache",
      etag: `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`,
    };
    if (req.headers["if-none-match"] === headers.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const body = await readFile(path);
    res.writeHead(200, headers);
    res.end(req.method === "HEAD" ? undefined : body);
  } catch {
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  }
});

server.listen(port, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${server.address().port}/`);
});
