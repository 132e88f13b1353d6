"""Executable Learning Dynamics: the shared library of the book.

Import the modules you need (`lib.config`, `lib.train`, `lib.curvature`, `lib.maps`, `lib.sweep`,
`lib.claims`, `lib.widgets`, `lib.plots`); this package imports nothing heavy on its own.
"""

__version__ = "0.1.0"
