"""The embedded model's llama.cpp server, in a child process of its own.

Loading a GGUF holds Python's GIL for the whole load (the binding does not release it): in the
service's process that stalled every other thread, its event loop included, so ``/readyz`` and
``/metrics`` stopped answering for the seconds the first answer's load took. In a process of its own
the load stalls nothing: the parent only waits on a pipe, which lets other threads run.

The child reads its setup as one JSON line on its standard input, loads the model, answers one JSON
line (the loopback URL llama.cpp's HTTP server listens on, or why it could not load), then serves
until its standard input closes: when the parent ends, however it ends, the child follows.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from subprocess import PIPE, Popen
from typing import IO, Any

from ...errors import GenerationError


@dataclass(frozen=True)
class ModelSetup:
    """What the child loads: the GGUF and llama.cpp's settings, and the key its HTTP API takes."""

    path: str
    context: int
    threads: int
    batch: int
    api_key: str


@dataclass
class ModelProcess:
    """A loaded model's process (it exits once this process ends and its standard input closes)
    and the URL its HTTP API answers on."""

    process: Popen[str]
    url: str


def start(setup: ModelSetup) -> ModelProcess:
    """The model loaded in a child process; GenerationError naming the reason if it cannot load."""
    child = Popen(
        [sys.executable, "-m", __name__],
        stdin=PIPE,
        stdout=PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)},
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(json.dumps(asdict(setup)) + "\n")
    child.stdin.flush()
    line = child.stdout.readline()  # the wait: on a pipe, the GIL released
    try:
        said = json.loads(line)
    except ValueError:
        said = {"ended": f"its process ended before it was loaded (exit code {child.wait()})"}
    if "url" not in said:
        child.stdin.close()
        child.wait()
        why = said.get("ended") or f"{said.get('error')} (a truncated or damaged GGUF?)"
        raise GenerationError(f"llama.cpp cannot load {setup.path}: {why}")
    return ModelProcess(child, str(said["url"]))


def params_of(setup: ModelSetup) -> Any:
    """llama.cpp's parameters: greedy, one slot, its HTTP API behind the key, quiet."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = setup.path
    params.n_ctx = setup.context
    params.n_parallel = 1
    params.cpuparams.n_threads = setup.threads
    params.cpuparams_batch.n_threads = setup.threads
    params.n_batch = params.n_ubatch = setup.batch  # a client that leaves frees it within one batch
    params.warmup = False
    params.sampling.temp = 0.0
    params.verbosity = 0  # llama.cpp logs every load and request to stderr; failures are said on stdout
    params.api_keys = [setup.api_key]
    params.endpoint_slots, params.endpoint_metrics = False, True  # metrics: what the model did, for tests
    return params


def serve(given: IO[str], said: IO[str]) -> None:
    """The child's life: read the setup from ``given``, load, say the URL on ``said``, serve until
    ``given`` closes."""
    setup = ModelSetup(**json.loads(given.readline()))
    try:
        import xllamacpp

        server = xllamacpp.Server(params_of(setup))
    except Exception as exc:  # the binding raises bare errors for a file llama.cpp cannot load
        said.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        said.flush()
        return
    said.write(json.dumps({"url": server.listening_address}) + "\n")
    said.flush()
    given.read()  # until the parent closes it, or ends
    del server


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
