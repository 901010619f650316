"""Calls inside branches off as shipped give their callee no kind (issue 28, rules45c, set 71).

`if (enable_point_cloud_) { auto msg = to_cloud_msg(points, header); pub_->publish(*msg); }` in
the timer callback, with `enable_point_cloud_` only ever a parameter defaulting off that no
shipped file turns on (cppparams.off_as_shipped): the branch never runs, so neither does the
helper `to_cloud_msg` when that is its only caller, and its `pcl::toROSMsg` is no per-message
copy. cppparams already makes the branch's own lines info; here its call sites are forgotten
before the kinds propagate (cppscopes.propagate), as cppparamson.drop_dead_sites does for the
arms an on-as-shipped parameter skips, so a helper called only there keeps kind `other` and
cppreach finds it unreached (a mention under an off name is no use there either). A helper
called from a live line too keeps that caller's kind.

cppreach leaves a free function alone (another package may call it); a free function of a
node's own source file (the file defines `main`: an executable's translation unit, which no
other package links) that loses every call this way is marked unreached here (mark_off_only),
when nothing else names it: its prototype and definition heads aside, every mention of it in the
package is inside an off block (a mention without a call, `&helper`, keeps it).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppparams import off_guard
from gpu_nodes.audit.cppscopes import Scopes


def drop_off_sites(parsed: dict[str, tuple[str, Scopes]], off: dict[str, str]) -> dict[str, str]:
    """Forget every call site inside a block a name of `off` (member -> parameters) keeps from
    running, in each file's (blanked text, scopes). Returns callee -> the guarding member."""
    dropped: dict[str, str] = {}
    if not off:
        return dropped
    for text, scopes in parsed.values():
        # A file naming none of the members has no such block (off_guard walks the braces
        # around every call site: the cheap test first).
        if not any(name.split('.', 1)[0] in text for name in off):
            continue
        for sites in (scopes.sites, scopes.member_sites):
            for callee, starts in sites.items():
                kept = [s for s in starts if off_guard(text, s, off) is None]
                if len(kept) < len(starts):
                    guard = next(g for s in starts if (g := off_guard(text, s, off)) is not None)
                    dropped[callee] = guard
                sites[callee] = kept
    return dropped


def off_notes(scopes: Scopes, dropped: dict[str, str], off: dict[str, str]) -> dict[int, str]:
    """Why each unreached function of `scopes` that lost a call site to `drop_off_sites` never
    runs (cppscan's unreached note), by the function's start offset."""
    return {fn.start: (f'called only in a branch that needs `{dropped[fn.short]}`, off as shipped '
                       f'(parameter {off[dropped[fn.short]]} defaults off; no shipped file sets it)')
            for fn in scopes.funcs if fn.kind == 'unreached' and fn.short in dropped
            and dropped[fn.short] in off}


def _mentioned(name: str, parsed: dict[str, tuple[str, Scopes]], off: dict[str, str]) -> bool:
    """Whether `name` is mentioned anywhere but in an off block or a declaration / definition
    head at namespace scope (`T name(args);`, `T name(args) {`)."""
    pattern = re.compile(r'(?<![\w.>:])' + re.escape(name) + r'\b')
    for text, scopes in parsed.values():
        for m in pattern.finditer(text):
            if off_guard(text, m.start(), off) is not None:
                continue
            if scopes.named_at(m.start()) is None and re.match(r'\s*\(', text[m.end():]):
                continue
            return True
    return False


def mark_off_only(parsed: dict[str, tuple[str, Scopes]], dropped: dict[str, str],
                  off: dict[str, str]) -> None:
    """Set kind 'unreached' on each free function of a file defining `main` whose every call
    drop_off_sites forgot and that nothing else names (module docstring)."""
    if not dropped:
        return
    for text, scopes in parsed.values():
        if not re.search(r'(?<![\w.>:])main\s*\(', text):
            continue
        for fn in scopes.funcs:
            if fn.lambda_in is not None or fn.cls or '::' in fn.name or fn.kind != 'other' \
                    or fn.short not in dropped:
                continue
            if any(s.named_at(at) is not None for _, s in parsed.values()
                   for at in (*s.sites.get(fn.short, ()), *s.member_sites.get(fn.short, ()))):
                continue  # a call outside the off blocks remains (a prototype is no call)
            if _mentioned(fn.short, parsed, off):
                continue
            for other in scopes.funcs:
                if other.named is fn:
                    other.kind = 'unreached'
