"""Part V settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. The thesis's own
sizes are named configurations here; the book never runs them on CPU.
"""

from __future__ import annotations
