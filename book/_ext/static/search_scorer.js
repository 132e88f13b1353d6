// The search's scoring (Sphinx's html_search_scorer; the defaults of Sphinx 7.4's searchtools.js), with one change:
// an API entry found only through its module path (the query "memorisation" matches every object of
// lib.parts.memorisation) no longer outranks the chapters. An object whose own name, the last dotted part, holds a
// word of the query keeps its score; pages found by their text or title are unchanged.
var Scorer = {
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
  score: (result) => {
    const [docname, title, , descr, score] = result;
    if (!descr || !String(docname).startsWith("book/api")) return score;
    const params = new URLSearchParams(window.location.search);
    const words = (params.get("q") || "").toLowerCase().split(/\s+/).filter((w) => w.length > 0);
    const last = String(title).toLowerCase().split(".").pop();
    return words.some((w) => last.includes(w)) ? score : Math.min(score, 0);
  },
};
