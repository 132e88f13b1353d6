// The browser test of the built book (run by `make test-browser`, and by `make test` where Chromium is
// installed): every page of the table of contents is opened in headless Chromium at 1280 px (desktop) and at
// 390 px (phone, touch), with every request outside the local server blocked, as a reader without network.
//
// On every page and width: no console error, no uncaught exception, no failed or external request; the page
// does not scroll sideways on a phone; every math element is typeset by the MathJax the book serves itself;
// no theorem box holds raw TeX; no code cell is wider than its box; on a phone the claims tables are stacked,
// not scrolled, and no output figure is shown below three quarters of its drawn size;
// the sidebar button opens the table of contents on a phone and folds the sidebar on a desktop. At 1280 px
// every static widget frame changes when one of its sliders moves (by script and by keyboard).
//
// Usage: node tests/browser/check_book.mjs [--html _build/html] [--shots DIR] [--pages text,...]
//   --shots DIR   also save a screenshot of the top of each page at each width into DIR
//   --pages       only the pages whose name contains one of the given texts
import fs from "node:fs";
import path from "node:path";
import { ROOT, launch, offlineContext, serve, tocPages } from "./common.mjs";

const VIEWPORTS = [
  { name: "desktop", viewport: { width: 1280, height: 900 } },
  { name: "phone", viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true },
];

function parseArgs(argv) {
  const args = { html: path.join(ROOT, "_build", "html"), shots: null, pages: null };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--html") args.html = path.resolve(argv[++i]);
    else if (argv[i] === "--shots") args.shots = path.resolve(argv[++i]);
    else if (argv[i] === "--pages") args.pages = argv[++i].split(",");
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return args;
}

// ---- the checks: each takes (page, ctx) and returns a list of problems (strings); ctx.notes collects remarks
// that do not fail the test. Add a check by appending to CHECKS.

/** Messages the page logged: console errors, uncaught exceptions, failed and external requests. */
async function consoleClean(page, ctx) {
  return ctx.log.map((m) => `console: ${m}`);
}

/** On a phone the page as a whole never scrolls sideways (wide tables and code scroll in their own box). */
async function noSidewaysScroll(page, ctx) {
  if (ctx.vp.name !== "phone") return [];
  const w = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  return w[0] > w[1] + 1 ? [`the page scrolls sideways: ${w[0]} px wide in a ${w[1]} px window`] : [];
}

/** Every `.math` element is typeset by MathJax, served from the book (the network is blocked). */
async function mathRendered(page, ctx) {
  const total = await page.evaluate(() => document.querySelectorAll(".math").length);
  if (total === 0) return [];
  try {
    await page.waitForFunction(() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise,
      null, { timeout: 20000 });
    await page.evaluate(() => window.MathJax.startup.promise);
  } catch (e) {
    return [`MathJax did not load (${total} math elements stay raw TeX)`];
  }
  const r = await page.evaluate(() => {
    const els = [...document.querySelectorAll(".math")];
    const raw = els.filter((e) => !e.querySelector("mjx-container"));
    return {
      raw: raw.length, first: raw.slice(0, 2).map((e) => e.textContent.slice(0, 60)),
      errors: document.querySelectorAll("mjx-merror").length,
      src: [...document.scripts].map((s) => s.src).filter((s) => /mathjax/i.test(s)),
    };
  });
  const out = [];
  if (r.raw) out.push(`${r.raw} of ${total} math elements not typeset, e.g. ${JSON.stringify(r.first)}`);
  if (r.errors) out.push(`${r.errors} MathJax errors (mjx-merror)`);
  for (const s of r.src) if (!s.startsWith(ctx.base)) out.push(`MathJax loaded from outside the book: ${s}`);
  ctx.summary.push(`math ${total}`);
  return out;
}

