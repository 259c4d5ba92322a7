"""The documentation site's sources (mkdocs, ``mkdocs.yml``) and the code that builds parts of it.

``python -m docs.tables`` regenerates the results tables from their stored rows; ``docs/hooks.py`` is the
mkdocs hook that adds the notebooks and generated pages; ``docs/make_figures.py`` redraws the README's figures.
"""
