// `make pdf`: the whole book as one PDF, printed by headless Chromium from the built HTML (`_build/html`).
//
// Every page of the table of contents is fetched in order; their articles are joined into one document (links
// between pages become links inside the PDF, ids are made unique per page), code folded on the web page stays
// out (it is in the notebooks) and other folded content is unfolded, the widgets keep the frame they show first
// (sliders do not work on paper), the math is typeset by the MathJax the book serves, and Chromium prints it to
// A4 with a bookmark outline. Nothing is fetched from the network.
//
// Usage: node tests/browser/print_book.mjs [--html _build/html] [--out _build/pdf/book.pdf]
import fs from "node:fs";
import path from "node:path";
import { ROOT, launch, offlineContext, serve, tocPages } from "./common.mjs";

const args = { html: path.join(ROOT, "_build", "html"), out: path.join(ROOT, "_build", "pdf", "book.pdf") };
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === "--html") args.html = path.resolve(process.argv[++i]);
  else if (process.argv[i] === "--out") args.out = path.resolve(process.argv[++i]);
  else throw new Error(`unknown argument ${process.argv[i]}`);
}

const PRINT_CSS = `
  @page { size: A4; margin: 16mm 14mm 18mm 14mm; }
  .eld-print-page { break-before: page; }
  .eld-print-cover { break-after: page; text-align: center; padding-top: 30%; }
  .eld-print-cover h1 { font-size: 2.6em; }
  .eld-static-widget label, .eld-static-widget > div:last-of-type { display: none !important; }
  pre, .highlight pre { white-space: pre-wrap; word-break: break-word; }
  /* long code cells break across sheets instead of leaving an empty frame behind (a scroll box cannot break) */
  pre, div.highlight, div[class*="highlight-"], div.cell, div.cell_input, div.cell_output {
    break-inside: auto !important; overflow: visible !important; }
  img { break-inside: avoid; }
  * { box-shadow: none !important; text-shadow: none !important; }
  /* the theme prints each page's title in a header of its own and hides the article's first h1; tables it keeps
     on one sheet, which clips long ones */
  .bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
  .bd-main .bd-content table { break-inside: auto !important; }
  .bd-article table { font-size: 0.8em; }
  .pst-scrollable-table-container, .table-wrapper, .cell_output { overflow: visible !important; }
`;