/** Links of the table of contents that a reader can see now (inside the window, not hidden). */
function visibleTocLinks(page) {
  return page.evaluate(() => [...document.querySelectorAll(".bd-docs-nav a, nav.bd-links a")].filter((a) => {
    const r = a.getBoundingClientRect();
    const s = getComputedStyle(a);
    return r.width > 0 && r.height > 0 && r.right > 0 && r.left < window.innerWidth && r.top < window.innerHeight
      && r.bottom > 0 && s.visibility !== "hidden";
  }).length);
}

/** The sidebar button opens the table of contents on a phone, and folds the sidebar away on a desktop. */
async function sidebarToggle(page, ctx) {
  const button = page.locator(".primary-toggle:visible").first();
  if ((await button.count()) === 0) return ["no visible sidebar button"];
  const before = await visibleTocLinks(page);
  await button.click();
  await page.waitForTimeout(400);
  const after = await visibleTocLinks(page);
  const out = [];
  if (ctx.vp.name === "phone") {
    if (before !== 0) out.push(`the table of contents shows ${before} links before the sidebar button is pressed`);
    if (after === 0) out.push("the sidebar button does not open the table of contents");
    await page.keyboard.press("Escape");
  } else {
    if (before === 0) out.push("the sidebar is not visible on a desktop");
    if (after !== 0) out.push(`the sidebar button does not fold the sidebar (${after} links still visible)`);
    await button.click();
  }
  await page.waitForTimeout(300);
  return out;
}

/** At 1280 px, every static widget (lib/widgets.py, marked data-eld-static) changes its frame when any of its
 *  sliders moves, by script (input events) and by keyboard (Home/End on the focused slider). */
async function widgetsMove(page, ctx) {
  if (ctx.vp.name !== "desktop") return [];
  const widgets = page.locator("[data-eld-static]");
  const n = await widgets.count();
  const out = [];
  for (let i = 0; i < n; i++) {
    const w = widgets.nth(i);
    const img = w.locator("img").first();
    if ((await img.count()) === 0) { out.push(`widget ${i + 1}: no image`); continue; }
    const sliders = w.locator("input[type=range]");
    const k = await sliders.count();
    let movable = 0;
    for (let j = 0; j < k; j++) {
      const s = sliders.nth(j);
      const [min, max, value, label] = await s.evaluate((e) => [+e.min, +e.max, +e.value, e.getAttribute("aria-label")]);
      const name = `widget ${i + 1}, slider "${label}"`;
      if (max <= min) { ctx.notes.push(`${name} has a single position`); continue; }
      movable++;
      const src0 = await img.getAttribute("src");
      const target = value === max ? min : max;
      await s.evaluate((e, v) => { e.value = String(v); e.dispatchEvent(new Event("input", { bubbles: true })); }, target);
      if ((await img.getAttribute("src")) === src0) out.push(`${name}: moving it does not change the frame`);
      await s.evaluate((e, v) => { e.value = String(v); e.dispatchEvent(new Event("input", { bubbles: true })); }, value);
      if ((await img.getAttribute("src")) !== src0) out.push(`${name}: moving it back does not restore the frame`);
      await s.focus();
      await page.keyboard.press(value === max ? "Home" : "End");
      if ((await img.getAttribute("src")) === src0) out.push(`${name}: the keyboard does not change the frame`);
      await s.evaluate((e, v) => { e.value = String(v); e.dispatchEvent(new Event("input", { bubbles: true })); }, value);
    }
    if (movable === 0) out.push(`widget ${i + 1}: no slider can move`);
  }
  if (n) {
    // sliders of numbers left with two positions (the grid's ends): lib/widgets.py gives a numeric slider with
    // more values a finer line, so these are parameters the chapter offers at two values only
    const two = await page.evaluate(() => [...document.querySelectorAll("[data-eld-static] input[type=range]")]
      .filter((e) => +e.max === 1 && JSON.parse(e.getAttribute("data-labels")).every((l) => !isNaN(parseFloat(l))))
      .length);
    const total = await page.locator("[data-eld-static] input[type=range]").count();
    ctx.summary.push(`widgets ${n} (sliders ${total}, numeric with 2 positions ${two})`);
  }
  return out;
}

