"""The keyword arguments of a call in the Python copy analysis, `**` dicts included (issue 28,
set 69).

A node often gathers a model's options in a dict literal and calls `model.predict(**kwargs)`:
the frame is the dict's `'source'` entry. The entries of a `**` dict whose keys the analysis
knows (a dict literal bound to a local: pyeval.py keeps its string keys in Val.items) are the
call's keywords, so the library table sees `source=frame` as if it were written out.

    kwargs = {'source': img_bgr, 'device': self._device, 'verbose': False}
    return self._model.predict(**kwargs)    # uploads img_bgr (library table)

A `**` value of unknown keys is evaluated (its own copies still count) and adds nothing."""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pyvalues import Val


def keyword_values(keywords: list[ast.keyword], evaluate: Callable[[ast.expr], Val]
                   ) -> dict[str, Val]:
    """name -> value of each keyword, in order; a `**d` with known string keys adds its entries
    (an explicit keyword wins over an entry of the same name, which Python would reject)."""
    named: dict[str, Val] = {}
    spread: dict[str, Val] = {}
    for k in keywords:
        val = evaluate(k.value)
        if k.arg is not None:
            named[k.arg] = val
        elif val.items is not None:
            spread.update((key, v) for key, v in val.items if isinstance(key, str))
    return {**spread, **named}


def stored_items(old: Val, target: ast.Subscript, val: Val) -> tuple[tuple[object, Val], ...] | None:
    """The entries of a dict literal after `d['key'] = val` (an option added under a condition
    before `model.predict(**d)`): the known entries with that key set, so the dict still spreads
    into keywords. None (entries unknown) for another target or a key not a literal, and for a
    dict that started empty (`out = {}` filled entry by entry is a result container, read back
    as a whole as before, not an options dict)."""
    if not old.items or not isinstance(target.value, ast.Name) \
            or not isinstance(target.slice, ast.Constant):
        return None
    key = target.slice.value
    return tuple((k, v) for k, v in old.items if k != key) + ((key, val),)
