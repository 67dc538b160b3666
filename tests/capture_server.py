#!/usr/bin/env python3
"""Stand-in profiler servers for the capture tests (Debian python3-grpcio).

Each mode is a grpc server of its own implementing
tensorflow.ProfilerService/Profile with a generic handler on raw bytes (no
generated code: the few ProfileRequest / ProfileResponse fields are
encoded and decoded by hand below):

  xspace      sleeps min(duration, 1 s), answers ProfileResponse.xspace
              (field 8) = the bytes of --xplane when emit_xspace is set
  repo        ignores emit_xspace like older servers: saves --xplane as
              <repository_root>/<session_id>/<host_name>.xplane.pb and
              answers an empty ProfileResponse (what jax.profiler.start_server
              answered on the H100, see tests/data/device in the main tree)
  error       answers grpc-status FAILED_PRECONDITION with a message
  hang        never answers (until the client goes away; grpcio itself
              answers DEADLINE_EXCEEDED when the client's grpc-timeout passes)
  nothing     answers an empty ProfileResponse and saves nothing
  emptytrace  answers empty_trace = true (counts the attempts)
  huge        hostile: answers an XSpace of --huge_bytes (default 3 MiB)
              whatever was asked (more than the test's --max_file_size)
  hugerepo    hostile: saves --huge_bytes under repository_root like
              "repo" and answers an empty ProfileResponse

plus "http", a plain HTTP/1.x server, "silent", a TCP port that accepts
and never sends a byte, "banner", a TCP port that greets every
connection with an SSH banner ("SSH-2.0-OpenSSH_9.2") and closes, and
"closed", a port nobody listens on.  Prints one JSON object {mode: port} on stdout, then serves until
SIGTERM or SIGINT.  Every Profile request is appended to --log as a
JSON line with its decoded fields.
"""
import argparse
import http.server
import json
import os
import socket
import sys
import threading
import time
from concurrent import futures

import grpc

# The protobuf wire format, as tests/data/device/pbwire.py reads and writes it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "device"))
import pbwire  # noqa: E402


def field_bytes(num, data):
    return pbwire._key(num, 2) + pbwire._varint(len(data)) + data


def field_varint(num, v):
    return pbwire._key(num, 0) + pbwire._varint(v)


def decode(buf):
    """Top-level fields of a message: {num: [values]} (bytes or int)."""
    out = {}
    for num, _, v in pbwire.fields(buf):
        out.setdefault(num, []).append(v)
    return out


def request_fields(raw):
    f = decode(raw)
    one = lambda n, d=None: f.get(n, [d])[0]
    opts = decode(one(4, b""))
    oone = lambda n: opts.get(n, [0])[0]
    return {
        "duration_ms": one(1, 0), "max_events": one(2, 0),
        "tools": [t.decode() for t in f.get(3, [])],
        "repository_root": one(5, b"").decode(), "session_id": one(6, b"").decode(),
        "host_name": one(7, b"").decode(), "emit_xspace": one(9, 0),
        "opts": {"include_dataset_ops": oone(1), "host_tracer_level": oone(2),
                 "device_tracer_level": oone(3), "python_tracer_level": oone(4),
                 "version": oone(5), "enable_hlo_proto": oone(7),
                 "start_timestamp_ns": oone(8), "duration_ms": oone(9)},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xplane", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--modes",
                    default="xspace,repo,error,hang,nothing,emptytrace,huge,hugerepo,http,"
                            "silent,banner,closed")
    ap.add_argument("--huge_bytes", type=int, default=3 << 20)
    args = ap.parse_args()
    xplane = open(args.xplane, "rb").read()
    log_lock = threading.Lock()

    def log(mode, fields):
        with log_lock, open(args.log, "a") as f:
            f.write(json.dumps({"mode": mode, **fields}) + "\n")

    def handler_for(mode):
        def profile(raw, context):
            req = request_fields(raw)
            log(mode, req)
            if mode == "xspace":
                time.sleep(min(req["duration_ms"], 1000) / 1000.0)
                return field_bytes(8, xplane) if req["emit_xspace"] else b""
            if mode == "repo":
                d = os.path.join(req["repository_root"], req["session_id"])
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, req["host_name"] + ".xplane.pb"), "wb") as f:
                    f.write(xplane)
                return b""
            if mode == "error":
                context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                              "another profiling session is active")
            if mode == "hang":
                while context.is_active():
                    time.sleep(0.05)
                return b""
            if mode == "emptytrace":
                return field_varint(7, 1)
            if mode == "huge":
                return field_bytes(8, b"\x0a" * args.huge_bytes)
            if mode == "hugerepo":
                d = os.path.join(req["repository_root"], req["session_id"])
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, req["host_name"] + ".xplane.pb"), "wb") as f:
                    f.write(b"\x0a" * args.huge_bytes)
                return b""
            return b""  # nothing
        return grpc.method_handlers_generic_handler(
            "tensorflow.ProfilerService",
            {"Profile": grpc.unary_unary_rpc_method_handler(profile)})

    ports, keep = {}, []
    for mode in args.modes.split(","):
        if mode == "http":
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(b"plain http\n")
                do_POST = do_GET

                def log_message(self, *a):
                    pass
            srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            ports[mode] = srv.server_address[1]
            keep.append(srv)
        elif mode == "silent":
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(16)
            ports[mode] = s.getsockname()[1]
            held = []

            def accept_forever(sock=s, held=held):
                while True:
                    c, _ = sock.accept()
                    held.append(c)      # keep it open, never answer
            threading.Thread(target=accept_forever, daemon=True).start()
            keep.append(s)
        elif mode == "banner":
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(16)
            ports[mode] = s.getsockname()[1]

            def greet_forever(sock=s):
                while True:
                    c, _ = sock.accept()
                    try:
                        c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                        time.sleep(0.2)     # let the client read it
                    except OSError:
                        pass
                    c.close()
            threading.Thread(target=greet_forever, daemon=True).start()
            keep.append(s)
        elif mode == "closed":
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            ports[mode] = s.getsockname()[1]
            s.close()
        else:
            srv = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                              options=[("grpc.max_send_message_length", -1)])
            srv.add_generic_rpc_handlers((handler_for(mode),))
            ports[mode] = srv.add_insecure_port("127.0.0.1:0")
            srv.start()
            keep.append(srv)
    print(json.dumps(ports), flush=True)
    try:
        while True:                     # until SIGTERM / SIGINT
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    for s in keep:
        if hasattr(s, "stop"):
            s.stop(0)
        elif hasattr(s, "shutdown") and not isinstance(s, socket.socket):
            s.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main()
