"""schedctl without a server: argument parsing, configuration, input files, error lines, exit codes."""

from __future__ import annotations

import ast
import socket
import sys
from pathlib import Path

import pytest

from schedctl import config, main
from schedctl.errors import ApiError, InputError, UsageError
from schedctl.inputs import read_submission
from schedctl.jobs import parse_job_ref

CLI_DIR = Path(main.__file__).parent


# No SCHEDCTL_* variable or ~/.config file of the machine leaks into a test (conftest.py).
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.mark.parametrize(("argv", "expected"), [
    (["job", "list"], {"command": "job", "verb": "list", "output": "table", "server": None, "queue": None}),
    (["-o", "json", "job", "list", "--queue", "q", "-n", "ml", "--state", "Pending,Inqueue",
      "--state", "Running"],
     {"output": "json", "queue": "q", "namespace": "ml", "state": ["Pending,Inqueue", "Running"]}),
    (["job", "list", "-o", "yaml", "--server", "http://h:1", "--token", "k", "--limit", "5"],
     {"output": "yaml", "server": "http://h:1", "token": "k", "limit": 5}),
    (["--server", "http://a:1", "queue", "get", "q1"], {"server": "http://a:1", "name": "q1", "verb": "get"}),
    (["job", "submit", "-f", "x.yaml", "--dry-run"], {"filename": "x.yaml", "dry_run": True}),
    (["job", "submit", "--filename", "-"], {"filename": "-", "dry_run": False}),
    (["why", "ml/train", "-o", "json"], {"command": "why", "job": "ml/train", "output": "json"}),
    (["node", "list"], {"command": "node", "verb": "list"}),
    (["queue", "close", "q"], {"verb": "close", "name": "q"}),
])
def test_parse(argv, expected):
    args = vars(main.parse_args(argv))
    assert {k: args.get(k) for k in expected} == expected


