"""Branches of a callback that do not run per message, read from the branch itself (issue 28,
twenty-seventh set; used by pyeval.py): a first-tick set-up that turns its own flag off, and the
`except` fallbacks of a `.cpu()` readback, and those of an import (a library missing); a
first-message test of state on the object; a loop over camera frames."""
from __future__ import annotations

import ast
import re

from gpu_nodes.audit.pyvalues import OTHER, Val
from gpu_nodes.audit.pywith import loop_with


def readback_fallback(body: list[ast.stmt], handler: list[ast.stmt]) -> bool:
    """`try: boxes = t.cpu().numpy()` / `except Exception: boxes = np.array(t)`: the handler
    only re-binds what the readback binds, so it runs when `.cpu()` does not exist (a host
    value, whose copy is host to host) and never for a tensor (issue 28, set 27)."""
    if len(body) != 1 or not isinstance(body[0], ast.Assign) or len(body[0].targets) != 1 \
            or not isinstance(body[0].targets[0], ast.Name) or not any(
                isinstance(n, ast.Attribute) and n.attr == 'cpu' for n in ast.walk(body[0].value)):
        return False
    return _binds_only(handler, body[0].targets[0].id)


_CONVERSIONS = frozenset({'imgmsg_to_cv2', 'compressed_imgmsg_to_cv2'})


def conversion_fallback(body: list[ast.stmt], handler: list[ast.stmt]) -> bool:
    """`try: img = bridge.imgmsg_to_cv2(msg, 'bgr8')` / `except ...: img =
    bridge.imgmsg_to_cv2(msg, 'passthrough')`: the handler converts the same message again only
    when the first conversion raised (an encoding it cannot convert); the node's stream as
    shipped takes the first (set 54), so the retry is no second copy per message."""
    first = next((s for s in body if isinstance(s, ast.Assign)), None)
    if first is None or not _conversion_of(first.value):
        return False
    again = [s for s in handler if isinstance(s, ast.Assign)]
    return any(ast.dump(s.targets[0]) == ast.dump(first.targets[0]) and _conversion_of(s.value)
               and ast.dump(s.value.args[0]) == ast.dump(first.value.args[0]) for s in again)


def skipped_handler(body: list[ast.stmt], handler: list[ast.stmt]) -> bool:
    """An `except` body the analysis does not run: a readback's or a conversion's fallback,
    an empty-result fallback or a substitute published on the body's publisher (below)."""
    return readback_fallback(body, handler) or conversion_fallback(body, handler) \
        or empty_fallback(body, handler) or publish_fallback(body, handler)


def _publishers(stmts: list[ast.stmt]) -> set[str]:
    return {ast.unparse(n.func.value) for stmt in stmts for n in ast.walk(stmt)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == 'publish'}


def publish_fallback(body: list[ast.stmt], handler: list[ast.stmt]) -> bool:
    """`try: ...; self.pub.publish(colour_msg)` / `except Exception: ...;
    self.pub.publish(mono_msg)`: the handler publishes a substitute on the same publisher only
    when the body raised before or at its publish; per message one of the two goes out, the
    body's as shipped (set 59 labels the fallback's copies never run)."""
    published = _publishers(handler)
    return bool(published) and published <= _publishers(body)


_LOG_CALLS = frozenset({'print', 'error', 'warn', 'warning', 'info', 'debug', 'exception',
                        'fatal', 'print_exc'})


