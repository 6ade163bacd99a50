"""Reads docs/install.md's tables: the rows of a section's tables whose first cell is a name in
backquotes, so the doc tests compare exactly what a reader sees. Shared by values_doc_test.py
and rbac_doc_test.py."""
import re

ROW = re.compile(r"^\|(.*)\|\s*$")


def section(text, heading):
    """The lines under `heading` (e.g. '### Values') up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    try:
        start = lines.index(heading) + 1
    except ValueError:
        raise SystemExit("docs/install.md has no heading %r" % heading)
    out = []
    for line in lines[start:]:
        m = re.match(r"^(#+) ", line)
        if m and len(m.group(1)) <= level:
            break
        out.append(line)
    return out


def table_rows(lines):
    """Each table row as a list of cells, header and separator rows left out."""
    rows = []
    for line in lines:
        m = ROW.match(line)
        if not m:
            continue
        cells = [c.strip() for c in m.group(1).split("|")]
        if all(re.fullmatch(r":?-+:?", c) for c in cells) or not cells[0].startswith("`"):
            continue
        rows.append(cells)
    return rows


def names(cell):
    """The names in backquotes in a cell: "`get`, `list`" -> ["get", "list"]."""
    return re.findall(r"`([^`]*)`", cell)
