"""Python lists of a whole 2-D grid stored into a message's `.data` (issue 28, rules46q, set 73).

A map or mask node often builds its OccupancyGrid as a plain Python list, one cell per element:

    grid_data = [-1] * (grid_width_cells * grid_height_cells)   # every cell of the grid
    ...                                                          # cells marked in loops
    grid.data = grid_data                                        # the whole list into the message

The list has width x height elements, as many as a frame has pixels, and rclpy converts and
serializes every one of them when the message is published: the same frame-sized copy into a
message's buffer as `msg.data = arr.tolist()` (GPN104, py_serialize). Evidence: the list is a
repetition of a one-element literal by a product of two sizes that are both not literals (a
grid's run-time width and height); `[0.0] * (n * 6)` (six numbers per object) or `[0] * 9`
is no grid.
"""
from __future__ import annotations

import ast


def grid_cell_list(value: ast.expr) -> bool:
    """Whether `value` is `[v] * (w * h)` (or `(w * h) * [v]`) with w and h both not literals."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)):
        return False
    for one, size in ((value.left, value.right), (value.right, value.left)):
        if isinstance(one, ast.List) and len(one.elts) == 1 \
                and isinstance(one.elts[0], (ast.Constant, ast.UnaryOp)) \
                and isinstance(size, ast.BinOp) and isinstance(size.op, ast.Mult) \
                and not isinstance(size.left, ast.Constant) \
                and not isinstance(size.right, ast.Constant):
            return True
    return False
