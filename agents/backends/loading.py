"""Model loading draws its progress bars by the run's own rule: on a terminal only, never ``\\r`` frames into a
piped or redirected stderr (``catallax run`` shows its round bar only when stderr is a tty)."""

from __future__ import annotations

import sys
from contextlib import contextmanager


@contextmanager
def loading_bars():
    """While a model loads through transformers, its bars ("Loading weights", downloads) are off unless stderr is a
    terminal; they are left as they were afterwards (a user's notebook may have switched them either way)."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    if shown and not sys.stderr.isatty():
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown and not hf_logging.is_progress_bar_enabled():
            hf_logging.enable_progress_bar()
