"""A real SGLang server on the CPU, for a plugin's own tests: ``python -m sglang.launch_server``
with a tiny model.

The ``sglang_server`` fixture (and :func:`running_sglang_server`, for tests that start their own)
runs the server with the Python that runs the tests, so the plugin under test is installed exactly
as a user installs it. The model is a random two-layer Llama built offline by ``transformers``
(once, cached by the hash of the recipe below); only 127.0.0.1 is used; the server runs in its own
process group, which is always ended. Standard library only: SGLang, torch and transformers run in
the server's processes, never in the test's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Where the serving venv, the tiny model and the vllm placeholder are kept (default
#: ``~/.cache/sglang-plugin-runtime``).
CACHE_ENV = "SGLANG_SERVER_CACHE"
#: What a hook logs on its first call in each process (a generated package's ``logs_first_call``).
FIRST_CALL = re.compile(r"first call of hook (?P<hook>[\w.]+) in pid (?P<pid>\d+)")
#: Every process of a server started here carries this variable (its value is the server's own id),
#: so that a process left behind can be found and ended.
TAG_ENV = "SGLANG_SERVER_FIXTURE_ID"
#: The pids (and session ids) of the servers this process started.
_STARTED: list[int] = []
#: What ``python -m sglang.launch_server`` prints once it answers requests.
READY_LINE = "The server is fired up and ready to roll!"
#: Exits 0 where the Python running it has ``vllm`` (elsewhere the server gets the placeholder).
_HAS_VLLM = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
#: Set for the tiny model's build and for the server: nothing is downloaded.
_OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

#: Builds the model in the server's Python (``transformers`` and ``tokenizers``, no network): a
#: LlamaConfig with hidden size 64, 2 layers and 4 heads, a byte-level BPE tokenizer trained on a
#: few sentences, a chat template.
MODEL_RECIPE = r"""
import sys
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = sys.argv[1]
torch.manual_seed(0)
sentences = [
    "Hello, my name is SGLang and I serve language models.",
    "The plugin kit runs hooks inside the real server.",
    "A tiny random model answers every request quickly on the CPU.",
    "What is the capital of France? The capital of France is Paris.",
]
bpe = Tokenizer(models.BPE(unk_token=None))
bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
bpe.decoder = decoders.ByteLevel()
special = ["<s>", "</s>", "<pad>"]
trainer = trainers.BpeTrainer(
    vocab_size=512, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
)
bpe.train_from_iterator(sentences * 4, trainer=trainer)
tokenizer = PreTrainedTokenizerFast(
    tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
)
tokenizer.chat_template = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant: {% endif %}"
)
config = LlamaConfig(
    vocab_size=len(tokenizer),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=2048,
    bos_token_id=tokenizer.bos_token_id,
    eos_token_id=tokenizer.eos_token_id,
    pad_token_id=tokenizer.pad_token_id,
    torch_dtype="float32",
)
model = LlamaForCausalLM(config)
model.save_pretrained(out, safe_serialization=True)
tokenizer.save_pretrained(out)
"""

#: ``vllm._custom_ops``, import-only: released SGLang imports ``rotary_embedding`` from it on the
#: base platform (``sglang/srt/layers/rotary_embedding/base.py``) and never calls it on the CPU
#: path; a call raises.
VLLM_PLACEHOLDER = '''"""Import-only placeholder, written by the plugin kit's sglang_server."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)

    def placeholder(*args, **kwargs):
        raise RuntimeError(f"vllm placeholder: {__name__}.{name} was called (not on the CPU path)")

    placeholder.__name__ = name
    return placeholder