/** The claims tables (lib/claims.py): the status of every claim comes first and is fully visible at desktop width
 *  without sideways scrolling; on a phone it is at least in view when the row is (the table scrolls sideways). */
async function claimsTables(page, ctx) {
  const res = await page.evaluate(() => {
    const out = { n: 0, clipped: [] };
    for (const table of document.querySelectorAll("table.eld-claims")) {
      out.n += 1;
      const wrap = table.closest(".eld-claims-wrap") || table.parentElement;
      const limit = Math.min(wrap.getBoundingClientRect().right, document.documentElement.clientWidth);
      table.querySelectorAll("tbody tr").forEach((row, i) => {
        const cell = row.querySelector("td");
        const badge = cell && cell.querySelector("span");
        if (!badge) return;
        const r = badge.getBoundingClientRect();
        if (r.width > 0 && r.right > limit + 1) out.clipped.push(`${badge.textContent} (row ${i + 1})`);
      });
    }
    return out;
  });
  if (res.n) ctx.summary.push(`claims tables ${res.n}`);
  return res.clipped.slice(0, 5).map((c) => `claims table: status ${c} is cut off at ${ctx.vp.name} width`);
}

/** On a phone the output figures stay legible (book/_ext/static/eld_figures.js): none is shown below three
 *  quarters of its drawn size (a figure scrolls sideways in its own box instead of shrinking to the column). */
async function phoneFigures(page, ctx) {
  if (ctx.vp.name !== "phone") return [];
  const res = await page.evaluate(async () => {
    const imgs = [...document.querySelectorAll("div.cell_output img")].filter((i) => !i.closest(".eld-static-widget"));
    await Promise.all(imgs.map((i) => (i.complete ? null : new Promise((r) => { i.onload = r; i.onerror = r; }))));
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const small = imgs.filter((i) => i.naturalWidth && i.getBoundingClientRect().width < 0.74 * i.naturalWidth)
      .map((i) => `${Math.round(i.getBoundingClientRect().width)} of ${i.naturalWidth} px`);
    return { n: imgs.length, small };
  });
  if (res.n) ctx.summary.push(`phone figures ${res.n}`);
  return res.small.length ? [`${res.small.length} figures shrink below 3/4 of their size on a phone, e.g. ${res.small[0]}`]
    : [];
}

/** Code cells fit their box: no input line runs out of it behind a sideways scroll (book/_ext/static/eld_layout.css
 *  sets code in a size that holds the chapters' 88 columns at desktop width and wraps longer lines when narrower). */
async function codeFits(page, ctx) {
  const res = await page.evaluate(() => {
    const pres = [...document.querySelectorAll("div.cell_input div.highlight pre")];
    const wide = pres.filter((p) => p.scrollWidth > p.clientWidth + 1);
    const longest = (p) => p.textContent.split("\n").reduce((a, b) => (b.length > a.length ? b : a), "");
    return { n: pres.length, wide: wide.length, first: wide.slice(0, 2).map((p) => longest(p).slice(0, 60)) };
  });
  if (res.n) ctx.summary.push(`code cells ${res.n}`);
  return res.wide ? [`${res.wide} of ${res.n} code cells wider than their box, e.g. ${JSON.stringify(res.first)}`] : [];
}

/** No raw TeX in a theorem box (sphinx-proof's div.proof): outside the typeset math no text holds a `$` or a TeX
 *  command, the mark of `$` signs MyST paired wrongly (a display inside a paragraph; scripts/lint_math.py). */
async function noRawTexInTheorems(page, ctx) {
  const raw = await page.evaluate(() => {
    const out = [];
    for (const box of document.querySelectorAll("div.proof")) {
      const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => (n.parentElement && n.parentElement.closest(".math, mjx-container, pre, code, script, style")
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
      });
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (/\$|\\[A-Za-z]{2,}/.test(n.textContent)) out.push(n.textContent.trim().slice(0, 60));
      }
    }
    return out;
  });
  return raw.slice(0, 3).map((t) => `raw TeX in a theorem box: ${JSON.stringify(t)}`);
}

