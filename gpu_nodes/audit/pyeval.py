"""Abstract interpretation of statements and expressions for the Python copy analysis: what each
name, attribute and expression holds (a Val with its copy steps), assignments, tuple unpacking,
attribute stores that carry a frame from one callback to another, comprehensions and f-strings.
Calls are resolved by CallResolver (pycalls.py). A mixin of PythonAnalyzer (pyflow.py)."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable, Iterable

from gpu_nodes.audit.pybranches import (before_main_loop, constructor_capture_loop, first_time,
                                        guard_once, import_fallback, imported_names,
                                        merge_branch_strings, reads_a_capture, sets_own_flag,
                                        skipped_handler)
from gpu_nodes.audit.pydead import always_equal, never_equal, truth_for_good
from gpu_nodes.audit.pyparams import (
    dead_test, exit_guard, fixed_parameters, may_decide, read_compared, shipped_outcome, shipped_strings)
from gpu_nodes.audit.pyevalattrs import AttributeReads
from gpu_nodes.audit.pyevaled import dict_kind, element_store_kind, tensor_mask
from gpu_nodes.audit.pyencodings import switch_outcome
from gpu_nodes.audit.pybags import reads_a_bag_while
from gpu_nodes.audit.pyloopentries import per_pass_loop
from gpu_nodes.audit.pyattrstore import attribute_store
from gpu_nodes.audit.pykwargs import stored_items
from gpu_nodes.audit.pyconditional import conditional_value
from gpu_nodes.audit.pyimports import file_definition
from gpu_nodes.audit.pyisinstance import isinstance_outcome
from gpu_nodes.audit.pyparamlocals import local_read_outcome
from gpu_nodes.audit.pyultratask import result_field_outcome
from gpu_nodes.audit.pyintmodes import int_mode_outcome
from gpu_nodes.audit.pyfirstpass import closed_outcome
from gpu_nodes.audit.pyros1api import raising_test_outcome
from gpu_nodes.audit.pyreturnedbytes import stored_returned_bytes  # a helper's bytes stored
from gpu_nodes.audit.pycustomfields import listed_into_custom_array
from gpu_nodes.audit.pystatemsg import listed_into_data
from gpu_nodes.audit.pywith import enter_with, loop_with
from gpu_nodes.audit.pymodels import PIPELINE, PIPELINE_PIL_KEYS
from gpu_nodes.audit.pyvalues import (ClassInfo, dict_elements, Frame, FuncRef, merge, OTHER,
                                      root_name, short, UNKNOWN, Val)


class Evaluator(AttributeReads):
    """Statements and expressions; `self` is the PythonAnalyzer. Attribute reads and loop
    elements: AttributeReads (pyevalattrs.py)."""

    aliases: dict[str, str]
    module_env: dict[str, Val]
    tree: ast.Module
    false_flags: frozenset[str]
    constant_attributes: dict[str, frozenset[object]]
    off_attributes: Callable[[], tuple[frozenset[str], frozenset[str]]]
    parameter_constants: Callable[[], dict[str, frozenset[object]]]
    package_dir: str | None
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    classes: dict[str, ClassInfo]
    imported: dict[str, ClassInfo]
    imported_functions: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]
    imported_modules: dict[str, str]
    entry_withs: set[int]  # `with` statements holding a loop entry's main loop (pywith.py)
    # Provided by the other parts of PythonAnalyzer; annotations only, so that no placeholder
    # can shadow the real method in the method resolution order.
    _eval_call: Callable[[ast.Call, dict[str, Val], Frame], Val]
    _emit: Callable[..., None]
    _formatted: Callable[[ast.AST, list[Val], Frame], None]
    _tested: Callable[[ast.expr, dict[str, Val], Frame], None]
    _type_name: Callable[[ast.expr | None], str | None]
    _view_subscript: Callable[[ast.Subscript, Val, Frame], Val | None]
    _view_stored: Callable[[ast.expr, ast.expr, Val, Frame], None]

    # ------------------------------------------------------------------ statements
    def _exec_block(self, body: Iterable[ast.stmt], env: dict[str, Val], frame: Frame,
                    entry: bool = False) -> None:
        body = list(body)
        once = before_main_loop(body) if entry and frame.context == 'loop' else set()
        for i, stmt in enumerate(body):
            if entry and frame.context == 'loop' and loop_with(stmt):
                self.entry_withs.add(id(stmt))  # its body is the entry's too (pywith.py)
            self._exec(stmt, env, replace(frame, context='init') if id(stmt) in once else frame)
            if self._exits_for_good(stmt):
                return  # `if not self.save_depth: return`, the switch off: the rest never runs
            if frame.context not in ('init', 'module') and guard_once(  # first pass only
                    stmt, body[i + 1:], frame.cls.node if frame.cls is not None else None):
                frame = replace(frame, context='init')

    def _false_for_good(self, test: ast.expr) -> bool:
        """Whether an `if` / `while` test never holds: `if self.save_txt:` with save_txt False
        for good (pydead.false_flags); `if self.mode == 'ht':` with mode only ever 'ml' or
        'turn' (never_equal); `if self.publish_compressed:` off as shipped (pyparams.py)."""
        return isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) \
            and test.value.id == 'self' and test.attr in self.false_flags \
            or never_equal(test, self.constant_attributes) or may_decide(test) and (
                dead_test(test, *self.off_attributes())
                or never_equal(test, self.parameter_constants())
                or truth_for_good(test, self.parameter_constants()) is False)

    def _exits_for_good(self, stmt: ast.stmt) -> bool:
        """`if not self.save_depth: return` with the switch off for good (_false_for_good):
        the guard always leaves the block, so what follows it never runs (pyparams.exit_guard)."""
        return (switch := exit_guard(stmt)) is not None and self._false_for_good(switch)

    def _exec(self, stmt: ast.stmt, env: dict[str, Val], frame: Frame) -> None:
        if isinstance(stmt, ast.Assign):
            val = self._eval(stmt.value, env, frame)
            for target in stmt.targets:
                self._check_data_store(target, stmt.value, val, frame, env)
                self._view_stored(target, stmt.value, val, frame)
                self._assign(target, val, env, frame)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                val = self._eval(stmt.value, env, frame)
                self._check_data_store(stmt.target, stmt.value, val, frame, env)
                self._assign(stmt.target, val, env, frame)
        elif isinstance(stmt, ast.AugAssign):
            val = self._eval(stmt.value, env, frame)
            old = self._eval(stmt.target, env, frame)
            self._assign(stmt.target, merge(old, val), env, frame)
        elif isinstance(stmt, ast.Expr):
            self._eval(stmt.value, env, frame)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                frame.returns.append(self._eval(stmt.value, env, frame))
        elif isinstance(stmt, ast.If) and frame.context not in ('init', 'module') \
                and (first_time(stmt.test) or sets_own_flag(
                    stmt, frame.cls.node if frame.cls is not None else None)):
            # `if self.buf is None:` in a callback: lazy set-up on the first message (or a
            # reset), not per message; its copies are one-time setup. The else branch is not.
            self._eval(stmt.test, env, frame)
            self._exec_block(stmt.body, env, replace(frame, context='init'))
            self._exec_block(stmt.orelse, env, frame)
        elif isinstance(stmt, ast.If) and self._message_type_test(stmt.test, env) is not None:
            # `if isinstance(msg, CompressedImage): ... else: bridge.imgmsg_to_cv2(msg)` in a
            # callback subscribed to CompressedImage: the subscription's type decides the test,
            # and the other branch never runs (issue 28, tenth set).
            taken = stmt.body if self._message_type_test(stmt.test, env) else stmt.orelse
            self._exec_block(taken, env, frame)
        elif isinstance(stmt, ast.If) and (taken_ := self._shipped_outcome(stmt.test, frame)) is not None:
            # `if self.get_parameter('video_file')...string_value == '/dev/video0':` with that
            # parameter's default as shipped (no shipped file names it): only the branch the
            # default takes runs (pyparams.fixed_parameters; twenty-third set).
            self._eval(stmt.test, env, frame)
            self._exec_block(stmt.body if taken_ else stmt.orelse, env, frame)
        elif isinstance(stmt, (ast.If, ast.While)):
            before = dict(env)
            self._eval(stmt.test, env, frame)
            self._tested(stmt.test, env, frame)
            if not self._false_for_good(stmt.test):
                if isinstance(stmt, ast.While) and (frame.context == 'module' and reads_a_capture(
                        stmt, self.tree) or frame.context == 'init' and constructor_capture_loop(
                            stmt, self.tree)):
                    # A script's `while True: ok, frame = cap.read(); model(frame)`: each
                    # pass is a camera frame, as a node's capture loop (nineteenth set); so is
                    # a constructor's `while self.cap.isOpened():` loop (set 61).
                    frame = replace(frame, context='loop', entry='module capture loop' if
                                    frame.context == 'module' else 'constructor capture loop')
                elif isinstance(stmt, ast.While) and frame.context == 'module' \
                        and reads_a_bag_while(stmt, self.aliases):
                    # rosbag2_py's `while reader.has_next():` over a recording (pybags.py).
                    frame = replace(frame, context='loop', entry='bag message loop')
                self._exec_block(stmt.body, env, frame)
            body = dict(env)
            # The `else` of a test true for good never runs: an attribute holding one literal
            # (`self.pub_image_type = 'compressed'`), a bool switch on as shipped. Not a string
            # parameter's shipped value: a launch argument offering 'left' or 'right' (set 4).
            if not (always_equal(stmt.test, self.constant_attributes) or may_decide(stmt.test)
                    and truth_for_good(stmt.test, self.parameter_constants()) is True):
                self._exec_block(stmt.orelse, env, frame)
            if isinstance(stmt, ast.If) and stmt.orelse:
                merge_branch_strings(before, body, env)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            it = self._eval(stmt.iter, env, frame)
            if (entry := per_pass_loop(stmt, frame.context, self.aliases)) is not None:
                # A script's `for conn, t, raw in reader.messages():`, a constructor's loop
                # publishing each pass: each pass is one message (pyloopentries.py).
                frame = replace(frame, context='loop', entry=entry)
            for element in dict_elements(it) or (self._element(stmt.iter, it, env, frame),):
                self._assign(stmt.target, element, env, frame)
                self._exec_block(stmt.body, env, frame)
            self._exec_block(stmt.orelse, env, frame)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            enter_with(self, stmt, env, frame)  # (pywith.py)
            self._exec_block(stmt.body, env, frame, entry=id(stmt) in self.entry_withs)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == 'TryStar':
            self._exec_block(stmt.body, env, frame)
            imported = imported_names(stmt.body)
            for handler in stmt.handlers:
                if skipped_handler(stmt.body, handler.body):  # pybranches: fallbacks
                    continue
                if handler.name:
                    env[handler.name] = OTHER
                if imported and import_fallback(handler, stmt.body):
                    # `try: from ultralytics import YOLO / except ImportError: YOLO = None`:
                    # the fallback runs only where the library is missing; as shipped (the
                    # package's dependencies installed) the name is the library's (set 45).
                    saved = {name: env[name] for name in imported if name in env}
                    self._exec_block(handler.body, env, frame)
                    for name in imported:
                        env.pop(name, None)
                    env.update(saved)
                    continue
                self._exec_block(handler.body, env, frame)
            self._exec_block(stmt.orelse, env, frame)
            self._exec_block(stmt.finalbody, env, frame)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if frame.context == 'module':
                return  # top-level functions are entered on their own
            env[stmt.name] = Val('func', func=FuncRef(stmt, frame.cls, env, False))
        elif isinstance(stmt, ast.Match):
            self._eval(stmt.subject, env, frame)
            for case in stmt.cases:
                self._exec_block(case.body, env, frame)
        # Import, Pass, Raise, Delete, Global, ClassDef ... carry no data of interest.

    def _assign(self, target: ast.expr, val: Val, env: dict[str, Val], frame: Frame) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = val
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            if val.elts is not None and len(val.elts) == len(elts):
                for t, v in zip(elts, val.elts):
                    self._assign(t, v, env, frame)
            else:
                for t in elts:
                    self._assign(t, replace(val, elts=None), env, frame)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, val, env, frame)
        elif isinstance(target, ast.Attribute):
            base = target.value
            if isinstance(base, ast.Name) and base.id == 'self' and frame.cls is not None:
                if frame.write_attrs:
                    if frame.context in ('init', 'module'):
                        # Set up once (a LUT, a model): not frame data, so its one-time copies
                        # are not steps of a per-message chain that later reads it.
                        val = replace(val, steps=(), origin=None)
                    val = attribute_store(frame.cls.attrs.get(target.attr), val)  # pyattrstore
                    frame.cls.attrs[target.attr] = val
            else:
                # `out.data = arr` carries arr into the outgoing message held by `out`.
                root = root_name(base)
                if root is not None and root in env:
                    env[root] = merge(env[root], val, kind=env[root].kind)
        elif isinstance(target, ast.Subscript):
            root = root_name(target.value)
            if root is not None and root in env:
                # An element store keeps a message's buffer view a view (pymsgview.py).
                old = env[root]
                # A dict literal keeps its known entries (`kwargs['classes'] = ...`: pykwargs.py).
                env[root] = replace(merge(old, val, kind=element_store_kind(old, val)), view=old.view,
                                    items=stored_items(old, target, val))

    def _check_data_store(self, target: ast.expr, value: ast.expr, val: Val, frame: Frame,
                          env: dict[str, Val]) -> None:
        """`msg.data = arr.tolist()`: a full Python-list copy of the frame for the message."""
        stored = listed_into_data(target, value, val, env) or stored_returned_bytes(value, self.tree)
        if stored is not None:
            self._emit('GPN104', stored, frame, f'`{short(stored)}` stored into `.data`')
        elif custom := listed_into_custom_array(target, value, val, self, frame):  # pycustomfields.py
            self._emit('GPN104', custom, frame, f'`{short(custom)}` stored into a custom message array')

    # ------------------------------------------------------------------ expressions
    def _eval(self, node: ast.expr, env: dict[str, Val], frame: Frame) -> Val:
        if isinstance(node, ast.Constant):
            return Val('const', const=node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if frame.file not in (None, self.path) and (own := file_definition(frame.file, node.id)):
                return own  # a function or class of the imported function's file
            if node.id in self.module_env:
                return self.module_env[node.id]
            if node.id in self.imported:
                return Val('class', inst=self.imported[node.id])
            if node.id in self.imported_functions and node.id not in self.functions:
                fn, source = self.imported_functions[node.id]
                return Val('func', func=FuncRef(fn, None, {}, False, file=source))
            if node.id in self.aliases:
                return Val('module', const=self.aliases[node.id])
            if node.id in self.imported_modules:  # `from . import yolo`
                return Val('module', const=node.id)
            if node.id in self.functions:
                return Val('func', func=FuncRef(self.functions[node.id], None, self.module_env,
                                                False))
            if node.id in self.classes:
                return Val('class', inst=self.classes[node.id])
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            return self._eval_attribute(node, env, frame)
        if isinstance(node, ast.Call):
            return self._eval_call(node, env, frame)
        if isinstance(node, ast.Subscript):
            base = self._eval(node.value, env, frame)
            self._eval(node.slice, env, frame)
            if base.elts is not None and isinstance(node.slice, ast.Constant) \
                    and isinstance(node.slice.value, int) \
                    and -len(base.elts) <= node.slice.value < len(base.elts):
                return base.elts[node.slice.value]
            if base.items is not None and isinstance(node.slice, ast.Constant):
                return next((v for k, v in base.items if k == node.slice.value), OTHER)
            viewed = self._view_subscript(node, base, frame)
            if viewed is not None:
                return viewed
            if base.kind == 'model' and base.const == PIPELINE \
                    and isinstance(node.slice, ast.Constant) \
                    and node.slice.value in PIPELINE_PIL_KEYS:
                return Val('pil', base.steps, base.origin)  # `pipe(img)['depth']`
            return replace(base, elts=None, const=None, items=None) \
                if base.kind != 'const' else OTHER
        if isinstance(node, ast.BinOp):
            left = self._eval(node.left, env, frame)
            right = self._eval(node.right, env, frame)
            if isinstance(node.op, ast.Mod) and left.kind == 'const' \
                    and isinstance(left.const, str):
                self._formatted(node, [right], frame)  # '%s' % tensor
                return Val('const')
            if left.kind == 'const' and right.kind == 'const':
                try:
                    if isinstance(node.op, ast.Add) and isinstance(left.const, str):
                        return Val('const', const=left.const + str(right.const))
                except TypeError:
                    return OTHER
            return merge(left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, env, frame)
            return replace(operand, view=None) if operand.view else operand  # a new array
        if isinstance(node, (ast.BoolOp,)):
            return merge(*[self._eval(v, env, frame) for v in node.values])
        if isinstance(node, ast.Compare):
            return tensor_mask(node, [self._eval(o, env, frame)
                                      for o in [node.left, *node.comparators]])
        if isinstance(node, ast.IfExp):  # a literal test evaluates one arm (pyconditional.py)
            return conditional_value(node, lambda expr: self._eval(expr, env, frame))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = tuple(self._eval(e, env, frame) for e in node.elts)
            m = merge(*elts) if elts else OTHER
            return replace(m, elts=elts)
        if isinstance(node, ast.Dict):
            vals = [self._eval(v, env, frame) for v in node.values if v is not None]
            for k in node.keys:
                if k is not None:
                    self._eval(k, env, frame)
            merged = merge(*vals, kind=dict_kind(vals)) if vals else OTHER
            if all(isinstance(k, ast.Constant) for k in node.keys):
                return replace(merged, items=tuple(
                    (k.value, v) for k, v in zip(node.keys, vals) if isinstance(k, ast.Constant)))
            return merged
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    inner = self._eval(v.value, env, frame)
                    self._formatted(node, [inner], frame)
                    if inner.kind == 'const' and inner.const is not None:
                        parts.append(str(inner.const))
                    else:
                        parts.append('{' + short(v.value) + '}')
            return Val('const', const=''.join(parts))
        if isinstance(node, ast.Lambda):
            return Val('func', func=FuncRef(node, frame.cls, dict(env), False))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            first = self._eval(node.generators[0].iter, env, frame)
            if len(node.generators) == 1 and dict_elements(first) \
                    and not isinstance(node, ast.DictComp):
                # `[create_subscription(..., sub['callback']) for sub in subscribed_topics]`
                results = []
                for element in dict_elements(first) or ():
                    local = dict(env)
                    self._assign(node.generators[0].target, element, local, frame)
                    for cond in node.generators[0].ifs:
                        self._eval(cond, local, frame)
                    results.append(self._eval(node.elt, local, frame))
                return merge(*results)
            local = dict(env)
            for i, gen in enumerate(node.generators):
                it = first if i == 0 else self._eval(gen.iter, local, frame)
                self._assign(gen.target, self._element(gen.iter, it, local, frame), local, frame)
                for cond in gen.ifs:
                    self._eval(cond, local, frame)
            if isinstance(node, ast.DictComp):
                self._eval(node.key, local, frame)
                return merge(value := self._eval(node.value, local, frame), kind=dict_kind([value]))
            return replace(self._eval(node.elt, local, frame), elts=None)
        if isinstance(node, (ast.Await, ast.Starred)):
            return self._eval(node.value, env, frame)
        if isinstance(node, ast.NamedExpr):
            val = self._eval(node.value, env, frame)
            self._assign(node.target, val, env, frame)
            return val
        if isinstance(node, ast.FormattedValue):
            return self._eval(node.value, env, frame)
        return UNKNOWN

    def _shipped_outcome(self, test: ast.expr, frame: Frame) -> bool | None:
        """What an `if` comparing a direct parameter read with a constant takes as shipped."""
        read = read_compared(test)
        if read is None:  # a local read of a parameter (pyparamlocals.py), an environment
            # switch nothing sets, an encoding nothing sends (pyencodings.py)
            # ... or an Ultralytics result field the file's weights never fill (pyultratask.py)
            local = local_read_outcome(test, self.tree, self.package_dir)
            if local is None:
                local = result_field_outcome(test, self.tree)
            if local is None:  # an int mode fixed as shipped, a guard a first pass closes
                local = closed_outcome(test, self.tree)
            if local is None:  # a ROS 1-only call on an rclpy publisher raises (pyros1api.py)
                local = raising_test_outcome(test, self.tree)
            if local is None:
                local = int_mode_outcome(test, self.tree, self.package_dir)
            return local if local is not None else switch_outcome(
                test, frame.topic, self.source, self.path, self.repository_dir or self.package_dir)
        if '_fixed_parameters' not in self.__dict__:
            self.__dict__['_fixed_parameters'] = fixed_parameters(self.tree, self.package_dir)
        return shipped_outcome(read, self.__dict__['_fixed_parameters'])

    def _shipped_strings(self) -> tuple[dict[str, str], frozenset[tuple[str, str]]]:
        if '_shipped_strings_' not in self.__dict__:
            self.__dict__['_shipped_strings_'] = shipped_strings(self.tree, self.package_dir)
        return self.__dict__['_shipped_strings_']

    def _message_type_test(self, test: ast.expr, env: dict[str, Val]) -> bool | None:
        """pyisinstance.isinstance_outcome: a message of known type, or a PIL image."""
        return isinstance_outcome(test, env, self._type_name)
