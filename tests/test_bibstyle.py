"""The bibliography's labels are author-year, as the text cites (book/_ext/eld_bibstyle.py): a Sphinx build of
the book's references with the book's bibtex settings labels every entry "Surname(s), year"."""

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))


def test_the_book_uses_the_author_year_labels():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["sphinx"]["local_extensions"]["eld_bibstyle"] == "book/_ext"
    assert cfg["sphinx"]["config"]["bibtex_default_style"] == "eld_author_year"
    assert cfg["sphinx"]["config"]["bibtex_reference_style"] == "author_year"


def test_labels_of_the_book_references(tmp_path):
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['myst_parser', 'sphinxcontrib.bibtex', 'eld_bibstyle']\n"
        f"bibtex_bibfiles = {[str(ROOT / 'book' / 'references.bib')]!r}\n"
        f"bibtex_reference_style = {cfg['bibtex_reference_style']!r}\n"
        f"bibtex_default_style = {cfg['bibtex_default_style']!r}\n")
    (src / "index.md").write_text("# R\n\nSee {cite}`chen2023eos` and {cite}`chen2025thesis`.\n\n"
                                  "```{bibliography}\n:all:\n```\n")
    out = tmp_path / "html"
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)], check=True)
    html = (out / "index.html").read_text()
    labels = [re.sub(r"<[^>]+>", "", s)  # a cited entry's label links back to the citation
              for s in re.findall(r'<span class="label"><span class="fn-bracket">\[</span>(.*?)<span', html)]
    n_entries = len(re.findall(r"^@\w+\{", (ROOT / "book" / "references.bib").read_text(), re.M))
    assert len(labels) == n_entries and len(set(labels)) == n_entries
    assert all(re.fullmatch(r".+, (\d{4}[a-z]?|n\.d\.)", label) for label in labels), labels
    assert "Chen and Bruna, 2023" in labels and "Chen, 2025" in labels
    assert not any(label.isdigit() for label in labels)


def test_same_author_and_year_get_letters():
    import eld_bibstyle
    from pybtex.database import parse_string

    bib = parse_string(
        "@article{a, author={Ann Smith}, year={2020}, title={A}}\n"
        "@article{b, author={Ann Smith}, year={2020}, title={B}}\n"
        "@article{c, author={Ann Smith and Bo Lee and Cy Wu}, year={2021}, title={C}}\n", "bibtex")
    labels = list(eld_bibstyle.AuthorYearLabels().format_labels(bib.entries.values()))
    assert labels == ["Smith, 2020a", "Smith, 2020b", "Smith et al., 2021"]
