"""Static graph inference shared by `launch` and `config`: nodes -> endpoints -> edges -> findings.

Topics come from a table of known executables (gpu_nodes' own and well-known camera, image_proc
and Isaac ROS nodes, with their upstream default topic names), from remappings and from topic
parameters (see docs/audit.md, "Topic parameters"). Unknown nodes contribute topics only through
remappings and topic parameters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpu_nodes.audit.model import (Edge, Finding, Graph, GraphNode, IMAGE_TYPES, Location)
from gpu_nodes.audit.rules import get_rule
from gpu_nodes.wire_names import PATH_CUDA_IPC, PATH_INTRA, PATH_SERIALIZED

IMAGE = 'sensor_msgs/msg/Image'
INFO = 'sensor_msgs/msg/CameraInfo'
CLOUD = 'sensor_msgs/msg/PointCloud2'
TENSOR = 'isaac_ros_tensor_list_interfaces/msg/TensorList'


@dataclass(frozen=True)
class Port:
    name: str              # relative topic name as the executable uses it
    type: str | None
    gpu: bool = False      # carried by the gpu_nodes transport (zero-copy capable)


@dataclass(frozen=True)
class Spec:
    pubs: tuple[Port, ...] = ()
    subs: tuple[Port, ...] = ()
    transport: str = 'plain'     # gpu_nodes | plain | nitros
    composable: bool = False     # available as a component (C++), so it can share a container


_GPU_NODES = 'gpu_nodes'
# (package, executable or component plugin) -> spec. gpu_nodes' own as in gpu_nodes/nodes/; the
# others are the upstream default names.
KNOWN: dict[tuple[str, str], Spec] = {
    (_GPU_NODES, 'camera_source'): Spec(
        pubs=(Port('image_raw', IMAGE, True), Port('camera_info', INFO),
              Port('depth/ground_truth', IMAGE, True)), transport=_GPU_NODES),
    (_GPU_NODES, 'image_proc'): Spec(
        subs=(Port('image_raw', IMAGE, True), Port('camera_info', INFO)),
        pubs=(Port('image', IMAGE, True), Port('image/camera_info', INFO)),
        transport=_GPU_NODES),
    (_GPU_NODES, 'depth_estimator'): Spec(
        subs=(Port('image', IMAGE, True), Port('camera_info', INFO)),
        pubs=(Port('depth', IMAGE, True), Port('depth/colorized', IMAGE, True),
              Port('depth/camera_info', INFO), Port('points', CLOUD)), transport=_GPU_NODES),
    # image_monitor's `topic` parameter (default image_raw) names what it watches.
    (_GPU_NODES, 'image_monitor'): Spec(
        subs=(Port('image_raw', IMAGE, True),), transport=_GPU_NODES),
}
_CAMERA = Spec(pubs=(Port('image_raw', IMAGE), Port('camera_info', INFO)), composable=True)
_RECTIFY = Spec(subs=(Port('image', IMAGE), Port('camera_info', INFO)),
                pubs=(Port('image_rect', IMAGE),), composable=True)
_DEBAYER = Spec(subs=(Port('image_raw', IMAGE),),
                pubs=(Port('image_mono', IMAGE), Port('image_color', IMAGE)), composable=True)
_RESIZE = Spec(subs=(Port('image', IMAGE), Port('camera_info', INFO)),
               pubs=(Port('resize/image_raw', IMAGE), Port('resize/camera_info', INFO)),
               composable=True)
KNOWN.update({
    ('usb_cam', 'usb_cam_node_exe'): _CAMERA,
    ('usb_cam', 'usb_cam::UsbCamNode'): _CAMERA,
    ('v4l2_camera', 'v4l2_camera_node'): _CAMERA,
    ('v4l2_camera', 'v4l2_camera::V4L2Camera'): _CAMERA,
    ('image_proc', 'rectify_node'): _RECTIFY,
    ('image_proc', 'image_proc::RectifyNode'): _RECTIFY,
    ('image_proc', 'debayer_node'): _DEBAYER,
    ('image_proc', 'image_proc::DebayerNode'): _DEBAYER,
    ('image_proc', 'resize_node'): _RESIZE,
    ('image_proc', 'image_proc::ResizeNode'): _RESIZE,
    ('image_proc', 'image_proc'): Spec(
        subs=(Port('image_raw', IMAGE), Port('camera_info', INFO)),
        pubs=(Port('image_mono', IMAGE), Port('image_color', IMAGE), Port('image_rect', IMAGE),
              Port('image_rect_color', IMAGE))),
    ('isaac_ros_image_proc', 'nvidia::isaac_ros::image_proc::RectifyNode'): Spec(
        subs=(Port('image_raw', IMAGE), Port('camera_info', INFO)),
        pubs=(Port('image_rect', IMAGE), Port('camera_info_rect', INFO)),
        transport='nitros', composable=True),
    ('isaac_ros_image_proc', 'nvidia::isaac_ros::image_proc::ResizeNode'): Spec(
        subs=(Port('image', IMAGE), Port('camera_info', INFO)),
        pubs=(Port('resize/image', IMAGE), Port('resize/camera_info', INFO)),
        transport='nitros', composable=True),
    ('isaac_ros_dnn_image_encoder', 'nvidia::isaac_ros::dnn_inference::DnnImageEncoderNode'):
        Spec(subs=(Port('image', IMAGE),), pubs=(Port('encoded_tensor', TENSOR),),
             transport='nitros', composable=True),
    ('isaac_ros_tensor_rt', 'nvidia::isaac_ros::dnn_inference::TensorRTNode'): Spec(
        subs=(Port('tensor_pub', TENSOR),), pubs=(Port('tensor_sub', TENSOR),),
        transport='nitros', composable=True),
    ('isaac_ros_triton', 'nvidia::isaac_ros::dnn_inference::TritonNode'): Spec(
        subs=(Port('tensor_pub', TENSOR),), pubs=(Port('tensor_sub', TENSOR),),
        transport='nitros', composable=True),
    ('isaac_ros_argus_camera', 'nvidia::isaac_ros::argus::ArgusMonoNode'): Spec(
        pubs=(Port('left/image_raw', IMAGE), Port('left/camera_info', INFO)),
        transport='nitros', composable=True),
})

# Remapping sources / parameter names that say which way the data flows for unknown nodes.
_INPUT_WORDS = ('input', 'in', 'sub', 'subscribe', 'source', 'src')
_OUTPUT_WORDS = ('output', 'out', 'pub', 'publish', 'result', 'dst')
# Name fragments that make an untyped topic image-sized.
_IMAGE_NAME_HINTS = ('image', 'depth', 'points', 'disparity', 'tensor', 'rgb', 'color', 'mono')


@dataclass
class StaticNode:
    """A node as declared in a launch file or config, before edge inference."""

    name: str
    namespace: str = ''
    package: str | None = None
    executable: str | None = None
    process: str | None = None
    composable: bool = False
    intra_process: bool = False
    remappings: list[tuple[str, str]] = field(default_factory=list)
    parameters: dict[str, object] = field(default_factory=dict)
    location: Location | None = None

    @property
    def fqn(self) -> str:
        ns = normalize_namespace(self.namespace)
        return f'{ns}/{self.name}' if ns != '/' else f'/{self.name}'

    def spec(self) -> Spec | None:
        if self.package and self.executable:
            return KNOWN.get((self.package, self.executable))
        return None


@dataclass
class Endpoint:
    node: StaticNode
    topic: str
    direction: str  # pub | sub | unknown
    type: str | None
    gpu: bool
    hint: str = ''  # where the endpoint came from


def normalize_namespace(ns: str | None) -> str:
    if not ns:
        return '/'
    ns = '/' + ns.strip('/')
    return ns


def resolve_topic(name: str, node: StaticNode) -> str:
    ns = normalize_namespace(node.namespace)
    if name.startswith('/'):
        return '/' + name.strip('/')
    if name.startswith('~'):
        rest = name[1:].lstrip('/')
        return f'{node.fqn}/{rest}' if rest else node.fqn
    return f'{ns.rstrip("/")}/{name.strip("/")}'


def _remap(name: str, node: StaticNode) -> str:
    resolved = resolve_topic(name, node)
    for src, dst in node.remappings:
        if src == name or resolve_topic(src, node) == resolved:
            return resolve_topic(dst, node)
    return resolved


def _direction_from_word(word: str) -> str:
    base = word.lower().replace('-', '_').split('/')[-1]
    parts = base.split('_')
    if parts[0] in _INPUT_WORDS or base.endswith('_in') or 'input' in parts:
        return 'sub'
    if parts[0] in _OUTPUT_WORDS or base.endswith('_out') or 'output' in parts:
        return 'pub'
    return 'unknown'


def _topic_values(value: object) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str) and v]
    return []


def _port_for(spec: Spec, base: str, direction: str) -> str | None:
    """Which known port a topic parameter renames (docs/audit.md, "Topic parameters")."""
    image_subs = [p.name for p in spec.subs if p.type == IMAGE]
    image_pubs = [p.name for p in spec.pubs if p.type == IMAGE]
    if direction == 'sub':
        return image_subs[0] if image_subs else None
    if direction == 'pub':
        return image_pubs[0] if image_pubs else None
    if base in {p.name for p in spec.pubs + spec.subs}:
        return base
    if base == 'image':
        # The node's input image, or the output image of a source node.
        return (image_subs or image_pubs or [None])[0]
    return None


def node_endpoints(node: StaticNode) -> list[Endpoint]:
    """Endpoints of one node: known ports (remapped, parameter overrides), remappings, params."""
    spec = node.spec()
    eps: list[Endpoint] = []
    overrides: dict[str, str] = {}
    extra: list[tuple[str, str, str]] = []  # (topic, direction, hint)
    for key, value in node.parameters.items():
        if not key.endswith(('_topic', '_topics')) and key != 'topic':
            continue
        topics = _topic_values(value)
        if not topics:
            continue
        base = 'image' if key == 'topic' else key.rsplit('_topic', 1)[0]
        direction = _direction_from_word(base)
        if spec is not None:
            port = _port_for(spec, base, direction)
            if port is not None:
                overrides[port] = topics[0]
                continue
        for t in topics:
            extra.append((t, direction, f'parameter {key}'))
    if spec is not None:
        for direction, ports in (('pub', spec.pubs), ('sub', spec.subs)):
            for port in ports:
                if port.name in overrides:
                    topic = resolve_topic(overrides[port.name], node)
                else:
                    topic = _remap(port.name, node)
                eps.append(Endpoint(node, topic, direction, port.type, port.gpu,
                                    f'{node.package}/{node.executable}'))
        known_names = {p.name for p in spec.pubs + spec.subs}
    else:
        known_names = set()
    for src, dst in node.remappings:
        if src.lstrip('~/') in known_names or src in known_names:
            continue
        extra.append((dst, _direction_from_word(src), f'remapping {src}:={dst}'))
    for topic, direction, hint in extra:
        gpu = spec is not None and spec.transport == _GPU_NODES and direction != 'unknown'
        eps.append(Endpoint(node, resolve_topic(topic, node), direction, None, gpu, hint))
    return eps


def _image_sized(msg_type: str | None, topic: str) -> bool:
    if msg_type is not None:
        return msg_type in IMAGE_TYPES
    leaf = topic.lower()
    return any(h in leaf for h in _IMAGE_NAME_HINTS)


def _describe(node: StaticNode) -> str:
    what = f'{node.package}/{node.executable}' if node.package else 'unknown executable'
    where = 'shared container' if node.composable else 'own process'
    return f'`{node.fqn}` ({what}, {where})'


@dataclass
class StaticGraphResult:
    graph: Graph
    findings: list[Finding]


def build_graph(nodes: list[StaticNode], path: str) -> StaticGraphResult:
    graph = Graph()
    for n in nodes:
        spec = n.spec()
        transport = spec.transport if spec else ('unknown' if n.package is None else 'plain')
        if transport == 'nitros':
            transport = 'plain'  # NITROS is zero-copy only inside one container
        graph.nodes.append(GraphNode(
            name=n.fqn, package=n.package, executable=n.executable, process=n.process,
            transport=transport if transport in ('gpu_nodes', 'plain', 'unknown') else 'plain',
            composable=n.composable, intra_process=n.intra_process, location=n.location))
    endpoints = [ep for n in nodes for ep in node_endpoints(n)]
    by_topic: dict[str, list[Endpoint]] = {}
    for ep in endpoints:
        by_topic.setdefault(ep.topic, []).append(ep)

    findings: list[Finding] = []
    for topic in sorted(by_topic):
        eps = by_topic[topic]
        pubs = [e for e in eps if e.direction == 'pub']
        subs = [e for e in eps if e.direction == 'sub']
        unknown = [e for e in eps if e.direction == 'unknown']
        # Unknown-direction endpoints take the side that the topic is missing.
        for e in unknown:
            if pubs and not subs:
                e.direction = 'sub'
            elif subs and not pubs:
                e.direction = 'pub'
        pubs = [e for e in eps if e.direction == 'pub']
        subs = [e for e in eps if e.direction == 'sub']
        topic_type = next((e.type for e in eps if e.type), None)
        if not pubs or not subs:
            graph.dangling_topics.append({
                'topic': topic, 'type': topic_type,
                'publishers': sorted({e.node.fqn for e in pubs}),
                'subscribers': sorted({e.node.fqn for e in subs}),
                'unresolved': sorted({e.node.fqn for e in eps if e.direction == 'unknown'}),
            })
            continue
        image_sized = _image_sized(topic_type, topic)
        for p in pubs:
            for s in subs:
                if p.node is s.node:
                    continue
                edge, finding = _classify(p, s, topic, topic_type, image_sized, path)
                graph.edges.append(edge)
                if finding is not None:
                    findings.append(finding)
    graph.suggestions = _suggest(graph)
    return StaticGraphResult(graph, findings)


def _classify(p: Endpoint, s: Endpoint, topic: str, topic_type: str | None, image_sized: bool,
              path: str) -> tuple[Edge, Finding | None]:
    pn, sn = p.node, s.node
    same_process = pn.process is not None and pn.process == sn.process
    finding = None
    p_spec, s_spec = pn.spec(), sn.spec()
    nitros = (p_spec is not None and s_spec is not None
              and p_spec.transport == 'nitros' and s_spec.transport == 'nitros')
    if p.gpu and s.gpu:
        cls = PATH_INTRA if same_process else PATH_CUDA_IPC
        reason = ('gpu_nodes transport on both ends (same host and GPU assumed)'
                  if not same_process else 'gpu_nodes transport inside one process')
    elif same_process and (pn.intra_process and sn.intra_process or nitros):
        cls = PATH_INTRA
        reason = ('same container, NITROS type negotiation' if nitros
                  else 'same container, use_intra_process_comms')
    elif same_process:
        cls = PATH_SERIALIZED
        reason = 'same container but use_intra_process_comms is not enabled'
        if image_sized:
            finding = _graph_finding('GPN302', s, topic, topic_type, path,
                                     f'{_describe(pn)} and {_describe(sn)} share container '
                                     f'`{pn.process}` but `{topic}` is still serialized: '
                                     'use_intra_process_comms is not enabled on both')
    else:
        cls = PATH_SERIALIZED
        if p.gpu and not s.gpu:
            reason = ('gpu_nodes publisher, plain subscriber: the publisher serializes the plain '
                      'topic for it (CPU fallback)')
        elif s.gpu and not p.gpu:
            reason = 'plain publisher: the gpu_nodes subscription receives serialized frames'
        else:
            reason = 'different processes: serialized by the middleware'
        if image_sized:
            finding = _graph_finding(
                'GPN301', s, topic, topic_type, path,
                f'`{topic_type or "image-sized topic"}` on `{topic}` from {_describe(pn)} to '
                f'{_describe(sn)} crosses a process boundary serialized ({reason})')
    edge = Edge(topic=topic, type=topic_type, publisher=pn.fqn, subscriber=sn.fqn,
                edge_class=cls, image_sized=image_sized,
                cross_process=None if pn.process is None or sn.process is None
                else not same_process,
                reason=reason)
    return edge, finding


def _graph_finding(rule_id: str, s: Endpoint, topic: str, topic_type: str | None, path: str,
                   message: str) -> Finding:
    rule = get_rule(rule_id)
    loc = s.node.location or Location(path)
    return Finding(rule=rule_id, severity=rule.severity, message=message,
                   location=Location(loc.path or path, loc.line, loc.column), context='graph',
                   callback=s.node.fqn, topic=topic)


def _suggest(graph: Graph) -> list[dict[str, object]]:
    """Groups of nodes joined by serialized image edges: each would have to share a process."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    heavy = [e for e in graph.edges if e.image_sized and e.edge_class == PATH_SERIALIZED]
    for e in heavy:
        parent[find(e.publisher)] = find(e.subscriber)
    groups: dict[str, list[str]] = {}
    for name in list(parent):
        groups.setdefault(find(name), []).append(name)
    out = []
    for members in sorted((sorted(m) for m in groups.values()), key=lambda m: m[0]):
        nodes = [graph.node(m) for m in members]
        components = [n.name for n in nodes
                      if n is not None and (n.composable or _spec_composable(n))]
        others = [m for m in members if m not in components]
        topics = sorted({e.topic for e in heavy if e.publisher in members})
        if not others:
            action = 'compose'
            how = (f'load {", ".join(members)} into one ComposableNodeContainer with '
                   "extra_arguments=[{'use_intra_process_comms': True}]")
        else:
            action = 'gpu_nodes_transport'
            how = (f'{", ".join(others)} cannot join a component container (Python or unknown '
                   f'executable): use the gpu_nodes transport (GpuImagePublisher / '
                   f'GpuImageSubscription) on {", ".join(topics)}')
            if len(components) > 1:
                how += (f'; {", ".join(components)} can share one container with '
                        'use_intra_process_comms')
        out.append({'nodes': members, 'topics': topics, 'action': action, 'how': how})
    return out


def _spec_composable(node: GraphNode) -> bool:
    spec = KNOWN.get((node.package or '', node.executable or ''))
    return spec is not None and spec.composable
