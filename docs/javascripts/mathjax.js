// MathJax for pymdownx.arithmatex (generic mode): $...$ inline, $$...$$ display. MathJax itself is loaded only
// where a page has formulas and the reader is online; offline the TeX source shows as written.
window.MathJax = {
  tex: { inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true, processEnvironments: true },
  options: { ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex" }
};
document.addEventListener("DOMContentLoaded", () => {
  if (!document.querySelector(".arithmatex")) return;
  const s = document.createElement("script");
  s.src = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js";
  s.async = true;
  document.head.appendChild(s);
});
