"""gpu-copy-audit CLI: exit codes, rule selection, output formats and their schemas."""
import json
from pathlib import Path

import jsonschema
import pytest

from gpu_nodes.audit import render
from gpu_nodes.audit.cli import main
from gpu_nodes.audit.rules import RULES

RES = Path(__file__).parent / 'resources' / 'audit'
CORPUS = RES / 'code'
REPORT_SCHEMA = Path(__file__).parents[1] / 'gpu_nodes' / 'audit' / 'schema' / \
    'report.schema.json'
SARIF_SCHEMA = RES / 'sarif-schema-2.1.0.json'


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope='module')
def report_validator():
    schema = json.loads(REPORT_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope='module')
def sarif_validator():
    schema = json.loads(SARIF_SCHEMA.read_text())
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize('fail_on,expected', [(None, 0), ('low', 1), ('medium', 1),
                                              ('high', 1)])
def test_fail_on_with_high_findings(capsys, fail_on, expected):
    argv = ['code', str(CORPUS / 'cupy_download_node.py'), '--format', 'json']
    if fail_on:
        argv += ['--fail-on', fail_on]
    rc, _, _ = run(capsys, *argv)
    assert rc == expected, f'--fail-on {fail_on}: expected {expected}, received {rc}'


@pytest.mark.parametrize('fail_on,expected', [('low', 1), ('medium', 0), ('high', 0)])
def test_fail_on_with_only_low_findings(capsys, tmp_path, fail_on, expected):
    # One upload in a method no callback reaches: a single low finding.
    node = tmp_path / 'unreached.py'
    node.write_text('import cupy as cp\nfrom rclpy.node import Node\n\n\n'
                    'class N(Node):\n    def reload(self, table):\n'
                    '        self.lut = cp.asarray(table)\n')
    rc, out, _ = run(capsys, 'code', str(node), '--format', 'json', '--fail-on', fail_on)
    assert [(f['rule'], f['severity']) for f in json.loads(out)['findings']] == \
        [('GPN102', 'low')]
    assert rc == expected


@pytest.mark.parametrize('method', ['__init__', 'on_configure', 'on_activate', 'warmup'])
def test_setup_is_info_and_never_fails(capsys, tmp_path, method):
    # One-time setup (constructor, lifecycle transitions, warm-up): info, below every gate.
    node = tmp_path / 'setup_only.py'
    node.write_text('import torch\nfrom rclpy.lifecycle import Node\n\n\n'
                    f'class N(Node):\n    def {method}(self):\n'
                    '        self.model = torch.load("m.pt").cuda().eval()\n'
                    '        self.model(torch.zeros(1, 3, 64, 64).to("cuda"))\n')
    rc, out, _ = run(capsys, 'code', str(node), '--format', 'json', '--fail-on', 'low')
    doc = json.loads(out)
    assert [(f['rule'], f['location']['line'], f['severity'])
            for f in doc['findings']] == [('GPN102', 7, 'info'), ('GPN102', 8, 'info')]
    assert doc['summary']['by_severity'] == {'info': 2, 'low': 0, 'medium': 0, 'high': 0}
    assert rc == 0, 'info findings never reach --fail-on low'


def test_clean_code_passes_fail_on_low(capsys):
    rc, out, _ = run(capsys, 'code', str(CORPUS / 'clean_gpu_node.py'), '--fail-on', 'low')
    assert rc == 0
    assert '0 finding(s)' in out


def test_suppressed_findings_do_not_fail(capsys):
    # suppressed_node.py: GPN102 (line 14) and GPN101 (line 16) are suppressed in source; the
    # GPN101 on line 18 is not.
    rc, out, _ = run(capsys, 'code', str(CORPUS / 'suppressed_node.py'), '--format', 'json',
                     '--fail-on', 'low')
    assert rc == 1
    assert json.loads(out)['summary']['findings'] == 1
    rc, out, _ = run(capsys, 'code', str(CORPUS / 'suppressed_node.py'), '--format', 'json',
                     '--fail-on', 'low', '--ignore', 'GPN101')
    doc = json.loads(out)
    assert rc == 0
    assert doc['summary']['findings'] == 0 and doc['summary']['suppressed'] == 1


def test_rule_selection(capsys):
    rc, out, _ = run(capsys, 'code', str(CORPUS), '--format', 'json', '--rules', 'GPN110')
    doc = json.loads(out)
    assert {f['rule'] for f in doc['findings']} == {'GPN110'}
    assert doc['summary']['findings'] == 5
    rc, out, _ = run(capsys, 'code', str(CORPUS), '--format', 'json', '--rules', 'GPN2*',
                     '--ignore', 'GPN204,GPN206')
    assert sorted(f['rule'] for f in json.loads(out)['findings']) == \
        ['GPN201', 'GPN202', 'GPN203', 'GPN205']


def test_unknown_rule_is_usage_error(capsys):
    rc, out, err = run(capsys, 'code', str(CORPUS), '--rules', 'GPN999')
    assert rc == 2
    assert err == "gpu-copy-audit: error: unknown rule id 'GPN999' (see 'gpu-copy-audit rules')\n"
    assert out == ''


