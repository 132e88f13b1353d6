// Figures on a phone (book/_ext/eld_layout.py adds this file to every page). The chapters' figures are drawn to
// the width of a desktop column (about 690 px); squeezed into a 340 px phone column their 10-pt text would come
// out at about 7 px. Below 600 px each output figure keeps at least three quarters of its drawn size instead,
// inside its own sideways-scrolling box (the page itself never scrolls sideways); its caption stays in view.
(function () {
  const NARROW = 600;
  const SCALE = 0.75;

  function fit(img) {
    const box = img.closest("figure, div.output, div.cell_output");  // a block (the image may sit in a link)
    img.style.width = "";
    img.style.maxWidth = "";
    box.classList.remove("eld-figure-scroll");
    if (window.innerWidth > NARROW || !img.naturalWidth) return;
    const want = Math.round(img.naturalWidth * SCALE);
    if (want > box.clientWidth) {
      img.style.maxWidth = "none";
      img.style.width = `${want}px`;
      box.classList.add("eld-figure-scroll");
    }
  }

  function fitAll() {
    document.querySelectorAll("div.cell_output img").forEach((img) => {
      if (img.closest(".eld-static-widget")) return;  // the widgets lay out their frames themselves
      if (img.complete) fit(img);
      else img.addEventListener("load", () => fit(img), { once: true });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fitAll);
  else fitAll();
  window.addEventListener("resize", fitAll);
})();
