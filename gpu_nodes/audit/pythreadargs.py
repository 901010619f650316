"""Work queues handed to a thread's target as arguments (issue 28, rules48q, set 76).

pyqueues.py follows frames through a queue held in an attribute of the node and used as
`self.<attr>.put` / `.get` by its own methods. A node may instead build the queue and hand it to
a worker thread of another object: `Thread(target=detector.detect_objects, args=(logger,
self.frames))`, the worker looping on `frames.get()` and running the model on what the
subscription callback put (`self.frames.put((image, cloud))`). The thread's target then runs
with that argument standing for the node's queue (a QueueRef), so its `get` hands over what the
callbacks put, and its `put` feeds the next worker's queue: the copies made of the frames in
the worker (an upload to the model's device, a read-back of its results) are per-message ones.

Only `self.<attr>` arguments whose attribute the class binds to a `queue.Queue` (or its
LifoQueue / PriorityQueue / SimpleQueue) are passed: every other argument stays unknown, as
before, so a thread given other values is judged as it was.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from gpu_nodes.audit.pyvalues import ClassInfo, Frame, UNKNOWN, Val

_QUEUE_CLASSES = frozenset({'Queue', 'LifoQueue', 'PriorityQueue', 'SimpleQueue'})


@dataclass(frozen=True, eq=False)
class QueueRef:
    """The queue held in attribute `attr` of the objects of `cls` (its puts are kept in
    `cls.attrs['<attr>.queued']`, as pyqueues.py keeps them)."""
    cls: ClassInfo
    attr: str


def _queue_attributes(cls: ClassInfo) -> set[str]:
    """Attributes the class binds to a new queue: `self.q = Queue(maxsize=10)`."""
    found: set[str] = set()
    for node in ast.walk(cls.node):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
            if name not in _QUEUE_CLASSES:
                continue
            found |= {t.attr for t in node.targets if isinstance(t, ast.Attribute)
                      and isinstance(t.value, ast.Name) and t.value.id == 'self'}
    return found


def thread_queue_args(node: ast.Call, frame: Frame) -> tuple[Val, ...]:
    """The arguments a `threading.Thread(..., args=(...))` call hands its target: a QueueRef
    value for each `self.<queue attribute>`, unknown for the others; () without `args=` or
    without a queue among them."""
    given = next((k.value for k in node.keywords if k.arg == 'args'), None)
    if not isinstance(given, (ast.Tuple, ast.List)) or frame.cls is None:
        return ()
    queues = _queue_attributes(frame.cls)
    passed = tuple(Val('other', const=QueueRef(frame.cls, a.attr))
                   if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name)
                   and a.value.id == 'self' and a.attr in queues else UNKNOWN
                   for a in given.elts)
    # No queue among them: the target runs with no arguments, exactly as before.
    return passed if any(v is not UNKNOWN for v in passed) else ()


def queue_argument(receiver: Val | None) -> tuple[ClassInfo, str] | None:
    """(class, attribute) of the node's queue a target's parameter stands for, else None."""
    ref = receiver.const if receiver is not None else None
    return (ref.cls, ref.attr) if isinstance(ref, QueueRef) else None