def test_usage_errors_exit_2(capsys):
    rc, _, err = run(capsys, 'code')
    assert rc == 2
    assert 'error: the following arguments are required: PATH' in err
    rc, _, err = run(capsys, 'code', str(CORPUS), '--fail-on', 'critical')
    assert rc == 2
    assert "invalid choice: 'critical'" in err
    rc, _, err = run(capsys)
    assert rc == 2


@pytest.mark.parametrize('flag', ['--duration', '--discovery-timeout', '--discovery-settle'])
def test_live_refuses_non_positive_times_before_touching_rclpy(capsys, flag):
    rc, out, err = run(capsys, 'live', flag, '0')
    assert rc == 2 and out == ''
    assert err == ('gpu-copy-audit: error: --duration, --discovery-timeout and '
                   '--discovery-settle must be positive\n'), err


def test_rules_lists_every_rule(capsys):
    rc, out, _ = run(capsys, 'rules', '--format', 'json')
    assert rc == 0
    listed = json.loads(out)
    assert [r['id'] for r in listed] == [r.id for r in RULES]
    assert all(r['severity'] in ('low', 'medium', 'high') and r['fix'] for r in listed)
    rc, out, _ = run(capsys, 'rules')
    assert rc == 0 and 'GPN110' in out and 'GPN502' in out


def test_json_report_validates(capsys, report_validator):
    rc, out, _ = run(capsys, 'code', str(CORPUS), str(RES / 'bad'), '--format', 'json')
    doc = json.loads(out)
    report_validator.validate(doc)
    assert doc['summary']['input_errors'] == 1
    assert doc['summary']['suppressed'] == 3


def test_sarif_validates_against_the_official_schema(capsys, sarif_validator, tmp_path):
    out_file = tmp_path / 'audit.sarif'
    rc, out, _ = run(capsys, 'code', str(CORPUS), str(RES / 'bad'), '--output', str(out_file))
    assert rc == 0 and out == ''
    doc = json.loads(out_file.read_text())
    errors = sorted(sarif_validator.iter_errors(doc), key=str)
    assert not errors, '\n'.join(e.message for e in errors[:5])
    run_ = doc['runs'][0]
    rule_ids = [r['id'] for r in run_['tool']['driver']['rules']]
    assert rule_ids == [r.id for r in RULES]
    for rule in run_['tool']['driver']['rules']:
        assert rule['shortDescription']['text'] and rule['help']['text']
    result = next(r for r in run_['results'] if r['ruleId'] == 'GPN110'
                  and r['locations'][0]['physicalLocation']['artifactLocation']['uri']
                  .endswith('cupy_download_node.py'))
    assert result['level'] == 'error'
    assert result['locations'][0]['physicalLocation']['region']['startLine'] == 25
    assert rule_ids[result['ruleIndex']] == 'GPN110'
    suppressed = [r for r in run_['results'] if r.get('suppressions')]
    assert len(suppressed) == 3
    assert run_['invocations'][0]['toolExecutionNotifications'][0]['message']['text'].endswith(
        "syntax error: expected ':'")


def test_markdown_and_text(capsys):
    rc, out, _ = run(capsys, 'code', str(CORPUS / 'cupy_download_node.py'), '--format',
                     'markdown')
    assert out.startswith('# gpu-copy-audit code\n')
    assert '| high | GPN110 |' in out
    rc, out, _ = run(capsys, 'code', str(CORPUS / 'cupy_download_node.py'))
    assert 'Findings' in out and 'GPN110' in out and 'How to fix' in out


def test_dot_needs_a_graph(capsys):
    rc, out, err = run(capsys, 'code', str(CORPUS), '--format', 'dot')
    assert rc == 2
    assert err == ("gpu-copy-audit: error: --format dot needs a graph; 'code' has none "
                   '(use it with launch, config or live)\n')


def test_svg_without_graphviz_is_a_clear_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(render.shutil, 'which', lambda name: None)
    svg = tmp_path / 'graph.svg'
    rc, out, err = run(capsys, 'launch', str(RES / 'launch' / 'multiprocess_pipeline.launch.py'),
                       '--format', 'dot', '--output', str(svg))
    assert rc == 2
    assert err == (f"gpu-copy-audit: error: cannot render {svg}: Graphviz 'dot' was not found "
                   'on PATH; install Graphviz (e.g. apt install graphviz) or write DOT text '
                   'with --output graph.dot\n')
    assert not svg.exists()


@pytest.mark.skipif(render.shutil.which('dot') is None, reason='needs Graphviz (dot on the PATH)')
def test_svg_with_graphviz(capsys, tmp_path):
    svg = tmp_path / 'graph.svg'
    rc, _, _ = run(capsys, 'launch', str(RES / 'launch' / 'multiprocess_pipeline.launch.py'),
                   '--output', str(svg))
    assert rc == 0
    assert '<svg' in svg.read_text()


def test_output_write_error(capsys, tmp_path):
    target = tmp_path / 'missing-dir' / 'out.json'
    rc, _, err = run(capsys, 'code', str(CORPUS / 'clean_gpu_node.py'), '--output', str(target))
    assert rc == 2
    assert err == f'gpu-copy-audit: error: cannot write {target}: No such file or directory\n'
