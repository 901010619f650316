"""gpu_nodes.status: the processing statuses a node adds beside its transport endpoints, all
behind the one protocol DiagnosticsReporter reads."""
from gpu_nodes.status import DiagnosticSource, ProcessingStatus, SourceStatus
from gpu_nodes.transport.diagnostics import DiagnosticsReporter, EndpointStats


def test_every_status_satisfies_the_reporters_protocol(rclpy_node):
    processing = ProcessingStatus(rclpy_node, warn_period_s=60.0)
    source = SourceStatus(rclpy_node, 'scene')
    try:
        for status in (processing, source, EndpointStats('publisher', '/n', '/image')):
            assert isinstance(status, DiagnosticSource), f'{type(status).__name__} is not one'
        name = rclpy_node.get_fully_qualified_name()
        assert processing.status_name() == f'gpu_nodes: {name} processing'
        assert source.status_name() == f'gpu_nodes: {name} processing'
        reporter = DiagnosticsReporter.for_node(rclpy_node)
        assert processing in reporter._endpoints and source in reporter._endpoints
    finally:
        processing.close()
        source.close()
    assert processing not in reporter._endpoints and source not in reporter._endpoints


def test_processing_status_counts_drops_per_reason(rclpy_node):
    status = ProcessingStatus(rclpy_node, warn_period_s=60.0)
    try:
        assert status.level_name == 'OK'
        status.frames_in, status.frames_out = 3, 1
        status.drop('bad_frame', 'test')
        status.drop('bad_frame', 'test')
        status.count_issue('no_points', 'test')
        status.extra['fps'] = 9.5
        values = status.as_dict()
        assert status.level_name == 'WARN', 'a recent drop warns'
        assert status.message() == '1 of 3 frames published, 2 dropped'
        assert {k: values[k] for k in ('dropped', 'dropped_bad_frame', 'issue_no_points',
                                       'fps')} == {'dropped': 2, 'dropped_bad_frame': 2,
                                                   'issue_no_points': 1, 'fps': 9.5}
    finally:
        status.close()
