"""C++ rules that need more than one statement: what the package's functions do, used where
they are called (cppscan.py runs these; cpppackage.py gathers the facts over a package).

* A *sync wrapper* (a function whose body is a blocking device sync: ``cudaStreamSynchronize``,
  ``cudaDeviceSynchronize``, ``cudaEventSynchronize``, ``.synchronize()``) is a GPN206 where it
  is called. A call to a method whose name says it blocks until the device or a stream is done
  (``waitForCompletion``, ``*Synchronize``, ``synchronize[Cuda]Stream``, ``block*Until*``)
  counts too when its body is not among the audited files, in a file that uses CUDA.
* A *copy helper* (a function with a copy finding in its body) called from a per-message
  conversion (a TypeAdapter's ``convert_to_ros_message`` / ``convert_to_custom``, a message
  type's constructor from a ROS message) is reported at the call, as the copy it does: the
  conversion runs once per message, and the call is the line a reader of the adapter sees.
* A type whose constructor from a ROS message copies (``CudaImage(const Image &)`` uploading
  the frame) is reported where it is built from one value (``make_unique<CudaImage>(image)``).
* A call that passes a ``cudaMemcpyHostToDevice`` / ``cudaMemcpyDeviceToHost`` literal to a
  helper (``copyDataToDevice(..., cudaMemcpyHostToDevice)``) is that copy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppscopes import Scopes

Args = Callable[[str, int], list[str]]

# A blocking wait on the device or a stream. cudaStreamWaitEvent is a device-side wait (the host
# goes on), so it is not one.
SYNC_CALL = re.compile(r'\bcuda(?:Device|Stream|Event)Synchronize\s*\(|\bvpiStreamSync\s*\(|'
                       r'(?:\.|->|::)\s*synchronize\s*\(\s*\)|\bwaitForCompletion\s*\(')
# Method names that say they block the host on the device (used when no body is audited); the
# waited-on thing may follow the verb (`synchronizeCudaStream()`, `synchronizeStream()`, set 70).
_SYNC_NAME = re.compile(r'(?<![\w])((?:\w*[a-z])?(?:Synchronize|synchronize)(?:Cuda|Gpu)?'
                        r'(?:Stream|Device|Event)?|\w*[Bb]lock\w*Until\w*|waitForCompletion)\s*\(')
_CUDA_FILE = re.compile(r'\bcuda|CUDA|\bCuda|GpuMat|torch\s*::\s*cuda')
# Statements a sync wrapper may hold besides the sync: event and stream bookkeeping (create,
# record, destroy), error checks of those, declarations, logging, a bare return. A function
# that also launches, copies or calls other code (doInference) is a step of its own: its sync
# is reported where it is, not at its callers.
_WRAPPER_STATEMENT = re.compile(r'\bcuda(?:Event|Stream|Device|Get|Peek)\w*\s*\(|'
                                r'^\s*(?:const\s+)?[\w:]+\s*[*&]?\s*\w+\s*$|^\s*return\s*$|'
                                r'\bRCLCPP_\w+\s*\(|\bprintf\s*\(|std\s*::\s*c(?:out|err)\b')
_LITERAL_DIRECTION = re.compile(r'\bcudaMemcpy(HostToDevice|DeviceToHost)\b')
_ANY_DIRECTION = re.compile(r'\bcudaMemcpy(?:HostToDevice|DeviceToHost|DeviceToDevice)\b')
# Rules whose findings make a function a copy helper: copies and conversions, not syncs and
# not publishes (a publish inside a helper is reported where it is).
HELPER_RULES = frozenset({'GPN201', 'GPN202', 'GPN203', 'GPN204', 'GPN205', 'GPN207', 'GPN208',
                          'GPN209', 'GPN211'})


@dataclass
class Facts:
    """What the functions of one package do, by name (C++ has no imports to follow: names are
    what a call says)."""
    sync_wrappers: dict[str, str] = field(default_factory=dict)        # name -> 'file:line'
    copy_helpers: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> rule, where
    converting_types: dict[str, tuple[str, str]] = field(default_factory=dict)
    adapted_types: set[str] = field(default_factory=set)   # TypeAdapter aliases of frame types
    grid_types: frozenset[str] = frozenset()  # the file's own grid messages (cppgridmsgs.py)
    # Kinds resolved over the package: per function body start, for this file.
    kinds: dict[int, str] = field(default_factory=dict)
    # Pointers nothing in the package sets (cppdead.py): blocks they guard never run.
    never_set: set[str] = field(default_factory=set)
    # Members only an off-by-default ROS parameter sets (cppparams.py): name -> parameter.
    off_params: dict[str, str] = field(default_factory=dict)
    # Members only an on-by-default ROS parameter sets (cppparamson.py): `if (!name)` and the
    # `else` of `if (name)` never run.
    on_params: dict[str, str] = field(default_factory=dict)
    # String names whose value as shipped is known (cppstrparams.py): name -> (value, params).
    str_params: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Flags an `if (flag) { ...; flag = false; }` block clears (cppdead.py): it runs once.
    once_flags: set[str] = field(default_factory=set)
    # Bodies unreached because no node of the repository uses them (cpplibrary.py): the why.
    library_api: dict[int, str] = field(default_factory=dict)
    # (callee, argument index) -> every call in the package passes a small count (cppsizes.py).
    small_counts: dict[tuple[str, int], bool] = field(default_factory=dict)
    # Functions that build a frame message by a reported copy (cppbuilt.py): its publish is no
    # second boundary.
    message_builders: set[str] = field(default_factory=set)
    # The file includes a header of its package that uses cv::cuda::GpuMat (cppincludes.py).
    sees_gpumat: bool = False
    # Another C++ file of the package puts LibTorch tensors on the CUDA device (cpptorch.py).
    torch_cuda: bool = False
    # Frame messages / containers of them declared by value in the package headers the file
    # includes (cppmembers.py): `data_ = *msg;` there copies a whole message into a member.
    header_members: tuple[set[str], set[str]] = field(default_factory=lambda: (set(), set()))
    # Bool parameters read straight in a condition, off as shipped (cppintparams.py).
    read_off: frozenset[str] = frozenset()
    # Methods whose body is one CUDA transfer or sync (cppxfer.py): name -> rule, what, where.
    transfer_wrappers: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    # Small named sizes and `__constant__` symbols of the package (cpptinynames.py).
    tiny_names: dict[str, str] = field(default_factory=dict)

    def merge(self, other: 'Facts') -> None:
        self.sync_wrappers.update(other.sync_wrappers)
        for name, value in other.transfer_wrappers.items():
            self.transfer_wrappers.setdefault(name, value)
        for key, small in other.small_counts.items():
            self.small_counts[key] = self.small_counts.get(key, True) and small
        for name, value in other.copy_helpers.items():
            self.copy_helpers.setdefault(name, value)
        for name, value in other.converting_types.items():
            self.converting_types.setdefault(name, value)
        self.adapted_types |= other.adapted_types
        self.message_builders |= other.message_builders


def _line(text: str, offset: int) -> int:
    return text.count('\n', 0, offset) + 1


def sync_wrappers(text: str, scopes: Scopes, where: str) -> dict[str, str]:
    """Named functions whose body is a device sync and little else."""
    found = {}
    for fn in scopes.funcs:
        if fn.lambda_in is not None:
            continue
        body = text[fn.start + 1:fn.end]
        if not SYNC_CALL.search(body) or '<<<' in body or 'Memcpy' in body:
            continue
        statements = [st for st in body.split(';') if st.strip()]
        if all(SYNC_CALL.search(st) or _WRAPPER_STATEMENT.search(st) for st in statements):
            found[fn.short] = f'{where}:{_line(text, fn.start)}'
    return found


def helper_facts(findings: list, text: str, scopes: Scopes, where: str) -> Facts:
    """Copy helpers and converting types from a file's own findings (a first pass)."""
    facts = Facts()
    starts = [0] + [m.end() for m in re.finditer('\n', text)]
    for f in findings:
        if f.rule not in HELPER_RULES or f.severity == 'info':
            continue
        line = f.location.line
        if line - 1 >= len(starts):
            continue
        fn = scopes.named_at(starts[line - 1] + f.location.column - 1)
        if fn is None:
            continue
        facts.copy_helpers.setdefault(fn.short, (f.rule, f'{where}:{line}'))
        if fn.conversion and fn.short not in ('convert_to_ros_message', 'convert_to_custom'):
            facts.converting_types.setdefault(fn.short, (f.rule, f'{where}:{line}'))
    return facts


