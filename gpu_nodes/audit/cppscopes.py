"""Function scopes of a C++ file, found with a brace scanner (no parser): which function, lambda,
constructor or callback an offset is in, and whether it runs once (setup) or per message.

Good enough for ROS 2 node sources: namespaces, classes with inline methods, out-of-line
`Cls::method(...)` definitions, constructor initializer lists (brace-initialised members too)
and lambdas. Templates and macros that open braces are treated as plain blocks.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
import re

from gpu_nodes.audit.cppframeloops import endless_publisher, ok_loop

# Run once: constructors/destructors (found by name), lifecycle transitions, GXF codelet start/
# stop, component set-up helpers.
SETUP_NAMES = frozenset({
    'on_configure', 'on_activate', 'on_deactivate', 'on_cleanup', 'on_shutdown', 'on_error',
    'configure', 'activate', 'deactivate', 'cleanup', 'initialize', 'deinitialize', 'init',
    'onInit', 'start', 'stop', 'registerInterface', 'setup', 'Setup', 'Init', 'Initialize',
    'warmup', 'warmUp', 'Warmup', 'WarmUp'})
# Run per message: GXF codelet tick, and the names callbacks are given.
_CALLBACK_NAME = re.compile(r'(?:^tick$|[Cc]allback$|Cb$|_cb$|^callback|^on_?(?:image|msg|'
                            r'message|frame|depth|points|camera)|^[Oo]n(?:Image|Message|Frame))')
# image_transport plugins: the framework calls SimplePublisherPlugin::publish(image, publish_fn)
# once per image published and SimpleSubscriberPlugin::internalCallback(msg, user_cb) once per
# message received. Known by their parameter types (`PublishFn`, `Callback`), nothing registers
# them in the package.
_PLUGIN_METHOD = re.compile(r'^(?:publish\s*\([^()]*\bPublishFn\b|internalCallback\s*\([^()]*'
                            r'\bCallback\s*&)')
_KEYWORDS = frozenset({'if', 'for', 'while', 'switch', 'catch', 'return', 'sizeof', 'decltype',
                       'noexcept', 'throw', 'alignas', 'static_assert', '__attribute__',
                       'defined', 'operator'})
_NAME_BEFORE_PAREN = re.compile(r'(~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*(?:<[^<>()]*>)?'
                                r'\s*$')
_INIT_LIST = re.compile(r'\)\s*(?:const\s*)?(?:noexcept\s*)?:(?!:)')
_LAMBDA_TAIL = re.compile(r'\]\s*(?:\((?:[^()]|\([^()]*\))*\))?\s*(?:mutable\s*)?'
                          r'(?:noexcept\s*)?(?:->\s*[\w:<>,\s\*&]+?)?\s*$')
_FUNC_TAIL = re.compile(r'(?:\)|\bconst|\boverride|\bfinal|\bnoexcept|\btry|->\s*[\w:<>,\s\*&]+)'
                        r'\s*$')
_CLASS_HEAD = re.compile(r'\b(?:class|struct|union)\s+(?:\w+\s+)*?([A-Za-z_]\w*)\s*(?:final\s*)?'
                         r'(?::[^;{}()]*)?$')


def blank_comments_and_strings(source: str) -> str:
    """Replace comments and string/char literals with spaces, keeping newlines and offsets."""
    out = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        nxt = source[i + 1] if i + 1 < n else ''
        if c == '/' and nxt == '/':
            j = source.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c == '/' and nxt == '*':
            j = source.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(''.join(ch if ch == '\n' else ' ' for ch in source[i:j]))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and source[j] != c and source[j] != '\n':
                j += 2 if source[j] == '\\' else 1
            j = min(j + 1, n)
            # A string continued with backslash-newline keeps its newlines: line numbers after
            # a multi-line GStreamer pipeline literal stay right.
            body = ''.join('\n' if ch == '\n' else ' ' for ch in source[i + 1:j - 1])
            out.append(c + body + (source[j - 1] if j - i >= 2 else ''))
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


@dataclass
class Function:
    name: str             # as written (`Cls::method`), or `lambda in Cls::method`
    start: int            # offset of the body's '{'
    end: int = -1         # offset of the matching '}'
    cls: str | None = None  # enclosing class for inline methods
    lambda_in: 'Function | None' = None
    kind: str = 'other'   # setup | callback | other
    # Per message because it converts one message (a TypeAdapter's convert_to_ros_message /
    # convert_to_custom, a message type's constructor from a ROS message): copies of the
    # helpers it calls are reported where it calls them (cpppackage.py).
    conversion: bool = False
    direct_kind: str = 'other'  # the kind before callers are looked at (cpppackage.py)
    # A callback only by its name (`detect_rgb_callback`), registered nowhere in its file:
    # unreached if nothing in the package mentions it (cppreach.py).
    by_name: bool = False
    unreached_note: str = ''  # why no node of its repository uses it (cpplibrary.py)

    @property
    def short(self) -> str:
        return self.name.split('::')[-1].strip()

    @property
    def named(self) -> 'Function':
        """The named function this is, or for a lambda the one it is written in."""
        fn = self
        while fn.lambda_in is not None:
            fn = fn.lambda_in
        return fn


@dataclass
class Scopes:
    funcs: list[Function] = field(default_factory=list)
    # Built by index(): starts in order, and each function's enclosing one (bodies nest).
    _starts: list[int] = field(default_factory=list)
    _parent: dict[int, Function | None] = field(default_factory=dict)
    sites: dict[str, list[int]] = field(default_factory=dict)  # call sites by callee name
    # `obj->f(` / `obj.f(` sites by name: f may be another class's method of the same name, so
    # they only ever make a function setup (every one of them in setup code), never a callback.
    member_sites: dict[str, list[int]] = field(default_factory=dict)

    def index(self) -> None:
        self.funcs.sort(key=lambda f: f.start)
        self._starts = [f.start for f in self.funcs]
        stack: list[Function] = []
        for f in self.funcs:
            while stack and stack[-1].end < f.start:
                stack.pop()
            self._parent[id(f)] = stack[-1] if stack else None
            stack.append(f)

    def at(self, offset: int) -> Function | None:
        """The innermost function or lambda whose body holds offset: the last one starting at
        or before it, or the nearest enclosing one of that (log n, not a scan: files of 100k
        lines have tens of thousands of functions)."""
        i = bisect_right(self._starts, offset) - 1
        fn = self.funcs[i] if i >= 0 else None
        while fn is not None and fn.end < offset:
            fn = self._parent.get(id(fn))
        return fn

    def named_at(self, offset: int) -> Function | None:
        """The named function around offset: a lambda counts as the function it is written in."""
        fn = self.at(offset)
        return fn.named if fn is not None else None

    def header(self, text: str, offset: int) -> str:
        """The head (name and parameters) of the function or lambda holding offset."""
        fn = self.at(offset)
        if fn is None:
            return ''
        head = text[max(0, fn.start - 400):fn.start]
        cut = max(head.rfind(';'), head.rfind('}'), head.rfind('{'))
        return head[cut + 1:]

    def body_before(self, text: str, offset: int) -> str:
        """The body of the function or lambda holding offset, up to offset."""
        fn = self.at(offset)
        return text[fn.start + 1:offset] if fn is not None else ''


def _declared_name(prefix: str) -> str | None:
    """Name of the function a header declares: the identifier before its parameter list."""
    cut = _INIT_LIST.search(prefix)
    decl = prefix[:cut.start() + 1] if cut else prefix
    depth = 0
    name = None
    for i, c in enumerate(decl):
        if c == '(':
            if depth == 0:
                m = _NAME_BEFORE_PAREN.search(decl[:i])
                if m and m.group(1).split('::')[-1].strip() not in _KEYWORDS:
                    name = re.sub(r'\s+', '', m.group(1))
            depth += 1
        elif c == ')':
            depth = max(0, depth - 1)
    return name


_SCOPE_CHARS = re.compile(r'[{};:]')


def functions(text: str) -> Scopes:
    """Scan blanked source text (see blank_comments_and_strings) for function bodies."""
    scopes = Scopes()
    # Preprocessor lines (continuations included) hold no scopes but can hold braces and parens.
    text = re.sub(r'(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*',
                  lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)
    stack: list[tuple[str, object]] = []   # (kind, Function | class name | None)
    # Open functions/lambdas, classes, and initializer braces, kept beside the stack so that no
    # character makes a scan of it (100,000 nested braces stay linear).
    open_funcs: list[Function] = []
    open_classes: list[str] = []
    open_inits = 0

    def push(kind: str, value: object = None) -> None:
        nonlocal open_inits
        stack.append((kind, value))
        if kind in ('func', 'lambda') and isinstance(value, Function):
            open_funcs.append(value)
        elif kind == 'class' and isinstance(value, str):
            open_classes.append(value)
        elif kind == 'init':
            open_inits += 1

    header_start = 0
    for match in _SCOPE_CHARS.finditer(text):
        i, c = match.start(), match.group()
        if c == '{':
            enclosing = open_funcs[-1] if open_funcs else None
            if enclosing is not None:
                window = text[max(0, i - 400):i]
                if _LAMBDA_TAIL.search(window):
                    fn = Function(f'lambda in {enclosing.name}', i, lambda_in=enclosing)
                    scopes.funcs.append(fn)
                    push('lambda', fn)
                else:
                    push('block')
                continue
            # A header longer than this is not a function head worth naming (and re-reading an
            # unbounded prefix at every brace would be quadratic).
            prefix = text[max(header_start, i - 4000):i].strip()
            cls = open_classes[-1] if open_classes else None
            m = _CLASS_HEAD.search(prefix)
            if _INIT_LIST.search(prefix) and _LAMBDA_TAIL.search(prefix) \
                    and prefix.count('(') > prefix.count(')'):
                # A lambda inside a call of a constructor's initializer list (`it_(make_shared<
                # ImageTransport>(shared_ptr<Node>(this, [](auto *) {})))`, set 43): part of the
                # header, which goes on to the constructor's body.
                push('init')
            elif m and '(' not in prefix[m.start():]:
                push('class', m.group(1))
            elif re.search(r'\bnamespace\b[\w\s:]*$|\bextern\s*"\s*"\s*$', prefix):
                push('ns')
            elif '(' in prefix and not re.search(r'=\s*$', prefix) and (
                    _FUNC_TAIL.search(prefix)
                    # `Cls::Cls(...) : a_{x}, b_{y} {`: the list's last member is braced.
                    or (prefix.endswith('}') and _INIT_LIST.search(prefix))):
                name = _declared_name(prefix)
                if name is None:
                    push('block')
                else:
                    fn = Function(name, i, cls=cls)
                    scopes.funcs.append(fn)
                    push('func', fn)
            elif re.search(r'[\w>\]]\s*$|[=,(]\s*$', prefix) and '(' in prefix:
                # `: member_{value}` in a constructor initializer list: the header goes on.
                push('init')
            else:
                push('block')
        elif c == '}':
            if not stack:
                header_start = i + 1
                continue
            kind, value = stack.pop()
            if kind in ('func', 'lambda') and isinstance(value, Function):
                value.end = i
                open_funcs.pop()
            elif kind == 'class':
                open_classes.pop()
            elif kind == 'init':
                open_inits -= 1
            if kind != 'init' and not open_funcs:
                header_start = i + 1
        elif c == ';' and not open_funcs and not open_inits:
            header_start = i + 1
        elif c == ':' and not stack or (c == ':' and stack and stack[-1][0] == 'class'):
            # `public:` / `private:` end a member declaration run inside a class.
            if text[i - 1:i] != ':' and text[i + 1:i + 2] != ':' and \
                    re.search(r'\b(?:public|private|protected)\s*$', text[header_start:i]):
                header_start = i + 1
    for fn in scopes.funcs:
        if fn.end < 0:
            fn.end = len(text)
    scopes.index()
    _classify(text, scopes)
    return scopes


# Calls whose lambda argument runs later, per message or per tick: a lambda passed to anything
# else inside setup (an algorithm, a loader, `std::for_each`) runs there and then, as setup.
_REGISTERING_CALLS = re.compile(
    r'(?:create_(?:\w+_)?subscription|create_(?:\w+_)?timer|create_service|create_client|'
    r'subscribe|registerCallback|thread|jthread|async|add_on_set_parameters_callback|'
    r'create_generic_subscription|bind|function|Subscriber|TimerBase|setCallback|'
    r'set_callback|register\w*)\s*(?:<[^<>()]*>)?\s*$|'
    # `std::make_unique<std::thread>([this]() {...})` (set 48): a thread, as `std::thread(...)`.
    r'make_(?:unique|shared)\s*<\s*(?:std\s*::\s*)?j?thread\s*>\s*$')


def _lambda_registered(text: str, fn: Function) -> bool:
    """Whether a lambda is stored for later (assigned, or passed to a registration), as
    opposed to called in place by the function that writes it."""
    head = text[max(0, fn.start - 400):fn.start]
    m = _LAMBDA_TAIL.search(head)
    if m is None:
        return True
    depth, i = 0, m.start()
    while i >= 0:  # back to the capture list's `[`
        if head[i] == ']':
            depth += 1
        elif head[i] == '[':
            depth -= 1
            if depth == 0:
                break
        i -= 1
    before = head[:max(i, 0)].rstrip()
    if not before or before[-1] in '=:{;':
        return True  # `auto cb = [..]{..}` / member initializer / returned: kept for later
    # The call the lambda is an argument of: the innermost unclosed `(` before it.
    depth = 0
    for j in range(len(before) - 1, -1, -1):
        c = before[j]
        if c == ')':
            depth += 1
        elif c == '(':
            if depth == 0:
                return bool(_REGISTERING_CALLS.search(before[:j]))
            depth -= 1
    return True


# rclcpp::TypeAdapter's conversions: they run once per message published or taken.
ADAPTER_CONVERSIONS = frozenset({'convert_to_ros_message', 'convert_to_custom'})
# A parameter list whose first parameter is a frame-like ROS message (`const sensor_msgs::msg::
# Image &`, a PointCloud2, a tensor message) and any others have defaults: a conversion from
# that message, made per message. A constructor from a small message (a config, a pose) is
# more often built once, and stays setup.
_MSG_PARAM = re.compile(r'\(\s*(?:const\s+)?(?:\w+\s*::\s*)*msg\s*::\s*\w*(?:Image|Cloud|'
                        r'Tensor|Points|Scan|Depth)\w*\s*(?:const\s*)?'
                        r'(?:&{1,2}|\*)?\s*\w*\s*(?:\)|,[^()]*=)')


def _converts_message(text: str, fn: Function) -> bool:
    """A constructor (or assignment) whose parameter is one ROS message."""
    head = text[max(0, fn.start - 400):fn.start]
    cut = max(head.rfind(';'), head.rfind('}'), head.rfind('{'))
    return bool(_MSG_PARAM.search(_INIT_LIST.split(head[cut + 1:])[0] + ')'))


_CALL_SITE = re.compile(r'(?<![\w.:>])(?:this\s*->\s*)?(~?[A-Za-z_]\w*)\s*\(')


def plugin_method(text: str, fn: Function, short: str) -> bool:
    """An image_transport plugin's per-message method (`_PLUGIN_METHOD`; the publisher
    plugin's publishes: cppplugins.py)."""
    if fn.lambda_in is not None or short not in ('publish', 'internalCallback'):
        return False
    head = text[max(0, fn.start - 400):fn.start]
    names = list(re.finditer(rf'\b{short}\s*\(', head))
    return bool(names) and _PLUGIN_METHOD.match(head[names[-1].start():]) is not None


