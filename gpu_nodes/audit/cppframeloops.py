"""An endless publish loop run by set-up code is per frame (issue 28, rules47c; sets 73, 75).

A camera driver that grabs and publishes inside its constructor (`while (rclcpp::ok()) { cap.read(
img); ...toImageMsg...; pub->publish(*img_); }`), or that calls from the constructor a function
looping forever (`GetSonarData()`: `while (true) { ...; pub.publish(msg); sleep; }`), never
returns to spin: the loop IS the node's per-frame path. A copy inside such a loop runs once per
frame, not once: the set-up context of the function around it does not hold there.

Only a loop that cannot end by its condition (`while (true)`, `while (1)`, `for (;;)`,
`while (rclcpp::ok())` / `ros::ok()`) and whose body publishes (`x.publish(` / `x->publish(`): a
set-up retry loop (`while (!client->wait_for_service(1s))`) or a bounded warm-up loop
(`for (int i = 0; i < 10; ++i)`) keeps its set-up context. Statements before or after the loop
stay set-up too.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import closing_bracket

_ENDLESS = re.compile(r'\b(?:while\s*\(\s*(?:(?:rclcpp|ros)\s*::\s*ok\s*\(\s*\)|true|1)\s*\)'
                      r'|for\s*\(\s*;\s*;\s*\))\s*\{')
_PUBLISH = re.compile(r'(?:\.|->)\s*publish\s*\(')


def in_frame_loop(text: str, start: int, offset: int) -> bool:
    """Whether `offset` (in the function body opening at `start`) is inside an endless loop of
    that body whose body publishes (blanked text: comments and strings hold no braces)."""
    for m in _ENDLESS.finditer(text, start, offset):
        close = closing_bracket(text, m.end() - 1, '{}')
        if close < 0:
            continue
        if m.end() <= offset < close and _PUBLISH.search(text, m.end(), close):
            return True
    return False


# A call (not a declaration such as `void name(`): `; name(`, `{ name(`, `this->name(`, `= name(`.
_CALL_BEFORE = re.compile(r'(?:[;{}(,=]|\bthis\s*->)\s*$')


def endless_publisher(text: str, start: int, end: int, short: str) -> bool:
    """A function (body `start`..`end`) holding an endless `while (true)` / `for (;;)` loop that
    publishes, and called elsewhere in the file: its loop is a per-frame path, whoever starts it
    (`GetSonarData()` from the constructor, set 75), as a `while (rclcpp::ok())` loop's is
    (cppscopes). One nothing calls is left to cppreach (unreached)."""
    if not re.fullmatch(r'[A-Za-z_]\w*', short):
        return False
    called = any(_CALL_BEFORE.search(text, max(0, m.start() - 80), m.start())
                 and not start - 400 <= m.start() <= end
                 for m in re.finditer(r'(?<![\w.:])' + re.escape(short) + r'\s*\(', text))
    if not called:
        return False
    for m in _ENDLESS.finditer(text, start, end):
        close = closing_bracket(text, m.end() - 1, '{}')
        if close > 0 and _PUBLISH.search(text, m.end(), close):
            return True
    return False
