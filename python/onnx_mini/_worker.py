"""Sessions in a child process, for a parent that cannot load the library.

A process that imported the `onnx` package first cannot load libonnx_mini.so
(see _loader.py); onnx_mini.backend then runs its sessions here: a child
`python -m onnx_mini._worker` that never imports onnx. Requests and replies are
pickles, each preceded by its length, over the child's stdin and stdout.
Inputs and outputs are copied both ways (no in-place binding). A crash of the
child fails the request in progress; the next request starts a new child.
"""

import os
import pickle
import struct
import subprocess
import sys
import threading

from ._capi import OnnxMiniError, StatusCode
from .session import NodeArg

_HEADER = struct.Struct("<Q")


def _send(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream):
    """The next object, or None at the end of the stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def _describe(args):
    return [(a.name, a.elem_type, a.shape, a.rank) for a in args]


# ---- the child ----


def serve():
    # The protocol owns the original stdout; anything printed goes to stderr.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = os.fdopen(os.dup(0), "rb")
    from .session import InferenceSession

    sessions = {}
    next_id = 1
    while True:
        request = _receive(requests)
        if request is None:
            return
        op = request[0]
        try:
            if op == "create":
                _, model, threads, base_dir = request
                session = InferenceSession(model, threads=threads, base_dir=base_dir)
                sessions[next_id] = session
                reply = ("ok", next_id, _describe(session.get_inputs()), _describe(session.get_outputs()))
                next_id += 1
            elif op == "run":
                _, session_id, output_names, feeds = request
                if session_id not in sessions:
                    raise ValueError("no session %d in the worker process" % session_id)
                reply = ("ok", sessions[session_id].run(output_names, feeds))
            elif op == "free":
                for session_id in request[1]:
                    sessions.pop(session_id, None)
                reply = ("ok",)
            else:
                reply = ("error", "ValueError", "unknown request %r" % (op,), int(StatusCode.INTERNAL))
        except OnnxMiniError as e:
            reply = ("error", "OnnxMiniError", str(e), int(e.code))
        except Exception as e:  # noqa: BLE001 - every error goes back to the parent
            reply = ("error", type(e).__name__, str(e), int(StatusCode.INTERNAL))
        _send(replies, reply)


# ---- the parent ----

_ERRORS = {"TypeError": TypeError, "ValueError": ValueError, "ImportError": ImportError}


class Worker:
    """The client of one child process, started on first use."""

    def __init__(self):
        self._lock = threading.Lock()
        self._process = None
        self._generation = 0  # increases with each child started
        self._to_free = []  # session ids whose owners were collected

    def _start(self):
        package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "onnx_mini._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._generation += 1
        self._to_free = []

    def _call(self, request):
        """Sends a request; returns the reply's fields after "ok" (lock held)."""
        if self._process is None or self._process.poll() is not None:
            self._start()
        try:
            if self._to_free:
                ids, self._to_free = self._to_free, []
                _send(self._process.stdin, ("free", ids))
                if _receive(self._process.stdout) is None:
                    raise BrokenPipeError
            _send(self._process.stdin, request)
            reply = _receive(self._process.stdout)
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            code = self._process.wait()
            self._process = None
            self._generation += 1  # the sessions it held are gone
            raise OnnxMiniError(
                "the onnx_mini worker process died (%s) during a %r request"
                % ("signal %d" % -code if code < 0 else "exit code %d" % code, request[0]),
                StatusCode.INTERNAL,
            )
        if reply[0] == "error":
            _, kind, message, code = reply
            if kind in _ERRORS:
                raise _ERRORS[kind](message)
            raise OnnxMiniError(message, code)
        return reply[1:]

    def create(self, model, threads, base_dir):
        with self._lock:
            session_id, inputs, outputs = self._call(("create", model, threads, base_dir))
            return session_id, self._generation, inputs, outputs

    def run(self, session_id, generation, output_names, feeds):
        with self._lock:
            if generation != self._generation:
                raise OnnxMiniError("the session was lost with a worker process that died", StatusCode.INTERNAL)
            return self._call(("run", session_id, output_names, feeds))[0]

    def free(self, session_id, generation):
        # Called from __del__: no request here (one may be in progress); sent with the next.
        if generation == self._generation:
            self._to_free.append(session_id)

    def close(self):
        with self._lock:
            if self._process is not None:
                self._process.stdin.close()
                self._process.wait()
                self._process = None


_worker = None
_worker_lock = threading.Lock()


def worker():
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = Worker()
        return _worker


class RemoteSession:
    """An InferenceSession in the worker process: get_inputs, get_outputs and
    run (without bound outputs)."""

    def __init__(self, model, threads=0, base_dir=None):
        if not isinstance(model, (bytes, bytearray, memoryview)):
            model = model.SerializeToString()
        self._worker = worker()
        self._id, self._generation, inputs, outputs = self._worker.create(bytes(model), threads, base_dir)
        self._inputs = [NodeArg(*a) for a in inputs]
        self._outputs = [NodeArg(*a) for a in outputs]

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def run(self, output_names, input_feed, outputs=None):
        if outputs:
            raise ValueError("a session in the worker process cannot write into the caller's arrays")
        return self._worker.run(self._id, self._generation, output_names, dict(input_feed))

    def __del__(self):
        w = getattr(self, "_worker", None)
        if w is not None and hasattr(self, "_id"):
            w.free(self._id, self._generation)


if __name__ == "__main__":
    serve()