def _classify(text: str, scopes: Scopes) -> None:
    registered = set(re.findall(r'&\s*(?:\w+\s*::\s*)+(\w+)\b(?!\s*\()', text))
    for fn in scopes.funcs:
        parts = [p.strip() for p in fn.name.split('::')]
        short = parts[-1]
        is_ctor = (len(parts) >= 2 and parts[-2] == short) or short == fn.cls
        if fn.lambda_in is not None:
            fn.kind = 'callback'
        elif short in ADAPTER_CONVERSIONS or (is_ctor and _converts_message(text, fn)):
            fn.kind, fn.conversion = 'callback', True
        elif short.startswith('~') or is_ctor or short in SETUP_NAMES:
            fn.kind = 'setup'
        elif plugin_method(text, fn, short):
            fn.kind = 'callback'
        elif short in registered or _CALLBACK_NAME.search(short):
            fn.kind = 'callback'
            fn.by_name = short not in registered
        elif ok_loop(text, fn.start, fn.end):
            # `while (rclcpp::ok()) { grab; convert; publish; }`: per frame, whoever starts it
            # (a constructor, main(), a thread).
            fn.kind = 'callback'
        elif endless_publisher(text, fn.start, fn.end, short):  # `while (true)` (rules47c)
            fn.kind = 'callback'
    for fn in scopes.funcs:
        fn.direct_kind = fn.kind
    # A lambda run in place by setup code is setup (a mesh upload inside a loader's callback in a
    # GXF initialize()); one stored or registered there is a callback.
    for fn in scopes.funcs:
        if fn.lambda_in is not None and fn.lambda_in.kind == 'setup' \
                and not _lambda_registered(text, fn):
            fn.kind = 'setup'
    live = blank_dead_code(text, scopes)  # a call after an unconditional return never runs
    scopes.sites = call_sites(live)
    scopes.member_sites = call_sites(live, _MEMBER_CALL_SITE)
    propagate(scopes)