/** Runs in the page: replace its article by the articles of all `pages`, and typeset their math. */
async function assemble({ pages, base, css }) {
  const idOf = (doc) => "doc-" + doc.replace(/[^A-Za-z0-9]+/g, "-");
  const docs = new Set(pages);
  const sections = [];
  let mathjaxConfig = null;
  for (const doc of pages) {
    const url = `${base}/${doc}.html`;
    const d = new DOMParser().parseFromString(await (await fetch(url)).text(), "text/html");
    for (const s of d.scripts) if (!mathjaxConfig && s.textContent.trim().startsWith("window.MathJax")) mathjaxConfig = s.textContent;
    const art = d.querySelector("article.bd-article") || d.querySelector("main");
    art.querySelectorAll("script, .headerlink, button, .copybtn").forEach((e) => e.remove());
    // code the book folds (hide-input) stays out, as on the web page; other folded content is unfolded into a
    // plain block (Chromium does not break an open <details> across sheets)
    art.querySelectorAll("details.above-input").forEach((e) => e.remove());
    art.querySelectorAll("details").forEach((e) => {
      const div = d.createElement("div");
      div.className = e.className;
      for (const child of [...e.childNodes]) if (child.nodeName !== "SUMMARY") div.appendChild(child);
      e.replaceWith(div);
    });
    const prefix = idOf(doc);
    art.querySelectorAll("[id]").forEach((e) => { e.id = `${prefix}--${e.id}`; });
    art.querySelectorAll("img[src]").forEach((e) => { e.src = new URL(e.getAttribute("src"), url).href; });
    art.querySelectorAll("a[href]").forEach((a) => {
      const target = new URL(a.getAttribute("href"), url);
      if (target.origin !== base) return;
      const tdoc = decodeURIComponent(target.pathname).replace(/^\//, "").replace(/\.html$/, "");
      if (docs.has(tdoc)) a.setAttribute("href", "#" + idOf(tdoc) + (target.hash ? "--" + target.hash.slice(1) : ""));
      else a.removeAttribute("href");
    });
    sections.push(`<section class="eld-print-page" id="${prefix}">${art.innerHTML}</section>`);
  }
  const title = (document.querySelector(".navbar-brand") || {}).textContent || "Executable Learning Dynamics";
  const built = new Date().toISOString().slice(0, 10);
  const cover = `<section class="eld-print-cover"><h1>${title.trim()}</h1>
    <p>Printed from the HTML book on ${built}. The live version, with working widgets, is the HTML book.</p></section>`;
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  article.innerHTML = cover + sections.join("\n");
  for (const sel of [".bd-sidebar-primary", ".bd-sidebar-secondary", ".bd-header-article", ".prev-next-area",
    ".bd-footer-article", ".bd-header", "header", ".bd-footer", "footer", "#pst-back-to-top", "#jb-print-docs-body"]) {
    document.querySelectorAll(sel).forEach((e) => e.remove());
  }
  const style = document.createElement("style");
  style.textContent = css;
  document.head.appendChild(style);
  document.title = title.trim();
  if (!(window.MathJax && window.MathJax.typesetPromise)) {
    if (mathjaxConfig) (0, eval)(mathjaxConfig);
    await new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = `${base}/_static/mathjax/tex-mml-chtml.js`;
      s.onload = resolve;
      s.onerror = () => reject(new Error("MathJax could not be loaded from the book"));
      document.head.appendChild(s);
    });
  }
  await window.MathJax.startup.promise;
  window.MathJax.typesetClear();
  await window.MathJax.typesetPromise([article]);
  await Promise.all([...document.images].map((img) => (img.complete ? null
    : new Promise((r) => { img.onload = r; img.onerror = r; }))));
  return { pages: sections.length, math: document.querySelectorAll("mjx-container").length,
    errors: document.querySelectorAll("mjx-merror").length };
}

async function main() {
  if (!fs.existsSync(path.join(args.html, "index.html"))) {
    console.error(`no built book at ${args.html}: run \`make book\` first`);
    process.exit(2);
  }
  const t0 = Date.now();
  const pages = tocPages();
  const server = await serve(args.html);
  const browser = await launch();
  try {
    const context = await offlineContext(browser, server.url, { viewport: { width: 1000, height: 1400 } });
    const page = await context.newPage();
    page.setDefaultTimeout(300000);
    await page.goto(`${server.url}/${pages[0]}.html`, { waitUntil: "load" });
    const r = await page.evaluate(assemble, { pages, base: server.url, css: PRINT_CSS });
    await page.emulateMedia({ media: "print" });
    fs.mkdirSync(path.dirname(args.out), { recursive: true });
    await page.pdf({
      path: args.out, format: "A4", printBackground: true, outline: true, tagged: true,
      displayHeaderFooter: true, headerTemplate: "<span></span>",
      footerTemplate: '<div style="font-size:8px;width:100%;text-align:center"><span class="pageNumber"></span></div>',
      margin: { top: "16mm", bottom: "18mm", left: "14mm", right: "14mm" },
    });
    if (context.blocked.length) console.log(`blocked ${context.blocked.length} requests outside the book`);
    const mb = (fs.statSync(args.out).size / 1e6).toFixed(1);
    console.log(`${args.out}: ${r.pages} pages of the book, ${r.math} math expressions (${r.errors} errors), `
      + `${mb} MB, in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    if (r.errors) process.exitCode = 1;
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((e) => { console.error(e); process.exit(2); });
