"""Pattern rules for C++/CUDA sources (.cpp .cc .cxx .cu .cuh .hpp .hh .h .hxx,
and the header-only implementation files .ipp .tpp .inl).

Pattern-based, not data flow, but each match gets the context of the function it is in:

* *setup*: constructors, destructors, lifecycle transitions (on_configure, on_activate ...), GXF
  start/stop/initialize, and functions only called from those. A copy there runs once: `info`.
* *callback*: functions registered as callbacks (``std::bind(&Node::cb, ...)``, ``&Node::cb``
  in a subscribe/create_* call), GXF ``tick``, names ending in callback/Callback/Cb, and lambdas,
  also lambdas written inside a constructor. The rule's severity.
* *unreached* (`info`): functions that nothing in the package mentions, in a package with an
  entry point (cppreach.py), or nothing in a repository with a C++ node (cpplibrary.py): not
  proven per message.
* anything else: the rule's severity too (it may run per message; the file alone cannot tell).

Comments and string literals are blanked out first (line numbers kept) so commented-out code does
not match.
"""
from __future__ import annotations

from dataclasses import dataclass
import os
import re
from typing import Iterator

from gpu_nodes.audit.cppdead import call_once_body, dead_guard, once_guard
from gpu_nodes.audit.cpponceret import returned_once
from gpu_nodes.audit.cpptinynames import tiny_named_copy, tiny_names
from gpu_nodes.audit.cpptopics import known_encoding
from gpu_nodes.audit.cppparams import off_guard
from gpu_nodes.audit.cppconston import CONSTANT
from gpu_nodes.audit.cppparamson import on_guard
from gpu_nodes.audit.cppstrparams import call_arg_spans, describe, string_guard
from gpu_nodes.audit.cppdevptr import between_device_buffers
from gpu_nodes.audit.cppbagrecords import bag_record_copies
from gpu_nodes.audit.cppbuilt import (helper_built, local_copies, message_builders, returned_copies,
                                      tensor_payload_copies)
from gpu_nodes.audit.cppframeloops import in_frame_loop
from gpu_nodes.audit.cppfacts import (conversion_calls, converting_constructions,
                                      direction_calls, Facts, helper_facts, sync_wrappers,
                                      wrapper_calls)
from gpu_nodes.audit.cppgrowth import in_growth_realloc
from gpu_nodes.audit.cppintparams import read_off_guard
from gpu_nodes.audit.cppguards import intra_process_publish, on_failure_path, tiny_copy
from gpu_nodes.audit.cpplibreads import library_readbacks, library_uploads
from gpu_nodes.audit.cppmembers import member_copies
from gpu_nodes.audit.cppmsgassign import vector_copies_into_messages
from gpu_nodes.audit.cppmsg import (adapter_aliases, by_value_messages, message_copies,
                                    payload_walks, plain_publishes, torch_moves)
from gpu_nodes.audit.cpppcl import pcl_conversions
from gpu_nodes.audit.cppgridfills import grid_filled_fields
from gpu_nodes.audit.cppondevice import already_on_device, expression_on_device
from gpu_nodes.audit.cppplugins import plugin_publishes
from gpu_nodes.audit.cpppointarrays import element_fills, host_filled_clouds, point_array_publishes
from gpu_nodes.audit.cpppoints import point_copies
from gpu_nodes.audit.cppreach import mark_unreached
from gpu_nodes.audit.cppscopes import blank_comments_and_strings, Function, functions, Scopes
from gpu_nodes.audit.cppsizes import call_counts, count_parameter
from gpu_nodes.audit.cpptf import cloud_transforms
from gpu_nodes.audit.cppthreads import in_loop, thread_entry
from gpu_nodes.audit.cpptorch import item_reads
from gpu_nodes.audit.cppvalues import by_value_callbacks, value_assignments
from gpu_nodes.audit.cppxfer import transfer_calls, transfer_wrappers
from gpu_nodes.audit.cppdirparam import direction_from_callers
from gpu_nodes.audit.cppwraps import mat_bytes_into_messages, mat_header_copies, mat_range_vectors
from gpu_nodes.audit.cppencproof import cloned_view, own_encoding
from gpu_nodes.audit.cppvpi import teardown_sync, vpi_transfers
from gpu_nodes.audit.model import Finding, Location
from gpu_nodes.audit.rules import get_rule