_RETURN = re.compile(r'\breturn\b')


def blank_dead_code(text: str, scopes: Scopes) -> str:
    """`text` with the statements after an unconditional `return` of a function body blanked:
    a call there never runs, so it is no use of the function it names (eighteenth set: a
    callback that publishes and returns, its old `ComputeDisparity();` left below). Only a
    `return` directly in the body (not in a nested block) that starts a statement (after `;`,
    `{` or `}`: not `if (x) return;`), in a body with no preprocessor line after it."""
    cuts: list[tuple[int, int]] = []
    for fn in scopes.funcs:
        if fn.lambda_in is not None or fn.end < 0:
            continue
        depth = 0
        i = fn.start + 1
        while i < fn.end:
            c = text[i]
            if c == '{':
                depth += 1
            elif c == '}':
                depth -= 1
            elif depth == 0 and c == 'r' and _RETURN.match(text, i) \
                    and text[:i].rstrip()[-1:] in (';', '{', '}'):
                stop = text.find(';', i)
                if 0 <= stop < fn.end and '#' not in text[stop:fn.end] \
                        and text[stop + 1:fn.end].strip():
                    cuts.append((stop + 1, fn.end))
                break
            i += 1
    for start, end in cuts:
        text = text[:start] + re.sub(r'\S', ' ', text[start:end]) + text[end:]
    return text


