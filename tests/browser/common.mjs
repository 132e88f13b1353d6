// Shared by the browser test (check_book.mjs) and the PDF printer (print_book.mjs): serve a built book over
// HTTP on 127.0.0.1, list its pages in table-of-contents order, and start the system Chromium through
// playwright-core (which downloads no browser of its own).
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");

const TYPES = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".mjs": "text/javascript",
  ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg",
  ".gif": "image/gif", ".json": "application/json", ".woff": "font/woff", ".woff2": "font/woff2",
  ".ttf": "font/ttf", ".ipynb": "application/json", ".md": "text/markdown", ".txt": "text/plain",
  ".ico": "image/x-icon", ".pdf": "application/pdf",
};

/** Serve the folder `root` on 127.0.0.1 (a free port); resolves to {url, close}. */
export function serve(root) {
  const server = http.createServer((req, res) => {
    let rel = decodeURIComponent(new URL(req.url, "http://x").pathname);
    let file = path.join(root, path.normalize(rel));
    if (!file.startsWith(root)) { res.writeHead(403); res.end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, "index.html");
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404); res.end("not found"); return; }
      res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream" });
      res.end(data);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

/** The pages of the book in table-of-contents order (the `root:` and every `file:` of _toc.yml). */
export function tocPages(toc = path.join(ROOT, "_toc.yml")) {
  const pages = [];
  for (const line of fs.readFileSync(toc, "utf8").split("\n")) {
    const m = line.match(/^\s*(?:-\s*)?(?:root|file):\s*["']?([^"'\s#]+)/);
    if (m) pages.push(m[1].replace(/\.(md|ipynb)$/, ""));
  }
  return pages;
}

/** Headless Chromium from the system (CHROMIUM, else /usr/bin/chromium), with the flags it needs as root. */
export function chromiumPath() {
  const candidates = [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"].filter(Boolean);
  return candidates.find((p) => fs.existsSync(p));
}

export async function launch() {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("no Chromium found: install Debian's `chromium` or set CHROMIUM");
  return chromium.launch({
    executablePath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--no-first-run", "--disable-dev-shm-usage"],
  });
}

/** A browser context that can reach only `base` (the local server): every other request is aborted
 *  and recorded in `blocked`, as a reader without network would see it. */
export async function offlineContext(browser, base, options = {}) {
  const context = await browser.newContext(options);
  const blocked = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(base + "/") || url === base) return route.continue();
    blocked.push(url);
    return route.abort("internetdisconnected");
  });
  context.blocked = blocked;
  return context;
}

export function tmpDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
