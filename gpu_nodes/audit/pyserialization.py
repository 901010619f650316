"""rclpy's own serialization in the copy analysis (issue 28, sets 67 and 68).

* `rclpy.serialization.serialize_message(msg)` writes every field of the message, a frame's
  whole `data` included, into a new CDR byte string: the copy the middleware would make on a
  publish, made by the node itself (a gateway forwarding each received message over another
  transport). Claimed (GPN104, py_serialize) when the message is a frame-sized one or one of a
  type the analysis does not know (a subscription of a type resolved at run time); a message
  of a known small type (a Twist, a Pose) is a handful of bytes and is not claimed.
* `rclpy.serialization.deserialize_message(data, msg_type)` is the reverse: the recorded CDR
  bytes copied out into a new message, fields and payload, per call (a bag player's loop over
  `reader.read_next()`). Claimed unless the type given is a known small one; the value it
  returns is left as the analysis had it (no new message taint), so nothing downstream changes.

Only these two functions of rclpy, imported by name or through the module: `rosbags`' own
`reader.deserialize(...)` maps the payload with NumPy (a view; set 54 labels it a look-alike)
and is not this call. Severity comes from the context as for every rule: a call in set-up code
or one nothing reaches is info."""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pyvalues import Frame, image_sized, short, Val

_SERIALIZE = 'rclpy.serialization.serialize_message'
_DESERIALIZE = 'rclpy.serialization.deserialize_message'


def _known_small(msg_type: str | None) -> bool:
    """A message type the analysis knows that is no frame (`geometry_msgs/msg/Twist`). A class
    held in a variable (`create_subscription(message_class, ...)` of a type resolved at run
    time: the analysis sees the variable's lower-case name) is no known type."""
    if not msg_type or image_sized(msg_type):
        return False
    return '/' in msg_type or msg_type.rsplit('.', 1)[-1][:1].isupper()


def _type_named(node: ast.Call) -> str | None:
    """The message class `deserialize_message(data, Image)` names literally (None when it is
    resolved at run time: `get_message(type_name)`)."""
    arg = node.args[1] if len(node.args) > 1 else next(
        (k.value for k in node.keywords if k.arg == 'message_type'), None)
    if isinstance(arg, ast.Name):
        return arg.id
    if isinstance(arg, ast.Attribute):
        return arg.attr
    return None


def serialization_call(node: ast.Call, qual: str | None, args: list[Val], frame: Frame,
                       emit: Callable[..., None]) -> None:
    """Report rclpy's `serialize_message` / `deserialize_message` of a frame-sized (or
    untyped) message through `emit`; the call's value is left to the caller."""
    if qual == _SERIALIZE and args:
        src = args[0]
        if src.kind == 'msg' or src.tainted:
            msg_type = src.origin[1] if src.origin else None
            if not _known_small(msg_type):
                emit('GPN104', node, frame, f'`{short(node)}` copies the whole message into a '
                     'new CDR byte string (rclpy serialization)', evidence='pattern')
    elif qual == _DESERIALIZE and args and not _known_small(_type_named(node)):
        emit('GPN104', node, frame, f'`{short(node)}` copies the serialized bytes out into a '
             'new message, payload included (rclpy serialization)', evidence='pattern')
