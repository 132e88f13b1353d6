"""One package per part of the book, named like its folder of chapters (``notebooks/<part>/``).

A part holds one module per chapter, named after the chapter file, topic modules where a chapter needs more than
one, and ``settings.py`` with the paper's configurations. A part imports the generic layer of :mod:`lib`,
:mod:`lib.models` and :mod:`lib.data`, never another part (``tests/test_layout.py`` checks it).
"""
