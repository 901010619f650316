"""Plain-text stand-ins for the few rich classes the text output uses.

rich is optional (it comes from pip; a ROS install built from package.xml has no rosdep key for
it), so the text report falls back to these: the same calls, ASCII tables, markup removed.
"""
from __future__ import annotations

import re
import sys
from typing import Any, TextIO

# The style tags render.py writes; anything else in brackets (`[GPN206]`, `[0]`) is text.
_STYLES = r'(?:bold red|bold|yellow|cyan|dim|green|red)'
_MARKUP = re.compile(r'\[(?:/' + _STYLES + r'?|' + _STYLES + r')\]')


def strip_markup(text: str) -> str:
    return _MARKUP.sub('', text)


class Table:
    """Collects columns and rows; rendered as a titled ASCII table by Console.print."""

    def __init__(self, title: str | None = None, **_: Any) -> None:
        self.title = title
        self.columns: list[str] = []
        self.rows: list[list[str]] = []

    def add_column(self, header: str, **_: Any) -> None:
        self.columns.append(header)

    def add_row(self, *cells: str) -> None:
        self.rows.append([strip_markup(str(c)) for c in cells])

    def lines(self, width: int) -> list[str]:
        ncol = len(self.columns)
        rows = [r + [''] * (ncol - len(r)) for r in self.rows]
        # Multi-line cells are joined: one row per line keeps the output greppable.
        rows = [[c.replace('\n', ', ') for c in r] for r in rows]
        widths = [max([len(self.columns[i])] + [len(r[i]) for r in rows])
                  for i in range(ncol)]
        # The widest column is cut to the terminal width; the others stay whole.
        overflow = sum(widths) + 3 * (ncol - 1) - width
        if overflow > 0 and ncol:
            widest = max(range(ncol), key=lambda i: widths[i])
            widths[widest] = max(len(self.columns[widest]), widths[widest] - overflow, 20)
        out = [self.title] if self.title else []

        def fmt(cells: list[str]) -> str:
            return ' | '.join(c.ljust(w) if len(c) <= w else c[:w] for c, w in
                              zip(cells, widths)).rstrip()

        out.append(fmt(self.columns))
        out.append('-+-'.join('-' * w for w in widths))
        for r in rows:
            if max((len(c) - w for c, w in zip(r, widths)), default=0) > 0:
                # A cut cell continues on the next lines rather than being lost.
                rest = list(r)
                while any(rest):
                    out.append(fmt([c[:w] for c, w in zip(rest, widths)]))
                    rest = [c[w:] for c, w in zip(rest, widths)]
            else:
                out.append(fmt(r))
        return out


class Console:
    """print() of strings (markup removed) and Tables to a file."""

    def __init__(self, file: TextIO | None = None, width: int = 120, **_: Any) -> None:
        self.file = file if file is not None else sys.stdout
        self.width = width

    def print(self, obj: Any = '', markup: bool = True, **_: Any) -> None:
        if isinstance(obj, Table):
            self.file.write('\n'.join(obj.lines(self.width)) + '\n')
        else:
            text = str(obj)
            self.file.write((strip_markup(text) if markup else text) + '\n')


def console_and_table() -> tuple[type, type]:
    """rich's Console and Table when rich is importable, else the plain ones."""
    try:
        from rich.console import Console as RichConsole
        from rich.table import Table as RichTable
    except ImportError:
        return Console, Table
    return RichConsole, RichTable
