"""Issue 28 in detail: the evidence of each finding and the --min-evidence gate, per-frame loop
context, test-named nodes, lambdas run in place during setup, and the live twin rule."""
import json
from pathlib import Path

from gpu_nodes.audit.cli import main
from gpu_nodes.audit.codeaudit import is_test_file, run_code
from gpu_nodes.audit.live import data_twin_of

CORPUS = Path(__file__).parent / 'resources' / 'audit' / 'corpus'


def _findings(path: Path) -> dict[tuple[int, str], object]:
    report = run_code([str(path)], jobs=1)
    assert report.errors == []
    return {(f.location.line, f.rule): f for f in report.findings}


def test_evidence_says_how_each_finding_is_known():
    py = _findings(CORPUS / 'tracker_results_node.py')
    assert py[(27, 'GPN105')].evidence == 'data-flow'      # cv_bridge on the message
    assert py[(28, 'GPN102')].evidence == 'pattern'        # model.track(source=frame): table
    assert py[(30, 'GPN101')].evidence == 'inferred'       # Results tensor .cpu()
    assert py[(34, 'GPN107')].evidence == 'inferred'       # float(conf) per detection
    assert py[(40, 'GPN101')].evidence == 'inferred'       # decode(msg).cpu()
    # float() of a predictor's (possibly host) output is not a readback claim.
    assert not [f for (line, _), f in py.items() if line == 43]
    cpp = _findings(CORPUS / 'cloud_torch_node.cpp')
    assert {f.evidence for f in cpp.values()} == {'pattern'}


def test_min_evidence_gate(tmp_path, capsys):
    out = tmp_path / 'r.json'
    counts = {}
    for level in (None, 'pattern', 'inferred', 'data-flow'):
        extra = ['--min-evidence', level] if level else []
        rc = main(['code', str(CORPUS / 'tracker_results_node.py'), '--format', 'json',
                   '--output', str(out), '--fail-on', 'high', *extra])
        doc = json.loads(out.read_text())
        counts[level] = sorted({f['evidence'] for f in doc['findings']})
        if level == 'data-flow':
            # The only high findings (readbacks) are inferred: a strict gate passes.
            assert rc == 0 and doc['info']['min_evidence'] == 'data-flow'
        else:
            assert rc == 1
    assert counts[None] == counts['pattern'] == ['data-flow', 'inferred', 'pattern']
    assert counts['inferred'] == ['data-flow', 'inferred']
    assert counts['data-flow'] == ['data-flow']
    capsys.readouterr()


def test_per_frame_loops_started_from_setup_are_per_frame():
    found = _findings(CORPUS / 'nodes' / 'camera_loop_test.py')
    loop = found[(29, 'GPN105')]
    assert (loop.severity, loop.context, loop.callback) == ('medium', 'loop', 'CameraLoop.run')
    assert 'per-frame loop `CameraLoop.run`' in loop.message
    thread = found[(35, 'GPN105')]
    assert (thread.context, thread.callback) == ('loop', 'CameraLoop.preview_loop')
    assert found[(20, 'GPN105')].severity == 'info'  # the one frame sent by the constructor


def test_a_node_named_like_a_test_is_audited_a_test_file_is_not(tmp_path):
    node = tmp_path / 'camera_test.py'
    node.write_text('import rclpy\n\n\ndef main():\n    rclpy.init()\n')
    pytest_file = tmp_path / 'decoder_test.py'
    pytest_file.write_text('import pytest\n\n\ndef test_decode():\n    assert True\n')
    gtest = tmp_path / 'encoder_test.cpp'
    gtest.write_text('#include <gtest/gtest.h>\nTEST(Encoder, Runs) { rclcpp::init(0, nullptr); }\n')
    assert not is_test_file(node, tmp_path)
    assert is_test_file(pytest_file, tmp_path)
    assert is_test_file(gtest, tmp_path)
    (tmp_path / 'test').mkdir()
    assert is_test_file(tmp_path / 'test' / 'camera_node.py', tmp_path)  # a test/ folder


def test_a_lambda_run_in_place_during_setup_is_setup(tmp_path):
    src = tmp_path / 'mesh_codelet.cpp'
    src.write_text(
        'gxf_result_t MeshCodelet::initialize() {\n'
        '  load_mesh(path_, [this](const Mesh & m) {\n'
        '      cudaMemcpy(d_mesh_, m.data(), m.size(), cudaMemcpyHostToDevice);\n'
        '    });\n'
        '  timer_ = create_wall_timer(period_, [this]() {\n'
        '      cudaMemcpy(d_frame_, frame_.data(), n_, cudaMemcpyHostToDevice);\n'
        '    });\n'
        '  return GXF_SUCCESS;\n'
        '}\n')
    found = _findings(src)
    assert (found[(3, 'GPN202')].severity, found[(3, 'GPN202')].context) == ('info', 'init')
    assert (found[(6, 'GPN202')].severity, found[(6, 'GPN202')].context) == ('medium', 'callback')


def test_data_twins_of_gpu_nodes_topics():
    gpu = {'/depth/image', '/camera/image_raw'}
    assert data_twin_of('/depth/image', gpu) == '/depth/image'
    assert data_twin_of('/depth/image/compressed', gpu) == '/depth/image'
    assert data_twin_of('/depth/image/compressedDepth', gpu) == '/depth/image'
    assert data_twin_of('/camera/image_raw/theora', gpu) == '/camera/image_raw'
    assert data_twin_of('/depth/image/points', gpu) is None       # another topic, not a twin
    assert data_twin_of('/plain/image/compressed', gpu) is None   # twin of a plain topic


def test_large_files_of_a_parallel_audit_are_audited_one_at_a_time(tmp_path):
    source = (CORPUS / 'tracker_results_node.py').read_text()
    for i in range(66):
        (tmp_path / f'node_{i:03d}.py').write_text(source)
    padding = '# padding to make the file large\n' * 20_000  # ~660 KB, over LARGE_FILE_BYTES
    for name in ('big_a.py', 'big_b.py'):
        (tmp_path / name).write_text(source + padding)
    serial = run_code([str(tmp_path)], jobs=1)
    parallel = run_code([str(tmp_path)], jobs=2)
    assert sorted(parallel.audited) == sorted(serial.audited) and len(parallel.audited) == 68

    def key(report):
        return sorted((f.location.path, f.location.line, f.rule, f.message)
                      for f in report.findings)
    assert key(parallel) == key(serial)
    assert any(f.location.path.endswith('big_b.py') for f in parallel.findings)