'''


class SGLangServerError(RuntimeError):
    """The server did not become ready (it exited, or the wait ran out); the message has its log."""


@dataclass
class SGLangServer:
    """A running server: its address, its log and its process group."""

    url: str
    port: int
    log: Path
    process: subprocess.Popen[bytes]
    tag: str
    #: Seconds from the start of the command until the server answered.
    ready_after: float = 0.0
    command: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def hook_first_calls(self) -> dict[str, dict[int, str]]:
        """Each hook whose first call in a process the log records (:data:`FIRST_CALL`): the pids
        of those processes, each with its name while it runs (``sglang::scheduler...``; ``""``
        once gone)."""
        names = server_processes(self)
        calls: dict[str, dict[int, str]] = {}
        for match in FIRST_CALL.finditer(self.log_text()):
            pid = int(match["pid"])
            calls.setdefault(match["hook"], {})[pid] = names.get(pid, "")
        return calls

    def generate(
        self,
        text: str = "Hello",
        max_new_tokens: int = 4,
        timeout: float = 60,
    ) -> dict[str, Any]:
        """``POST /generate`` (greedy); the JSON answer, with the HTTP status under ``"status"``."""
        sampling = {"max_new_tokens": max_new_tokens, "temperature": 0}
        return self.request("/generate", {"text": text, "sampling_params": sampling}, timeout)

    def request(self, path: str, body: Any = None, timeout: float = 60) -> dict[str, Any]:
        """A GET (``body`` None) or JSON POST to this server; the JSON answer plus ``"status"``."""
        request = urllib.request.Request(self.url + path)
        if body is not None:
            request.data = json.dumps(body).encode("utf-8")
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = {"text": raw.decode("utf-8", "replace")}
        if not isinstance(answer, dict):
            answer = {"answer": answer}
        answer["status"] = status
        return answer

    def stop(self, grace: float = 20) -> None:
        """End the server's whole process group (SIGTERM, then SIGKILL after ``grace`` seconds),
        reap its leader, then SIGKILL any process of this server that left the group (none is
        expected)."""
        with contextlib.suppress(ProcessLookupError):  # raised once the whole group is gone
            for sig in (signal.SIGTERM, signal.SIGKILL):
                os.killpg(self.pid, sig)
                deadline = time.monotonic() + grace
                while time.monotonic() < deadline:
                    self.process.poll()  # reaps the leader once it exits
                    os.killpg(self.pid, 0)
                    time.sleep(0.2)
        self.process.wait(timeout=grace)
        for pid in _tagged_pids({self.pid}, self.tag):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def cache_root() -> Path:
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get(CACHE_ENV) or xdg / "sglang-plugin-runtime")


def tiny_model(
    python: str = sys.executable,
    root: Path | None = None,
    timeout: float = 300,
) -> Path:
    """The tiny Llama's folder, built by ``python`` (offline, ``transformers``) on first use."""
    digest = hashlib.sha256(MODEL_RECIPE.encode("utf-8")).hexdigest()[:12]
    folder = (root or cache_root()) / f"tiny-llama-{digest}"
    if (folder / ".complete").exists():
        return folder
    partial = folder.with_name(f"{folder.name}.{os.getpid()}.partial")
    completed = subprocess.run(
        [python, "-c", MODEL_RECIPE, str(partial)],
        env=dict(os.environ, **_OFFLINE),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if completed.returncode != 0:
        raise SGLangServerError(f"building the tiny model failed:\n{completed.stderr[-4000:]}")
    (partial / ".complete").touch()
    try:
        partial.rename(folder)
    except OSError:  # another process built it first
        if not (folder / ".complete").exists():
            raise
    return folder


def vllm_placeholder() -> Path:
    """A folder to put on ``PYTHONPATH`` holding the import-only ``vllm`` placeholder."""
    folder = cache_root() / "vllm-placeholder"
    package = folder / "vllm"
    if not (package / "_custom_ops.py").exists():
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text('"""Import-only placeholder (see _custom_ops)."""\n')
        (package / "_custom_ops.py").write_text(VLLM_PLACEHOLDER)
    return folder


@contextlib.contextmanager
def running_sglang_server(*, timeout: float = 240, **options: Any) -> Iterator[SGLangServer]:
    """A real server for the ``with`` block, ended (its whole process group) when the block ends.

    ``options`` are :func:`start_sglang_server`'s (``python``, ``model``, ``paths``, ``env``,
    ``launcher``, ``attention_backend``, ``device``, ``extra_args``, ``log``). Raises
    :class:`SGLangServerError` (with the log) when the server exits or does not answer within
    ``timeout`` seconds."""
    server = start_sglang_server(**options)
    try:
        wait_until_ready(server, timeout)
        yield server
    finally:
        server.stop()


def start_sglang_server(
    *,
    python: str = sys.executable,
    model: Path | None = None,
    paths: Sequence[Path | str] = (),
    env: Mapping[str, str] | None = None,
    launcher: bool = False,
    attention_backend: str | None = "torch_native",
    device: str | None = "cpu",
    extra_args: Sequence[str] = (),
    log: Path | None = None,
) -> SGLangServer:
    """Start the server in its own process group; return at once (see :func:`wait_until_ready`).

    The command is ``python -m sglang.launch_server`` on 127.0.0.1 (under ``sglang-plugins run``
    when ``launcher``). Its environment: offline, SGLang's own CPU engine off, ranks talking over
    the loopback interface; ``paths`` go first on its ``PYTHONPATH`` (a ``pip install --target``
    folder of plugins), then (when the server's Python has no ``vllm``) the placeholder; ``env`` is
    added last."""
    command = [
        python,
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(model or tiny_model(python)),
    ]
    port = 65535
    # A TCP port free on 127.0.0.1 now, below 55536: SGLang 0.5.13 to 0.5.16 refuse a --port whose
    # port + 10000 (their gRPC port, unused here) is past 65535.
    while port > 55535:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
    command += ["--host", "127.0.0.1", "--port", str(port)]
    command += ["--mem-fraction-static", "0.1", "--max-total-tokens", "2048"]
    if device is not None:
        command += ["--device", device]
    if attention_backend is not None:
        command += ["--attention-backend", attention_backend]
    command += extra_args
    if launcher:
        command = [python, "-m", "sglang_plugin_runtime", "run", "--", *command]
    tag = uuid.uuid4().hex
    environment = dict(os.environ, SGLANG_USE_CPU_ENGINE="0", **_OFFLINE)
    if sys.platform.startswith("linux"):  # gloo would pick the interface of the host name's address
        environment.setdefault("GLOO_SOCKET_IFNAME", "lo")
    entries = [str(p) for p in paths]
    if subprocess.run([python, "-c", _HAS_VLLM], capture_output=True).returncode != 0:
        entries.append(str(vllm_placeholder()))
    if environment.get("PYTHONPATH"):
        entries.append(environment["PYTHONPATH"])
    environment["PYTHONPATH"] = os.pathsep.join(entries)
    environment.update(env or {})
    environment[TAG_ENV] = tag
    log = log or cache_root() / "logs" / f"server-{tag[:8]}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _STARTED.append(process.pid)
    return SGLangServer(f"http://127.0.0.1:{port}", port, log, process, tag, command=command)


def wait_until_ready(server: SGLangServer, timeout: float = 240) -> SGLangServer:
    """Poll ``/model_info`` until the server answers and has printed its ready line (or fail fast
    when it exits); sets ``server.ready_after``. On failure the server is ended and
    :class:`SGLangServerError` raised."""
    began = time.monotonic()
    while time.monotonic() < began + timeout:
        if server.process.poll() is not None:
            what = f"exited with status {server.process.returncode}"
            break
        if READY_LINE in server.log_text():
            with contextlib.suppress(OSError):  # not answering yet
                if server.request("/model_info", timeout=5)["status"] == 200:
                    server.ready_after = time.monotonic() - began
                    return server
        time.sleep(0.25)
    else:
        what = f"was not ready after {timeout:.0f} s"
    server.stop()
    raise SGLangServerError(
        f"the SGLang server ({' '.join(server.command)}) {what}; "
        f"its log ({server.log}) ends:\n{server.log_text()[-8000:]}"
    )


def leftover_server_processes() -> list[int]:
    """The pids of processes still alive from a server this process started, or carrying the tag of
    any server of this kit (Linux; empty elsewhere)."""
    return sorted(_tagged_pids(set(_STARTED), None))


def server_processes(server: SGLangServer) -> dict[int, str]:
    """The server's live processes (pid -> the name ``ps`` shows, e.g. ``sglang::scheduler``)."""
    named = {}
    for pid in _tagged_pids({server.pid}, server.tag):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        named[pid] = " ".join(filter(None, argv.split("\0"))).strip()
    return named


def _tagged_pids(sessions: set[int], tag: str | None) -> set[int]:
    """Live processes in one of ``sessions`` or whose environment has ``TAG_ENV`` (equal to ``tag``
    unless it is None). Both are looked at: SGLang renames its children with setproctitle, which
    overwrites the memory ``/proc/PID/environ`` reads, so a child is found by its session."""
    found = set()
    wanted = f"\0{TAG_ENV}={tag or ''}".encode()  # a variable's start, after the NUL before it
    for entry in Path("/proc").glob("[0-9]*"):  # none where there is no /proc
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            tagged = wanted in b"\0" + (entry / "environ").read_bytes()
        except (OSError, IndexError):
            continue
        mine = int(entry.name) == os.getpid()
        if fields[0] != "Z" and not mine and (tagged or int(fields[3]) in sessions):
            found.add(int(entry.name))
    return found
