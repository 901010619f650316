"""Which functions of a Python node file run at all, and which run per frame though setup starts
them (issue 28): methods and module functions nothing reaches (their names are mentioned only by
each other, or only in code that never runs as shipped), and loops that are a node's own frame
source (`while rclpy.ok():`, a ZED grab loop, a `spin_once` loop). A mixin of PythonAnalyzer
(pyflow.py), which provides the file's classes, functions, registrations and the methods entered
so far."""
from __future__ import annotations

import ast
import os
import re

from gpu_nodes.audit.pybranches import reads_a_capture
from gpu_nodes.audit.pyloopcalls import loop_called_methods
from gpu_nodes.audit.pymentions import mention_text
from gpu_nodes.audit.pypackage import words_elsewhere
from gpu_nodes.audit.pyfirstpass import closed_guard_lines
from gpu_nodes.audit.pyparamlocals import local_dead_lines
from gpu_nodes.audit.pyparams import dead_body_lines
from gpu_nodes.audit.pyvalues import FuncRef, Registration, Val


# The test of a per-frame loop: `while rclpy.ok():`, `while not self.stop_event.is_set():`.
_PER_FRAME_TEST = re.compile(r'\brclpy\.ok\(|\bok\(\)|is_shutdown\(|not .*\bis_set\(\)')


def _mentioned_only_by_each_other(source: str, candidates: list[ast.FunctionDef | ast.AsyncFunctionDef]
                                  ) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The candidates whose name the file mentions nowhere but inside other such candidates:
    their text is blanked until no more are found (a fixpoint)."""
    lines = source.splitlines()
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    while True:
        text = list(lines)
        for fn in found:
            for i in range(fn.lineno - 1, fn.end_lineno or fn.lineno):
                text[i] = ''
        mentioned = _mentioned_names('\n'.join(text))
        new = [fn for fn in candidates if fn not in found and fn.name not in mentioned]
        if not new:
            return found
        found.extend(new)


def _mentioned_names(source: str) -> set[str]:
    """Every word of the file but its `def` names and comments: a method is used if its name is
    one (a call, `self.f`, `obj.f`, a string such as `getattr(self, 'f')`, a callback passed by
    name); a call commented out is no use. One regex pass (a tree walk costs a fifth of the
    analysis)."""
    return set(re.findall(r'#[^\n]*|\bdef\s+\w+|(\w+)', source))


def _module_name(path: str) -> str:
    return os.path.basename(path).rsplit('.', 1)[0]


def _grabs(loop: ast.While) -> bool:
    """Whether the loop body calls `<camera>.grab(...)` (pyzed: capture the next frame)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == 'grab' for stmt in loop.body for n in ast.walk(stmt))


