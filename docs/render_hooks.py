"""mkdocs hook (``hooks:`` in mkdocs.yml), beside docs/hooks.py: pages generated from code, and formulas as MathML.

* ``<!-- generated: paper index -->`` becomes the paper index (docs/papers.py) and ``<!-- generated: scenario
  cards -->`` the scenario cards (docs/scenario_cards.py), at build time, so a method or a scenario added to
  the code shows on the site without anyone editing a page;
* every formula (``$...$``, ``$$...$$``: pymdownx.arithmatex wraps them in ``arithmatex`` spans and divs) is
  rendered to MathML when the site is built (latex2mathml), which browsers draw natively: the site needs no
  script from the network to show its formulas, so it reads the same offline. A formula latex2mathml cannot
  parse is a warning, which ``mkdocs build --strict`` turns into a failure;
* mkdocs-jupyter's notebook pages carry a loader that would import mermaid from a CDN where a notebook has a
  diagram (none has) and an empty MathJax tag: both are dropped, so no page of the site asks the network for a
  script.
"""

from __future__ import annotations

import html
import logging
import re
import sys
from pathlib import Path

from latex2mathml.converter import convert

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # mkdocs loads this file by path; `docs` is not an installed package
    sys.path.insert(0, str(ROOT))

from docs import papers, scenario_cards  # noqa: E402

GENERATED = {"<!-- generated: paper index -->": papers.markdown,
             "<!-- generated: scenario cards -->": scenario_cards.markdown}
log = logging.getLogger("mkdocs.hooks.catallax.render")
# arithmatex's generic output: <span class="arithmatex">\(...\)</span> inline, <div class="arithmatex">\[...\]</div>
# TeX that latex2mathml passes through as text, rewritten to what it draws: sizing commands (MathML stretches
# delimiters itself), \arg, and the escaped underscore of \texttt{...}.
REWRITES = ((re.compile(r"\\[bB]igg?[lr]?\s*(?=\\|[()\[\]|.])"), ""), (re.compile(r"\\arg\b"), r"\\mathrm{arg}"))
UNDRAWN = re.compile(r"\\[A-Za-z]+")  # a TeX command left in the MathML: latex2mathml did not know it
FORMULA = re.compile(r'<(?P<tag>span|div) class="arithmatex">\\(?P<open>[(\[])(?P<tex>.*?)\\[)\]]</(?P=tag)>', re.S)


# A <script> element whose body fetches from the network (a dynamic import of a CDN module), or with an empty src.
NETWORK_SCRIPT = re.compile(r'<script[^>]*>(?:(?!</script>).)*?["\']https?://(?:(?!</script>).)*</script>|<script src=""> ?</script>',
                            re.S)


def on_page_markdown(markdown, page, config, files):
    for marker, generate in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown


def on_page_content(content, page, config, files):
    def mathml(match: re.Match) -> str:
        tex = html.unescape(match["tex"]).strip()
        for pattern, replacement in REWRITES:
            tex = pattern.sub(replacement, tex)
        display = "block" if match["open"] == "[" else "inline"
        try:
            out = convert(tex, display=display).replace("\\_", "_")
        except Exception as err:  # latex2mathml raises its own exception classes and plain ones
            log.warning(f"{page.file.src_uri}: a formula MathML cannot be made of ({err}): {tex[:80]}")
            return match[0]
        if UNDRAWN.search(out):
            log.warning(f"{page.file.src_uri}: {UNDRAWN.search(out)[0]} is not drawn as MathML: {tex[:80]}")
        return out
    return FORMULA.sub(mathml, content)


def on_post_page(output, page, config):
    return NETWORK_SCRIPT.sub("", output)