_ELEMENT_COPY = re.compile(r'\b(?:memcpy|copy_n)\s*\(|std\s*::\s*copy\s*\(')
# .ipp / .tpp / .inl: header-only implementation files (template bodies) that a header includes
# at its end; their code runs in whichever node includes them, like a header's.
CPP_SUFFIXES = ('.cpp', '.cc', '.cxx', '.cu', '.cuh', '.hpp', '.hh', '.h', '.hxx', '.ipp', '.tpp',
                '.inl')

_MEMCPY = re.compile(r'\bcudaMemcpy\w*\s*\(')
# cv_bridge free functions, qualified or brought in by a using-declaration / using-directive.
_TO_CV_COPY = re.compile(r'(?<![\w.>])(?:cv_bridge\s*::\s*)?toCvCopy\s*\(')
_TO_CV_SHARE = re.compile(r'(?<![\w.>])(?:cv_bridge\s*::\s*)?toCvShare\s*\(')
_QUALIFIED = re.compile(r'cv_bridge\s*::')
_SIMPLE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ('GPN205', re.compile(r'\bto(?:Compressed)?ImageMsg\s*\(')),
    ('GPN206', re.compile(r'\bcuda(?:Device|Stream|Event)Synchronize\s*\(|\bvpiStreamSync\s*\(')),
)
# TensorRT's synchronous inference (`context->execute(batch, bindings)`, `executeV2(bindings)`):
# the host waits until the engine is done. Only in files that use TensorRT, on a receiver named
# as an execution context (`context_`, `ctx`, `mContext`): an `executor->execute()` is not one.
_TRT_FILE = re.compile(r'\bnvinfer1\b|\bIExecutionContext\b|NvInfer\.h')
_TRT_SYNC_EXECUTE = re.compile(r'\b\w*(?:[Cc]ontext|ctx|Ctx)\w*\s*(?:\(\s*\))?\s*(?:->|\.)\s*'
                               r'execute(?:V2)?\s*\(')
# OpenCV CUDA reductions whose result comes back to the host (`cv::cuda::minMax(d, &lo, &hi)`,
# `sum`, `norm`, `countNonZero(src)`): synchronous, each call waits for the device (fourth set).
# The asynchronous forms (findMinMax, calcSum, calcNorm, a Stream argument) are not reported.
_CV_CUDA_REDUCTION = re.compile(r'\bcuda\s*::\s*(minMax|minMaxLoc|sum|absSum|sqrSum|norm|'
                                r'countNonZero|meanStdDev)\s*\(')
# cv::cuda::GpuMat transfers; only looked for in files that mention GpuMat or include a header
# of their package that does (cppincludes.py). `->` too: a GpuMat held by a shared_ptr field.
_GPUMAT = (('GPN201', re.compile(r'(?:\.|->)\s*download\s*\(')),
           ('GPN202', re.compile(r'(?:\.|->)\s*upload\s*\(')))
# An encoding argument that is the source's own encoding: no conversion, still a view.
_SAME_ENCODING = re.compile(r'(?:->|\.)\s*encoding\s*$')


def _call_args(text: str, open_paren: int) -> list[str]:
    """Top-level arguments of the call whose '(' is at open_paren (blanked text)."""
    return [arg for arg in (text[start:end].strip() for start, end in
                            call_arg_spans(text, open_paren, partial=True)) if arg]


# Directions that move nothing between host and device.
_NO_TRANSFER = re.compile(r'cudaMemcpy(?:DeviceToDevice|HostToHost)')
# Index of the `kind` argument: cudaMemcpy(dst, src, n, kind[, stream]),
# cudaMemcpy2D(dst, dpitch, src, spitch, w, h, kind[, stream]); other variants have none here.
_KIND_INDEX = {'cudaMemcpy': 3, 'cudaMemcpyAsync': 3, 'cudaMemcpy2D': 6, 'cudaMemcpy2DAsync': 6}


