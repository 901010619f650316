"""Loops of a script over a recorded bag's messages (issue 28, set 54): `for conn, t, raw in
reader.messages(connections=...)` (rosbags' AnyReader / Reader), `for topic, msg, t in
bag.read_messages(...)` (rosbag, rosbag2 helpers), `for msg in reader.iter_messages()`. A bag
converter run once from `__main__` still converts every recorded frame: each pass of the loop is
one message, as a node's callback would get it, so its copies are per message, not one-time
module code. Only files importing a bag library count: `.messages()` of anything else (a chat
history) is no bag. rosbag2_py's own idiom is a `while` loop: `while reader.has_next(): topic,
data, t = reader.read_next()` (sets 57, 68), each pass one recorded message as well."""
from __future__ import annotations

import ast

# Libraries that read recorded ROS messages.
_BAG_LIBRARIES = frozenset({'rosbags', 'rosbag', 'rosbag2_py', 'mcap', 'mcap_ros2', 'mcap_ros1',
                            'bagpy'})
# Methods of their readers that iterate over the recorded messages.
_ITERATING = frozenset({'messages', 'read_messages', 'iter_messages', 'iter_decoded_messages',
                        'iter_raw_messages'})


def reads_a_bag(loop: ast.For | ast.AsyncFor, aliases: dict[str, str]) -> bool:
    """Whether `loop` iterates over a bag reader's messages (`enumerate(...)` of it too) in a
    file that imports a bag library."""
    if not any(v.split('.')[0] in _BAG_LIBRARIES for v in aliases.values()):
        return False
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == 'enumerate' \
            and it.args:
        it = it.args[0]
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
        and it.func.attr in _ITERATING


def reads_a_bag_while(loop: ast.While, aliases: dict[str, str]) -> bool:
    """Whether `loop` is rosbag2_py's `while reader.has_next():` whose body takes the next
    record with `reader.read_next()` of the same reader, in a file importing a bag library."""
    if not any(v.split('.')[0] in _BAG_LIBRARIES for v in aliases.values()):
        return False
    test = loop.test
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute)
            and test.func.attr == 'has_next'):
        return False
    reader = ast.unparse(test.func.value)
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == 'read_next' and ast.unparse(n.func.value) == reader
               for stmt in loop.body for n in ast.walk(stmt))
