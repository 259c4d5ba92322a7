"""mkdocs hook (``hooks:`` in mkdocs.yml): the parts of the site that are not pages under docs/.

* the notebooks of ``notebooks/`` become the Tutorials (pages ``notebooks/NAME.ipynb``, rendered by
  mkdocs-jupyter), so a tutorial has one source, the notebook the suite executes;
* ``CHANGELOG.md`` at the repository's root becomes a page (``CHANGELOG.md``; its ``docs/`` links made relative);
* ``reference/config.md``'s, ``reference/cli.md``'s and ``reference/summary.md``'s markers are replaced by the
  config reference, read from the dataclasses (docs/config_reference.py), the CLI's ``--help``
  (docs/cli_reference.py) and the run summary's keys (docs/summary_reference.py), at build time: a key or a
  flag added to the code appears without anyone editing the page;
* each results table is checked against its stored rows (docs/tables.py; a mismatch is a warning, which
  ``mkdocs build --strict`` turns into a failure) and followed by the provenance of its rows.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # mkdocs loads this file by path; `docs` is not an installed package
    sys.path.insert(0, str(ROOT))

from docs import cli_reference, config_reference, summary_reference, tables  # noqa: E402
GENERATED = {"<!-- generated: config reference -->": config_reference.markdown,
             "<!-- generated: cli reference -->": cli_reference.markdown,
             "<!-- generated: summary keys -->": summary_reference.markdown}
log = logging.getLogger("mkdocs.hooks.catallax")


@event_priority(100)  # before mkdocs-jupyter's on_files, which must see the notebooks
def on_files(files, config):
    # Files outside docs_dir, named relative to the repository's root (src_dir): mkdocs-jupyter wraps a file
    # in a way that needs its src_dir, so File.generated (which has none) would not do.
    for path in [*sorted((ROOT / "notebooks").glob("*.ipynb")), ROOT / "CHANGELOG.md"]:
        files.append(File(str(path.relative_to(ROOT)), src_dir=str(ROOT), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "CHANGELOG.md":  # its links are written from the repository's root, for GitHub
        markdown = markdown.replace("](docs/", "](")
    for marker, generate in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    path = Path(page.file.abs_src_path)
    for table in tables.find_tables(path, markdown):
        try:
            if tables.differs(table):
                log.warning(f"{page.file.src_uri}: the table of {table.rows_path} differs from its rows "
                            f"(python -m docs.tables rewrites it)")
            end = f"<!-- table: {table.rows_path} | {', '.join(table.columns)} -->\n{table.body}<!-- end table -->"
            markdown = markdown.replace(end, f"{end}\n\n{provenance(table)}\n", 1)
        except tables.TableError as err:
            log.warning(f"{page.file.src_uri}: {err}")
    return markdown


def provenance(table: tables.Table) -> str:
    """One line under a table: the rows' file and, for each distinct command, its date, code version and machine."""
    rows = tables.read_rows(ROOT / table.rows_path)
    sidecar = {k: v for r in rows for k, v in r.items() if k in (*tables.PROVENANCE, "source")
               if not any(c in r for c in table.columns)}
    seen = {}
    for row in tables.table_rows(table):
        p = {**sidecar, **{k: row[k] for k in (*tables.PROVENANCE, "source") if k in row}}
        seen.setdefault(p["command"], p)
    parts = []
    for command, p in seen.items():
        note = f", {p['source']}" if p.get("source") else ""
        parts.append(f"`{command}` ({p['date']}, commit `{p['commit']}`, {p['machine']}{note})")
    return f"<small>Rows: `{table.rows_path}`, from " + "; ".join(parts) + ".</small>"