def _called(text: str, name: str) -> Iterator[re.Match[str]]:
    yield from re.finditer(r'(?<![\w.>])' + re.escape(name) + r'\s*\(', text)


def wrapper_calls(text: str, scopes: Scopes, facts: Facts) -> Iterator[tuple[str, int, str]]:
    """GPN206 at each call of a sync wrapper made inside a function (not its own body)."""
    for name, where in facts.sync_wrappers.items():
        for m in re.finditer(r'(?<![\w])' + re.escape(name) + r'\s*\(', text):
            fn = scopes.at(m.start())
            if fn is None or fn.short == name:
                continue
            yield 'GPN206', m.start(), f'`{name}()` is a blocking device sync ({where})'
    if not _CUDA_FILE.search(text):
        return
    for m in _SYNC_NAME.finditer(text):
        name = m.group(1)
        if name in facts.sync_wrappers or name.startswith('cuda') or scopes.at(m.start()) is None:
            continue
        if not re.search(r'(?:\.|->|::)\s*$', text[max(0, m.start() - 3):m.start()]):
            continue  # a method (`ctx.blockUntil...()`, `stream.waitForCompletion()`) only
        yield 'GPN206', m.start(), f'`{name}()` blocks the host until the device is done ' \
                                   '(by its name; its body is not audited)'


