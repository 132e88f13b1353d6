"""Part VI settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. One section per
chapter of the thesis.
"""

from __future__ import annotations