@pytest.mark.parametrize("argv", [
    [], ["job"], ["job", "frobnicate"], ["job", "get"], ["job", "submit"], ["job", "list", "-o", "xml"],
    ["job", "list", "--limit", "0"], ["queue", "open"], ["why"], ["node", "list", "extra"], ["bogus"],
])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main.main(argv)
    assert exc.value.code == 2
    assert "usage: schedctl" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["--help"], ["job", "--help"], ["job", "list", "--help"], ["job", "get", "--help"],
    ["job", "submit", "--help"], ["job", "cancel", "--help"], ["queue", "--help"],
    ["queue", "list", "--help"], ["queue", "get", "--help"], ["queue", "open", "--help"],
    ["queue", "close", "--help"], ["node", "--help"], ["node", "list", "--help"], ["why", "--help"],
])
def test_every_command_has_help(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main.main(argv)
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("usage: schedctl")


@pytest.mark.parametrize(("ref", "parsed"), [
    ("12", (12, "", "")), ("ml/train", (None, "ml", "train")), (" ml/a/b ", (None, "ml", "a/b")),
])
def test_job_refs(ref, parsed):
    assert parse_job_ref(ref) == parsed


@pytest.mark.parametrize("ref", ["train", "/train", "ml/", "-3"])
def test_bad_job_refs(ref):
    with pytest.raises(UsageError, match="JOB must be a job id or namespace/name"):
        parse_job_ref(ref)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_config_precedence(tmp_path):
    home = tmp_path / "h"
    _write(home, ".config/schedctl/config.yaml", "server: http://file:1/\ntoken: from-file\n")
    resolve, conf = config.resolve, config.Config
    assert resolve(server=None, token=None, environ={}, home=home) == conf("http://file:1", "from-file")
    env = {"SCHEDCTL_SERVER": "http://env:2", "SCHEDCTL_TOKEN": "from-env"}
    assert resolve(server=None, token=None, environ=env, home=home) == conf("http://env:2", "from-env")
    assert resolve(server="https://flag:3", token="from-flag", environ=env, home=home) == \
        config.Config("https://flag:3", "from-flag")
    assert resolve(server=None, token=None, environ={}, home=tmp_path / "nobody") == \
        config.Config("http://127.0.0.1:8000", None)
    other = _write(tmp_path, "other.yaml", "token: t2\n")
    assert resolve(server=None, token=None, environ={"SCHEDCTL_CONFIG": str(other)}, home=home) == \
        config.Config("http://127.0.0.1:8000", "t2")


@pytest.mark.parametrize(("text", "line", "message"), [
    ("server: http://x\nsever: http://y\n", 2, "unknown key 'sever'; expected server or token"),
    ("server: [a, b]\n", 1, "server: expected a string"),
    ("token:\n", 1, "token: expected a string"),
    ("- server\n", 1, "expected a mapping with server: and token:"),
    ("server: x\n  bad: [\n", 2, "not valid YAML: mapping values are not allowed here"),
])
def test_bad_config_file_is_file_line_message(tmp_path, text, line, message):
    path = _write(tmp_path, "c.yaml", text)
    with pytest.raises(InputError) as exc:
        config.resolve(server=None, token=None, environ={"SCHEDCTL_CONFIG": str(path)})
    assert exc.value.lines() == [f"{path}:{line}: {message}"]
    assert exc.value.exit_code == 2


def test_named_config_file_must_exist(tmp_path):
    with pytest.raises(InputError, match=r"missing\.yaml:1: cannot read: No such file or directory"):
        config.resolve(server=None, token=None, environ={"SCHEDCTL_CONFIG": str(tmp_path / "missing.yaml")})


@pytest.mark.parametrize(("server", "token", "message"), [
    ("127.0.0.1:8000", None, "--server must be an http:// or https:// URL, not '127.0.0.1:8000'"),
    ("ftp://h", None, "--server must be an http:// or https:// URL, not 'ftp://h'"),
    ("http://h", "a key", "the token must be printable ASCII without spaces (it goes into an HTTP header)"),
    ("http://h", "clé", "the token must be printable ASCII without spaces (it goes into an HTTP header)"),
])
def test_bad_server_or_token(server, token, message, capsys):
    argv = ["node", "list", "--server", server] + (["--token", token] if token else [])
    assert main.main(argv, environ={}) == 2
    assert capsys.readouterr().err == f"schedctl: {message}\n"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_one_line(capsys):
    port = _closed_port()
    assert main.main(["job", "list", "--server", f"http://127.0.0.1:{port}"], environ={}) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"schedctl: cannot connect to http://127.0.0.1:{port}: connection refused "
                   "(is the server running? set SCHEDCTL_SERVER or --server)\n")


def test_api_error_lines():
    err = ApiError(400, "invalid", "tasks[0].request: bad", {
        "tasks[0].request": ["cpu: quantity must be a string or a number, not None."],
        "non_field_errors": ["Queue is closed."], "name": ["Too long.", "Bad."]},
        locate=lambda path: "job.json:4" if path.startswith("tasks") else None)
    assert err.lines() == [
        "schedctl: 400 invalid: tasks[0].request: cpu: quantity must be a string or a number, not None. "
        "(job.json:4)",
        "schedctl: 400 invalid: Queue is closed.",
        "schedctl: 400 invalid: name: Too long.",
        "schedctl: 400 invalid: name: Bad.",
    ]
    assert ApiError(404, "not_found", "Not found.").lines() == ["schedctl: 404 not_found: Not found."]


MANIFESTS = """\
# a queue, an empty document, then a vcjob
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  weight: 0
---
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tf
  namespace: ml
  annotations:
    volcano.sh/preemptable: "maybe"
spec:
  minAvailable: 3
  tasks:
  - name: ps
    replicas: 1
  - name: worker
    replicas: -2
"""


