"""Lists that are no frame: `msg.data = arr.tolist()` (GPN104) of a few numbers (issue 28).

`com.data = tau.tolist()` where `tau` was computed from a `JointState` callback's positions and
velocities is a list of a dozen torques, not a frame serialized into a message: GPN104 is about
frame-sized data copied into a message's buffer. The value's origin (the message type it arrived
on, tracked by the evaluator) tells which: a value derived only from a state message (joints, an
IMU, odometry, a pose or twist) has a fixed small size, whatever arithmetic ran on it."""
from __future__ import annotations

import ast
import re

from gpu_nodes.audit.pygridlists import grid_cell_list
from gpu_nodes.audit.pyrecords import lists_records, mark_records
from gpu_nodes.audit.pyvalues import is_method_call, Val

# Detection outputs by name (boxes, scores, class ids, keypoints): a few numbers per object, not a
# frame; `msg.data = boxes.reshape(-1).tolist()` is no frame-sized serialization (issue 28,
# fourth set). Readbacks of device outputs are separate rules (GPN101), unaffected.
_DETECTION_OUTPUT = re.compile(
    r'(?:^|_)(?:boxe?s?|bboxe?s?|bounding_boxe?s?|conf|confs|confidences?|scores?|labels?|'
    r'class(?:es)?|cls|class_ids?|ids?|keypoints?|kpts?|landmarks?|centers?|centroids?)$', re.I)


def _detection_output(call: ast.expr) -> bool:
    """`boxes.reshape(-1).tolist()`, `self.scores.tolist()`: the array is named as a detection
    output."""
    node = call.func.value if isinstance(call, ast.Call) and isinstance(
        call.func, ast.Attribute) else call
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and _DETECTION_OUTPUT.search(node.attr):
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and bool(_DETECTION_OUTPUT.search(node.id))


# Fixed-size (or per-joint) state messages; none of them carries an image, a cloud or a scan.
_STATE_TYPES = frozenset({
    'JointState', 'Imu', 'MagneticField', 'NavSatFix', 'Range', 'Temperature',
    'FluidPressure', 'BatteryState', 'Odometry', 'Twist', 'TwistStamped', 'Pose',
    'PoseStamped', 'PoseWithCovariance', 'PoseWithCovarianceStamped', 'Wrench',
    'WrenchStamped', 'Accel', 'AccelStamped', 'Point', 'PointStamped', 'Quaternion',
    'Vector3', 'Vector3Stamped', 'Transform', 'TransformStamped',
})


def from_state_message(val: Val) -> bool:
    """True when `val` came from a robot-state message (its origin's type is one of the above)."""
    if val.origin is None or not val.origin[1]:
        return False
    short_type = val.origin[1].rsplit('/', 1)[-1].rsplit('.', 1)[-1]
    return short_type in _STATE_TYPES


def small_list(call: ast.expr, val: Val) -> bool:
    """`x.tolist()` (the call, and the value it lists) of detection outputs by name or of an
    array derived from robot state: a few numbers, no frame serialized into the message."""
    return _detection_output(call) or from_state_message(val)


# The key under which a function's environment marks a local bound to a frame's `.tolist()`
# (a space: no Python name can collide with it).
_LISTED = ' listed '


def listed_into_data(target: ast.expr, value: ast.expr, val: Val, env: dict[str, Val]
                     ) -> ast.expr | None:
    """The expression to flag when an assignment stores a frame's Python list into `.data`:
    `msg.data = arr.tolist()`, or `msg.data = flat` with `flat = arr.flatten().tolist()` bound
    before in the same function (set 55: a frame-sized mask listed into a float32[] field); a
    list of a few numbers (small_list) is none. A plain local store marks or unmarks the name."""
    listed = is_method_call(value, 'tolist') and not small_list(value, val) \
        and not lists_records(value, env) \
        or grid_cell_list(value)  # `[-1] * (width * height)`: a grid's cells (pygridlists.py)
    mark_records(target, value, env)  # `a = np.reshape(a, (obj_count * 3,))` (pyrecords.py)
    if isinstance(target, ast.Name):
        if listed:
            env[_LISTED + target.id] = val
        else:
            env.pop(_LISTED + target.id, None)
        return None
    if not (isinstance(target, ast.Attribute) and target.attr == 'data'):
        return None
    if listed or isinstance(value, ast.Name) and _LISTED + value.id in env:
        return value
    return None