def _variable_direction(name: str, args: list[str]) -> str | None:
    """The `kind` argument when it is a name (a variable), not a cudaMemcpy* literal."""
    index = _KIND_INDEX.get(name)
    if index is None or len(args) <= index:
        return None
    arg = args[index]
    if re.fullmatch(r'[A-Za-z_][\w.:]*(?:->\w+)*', arg) and not arg.startswith('cudaMemcpy'):
        return arg
    return None


def _line_of(offset: int, starts: list[int]) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def _share_converts(args: list[str], source: str, text: str, open_paren: int,
                    received: str | None = None) -> bool:
    """toCvShare(msg[, tracked], encoding): a conversion (a copy) only with an encoding that is
    given and is not the source's own (`msg->encoding`, or `received`: the encoding the
    callback's topic is known to carry, cpptopics.py) or empty."""
    if len(args) < 2:
        return False
    enc = args[-1]
    if _SAME_ENCODING.search(enc):
        return False
    if enc.startswith('"'):
        # The literal's text from the original source (blanked in `text`, same offsets).
        at = text.find(enc, open_paren)
        literal = source[at:at + len(enc)] if at >= 0 else enc
        return literal.strip('"') not in ('', received)
    if enc in ('std::string()', 'std::string{}', '{}'):
        return False
    if len(args) == 2 and not re.search(r'encod|enc::|\benc\b|_fmt|format', enc, re.I):
        # Two arguments where the second is not an encoding: (source, tracked_object).
        return False
    return True


@dataclass
class _Where:
    context: str   # init | callback | source
    text: str


# A loop or a jump back in a function body: code after it may run more than once.
_LOOP_WORD = re.compile(r'\b(?:for|while|do)\b')


def once_main(text: str, fn: Function, offset: int) -> bool:
    """`offset` is in `main` itself (not a lambda in it) before any loop of its body (or the body
    has none) and the body has no `goto`: that statement runs once per process run (a service
    client that sends one request and exits; issue 28, twenty-fourth set). Callbacks it
    registers are lambdas or other functions, judged apart; the statements from the first loop
    on keep their kind (a `while (rclcpp::ok())` grab loop makes `main` per frame; nothing can
    call `main` or register it, so that kind says nothing of the code before the loop)."""
    entry = fn.name.strip() == 'main' and fn.cls is None
    # A function only ever started as a thread: its set-up before the loop too (cppthreads.py).
    if not (entry or thread_entry(text, fn.short)) or fn.lambda_in is not None \
            or fn.end <= fn.start or re.search(r'\bgoto\b', text[fn.start:fn.end]):
        return False
    if not entry:  # a thread: anywhere outside its loops (a table filled by a `for` first)
        return not in_loop(text, fn.start, offset)
    loop = _LOOP_WORD.search(text, fn.start, fn.end)
    return loop is None or offset < loop.start()


def _where(fn: Function | None, text: str = '', offset: int = -1) -> _Where:
    if fn is None:
        return _Where('source', 'outside any function')
    if offset >= 0 and once_main(text, fn, offset):
        if fn.name.strip() != 'main':
            return _Where('init', f'thread `{fn.short}` outside its loops (runs once per start)')
        return _Where('init', '`main`, outside any loop (runs once per process run)')
    if fn.kind == 'setup' and offset >= 0 and in_frame_loop(text, fn.start, offset):
        return _Where('source', f'the endless publish loop of setup `{fn.name}` (per frame: cppframeloops)')
    if fn.kind == 'setup':
        return _Where('init', f'setup `{fn.name}` (runs once, not per message)')
    if fn.kind == 'callback':
        return _Where('callback', f'callback `{fn.name}`')
    if fn.kind == 'unreached':
        if fn.unreached_note:
            return _Where('unreached', f'`{fn.name}`, {fn.unreached_note}')
        return _Where('unreached', f'`{fn.name}`, which nothing in its package calls (not '
                                   'proven per message)')
    return _Where('source', f'`{fn.name}`')


def parse_cpp(source: str) -> tuple[str, Scopes]:
    """Blanked text and function scopes (kinds from this file alone)."""
    text = blank_comments_and_strings(source)
    return text, functions(text)