@pytest.mark.parametrize(("path", "where"), [
    ("documents[0].spec.weight", 6),
    ("documents[1].spec.tasks[1].replicas", 22),
    ("documents[1].spec.tasks[1]", 21),
    ("documents[1].metadata.annotations.volcano.sh/preemptable", 15),
    ("documents[1].spec.tasks[7].name", 18),  # past the end: the nearest enclosing node
    ("documents[1].spec.nope", 16),
    ("documents[1]", 9),
    ("documents[0].weight", 6),  # the server's field name: found under spec
    ("documents[1].name", 12),  # ... or under metadata
    ("documents[1].bogus", 9),
    ("documents[5].spec", None),
    ("yaml", None),
])
def test_manifest_error_paths_map_to_lines(tmp_path, path, where):
    sub = read_submission(str(_write(tmp_path, "m.yaml", MANIFESTS)))
    assert sub.kind == "manifest"
    assert sub.locate(path) == (None if where is None else f"{tmp_path}/m.yaml:{where}")


def test_json_job_body(tmp_path):
    body = ('{\n  "namespace": "ml",\n  "name": "a",\n  "tasks": [\n'
            '    {"name": "a-0", "request": {}}\n  ]\n}\n')
    sub = read_submission(str(_write(tmp_path, "job.json", body)))
    assert (sub.kind, sub.job["name"]) == ("job", "a")
    assert sub.locate("tasks[0].request") == f"{tmp_path}/job.json:5"
    assert sub.locate("queue") == f"{tmp_path}/job.json:1"
    # A JSON manifest (it has a kind) goes to the manifest import like YAML.
    sub = read_submission(str(_write(tmp_path, "q.json", '{"apiVersion": "v1", "kind": "Queue"}')))
    assert sub.kind == "manifest"


@pytest.mark.parametrize(("name", "text", "line", "message"), [
    ("bad.json", '{\n  "name": "a",\n}\n', 3, "not valid JSON: Expecting property name enclosed in double "
                                             "quotes (column 1)"),
    ("bad.yaml", "kind: Job\nspec:\n  tasks: [a\n  b: 1\n", 4,
     "not valid YAML: expected ',' or ']', but got ':'"),
    ("list.yaml", "kind: Job\n---\n- a\n- b\n", 3,
     "document 2: expected a manifest (a mapping with apiVersion and kind)"),
    ("empty.yaml", "\n\n", 1, "the file is empty"),
    ("nulls.yaml", "---\n---\n", 1, "no YAML documents in the file"),
    ("many.json", '[{"name": "a"}]', 1, "a JSON file holds one job body (an object); put several jobs in a "
                                        "YAML manifest file, one document each"),
])
def test_bad_input_files(tmp_path, name, text, line, message, capsys):
    path = _write(tmp_path, name, text)
    assert main.main(["job", "submit", "-f", str(path), "--server", "http://127.0.0.1:9"], environ={}) == 2
    assert capsys.readouterr().err == f"{path}:{line}: {message}\n"


def test_unreadable_input(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert main.main(["job", "submit", "-f", str(missing)], environ={}) == 2
    assert capsys.readouterr().err == f"{missing}:1: cannot read: No such file or directory\n"
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"kind: Job\n\xff\xfe\n")
    assert main.main(["job", "submit", "-f", str(binary)], environ={}) == 2
    assert capsys.readouterr().err == f"{binary}:2: not UTF-8 text\n"


def test_client_imports_only_stdlib_and_yaml():
    """The command line runs where Django and DRF are not installed: no other import anywhere."""
    allowed = set(sys.stdlib_module_names) | {"yaml", "schedctl"}
    for path in sorted(CLI_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_version(capsys):
    from importlib import metadata

    with pytest.raises(SystemExit) as exc:
        main.main(["--version"])
    assert (exc.value.code, capsys.readouterr().out) == (0, f"schedctl {metadata.version('schedweb')}\n")


def test_stdin_is_read_for_dash(monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"namespace": "ml", "name": "a"}')))
    sub = read_submission("-")
    assert (sub.name, sub.kind, sub.job) == ("<stdin>", "job", {"namespace": "ml", "name": "a"})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"kind: Job\n: :\n  - [\n")))
    with pytest.raises(InputError, match=r"^<stdin>:\d+: not valid YAML: "):
        read_submission("-")
