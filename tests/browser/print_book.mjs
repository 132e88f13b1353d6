// `make pdf`: the whole book as one PDF, printed by headless Chromium from the built HTML (`_build/html`).
//
// Every page of the table of contents is fetched in order; their articles are joined into one document (links
// between pages become links inside the PDF, ids are made unique per page), code folded on the web page stays
// out (it is in the notebooks) and other folded content is unfolded, the widgets keep the frame they show first
// (sliders do not work on paper), the math is typeset by the MathJax the book serves, and Chromium prints it to
// A4 with a bookmark outline. Nothing is fetched from the network.
//
// The outline is Chromium's, built from the headings: a chapter's headings are moved one level down so that the
// chapters sit under their part; headings keep their spaces where they wrap on the sheet (Chromium joins the
// lines of a wrapped heading without one unless the spaces are preserved); the math in a heading is followed
// by a plain-text copy (eta = 1.01 as "η=1.01") in transparent 1-px type, since Chromium takes a bookmark's
// title from the text drawn in the heading and MathJax draws its glyphs where the outline does not see them;
// the cover's title is not a heading, so the book's title is bookmarked once.
//
// Usage: node tests/browser/print_book.mjs [--html _build/html] [--out _build/pdf/book.pdf]
import fs from "node:fs";
import path from "node:path";
import { ROOT, launch, offlineContext, serve, tocPages } from "./common.mjs";

/** The pages of `_toc.yml` listed under a part's page (its `sections:`): their headings go one level down. */
function nestedPages(toc = path.join(ROOT, "_toc.yml")) {
  const nested = [];
  let sectionsIndent = -1;
  for (const line of fs.readFileSync(toc, "utf8").split("\n")) {
    const indent = line.search(/\S/);
    if (indent < 0) continue;
    if (/^\s*sections:/.test(line)) { sectionsIndent = indent; continue; }
    const m = line.match(/^\s*-\s*file:\s*["']?([^"'\s#]+)/);
    if (!m) continue;
    if (sectionsIndent >= 0 && indent > sectionsIndent) nested.push(m[1].replace(/\.(md|ipynb)$/, ""));
    else sectionsIndent = -1;
  }
  return nested;
}

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
  .eld-static-widget label, .eld-static-widget > div:last-of-type { display: none !important; }
  pre, .highlight pre { white-space: pre-wrap; word-break: break-word; }
  /* long code cells break across sheets instead of leaving an empty frame behind (a scroll box cannot break) */
  pre, div.highlight, div[class*="highlight-"], div.cell, div.cell_input, div.cell_output {
    break-inside: auto !important; overflow: visible !important; }
  img { break-inside: avoid; }
  * { box-shadow: none !important; text-shadow: none !important; }
  /* a wrapped heading keeps its spaces, so that the bookmark made from it does not glue words together */
  h1, h2, h3, h4, h5, h6 { white-space: pre-wrap; }
  .eld-outline-text { color: transparent; font-size: 1px; }
  .eld-print-cover .eld-print-title { font-size: 2.6em; font-weight: 700; margin: 0.5em 0; }
  /* the theme prints each page's title in a header of its own and hides the article's first h1; tables it keeps
     on one sheet, which clips long ones */
  .bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
  .bd-main .bd-content table { break-inside: auto !important; }
  .bd-article table { font-size: 0.8em; }
  .pst-scrollable-table-container, .table-wrapper, .cell_output { overflow: visible !important; }
`;

/** Runs in the page: replace its article by the articles of all `pages`, and typeset their math. */
async function assemble({ pages, nested, base, css }) {
  // TeX of a heading's math as plain text for the bookmark: Greek letters and relations as Unicode, digits and
  // signs raised or lowered, \frac{a}{b} as a/b, other commands by their name
  const GREEK = { alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ", eta: "η",
    theta: "θ", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π", rho: "ρ", sigma: "σ", tau: "τ",
    phi: "φ", chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Sigma: "Σ",
    Phi: "Φ", Psi: "Ψ", Omega: "Ω", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", approx: "≈", times: "×",
    cdot: "·", infty: "∞", to: "→", pm: "±", sim: "∼", propto: "∝", ell: "ℓ" };
  const SUP = { 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹", "+": "⁺", "-": "⁻",
    "−": "⁻", n: "ⁿ", i: "ⁱ", T: "ᵀ", h: "ʰ" };
  const SUB = { 0: "₀", 1: "₁", 2: "₂", 3: "₃", 4: "₄", 5: "₅", 6: "₆", 7: "₇", 8: "₈", 9: "₉", "+": "₊", "-": "₋",
    i: "ᵢ", j: "ⱼ", k: "ₖ", m: "ₘ", n: "ₙ", d: "d", o: "ₒ", "*": "*", "(": "₍", ")": "₎" };
  const shift = (s, table, mark) => ([...s].every((c) => table[c]) ? [...s].map((c) => table[c]).join("")
    : `${mark}${s.length > 1 ? `(${s})` : s}`);
  const plainTex = (tex) => {
    let s = tex.replace(/^\\\(|\\\)$/g, "").replace(/^\$+|\$+$/g, "");
    s = s.replace(/\\t?frac\{([^{}]*)\}\{([^{}]*)\}/g, "$1/$2").replace(/\\t?frac(\w)(\w)/g, "$1/$2");
    s = s.replace(/\\(?:tilde|widetilde)\s*\{?(\w)\}?/g, "$1\u0303").replace(/\\(?:big|Big|left|right|mathbf|mathrm|mathcal|operatorname)/g, "");
    s = s.replace(/\\(sin|cos|tan|log|ln|exp|min|max)\b\s*/g, " $1 ").replace(/ ([(\[])/g, "$1");
    s = s.replace(/\\([A-Za-z]+)/g, (m, name) => GREEK[name] || name);
    s = s.replace(/\^\{([^{}]*)\}|\^(\S)/g, (m, a, b) => shift(a ?? b, SUP, "^"));
    s = s.replace(/_\{([^{}]*)\}|_(\S)/g, (m, a, b) => shift(a ?? b, SUB, "_"));
    return s.replace(/[{}]/g, "").replace(/\\[,;! ]/g, " ").replace(/\s+/g, " ").trim();
  };
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
    // one run of spaces between the words of a heading (its source lines may break inside it)
    art.querySelectorAll("h1, h2, h3, h4, h5, h6").forEach((h) => {
      const walker = d.createTreeWalker(h, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) n.textContent = n.textContent.replace(/\s+/g, " ");
    });
    // the math of a heading followed by its plain text, drawn transparent: the bookmark's title reads it
    art.querySelectorAll(":is(h1, h2, h3, h4, h5, h6) .math").forEach((m) => {
      const span = d.createElement("span");
      span.className = "eld-outline-text";
      span.textContent = plainTex(m.textContent.trim());
      m.after(span);
    });
    // a chapter's headings one level below its part's (h6 stays h6)
    if (nested.includes(doc)) {
      art.querySelectorAll("h1, h2, h3, h4, h5").forEach((h) => {
        const lower = d.createElement("h" + (Number(h.tagName[1]) + 1));
        for (const a of h.attributes) lower.setAttribute(a.name, a.value);
        while (h.firstChild) lower.appendChild(h.firstChild);
        h.replaceWith(lower);
      });
    }
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
  const cover = `<section class="eld-print-cover"><div class="eld-print-title">${title.trim()}</div>
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
    const r = await page.evaluate(assemble, { pages, nested: nestedPages(), base: server.url, css: PRINT_CSS });
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