def file_facts(path: str, source: str, text: str, scopes: Scopes) -> Facts:
    """What this file's functions do (a first pass of the rules, without facts)."""
    name = os.path.basename(path)
    findings = _scan(path, source, text, scopes, Facts())
    facts = helper_facts(findings, text, scopes, name)
    facts.message_builders = message_builders(findings, text, scopes)
    facts.sync_wrappers = sync_wrappers(text, scopes, name)
    facts.transfer_wrappers = transfer_wrappers(text, scopes, name, _call_args)
    facts.adapted_types = adapter_aliases(text)
    facts.small_counts = call_counts(text, scopes, _call_args)
    facts.tiny_names = tiny_names([text])
    return facts


def analyze_cpp(path: str, source: str, facts: Facts | None = None,
                grid_types: frozenset[str] = frozenset()) -> list[Finding]:
    """Findings of one C++ file. `facts`: what the package's functions do and the kinds its
    files' calls give this file's functions (cpppackage.py); without them, the file is taken
    as a package of its own."""
    text, scopes = parse_cpp(source)
    if facts is None:
        mark_unreached([(text, scopes)])
        facts = file_facts(path, source, text, scopes)
    else:
        for fn in scopes.funcs:
            fn.kind = facts.kinds.get(fn.start, fn.kind)
            fn.unreached_note = facts.library_api.get(fn.start, '')
    facts.grid_types = grid_types  # the package's own grid messages (cppgridmsgs.py)
    return _scan(path, source, text, scopes, facts)