/** On a phone the tables of claims (six columns or more) are stacked (book/_ext/static/eld_layout.css): none is
 *  wider than its box, so the statement, the values and the rule read without sideways scrolling. */
async function claimsStacked(page, ctx) {
  if (ctx.vp.name !== "phone") return [];
  const wide = await page.evaluate(() => [...document.querySelectorAll(".eld-claims-wrap")]
    .filter((w) => w.querySelector("th:nth-child(6)") && w.scrollWidth > w.clientWidth + 1)
    .map((w) => `${w.scrollWidth} px in ${w.clientWidth} px`));
  return wide.length ? [`${wide.length} claims tables scroll sideways on a phone, e.g. ${wide[0]}`] : [];
}

// Run on every page at every width, in this order; then the screenshot, the sidebar (it changes the page) and,
// last, the console (it must see what the other checks caused).
export const CHECKS = [noSidewaysScroll, mathRendered, noRawTexInTheorems, codeFits, widgetsMove, claimsTables,
  claimsStacked, phoneFigures];

// ---- the run

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(path.join(args.html, "index.html"))) {
    console.error(`no built book at ${args.html}: run \`make book\` or \`make test\` first`);
    process.exit(2);
  }
  let pages = tocPages();
  if (args.pages) pages = pages.filter((p) => args.pages.some((s) => p.includes(s)));
  if (args.shots) fs.mkdirSync(args.shots, { recursive: true });
  const server = await serve(args.html);
  const browser = await launch();
  const failures = [];
  const notes = [];
  const t0 = Date.now();
  try {
    for (const vp of VIEWPORTS) {
      const { name, ...options } = vp;
      const context = await offlineContext(browser, server.url, options);
      const page = await context.newPage();
      let log = [];
      page.on("console", (m) => { if (m.type() === "error") log.push(m.text()); });
      page.on("pageerror", (e) => log.push(`uncaught ${e.message}`));
      page.on("requestfailed", (r) => log.push(`request failed: ${r.url().slice(0, 120)} (${r.failure()?.errorText})`));
      page.on("response", (r) => { if (r.status() >= 400) log.push(`HTTP ${r.status()} for ${r.url()}`); });
      for (const doc of pages) {
        log = [];
        const t = Date.now();
        const url = `${server.url}/${doc}.html`;
        const resp = await page.goto(url, { waitUntil: "load" });
        const ctx = { vp, doc, base: server.url, log, notes: [], summary: [] };
        const problems = resp && resp.ok() ? [] : [`HTTP ${resp ? resp.status() : "no response"}`];
        for (const check of CHECKS) problems.push(...await check(page, ctx));
        if (args.shots) {
          await page.evaluate(() => window.scrollTo(0, 0));
          await page.screenshot({ path: path.join(args.shots, `${name}-${doc.replace(/\//g, "_")}.png`) });
        }
        problems.push(...await sidebarToggle(page, ctx));
        problems.push(...await consoleClean(page, ctx));
        for (const p of problems) failures.push(`${name} ${doc}: ${p}`);
        for (const p of ctx.notes) notes.push(`${name} ${doc}: ${p}`);
        const status = problems.length ? `FAIL (${problems.length})` : "ok";
        console.log(`${name.padEnd(7)} ${doc.padEnd(52)} ${status.padEnd(9)} ${ctx.summary.join(", ")} `
          + `[${((Date.now() - t) / 1000).toFixed(1)} s]`);
      }
      await context.close();
    }
  } finally {
    await browser.close();
    await server.close();
  }
  for (const n of notes) console.log(`note: ${n}`);
  for (const f of failures) console.log(`FAIL: ${f}`);
  const secs = ((Date.now() - t0) / 1000).toFixed(0);
  console.log(`${pages.length} pages x ${VIEWPORTS.length} widths in ${secs} s: ${failures.length} problems`);
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(2); });
