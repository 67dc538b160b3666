"""Remote (on-demand) capture from a jax.profiler.start_server() target, with
a logging gRPC proxy in between that records the exact bytes of every
request the client sends.

usage: python3 jax_remote_capture.py TARGET_ADDR PROXY_PORT LOGDIR DURATION_MS OUT_REQUEST_TXT

1. Starts a grpcio server on 127.0.0.1:PROXY_PORT that forwards every unary
   call, byte for byte, to TARGET_ADDR and logs method, metadata, request
   and response.
2. Looks for a capture client already installed (jaxlib's _profiler module,
   tensorflow's profiler_client, xprof / tensorboard_plugin_profile) and
   uses the first one found, pointed at the proxy.
3. If none exists, sends /tensorflow.ProfilerService/Profile itself with
   grpcio, building the request the way TSL's PopulateProfileRequest does
   (tools = ["xplane.pb"], max_events = 1000000, repository_root =
   LOGDIR/plugins/profile, session_id = a %Y_%m_%d_%H_%M_%S timestamp).
The profiler server writes <repository_root>/<session_id>/<host_name>.xplane.pb.
"""
import concurrent.futures
import importlib
import os
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbwire  # noqa: E402

LOG = []


class Proxy(grpc.GenericRpcHandler):
    def __init__(self, target):
        self.channel = grpc.insecure_channel(
            target, options=[("grpc.max_receive_message_length", -1)])

    def service(self, details):
        method = details.method
        md = list(details.invocation_metadata)

        def handler(request, context):
            entry = {"method": method, "metadata": md, "request": request,
                     "t": time.time()}
            LOG.append(entry)
            try:
                resp = self.channel.unary_unary(method)(request, timeout=120)
            except grpc.RpcError as e:
                entry["error"] = "%s: %s" % (e.code(), e.details())
                context.abort(e.code(), e.details() or "")
            entry["response"] = resp
            return resp

        return grpc.unary_unary_rpc_method_handler(handler)


def try_installed_clients(addr, logdir, duration_ms):
    report = []
    try:
        from jax._src.lib import _profiler
        names = [n for n in dir(_profiler) if not n.startswith("_")]
        report.append("jax._src.lib._profiler exports: %s" % names)
        for cand in ("trace", "capture", "capture_profile", "remote_trace"):
            if hasattr(_profiler, cand):
                fn = getattr(_profiler, cand)
                report.append("%s.__doc__: %s" % (cand, fn.__doc__))
                try:
                    opts = _profiler.ProfileOptions()
                    fn(addr, logdir, "", True, duration_ms, 3, opts)
                    report.append("used jaxlib _profiler.%s" % cand)
                    return "jaxlib _profiler.%s" % cand, report
                except Exception as e:  # signature guess failed
                    report.append("_profiler.%s failed: %r" % (cand, e))
    except Exception as e:
        report.append("jaxlib _profiler: %r" % e)
    for mod in ("tensorflow.python.profiler.profiler_client", "xprof.profiler_client",
                "tensorboard_plugin_profile.profiler_client", "xprof"):
        try:
            importlib.import_module(mod)
            report.append("importable: %s" % mod)
        except Exception as e:
            report.append("not importable: %s (%s)" % (mod, type(e).__name__))
    try:
        from tensorflow.python.profiler import profiler_client
        profiler_client.trace(addr, logdir, duration_ms)
        return "tensorflow profiler_client.trace", report
    except Exception:
        pass
    return None, report


def python_client(addr, logdir, duration_ms):
    session_id = time.strftime("%Y_%m_%d_%H_%M_%S")
    req = {
        "duration_ms": duration_ms,
        "max_events": 1000000,
        "tools": ["xplane.pb"],
        "opts": {  # ProfilerSession::DefaultOptions() + TensorBoard capture defaults
            "version": 1, "device_type": "UNSPECIFIED", "include_dataset_ops": True,
            "host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 0,
            "enable_hlo_proto": True, "duration_ms": duration_ms,
        },
        "repository_root": os.path.join(logdir, "plugins", "profile"),
        "session_id": session_id,
        "host_name": "localhost",
    }
    ch = grpc.insecure_channel(addr, options=[("grpc.max_receive_message_length", -1)])
    resp = ch.unary_unary("/tensorflow.ProfilerService/Profile")(
        pbwire.encode(req, "ProfileRequest"), timeout=duration_ms / 1000 + 60)
    return resp


def main():
    target, proxy_port, logdir, duration_ms, out_txt = (
        sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(8),
                         options=[("grpc.max_receive_message_length", -1),
                                  ("grpc.max_send_message_length", -1)])
    server.add_generic_rpc_handlers((Proxy(target),))
    server.add_insecure_port("127.0.0.1:%d" % proxy_port)
    server.start()
    addr = "127.0.0.1:%d" % proxy_port
    used, report = try_installed_clients(addr, logdir, duration_ms)
    if used is None:
        used = "own grpcio client (no installed capture client found)"
        python_client(addr, logdir, duration_ms)
    server.stop(2)
    lines = ["# Captured by jax_remote_capture.py through a logging gRPC proxy.",
             "# client used: %s" % used]
    lines += ["# " + r.replace("\n", "\n# ") for r in report]
    for e in LOG:
        lines.append("")
        lines.append("## call %s" % e["method"])
        lines.append("## invocation metadata: %s" % [(k, v) for k, v in e["metadata"]])
        lines.append("## request: %d bytes" % len(e["request"]))
        if e["method"].endswith("/Profile"):
            lines.append("### ProfileRequest, text form (field names per tsl profiler_service.proto"
                         " / profiler_options.proto):")
            lines.append(pbwire.to_text(pbwire.decode(e["request"], "ProfileRequest"),
                                        "ProfileRequest"))
        lines.append("### request, raw wire fields (field number, wire type, value):")
        lines.append(pbwire.raw_dump(e["request"]))
        lines.append("### request hex: %s" % e["request"].hex())
        if "error" in e:
            lines.append("## error: %s" % e["error"])
        if "response" in e:
            r = e["response"]
            lines.append("## response: %d bytes" % len(r))
            if e["method"].endswith("/Profile"):
                lines.append(pbwire.to_text(pbwire.decode(r, "ProfileResponse"), "ProfileResponse"))
            lines.append("### response, raw wire fields:")
            lines.append(pbwire.raw_dump(r[:4096]))
    txt = "\n".join(lines) + "\n"
    with open(out_txt, "w") as f:
        f.write(txt)
    print(txt)


if __name__ == "__main__":
    main()