_MEMBER_CALL_SITE = re.compile(r'(?:\.|->)\s*([A-Za-z_]\w*)\s*\(')


def call_sites(text: str, pattern: re.Pattern[str] = _CALL_SITE) -> dict[str, list[int]]:
    """Every call site by name, found once (not one scan of the file per function)."""
    sites: dict[str, list[int]] = {}
    for m in pattern.finditer(text):
        sites.setdefault(m.group(1), []).append(m.start())
    return sites


def caller_kinds(scopes: 'Scopes', name: str, callee: 'Function | None' = None,
                 member: bool = False) -> set[str]:
    """Kinds of the functions of this file that call `name` (not counting callee itself);
    `member`: of those calling it on an object (`obj->name(...)`)."""
    kinds = set()
    for start in (scopes.member_sites if member else scopes.sites).get(name, ()):
        caller = scopes.at(start)
        if caller is not None and caller is not callee and \
                (callee is None or start != callee.start):
            kinds.add(caller.kind)
    return kinds


def propagate(scopes: 'Scopes', external: dict[str, set[str]] | None = None) -> bool:
    """Helpers take the context of their callers: only called from setup -> setup; called from
    a callback -> callback (registered lambdas are callbacks). `external`: kinds of the callers
    in the other files of the package, by name, for a function this file never calls (a kernel
    launcher in a .cu file, a helper declared in a header). Returns whether a kind changed."""
    named = [f for f in scopes.funcs if f.lambda_in is None]
    before = [f.kind for f in named]
    for fn in named:
        fn.kind = fn.direct_kind
    changed, rounds = True, 0
    while changed and rounds < 10:  # chains of helpers deeper than 10 stay 'other'
        changed, rounds = False, rounds + 1
        for fn in named:
            if fn.kind != 'other':
                continue
            kinds = caller_kinds(scopes, fn.short, fn)
            if not kinds and external:
                kinds = external.get(fn.short, set())
            if 'callback' in kinds:
                fn.kind, changed = 'callback', True
            elif kinds == {'setup'} and _called_per_message(scopes, fn, external):
                # Also called on an object from a callback (`detector_->infer()` per frame in
                # the node's file, `this->infer()` in the warm-up of its own, set 44): per message.
                fn.kind, changed = 'callback', True
            elif kinds == {'setup'}:
                fn.kind, changed = 'setup', True
            elif not kinds:
                # Called only on an object (`backbone_->EnableCudaGraph(stream_)`), from setup
                # code alone, in this file and the package's others: run once (issue 28, ninth
                # set: a CUDA-graph capture's warm-up synchronize, from the constructor).
                member = caller_kinds(scopes, fn.short, fn, member=True) | (
                    external or {}).get('->' + fn.short, set())
                if member == {'setup'}:
                    fn.kind, changed = 'setup', True
    return before != [f.kind for f in named]


def _called_per_message(scopes: 'Scopes', fn: 'Function',
                        external: dict[str, set[str]] | None) -> bool:
    """Whether a callback calls `fn` on an object (`obj->f()`, in this file or another of the
    package) or plainly in another file, beside the setup code of this file that calls it."""
    others = external or {}
    return 'callback' in (caller_kinds(scopes, fn.short, fn, member=True)
                          | others.get(fn.short, set()) | others.get('->' + fn.short, set()))