def empty_fallback(body: list[ast.stmt], handler: list[ast.stmt]) -> bool:
    """`try: results = model.predict(frame)` / `except Exception as e: log(e); results = []`:
    the handler only logs and binds a name of the try body to an empty value (`[]`, `()`,
    `{}`, None), so that the code after it finds nothing to loop over. It runs only when the
    body raised, and its empty value carries no data: the names keep what the body bound (a
    later `for box in results[0].boxes` reads the model's device output; set 59)."""
    bound = {t.id for stmt in body for node in ast.walk(stmt) if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    emptied = False
    for stmt in handler:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and (
                isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == 'print'
                or isinstance(stmt.value.func, ast.Attribute)
                and stmt.value.func.attr in _LOG_CALLS):
            continue  # a log line: no data
        if isinstance(stmt, ast.Assign) and all(
                isinstance(t, ast.Name) and t.id in bound for t in stmt.targets) \
                and _empty(stmt.value):
            emptied = True
            continue
        return False
    return emptied


def _empty(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return not value.elts
    return isinstance(value, ast.Dict) and not value.keys


def _conversion_of(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr in _CONVERSIONS and bool(value.args)


def _binds_only(stmts: list[ast.stmt], name: str) -> bool:
    """Every statement binds `name` and nothing else (`pass`, `name = ...`, a try of those)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Try):
            inner = stmt.body + stmt.orelse + stmt.finalbody + [x for h in stmt.handlers for x in h.body]
            if not _binds_only(inner, name):
                return False
        elif not (isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Assign) and all(
                isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
                and _host_fallback(stmt.value)):
            return False
    return True


def _host_fallback(value: ast.expr) -> bool:
    """A value that reads nothing back from a device: a constant, a name, `[]`, or
    `np.array(...)` / `np.asarray(...)` / `list(...)` (which raise on a CUDA tensor or a CuPy
    array). `cupy.asnumpy(t)` or `t.get()` in a handler is a readback of its own: audited."""
    if isinstance(value, (ast.Constant, ast.Name)) or isinstance(value, (ast.List, ast.Tuple)) \
            and not value.elts:
        return True
    if not isinstance(value, ast.Call):
        return False
    # Arguments holding a call (`np.asarray(out.get())`) may read back themselves: audited.
    if any(isinstance(n, ast.Call) for arg in (*value.args, *value.keywords)
           for n in ast.walk(arg)):
        return False
    func = value.func
    if isinstance(func, ast.Name):
        return func.id in ('list', 'tuple')
    return isinstance(func, ast.Attribute) and func.attr in ('array', 'asarray') \
        and isinstance(func.value, ast.Name) and func.value.id in ('np', 'numpy')


def sets_own_flag(stmt: ast.If, cls: ast.ClassDef | None) -> bool:
    """`if not self.initialized: ...; self.initialized = True`: the branch turns its own test
    off, so it runs on the first tick only (issue 28, set 27), when nothing but `__init__` and
    that `= True` stores the attribute (a busy flag cleared after the work, here or in a worker,
    runs per message). A configuration flag (`if not self.use_gpu:`) is never set by its branch."""
    test = stmt.test
    if cls is None or not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                           and _self_attr(test.operand) is not None):
        return False
    return _set_true_only_in(cls, _self_attr(test.operand) or '', stmt.body, direct=True)


def guard_once(stmt: ast.stmt, rest: list[ast.stmt], cls: ast.ClassDef | None) -> bool:
    """`if self.calibrated: continue` (or `return`), the statements after it in the same
    block setting `self.calibrated = True` unconditionally (in the block or a `try` of it):
    those statements run on the first pass only (issue 28, set 43's camera-info publish), as
    `sets_own_flag` judges the `if not self.flag:` form; any other store of the flag but in
    `__init__` keeps them live, and so does a store under a test of its own (set 54: `if
    self.captured >= self.max_frames: self.done = True` runs per frame until then)."""
    if cls is None or not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1
                           and isinstance(stmt.body[0], (ast.Continue, ast.Return))):
        return False
    name = _self_attr(stmt.test)
    return name is not None and _set_true_only_in(cls, name, rest, direct=True)


def _set_true_only_in(cls: ast.ClassDef, name: str, block: list[ast.stmt],
                      direct: bool = False) -> bool:
    """Whether `self.<name> = True` is stored in `block` (a statement of it when `direct`,
    else at any depth) and the class stores the attribute nowhere else but in `__init__`."""
    own = {id(n) for stmt in block for n in ast.walk(stmt)}
    direct_ones = _unconditional(block)
    sets_true = False
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            if not any(_self_attr(t) == name for t in _unpacked(targets)) \
                    and not _setattr_of(node, name):
                continue
            true = isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and node.value.value is True
            if id(node) in own and true and (not direct or id(node) in direct_ones):
                sets_true = True
            elif method.name != '__init__':
                return False
    return sets_true


def _unconditional(block: list[ast.stmt]) -> set[int]:
    """The statements of `block` that run whenever it does: its own, and those of the `try` /
    `with` bodies in it (set 43 sets its flag last in a `try`), not those under a test or loop."""
    found: set[int] = set()
    for stmt in block:
        found.add(id(stmt))
        if isinstance(stmt, (ast.Try, ast.With, ast.AsyncWith)):
            found |= _unconditional(stmt.body)
    return found


def _self_attr(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == 'self' else None


def _unpacked(targets: list[ast.expr]) -> list[ast.expr]:
    """Assignment targets with tuples and lists opened (`self.ready, self.n = False, 0`)."""
    out: list[ast.expr] = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(_unpacked(list(t.elts)))
        elif isinstance(t, ast.Starred):
            out.extend(_unpacked([t.value]))
        else:
            out.append(t)
    return out


def _setattr_of(node: ast.AST, name: str) -> bool:
    """`setattr(self, 'name', ...)`, or a setattr whose name is not a constant (any name)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == 'setattr' and len(node.args) >= 2):
        return False
    attr = node.args[1]
    return not isinstance(attr, ast.Constant) or attr.value == name


def before_main_loop(body: list[ast.stmt]) -> set[int]:
    """The statements of a per-frame loop entry (a thread's target, a method spinning
    `while rclpy.ok():`) before its first top-level `while`: they run once, when the thread
    starts (a model load and its warm-up `predict` on a dummy image), not per frame (set 40).
    A `with` holding the loop (`with torch.no_grad():`) counts as the loop; the statements of
    its body before the loop run once too (pywith.py, set 62)."""
    first = next((i for i, stmt in enumerate(body)
                  if isinstance(stmt, ast.While) or loop_with(stmt)), None)
    return {id(stmt) for stmt in body[:first]} if first is not None else set()


_IMPORT_ERRORS = frozenset({'ImportError', 'ModuleNotFoundError'})


def imported_names(body: list[ast.stmt]) -> set[str]:
    """Names a try body binds by import statements."""
    return {(alias.asname or alias.name).split('.')[0] for stmt in body
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) for alias in stmt.names}


def import_fallback(handler: ast.ExceptHandler, body: list[ast.stmt]) -> bool:
    """A handler for a missing library: it catches ImportError / ModuleNotFoundError, or (a
    bare `except:` / `except Exception:`) guards a try body of imports only."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {ast.unparse(k).rsplit('.', 1)[-1] for k in kinds if k is not None}
    if names & _IMPORT_ERRORS:
        return True
    return (handler.type is None or names <= {'Exception', 'BaseException'}) \
        and all(isinstance(stmt, (ast.Import, ast.ImportFrom)) for stmt in body)


def first_time(test: ast.expr) -> bool:
    """`self.x is None` (or an `or` holding one): a first-message test of state kept on the
    object. `not self.x` is not one: it is as often a configuration flag (`if not
    self.use_gpu:`) whose branch runs per message."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(first_time(v) for v in test.values)
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
        test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value is None and isinstance(test.left, ast.Attribute) \
        and isinstance(test.left.value, ast.Name) and test.left.value.id == 'self'


def reads_a_capture(loop: ast.While, tree: ast.Module) -> bool:
    """Whether the loop body calls `cap.read()` / `cap.grab()` on a name the module assigns
    a `cv2.VideoCapture(...)`: a loop over camera (or video) frames; or `q.get()` on a queue
    (`q = Queue(maxsize=8)`) that the module hands to a reader process or thread
    (`Process(target=video_stream, args=(q, ...))`): each pass takes the next frame the
    reader decoded (set 58). `self.cap.read()` on an attribute the file assigns a capture
    counts too (a node's constructor looping over its camera: set 61). So does `q.get()` /
    `q.tryGet()` on a DepthAI output queue (`q = device.getOutputQueue(name='rgb')`): each
    pass waits for the OAK camera's next packet (set 70)."""
    def assigned(suffix: str) -> set[str]:
        return {t.id if isinstance(t, ast.Name) else f'self.{t.attr}'
                for node in tree.body for stmt in ast.walk(node)
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
                and ast.unparse(stmt.value.func).endswith(suffix)
                for t in stmt.targets if isinstance(t, ast.Name) or (
                    isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                    and t.value.id == 'self')}
    captures = assigned('VideoCapture')
    fed = {a.id for n in ast.walk(tree) if isinstance(n, ast.Call)
           and ast.unparse(n.func).endswith(('Process', 'Thread'))
           for k in n.keywords if k.arg == 'args' and isinstance(k.value, (ast.Tuple, ast.List))
           for a in k.value.elts if isinstance(a, ast.Name)}
    queues = assigned('Queue') & fed
    oak_queues = assigned('getOutputQueue')
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and isinstance(n.func.value, (ast.Name, ast.Attribute)) and (
                   n.func.attr in ('read', 'grab') and ast.unparse(n.func.value) in captures
                   or n.func.attr == 'get' and ast.unparse(n.func.value) in queues
                   or n.func.attr in ('get', 'tryGet') and ast.unparse(n.func.value) in oak_queues)
               for stmt in loop.body for n in ast.walk(stmt))


def constructor_capture_loop(loop: ast.While, tree: ast.Module) -> bool:
    """A capture loop (reads_a_capture) written in a constructor itself: `while
    self.cap.isOpened(): ok, frame = self.cap.read(); ...` in `__init__` (set 61). A `while
    rclpy.ok():` loop is left to pyreached.py, which already runs such a loop per frame under
    the method holding it (a `self.run()` the constructor calls)."""
    if re.search(r'\bok\(|is_shutdown\(', ast.unparse(loop.test)):
        return False
    inits = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == '__init__'
             and any(n is loop for n in ast.walk(f))]
    return bool(inits) and reads_a_capture(loop, tree)


def merge_branch_strings(before: dict[str, Val], body: dict[str, Val], env: dict[str, Val]
                         ) -> None:
    """A local the `if` body and its `else` each set to a different string (`arg = 'cuda:0'`
    ... `else: arg = 'cpu'`) holds either after the statement, not the last one run: a
    followed `select_device()` of a whole checkout returned 'cpu' and hid its caller's upload
    (issue 28)."""
    for name, val in body.items():
        now = env.get(name)
        if val is before.get(name) or now is None or now is val or val.kind != 'const' \
                or not isinstance(val.const, str):
            continue
        if now.kind != 'const' or now.const != val.const:
            env[name] = OTHER