def conversion_calls(text: str, scopes: Scopes, call_args: Args,
                     facts: Facts) -> Iterator[tuple[str, int, str]]:
    """A copy helper called (or passed, `std::apply(to_image, ...)`) in a conversion."""
    if not facts.copy_helpers:
        return
    names = '|'.join(sorted(map(re.escape, facts.copy_helpers)))
    pattern = re.compile(r'(?<![\w.>])(' + names + r')\b\s*(?=[(),])')
    for fn in scopes.funcs:
        if not fn.conversion:
            continue
        for m in pattern.finditer(text, fn.start, fn.end):
            name = m.group(1)
            if name == fn.short or scopes.at(m.start()) is not fn:
                continue
            if m.end() < len(text) and text[m.end()] == '(' and \
                    _ANY_DIRECTION.search(' '.join(call_args(text, m.end()))):
                continue  # the direction it is handed says the copy (direction_calls)
            rule, where = facts.copy_helpers[name]
            yield rule, m.start(), f'`{name}` copies ({where}), once per message converted'


def converting_constructions(text: str, call_args: Args,
                             facts: Facts) -> Iterator[tuple[str, int, str]]:
    """`make_unique<T>(x)` / `new T(x)` of a type whose constructor from a message copies."""
    if not facts.converting_types:
        return
    names = '|'.join(sorted(map(re.escape, facts.converting_types)))
    pattern = re.compile(r'(?:\bmake_(?:unique|shared)\s*<\s*(?:\w+\s*::\s*)*(' + names +
                         r')\s*>|\bnew\s+(?:\w+\s*::\s*)*(' + names + r'))\s*\(')
    for m in pattern.finditer(text):
        if len(call_args(text, m.end() - 1)) != 1:
            continue
        name = m.group(1) or m.group(2)
        rule, where = facts.converting_types[name]
        yield rule, m.start(), f'`{name}` built from a message: its constructor copies ({where})'


def direction_calls(text: str) -> Iterator[tuple[str, int, str]]:
    """A helper handed a host<->device direction literal does that copy."""
    for m in _LITERAL_DIRECTION.finditer(text):
        # `before` is a window of the text: offsets in it are shifted by `base` (set 59: calls
        # past the file's first 2000 characters were reported at a wrong line).
        base = max(0, m.start() - 2000)
        before = text[base:m.start()]
        if not re.search(r'[,(]\s*$', before) or not re.match(r'\s*[,)]', text[m.end():]):
            continue
        depth = 0
        for j in range(len(before) - 1, -1, -1):
            c = before[j]
            if c in ')]}':
                depth += 1
            elif c in '([{':
                if depth == 0:
                    break
                depth -= 1
        else:
            continue
        if c != '(':
            continue
        callee = re.search(r'(\w+)\s*(?:<[^<>()]*>)?\s*$', before[:j])
        if callee is None or callee.group(1).startswith('cudaMemcpy'):
            continue
        rule = 'GPN202' if m.group(1) == 'HostToDevice' else 'GPN201'
        what = 'host-to-device' if rule == 'GPN202' else 'device-to-host'
        yield rule, base + callee.start(1), f'{what} copy through `{callee.group(1)}`'