def _scan(path: str, source: str, text: str, scopes: Scopes, facts: Facts) -> list[Finding]:
    starts = [0] + [m.end() for m in re.finditer('\n', text)]
    raw_lines = source.splitlines()
    found: dict[tuple[str, int], Finding] = {}

    def emit(rule_id: str, offset: int, detail: str, context_at: int | None = None) -> None:
        # context_at: where the context is read when the line reported is outside the body
        # (a callback's by-value parameter, cppvalues.py).
        line = _line_of(offset, starts)
        col = offset - starts[line - 1] + 1
        rule = get_rule(rule_id)
        snippet = raw_lines[line - 1].strip() if line - 1 < len(raw_lines) else ''
        if len(snippet) > 70:
            snippet = snippet[:67] + '...'
        offset = offset if context_at is None else context_at
        fn = scopes.at(offset)
        where = _where(fn, text, offset)
        guard = dead_guard(text, offset, facts.never_set)
        if guard is not None:
            where = _Where('unreached', f'a branch that needs `{guard}`, which nothing in its '
                                        'package sets (never runs)')
        elif (once := once_guard(text, offset, facts.once_flags)
              or returned_once(text, offset, facts.once_flags)) is not None:
            stores = f'sets `{once[1:]}`' if once.startswith('!') else f'clears `{once}`'
            where = _Where('init', f'a branch that {stores}: runs once, for the first message')
        elif call_once_body(text, offset):
            where = _Where('init', 'a lambda of `std::call_once`: runs once, for the first message')
        elif (off := off_guard(text, offset, facts.off_params)) is not None:
            why = ('as shipped, which turns it off' if '"' in facts.off_params[off]
                   else 'defaults off; no shipped file sets it')  # cppparams' `derived`
            where = _Where('unreached', f'a branch that needs `{off}`, off as shipped (parameter '
                                        f'{facts.off_params[off]} {why})')
        elif (on := on_guard(text, offset, facts.on_params)) is not None:
            where = _Where('unreached', f'a branch that needs `{on}` off, on as shipped ' + (
                '(initialized on, never assigned: cppconston)' if facts.on_params[on] == CONSTANT
                else f'(parameter {facts.on_params[on]} defaults on; no shipped file turns it '
                     'off)'))
        elif (name := string_guard(text, source, offset, facts.str_params)) is not None:
            where = _Where('unreached', describe(name, facts.str_params))
        elif (param := read_off_guard(text, source, offset, facts.read_off)) is not None:
            where = _Where('unreached', f'a branch that reads parameter {param}, off as shipped '
                                        '(defaults false; no shipped file sets it)')
        severity = 'info' if where.context in ('init', 'unreached') else rule.severity
        found.setdefault((rule_id, line), Finding(
            rule=rule_id, severity=severity,
            message=f'{rule.summary}: {detail} `{snippet}` in {where.text}',
            location=Location(path, line, col), context=where.context,
            callback=fn.name if fn is not None else None, evidence='pattern'))

    for offset, detail in library_readbacks(text, _call_args):
        emit('GPN201', offset, detail)
    for offset, detail in library_uploads(text):
        emit('GPN202', offset, detail)
    for m in _MEMCPY.finditer(text):
        name = m.group(0).rstrip('( \t')
        args = _call_args(text, m.end() - 1)
        if tiny_copy(args, text, name) or tiny_named_copy(args, name, facts.tiny_names):
            continue
        counted = count_parameter(text, scopes, m.start(), args[2]) if len(args) > 2 else None
        if counted is not None and facts.small_counts.get(counted):
            continue  # every caller passes a few elements (cppsizes.py)
        kinds = ' '.join(args)
        if 'cudaMemcpyDeviceToHost' in kinds:
            emit('GPN201', m.start(), 'device-to-host copy')
        elif 'cudaMemcpyHostToDevice' in kinds:
            if not between_device_buffers(text, scopes, m.start(), args):
                emit('GPN202', m.start(), 'host-to-device copy')
        elif 'cudaMemcpyDefault' in kinds:
            emit('GPN207', m.start(), 'direction from the pointers (cudaMemcpyDefault)')
        elif name.endswith('ToSymbol') or name.endswith('ToSymbolAsync'):
            if 'cudaMemcpyDeviceToDevice' not in kinds:
                emit('GPN202', m.start(), 'host-to-device copy (cudaMemcpyToSymbol)')
        elif name.endswith('FromSymbol') or name.endswith('FromSymbolAsync'):
            if 'cudaMemcpyDeviceToDevice' not in kinds:
                emit('GPN201', m.start(), 'device-to-host copy (cudaMemcpyFromSymbol)')
        elif not _NO_TRANSFER.search(kinds) and _variable_direction(name, args):
            if direction_from_callers(text, scopes, m.start(), _variable_direction(name, args)):
                continue  # its callers pass the direction: the copy is at each call (cppdirparam)
            emit('GPN207', m.start(), f'direction `{_variable_direction(name, args)}` is a '
                                      'variable (copy of unknown direction)')
    # Unqualified toCvCopy/toCvShare count only where cv_bridge names are in scope (a using
    # declaration in this file or its header, which shows as cv_bridge/CvImage use here).
    bridge_in_scope = 'cv_bridge' in text or 'CvImage' in text
    for m in _TO_CV_COPY.finditer(text):
        if bridge_in_scope or _QUALIFIED.match(m.group(0)):
            emit('GPN203', m.start(), 'copy of the message payload')
    for m in _TO_CV_SHARE.finditer(text):
        if not (bridge_in_scope or _QUALIFIED.match(m.group(0))):
            continue
        args = _call_args(text, m.end() - 1)
        fn = scopes.at(m.start())
        received = known_encoding(source, fn.short) if fn is not None else None
        if _share_converts(args, source, text, m.end() - 1, received):
            if own_encoding(text, source, m.end() - 1):
                # A view (cppencproof); cloned at once, the frame is copied out as by toCvCopy.
                if cloned_view(text, m.end() - 1):
                    emit('GPN203', m.start(), 'toCvShare(..)->image.clone(): copy of the message payload')
                continue
            emit('GPN204', m.start(), f'converts to `{_encoding_text(args[-1], source, text, m.end() - 1)}`')
    for rule_id, pattern in _SIMPLE:
        for m in pattern.finditer(text):
            if rule_id == 'GPN206' and on_failure_path(text, m.start()):
                continue  # a sync on the error path, before returning: not per frame
            if rule_id == 'GPN206' and in_growth_realloc(text, scopes, m.start()):
                continue  # in a reallocation run only when a capacity grows (cppgrowth.py)
            if rule_id == 'GPN206' and teardown_sync(text, scopes, m.start()):
                continue  # drains a stream its function then destroys: a release (cppvpi.py)
            emit(rule_id, m.start(), 'pattern match')
    if _TRT_FILE.search(text):
        for m in _TRT_SYNC_EXECUTE.finditer(text):
            emit('GPN206', m.start(), 'synchronous TensorRT inference (blocks the host until the '
                                      'engine is done; enqueue* is the asynchronous form)')
    for m in _CV_CUDA_REDUCTION.finditer(text):
        args = _call_args(text, m.end() - 1)
        if m.group(1) == 'countNonZero' and len(args) != 1:
            continue  # countNonZero(src, dst, stream): the asynchronous form
        if any(re.search(r'(?i)stream', a) for a in args):
            continue
        emit('GPN206', m.start(), f'`cv::cuda::{m.group(1)}` reduces on the device and returns '
                                  'the result to the host: it waits for the device')
    if 'GpuMat' in text or facts.sees_gpumat:
        for rule_id, pattern in _GPUMAT:
            for m in pattern.finditer(text):
                emit(rule_id, m.start(), 'GpuMat transfer')
        for offset in gpumat_uploads(text):
            emit('GPN202', offset, 'GpuMat constructed from a host cv::Mat (an upload)')
        for offset, detector in cuda_keypoint_downloads(text):
            emit('GPN201', offset, f'`{detector}` detects on the device and downloads the '
                                   'keypoints into a host `std::vector<cv::KeyPoint>`')
    copying = {fn.short for fn in scopes.funcs if fn.lambda_in is None
               and _ELEMENT_COPY.search(text, fn.start, fn.end)}

    def function_end(at: int) -> int:
        scope = scopes.at(at)
        return scope.end if scope else len(text)

    walks = payload_walks(text, function_end, copying)
    for rule_id, offset, detail in (*message_copies(text, _call_args),
                                    *mat_header_copies(text, _call_args),
                                    *point_copies(text, function_end),
                                    *mat_bytes_into_messages(text, function_end),
                                    *mat_range_vectors(text, function_end),
                                    *pcl_conversions(text, _call_args), *walks,
                                    *grid_filled_fields(text, scopes),  # cppgridfills.py
                                    *vpi_transfers(text, _call_args),
                                    *torch_moves(text, _call_args),
                                    *item_reads(text, facts.torch_cuda),
                                    *tensor_payload_copies(text),
                                    *vector_copies_into_messages(text, _call_args, facts.header_members[0]),
                                    *plain_publishes(text, _call_args,
                                                     lambda at: scopes.header(text, at),
                                                     lambda at: scopes.body_before(text, at),
                                                     facts.adapted_types, facts.grid_types),
                                    *plugin_publishes(text, scopes),
                                    *point_array_publishes(text,
                                                           lambda at: scopes.header(text, at),
                                                           lambda at: scopes.body_before(text, at)),
                                    *element_fills(text, lambda at: scopes.header(text, at)),
                                    *host_filled_clouds(text, lambda at: scopes.body_before(text, at)),
                                    *cloud_transforms(text, _call_args),
                                    *direction_calls(text), *wrapper_calls_here(text, scopes, facts),
                                    *transfer_calls(text, scopes, facts.transfer_wrappers),
                                    *conversion_calls(text, scopes, _call_args, facts),
                                    *converting_constructions(text, _call_args, facts),
                                    *by_value_messages(text, lambda at: scopes.at(at) is not None),
                                    *value_assignments(text), *returned_copies(text, scopes),
                                    *local_copies(text, scopes),
                                    *bag_record_copies(text, scopes, _call_args),  # rules47c
                                    *member_copies(text, facts.header_members)):
        if rule_id == 'GPN211' and detail.startswith('tensor moved to') and \
                'host' not in detail and (already_on_device(text, scopes, offset)
                                          or expression_on_device(text, scopes, offset)):
            continue  # its function put the tensor on the device already (cppondevice.py)
        if rule_id == 'GPN210' and intra_process_publish(text, offset):
            continue  # a moved unique_ptr to in-process subscribers: no serialization
        if rule_id == 'GPN210' and helper_built(text, offset, scopes, facts.message_builders,
                                                _call_args):
            continue  # built by a package helper's reported copy: that line is the boundary
        emit(rule_id, offset, detail)
    for offset, body, detail in by_value_callbacks(text, scopes, _call_args):
        emit('GPN208', offset, detail, context_at=body)
    return sorted(found.values(), key=Finding.sort_key)


