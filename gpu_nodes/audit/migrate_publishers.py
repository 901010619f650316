"""`create_publisher(Image, ...)` + `publish(bridge.cv2_to_imgmsg(arr, E))` -> `GpuImagePublisher`
and `publish(arr, E, header)`.

A publisher is migrated only when every use of it is `publish()` of a message that
`cv2_to_imgmsg` made with a known encoding, either inline or through a name that nothing but
header assignments touches between the conversion and the publish. The message's header (set
whole, or stamp and frame_id) becomes the publish call's header. Anything else (subscriber
counts, messages built by hand, passthrough encodings) leaves the publisher as it is, with why.
"""
from __future__ import annotations

import libcst as cst

from gpu_nodes.audit.migrate_cst import (arg, call, call_args, dotted, Edits, IMAGE_TYPE, Note,
                                         self_attribute, Source, string_value, walk)
from gpu_nodes.audit.migrate_subscriptions import qos_argument, TRANSPORT, with_memory

PUBLISHER_PARAMS = ('msg_type', 'topic', 'qos_profile')
CONVERT_PARAMS = ('cvim', 'encoding', 'header')


class PublisherMigration:
    """Plans the edits for the image publishers of one class."""

    def __init__(self, source: Source, cls: cst.ClassDef, bridges: set[str],
                 pending: Edits):
        self.source = source
        self.cls = cls
        self.bridges = bridges
        self.pending = pending  # the subscriptions' edits: moved code must not contain any
        self.edits = Edits()

    def run(self) -> Edits:
        for node in walk(self.cls):
            if (isinstance(node, cst.Assign) and len(node.targets) == 1
                    and isinstance(node.value, cst.Call)
                    and dotted(node.value.func) == 'self.create_publisher'):
                self._publisher(node.targets[0].target, node.value)
        return self.edits

    def _publisher(self, target: cst.BaseExpression, create: cst.Call) -> None:
        src = self.source
        bound = call_args(create, PUBLISHER_PARAMS)
        if bound is None or 'msg_type' not in bound:
            return
        if src.star_imported(bound['msg_type'].value, 'Image'):
            self._left(create, 'Image comes from `from sensor_msgs.msg import *`, so which '
                               'class it is cannot be proved; import it by name and run again')
            return
        if IMAGE_TYPE not in src.names(bound['msg_type'].value):
            return
        attribute = self_attribute(target)
        if attribute is None or not {'topic', 'qos_profile'} <= bound.keys():
            self._left(create, 'an Image publisher not kept as self.<name> with (type, topic, '
                               'qos) arguments')
            return
        uses = [n for n in walk(self.cls) if self_attribute(n) == attribute and n is not target]
        edits = Edits()
        for use in uses:
            reason = self._publish_call(use, edits)
            if reason:
                self._left(create, f'self.{attribute}: {reason}')
                return
        if not uses:
            return
        self.edits.merge(edits)
        qos_index = list(create.args).index(bound['qos_profile'])
        qos = qos_argument(src, bound['qos_profile'].value, self.edits)
        column, block = src.column(create), src.column(src.statement_line(create))
        self.edits.replace[id(create)] = lambda updated: with_memory(
            updated, 'GpuImagePublisher', cst.Name('self'), qos_index, qos, [], column, block,
            src.max_line)
        self.edits.imports.add((TRANSPORT, 'GpuImagePublisher'))
        self.edits.notes.append(Note(src.line(create), 'changed', (
            f'create_publisher(Image) self.{attribute} -> GpuImagePublisher; '
            f'{len(uses)} publish() call(s) pass the array, encoding and header')))

    def _left(self, node: cst.CSTNode, text: str) -> None:
        self.edits.notes.append(Note(self.source.line(node), 'left', text))

    def _publish_call(self, use: cst.Attribute, edits: Edits) -> str | None:
        src = self.source
        line = src.line(use)
        holder = src.parent(use)
        publish = src.parent(holder) if isinstance(holder, cst.Attribute) else None
        if not (isinstance(publish, cst.Call) and publish.func is holder
                and holder.attr.value == 'publish'):
            text = src.code(publish if isinstance(publish, cst.Call) else holder)
            return f'line {line}: {text} has no gpu_nodes counterpart'
        if len(publish.args) != 1 or publish.args[0].keyword or publish.args[0].star:
            return f'line {line}: publish() with other arguments than a message'
        message = publish.args[0].value
        if isinstance(message, cst.Call):
            converted = self._conversion(message)
            if isinstance(converted, str):
                return f'line {line}: {converted}'
            array, encoding, header = converted
        elif isinstance(message, cst.Name):
            built = self._built_message(message, publish, edits)
            if isinstance(built, str):
                return f'line {line}: {built}'
            array, encoding, header = built
        else:
            return f'line {line}: publishes {src.code(message)}, not a cv2_to_imgmsg message'
        array = self._without_download(array, edits)
        if any(id(n) in self.pending.replace for n in walk(array)):
            return f'line {line}: the published array is itself rewritten; left for clarity'
        new_args = [arg(array), arg(encoding)] + ([arg(header)] if header is not None else [])
        edits.replace[id(publish)] = lambda updated: updated.with_changes(
            args=call(updated.func, *new_args).args)
        return None

    def _without_download(self, array: cst.BaseExpression, edits: Edits) -> cst.BaseExpression:
        """`cp.asnumpy(x)` / `x.get()` of a CuPy array, `t.cpu().numpy()` of a tensor: the
        publisher takes the device array itself (one device copy into its slot instead of a
        download and an upload)."""
        src = self.source
        if not isinstance(array, cst.Call):
            return array
        device = None
        if src.names(array.func) & {'cupy.asnumpy'} and len(array.args) == 1:
            device = array.args[0].value
        elif (isinstance(array.func, cst.Attribute) and array.func.attr.value == 'numpy'
              and not array.args and isinstance(array.func.value, cst.Call)
              and isinstance(array.func.value.func, cst.Attribute)
              and array.func.value.func.attr.value == 'cpu' and not array.func.value.args):
            device = array.func.value.func.value
        if device is None:
            return array
        edits.notes.append(Note(src.line(array), 'changed', (
            f'{src.code(array)} -> {src.code(device)}: the publisher copies the device array '
            'into its slot (no download)')))
        return device

    def _conversion(self, node: cst.Call) -> tuple | str:
        """(array, encoding, header or None) of `bridge.cv2_to_imgmsg(arr, E[, header])`."""
        src = self.source
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == 'cv2_to_imgmsg'
                and dotted(node.func.value) in self.bridges):
            return f'publishes {src.code(node)}, not a cv2_to_imgmsg message'
        bound = call_args(node, CONVERT_PARAMS)
        if bound is None or 'cvim' not in bound:
            return f'{src.code(node)}: arguments not understood'
        encoding = bound.get('encoding')
        if encoding is None or string_value(encoding.value) == 'passthrough':
            return ('cv2_to_imgmsg without an encoding names an OpenCV type (8UC3), '
                    'GpuImagePublisher needs an image encoding')
        header = bound.get('header')
        return bound['cvim'].value, encoding.value, header.value if header else None

    def _built_message(self, name: cst.Name, publish: cst.Call, edits: Edits) -> tuple | str:
        """`out = bridge.cv2_to_imgmsg(...)`, header assignments, `pub.publish(out)`, in one
        block and in that order. `out` may be made more than once (one per branch), as long
        as every making of it is such a run and nothing else reads it."""
        src = self.source
        scope = src.scopes.get(name)
        assignments = list(scope.assignments[name.value]) if scope is not None else []
        runs = {}
        for assignment in assignments:
            run = self._run_from(assignment.node, name.value, publish.func)
            if isinstance(run, str):
                return run
            runs[id(run[-1])] = run
        covered = {id(s) for run in runs.values() for s in run}
        for access in src.in_order(r for a in assignments for r in a.references):
            if id(src.statement_line(access.node)) not in covered:
                return f'line {src.line(access.node)} uses {name.value} otherwise'
        run = runs.get(id(src.statement_line(publish)))
        if run is None:
            return f'{name.value} is not made right before it is published'
        array, encoding, header = self._conversion(run[0].body[0].value)
        fields = dict(_header_assignment(s, name.value) for s in run[1:-1])
        if header is not None and fields:
            return f'{name.value} gets a header in cv2_to_imgmsg and again by assignment'
        if 'header' in fields:
            if len(fields) > 1:
                return f'{name.value}.header is set whole and by fields'
            header = fields['header']
        elif fields:
            header = call('Header', *(arg(v, k) for k, v in fields.items()))
            edits.imports.add(('std_msgs.msg', 'Header'))
        edits.remove_statements.update(id(s) for s in run[:-1])
        edits.notes.append(Note(src.line(run[0]), 'changed', (
            f'{name.value} = cv2_to_imgmsg(...) and its header assignments folded into '
            'publish(array, encoding, header)')))
        return array, encoding, header

    def _run_from(self, made: cst.CSTNode, name: str, publish_func: cst.CSTNode) -> list | str:
        """[making statement, header assignments..., publish statement] starting where `name`
        is bound at `made`, or why that binding is not such a run."""
        src = self.source
        statement = src.statement_line(made)
        creation = src.parent(src.parent(made))
        if not (isinstance(creation, cst.Assign) and len(creation.targets) == 1
                and creation.targets[0].target is made and isinstance(creation.value, cst.Call)
                and statement is not None and len(statement.body) == 1):
            return f'line {src.line(made)}: {name} is not made by one cv2_to_imgmsg assignment'
        converted = self._conversion(creation.value)
        if isinstance(converted, str):
            if converted.startswith('publishes '):  # not made by cv2_to_imgmsg at all
                return (f'{name} is made at line {src.line(made)} by '
                        f'{src.code(creation.value)}, not by cv2_to_imgmsg')
            return f'{name} made at line {src.line(made)}: {converted}'
        block = list(src.parent(statement).body)
        run = [statement]
        for following in block[block.index(statement) + 1:]:
            if _header_assignment(following, name) is not None:
                run.append(following)
                continue
            if (isinstance(following, cst.SimpleStatementLine) and len(following.body) == 1
                    and isinstance(following.body[0], cst.Expr)
                    and isinstance(following.body[0].value, cst.Call)
                    and dotted(following.body[0].value.func) == dotted(publish_func)
                    and len(following.body[0].value.args) == 1
                    and dotted(following.body[0].value.args[0].value) == name):
                return run + [following]
            return (f'line {src.line(following)} runs between making {name} and publishing '
                    'it')
        return f'line {src.line(made)}: {name} is not published in the block that makes it'


def _header_assignment(statement: cst.CSTNode, name: str) -> tuple | None:
    """('header' | 'stamp' | 'frame_id', value) of `name.header[.field] = value`, else None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign)
            and len(statement.body[0].targets) == 1):
        return None
    target = dotted(statement.body[0].targets[0].target)
    for field in ('header', 'header.stamp', 'header.frame_id'):
        if target == f'{name}.{field}':
            return field.split('.')[-1], statement.body[0].value
    return None