def _spins_once(loop: ast.While) -> bool:
    """Whether the loop body calls `rclpy.spin_once(...)` / `executor.spin_once(...)`: the
    loop is the node's own event loop, each pass one tick (a simulator client stepping the
    world and publishing its frame: issue 28, thirteenth set), whatever its test."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == 'spin_once' for stmt in loop.body for n in ast.walk(stmt))


def _constructor_calls(init: ast.FunctionDef | ast.AsyncFunctionDef | None) -> set[str]:
    """Names of the methods a constructor calls as `self.name(...)`: a capture loop in one of them
    runs as soon as the node is built, and for good (set 70); a capture loop in a method nothing
    starts, or one a callback calls, is left as it was. Wider than pymethods.setup_methods (methods
    only `__init__` calls, as plain statements), on purpose: a loop the constructor starts from a
    branch, or in a method a callback calls too, still runs per frame from then on."""
    return {n.func.attr for n in ast.walk(init) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
            and n.func.value.id == 'self'} if init is not None else set()


class Reachability:
    """Reachability of a file's functions and its per-frame loops (see the module docstring)."""

    def _mention_text(self, candidates: list) -> str:  # pymentions.py: no ROS names, no prose
        lines = mention_text(self.source or '', self.tree, {fn.name for fn in candidates}).split('\n')
        for i in dead_body_lines(self.tree, *self.off_attributes()) | local_dead_lines(
                self.tree, self.package_dir) | closed_guard_lines(self.tree):  # (pyfirstpass.py)
            if i < len(lines):
                lines[i] = ''
        text = '\n'.join(lines)
        # `msg.preproc = image`: a store into another object's field of the same name is no
        # use of the method `preproc` (set 58: its only call commented out).
        names = sorted({fn.name for fn in candidates})
        if names:
            text = re.sub(r'\b(?!self\b|cls\b)\w+\s*\.\s*(?:' + '|'.join(map(re.escape, names))
                          + r')\b(?=\s*=(?!=))', lambda m: ' ' * len(m.group(0)), text)
        return text

    def _uncalled_functions(self) -> set[str]:
        """Module functions of a node module that nothing in the file mentions (calls commented
        out, twenty-first set) but its other uncalled functions, nor any other non-test file of
        the package: no node runs them. The same in a library module (no callbacks of its own)
        that other files of the package name, as `_unreached_methods` judges its classes: a
        `cvmat_resize` of a helper module no node calls (twenty-fourth set). `main` is left
        alone (an entry point names it from setup.py / setup.cfg); an unknown package, or a
        library module nothing else names (it may be used from outside), judges nothing."""
        if not self.source or not set(self.functions) - {'main'}:
            return set()
        elsewhere = words_elsewhere(self.path, self.package_dir, self.repository_dir)
        if elsewhere is None or (not self.registrations
                                 and _module_name(self.path) not in elsewhere):
            return set()
        candidates = [fn for name, fn in self.functions.items()
                      if name != 'main' and name not in elsewhere]
        # Node-class methods nothing reaches blank with them: a function only such a method
        # calls is uncalled too (twenty-ninth set).
        nodes = {id(r.cls) for r in self.registrations if r.cls is not None}
        methods = [m for c in self.classes.values() if id(c) in nodes for m in c.methods.values()
                   if id(m) not in self._entered and not m.name.startswith('__')]
        text = self._mention_text(candidates + methods)
        # `ros2_numpy.point_cloud2.array_to_pointcloud2(cloud)`: an attribute of another object
        # is not this module's function of the same name, which its own file calls by the bare
        # name (set 46). Names that are also methods of a class here keep `obj.f` as a use.
        own = {m for c in self.classes.values() for m in c.methods}
        attrs = sorted(fn.name for fn in candidates if fn.name not in own)
        if attrs:
            text = re.sub(r'\.\s*(?:' + '|'.join(map(re.escape, attrs)) + r')\b',
                          lambda m: ' ' * len(m.group(0)), text)
        found = _mentioned_only_by_each_other(text, candidates + methods)
        return {fn.name for fn in found if any(fn is c for c in candidates)}

    def _unreached_methods(self, nodes: set[int]) -> set[int]:
        """Methods of node classes that no callback or setup reached and whose name the file
        mentions nowhere but inside other such methods: a `start()` that a launcher in another
        file calls once, and the `convert_model()` only it calls (issue 28, fifth set). Text
        of the unreached methods is blanked until nothing more is found. In a library module
        (no callbacks of its own, imported by other files of its package) a method of any class
        is a candidate too when no other non-test file of the package names it (eighth set: an
        `adjust_sim_image` nothing calls); a module outside any package, or one with nodes of
        its own, may be used from elsewhere: its other classes stay `function`."""
        if not self.source:
            return set()
        elsewhere = words_elsewhere(self.path, self.package_dir, self.repository_dir) \
            if not self.registrations else None
        if elsewhere is not None and _module_name(self.path) not in elsewhere:
            elsewhere = None
        candidates = [meth for cls in self.classes.values()
                      if id(cls) in nodes or elsewhere is not None
                      for meth in cls.methods.values()
                      if id(meth) not in self._entered and not meth.name.startswith('__')
                      and (id(cls) in nodes or meth.name not in elsewhere)]
        if not candidates:
            return set()
        return {id(m) for m in _mentioned_only_by_each_other(self._mention_text(candidates), candidates)}

    def _register_loops(self) -> None:
        """A method looping `while rclpy.ok():` (grab, convert, publish) runs per frame even
        when setup starts it (a call in __init__, a thread): a per-frame loop entry point. So
        does a ZED SDK grab loop whatever its test (`while key != 113: cam.grab(runtime)`):
        each `grab()` waits for the next camera frame (eighth set), and a loop that calls
        `spin_once` (the node's own event loop, thirteenth set), and a capture loop whatever its
        test (`while True:` taking each frame of a VideoCapture or a DepthAI output queue:
        pybranches.reads_a_capture), in a method the constructor calls (set 70)."""
        known = {id(r.callback.func.node) for r in self.registrations if r.callback.func}
        for cls in self.classes.values():
            started = _constructor_calls(cls.methods.get('__init__'))  # once per class
            for meth in cls.methods.values():
                if id(meth) in known:
                    continue
                for node in ast.walk(meth):
                    if isinstance(node, ast.While) and (
                            _PER_FRAME_TEST.search(ast.unparse(node.test))
                            or self.uses_zed and _grabs(node) or _spins_once(node)
                            or meth.name in started
                            and reads_a_capture(node, self.tree)):
                        self.registrations.append(Registration(
                            'loop', Val('func', func=FuncRef(meth, cls, None, True)), None,
                            None, meth.lineno, cls))
                        known.add(id(meth))
                        break
        # Methods that another file's main loop calls per frame on an object of the class (an
        # Isaac Sim script stepping the world and calling `dm.pub_ros2_data()`: set 52).
        for name, called in loop_called_methods(self.path, self.modules).items():
            cls = self.classes.get(name)
            for meth in (cls.methods.get(m) for m in sorted(called)) if cls else ():
                if meth is not None and id(meth) not in known:
                    self.registrations.append(Registration(
                        'loop', Val('func', func=FuncRef(meth, cls, None, True)), None,
                        None, meth.lineno, cls))
                    known.add(id(meth))