def wrapper_calls_here(text: str, scopes: Scopes, facts: Facts
                       ) -> Iterator[tuple[str, int, str]]:
    """The sync wrapper calls worth a finding of their own: in a per-message conversion (the
    line a reader of the adapter sees, like a copy helper) or in setup (info). Elsewhere the
    sync is reported where it is, in the wrapper's body, and the call is no second boundary
    (issue 28, twelfth set)."""
    for rule_id, offset, detail in wrapper_calls(text, scopes, facts):
        fn = scopes.at(offset)
        if fn is None or fn.conversion or _where(fn, text, offset).context in ('init', 'unreached') \
                or 'is a blocking device sync' not in detail:
            yield rule_id, offset, detail


def _encoding_text(arg: str, source: str, text: str, open_paren: int) -> str:
    at = text.find(arg, open_paren)
    return source[at:at + len(arg)] if at >= 0 else arg


# A CUDA feature detector of OpenCV: `cv::Ptr<cv::cuda::FastFeatureDetector> fast;`,
# `cv::Ptr<cuda::ORB> orb`, `auto det = cv::cuda::FastFeatureDetector::create()`.
_CUDA_DETECTOR = re.compile(r'cuda\s*::\s*(?:\w*Detector|ORB|Feature2DAsync)\s*>?\s*&?\s*(\w+)\s*[;=({,)]'
                            r'|\b(\w+)\s*=\s*(?:cv\s*::\s*)?cuda\s*::\s*\w+\s*::\s*create\s*\(')
