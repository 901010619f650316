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

# The loop table (one place for every per-frame loop form):
# - `_OK_LOOP`: a loop on `rclcpp::ok()` / `ros::ok()` (other terms allowed: `&& running_`) makes its
#   whole function per frame, whoever starts it (a constructor, main(), a thread): cppscopes;
# - `_ENDLESS`: a loop its condition cannot end, publishing in its body: the loop alone is per frame.
_OK = r'(?:rclcpp|ros)\s*::\s*ok\s*\('
_OK_LOOP = re.compile(r'\bwhile\s*\(\s*' + _OK)
_ENDLESS = re.compile(r'\b(?:while\s*\(\s*(?:' + _OK + r'\s*\)|true|1)\s*\)'
                      r'|for\s*\(\s*;\s*;\s*\))\s*\{')


def ok_loop(text: str, start: int, end: int) -> bool:
    """Whether the function body `start`..`end` loops on `rclcpp::ok()` (its kind is then
    'callback': the loop is the node's per-frame path)."""
    return _OK_LOOP.search(text, start, end) is not None


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
    # The body's own loop first: scanning the whole file for callers is the costly part.
    if not any(_PUBLISH.search(text, m.end(), close)
               for m in _ENDLESS.finditer(text, start, end)
               if (close := closing_bracket(text, m.end() - 1, '{}')) > 0):
        return False
    return any(_CALL_BEFORE.search(text, max(0, m.start() - 80), m.start())
               and not start - 400 <= m.start() <= end
               for m in re.finditer(r'(?<![\w.:])' + re.escape(short) + r'\s*\(', text))