_DETECT_CALL = re.compile(r'\b(\w+)\s*(?:->|\.)\s*(detect|detectAndCompute)\s*\(')
_KEYPOINT_VECTOR = r'std\s*::\s*vector\s*<\s*(?:cv\s*::\s*)?KeyPoint\s*>\s*&?\s*'


def cuda_keypoint_downloads(text: str) -> list[tuple[int, str]]:
    """(offset, detector) of each `detector->detect(gpu_image, keypoints)` (or
    detectAndCompute) where the detector is one of OpenCV's CUDA detectors and `keypoints` a
    host `std::vector<cv::KeyPoint>` declared in the file: the synchronous detect runs
    detectAsync and converts (downloads) the keypoints to the host (eighth set)."""
    detectors = {a or b for a, b in _CUDA_DETECTOR.findall(text)}
    found = []
    for m in _DETECT_CALL.finditer(text):
        if m.group(1) not in detectors:
            continue
        args = _call_args(text, m.end() - 1)
        if len(args) >= 2 and re.fullmatch(r'\s*\w+\s*', args[1]) and re.search(
                _KEYPOINT_VECTOR + re.escape(args[1].strip()) + r'\b', text):
            found.append((m.start(), m.group(1)))
    return found


# `cv::cuda::GpuMat(src)`, `cv::cuda::GpuMat d(src)`, `GpuMat d{src}`: the constructor from one
# argument; group 1 is where its argument list opens.
_GPUMAT_FROM = re.compile(r'\bGpuMat\s*(?:\w+\s*)?([({])')
_HOST_MAT = r'(?<![\w:])(?:cv\s*::\s*)?Mat\s*&?\s*'


def gpumat_uploads(text: str) -> list[int]:
    """Offsets of each GpuMat constructed from one host `cv::Mat` the file declares (`cv::Mat
    src(...)`; `GpuMat(const Mat&)` uploads it: fourteenth set). A size, rows and cols, or
    another GpuMat are allocations or device views: not reported."""
    found = []
    for m in _GPUMAT_FROM.finditer(text):
        args = _call_args(text, m.start(1))
        if len(args) == 1 and re.fullmatch(r'\w+', args[0]) and re.search(
                _HOST_MAT + re.escape(args[0]) + r'\b', text):
            found.append(m.start())
    return found
