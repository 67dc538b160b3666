"""Dependency-free protobuf wire-format encoder/decoder with hand-written
schemas for the messages used by the profiler test data:

  * tensorflow.profiler.XSpace & co. (field numbers as in proto/xplane.proto)
  * tensorflow.ProfileRequest / ProfileResponse / ProfileOptions
    (tsl/profiler/protobuf/profiler_service.proto, profiler_options.proto)

Decoded messages are plain dicts; repeated fields are lists; map fields are
dicts.  Fields that are not in the schema are kept under the key
"_unknown" as (field_number, wire_type, value) tuples, so nothing is lost.
"""
import struct

REP = "repeated"

SCHEMAS = {
    # --- xplane.proto ---------------------------------------------------
    "XSpace": {1: ("planes", "XPlane", REP), 2: ("errors", "string", REP),
               3: ("warnings", "string", REP), 4: ("hostnames", "string", REP)},
    "XPlane": {1: ("id", "int64"), 2: ("name", "string"), 3: ("lines", "XLine", REP),
               4: ("event_metadata", "map<int64,XEventMetadata>"),
               5: ("stat_metadata", "map<int64,XStatMetadata>"),
               6: ("stats", "XStat", REP)},
    "XLine": {1: ("id", "int64"), 10: ("display_id", "int64"), 2: ("name", "string"),
              11: ("display_name", "string"), 3: ("timestamp_ns", "int64"),
              9: ("duration_ps", "int64"), 4: ("events", "XEvent", REP)},
    "XEvent": {1: ("metadata_id", "int64"), 2: ("offset_ps", "int64"),
               5: ("num_occurrences", "int64"), 3: ("duration_ps", "int64"),
               4: ("stats", "XStat", REP)},
    "XStat": {1: ("metadata_id", "int64"), 2: ("double_value", "double"),
              3: ("uint64_value", "uint64"), 4: ("int64_value", "int64"),
              5: ("str_value", "string"), 6: ("bytes_value", "bytes"),
              7: ("ref_value", "uint64"), 8: ("compressed_str_value", "bytes")},
    "XEventMetadata": {1: ("id", "int64"), 2: ("name", "string"), 4: ("display_name", "string"),
                       3: ("metadata", "bytes"), 5: ("stats", "XStat", REP),
                       6: ("child_id", "int64", REP)},
    "XStatMetadata": {1: ("id", "int64"), 2: ("name", "string"), 3: ("description", "string")},
    # --- profiler_service.proto / profiler_options.proto ----------------
    "ProfileRequest": {1: ("duration_ms", "uint64"), 2: ("max_events", "uint64"),
                       3: ("tools", "string", REP),
                       8: ("tool_options", "map<string,ToolRequestOptions>"),
                       4: ("opts", "ProfileOptions"), 5: ("repository_root", "string"),
                       6: ("session_id", "string"), 7: ("host_name", "string")},
    "ToolRequestOptions": {2: ("output_formats", "string"), 3: ("save_to_repo", "bool")},
    "ProfileOptions": {5: ("version", "uint32"), 6: ("device_type", "enum:DeviceType"),
                       1: ("include_dataset_ops", "bool"), 2: ("host_tracer_level", "uint32"),
                       3: ("device_tracer_level", "uint32"), 4: ("python_tracer_level", "uint32"),
                       7: ("enable_hlo_proto", "bool"), 8: ("start_timestamp_ns", "uint64"),
                       9: ("duration_ms", "uint64"), 10: ("repository_path", "string"),
                       11: ("trace_options", "TraceOptions"),
                       12: ("advanced_configuration", "map<string,AdvancedConfigValue>"),
                       13: ("raise_error_on_start_failure", "bool"), 14: ("session_id", "string")},
    "TraceOptions": {1: ("host_traceme_filter_mask", "uint64")},
    "AdvancedConfigValue": {1: ("string_value", "string"), 2: ("bool_value", "bool"),
                            3: ("int64_value", "int64")},
    "ProfileToolData": {1: ("name", "string"), 2: ("data", "bytes")},
    "ProfileResponse": {6: ("tool_data", "ProfileToolData", REP), 7: ("empty_trace", "bool")},
}
ENUMS = {"DeviceType": {0: "UNSPECIFIED", 1: "CPU", 2: "GPU", 3: "TPU", 4: "PLUGGABLE_DEVICE"}}
VARINT_TYPES = {"int64", "uint64", "uint32", "int32", "bool"}


def read_varint(buf, i):
    r = s = 0
    while True:
        b = buf[i]
        i += 1
        r |= (b & 0x7F) << s
        if b < 0x80:
            return r, i
        s += 7


def fields(buf):
    """Yields (field_number, wire_type, value) for one message's bytes."""
    i, n = 0, len(buf)
    while i < n:
        key, i = read_varint(buf, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 1:
            v, i = bytes(buf[i:i + 8]), i + 8
        elif wt == 2:
            ln, i = read_varint(buf, i)
            v, i = bytes(buf[i:i + ln]), i + ln
        elif wt == 5:
            v, i = bytes(buf[i:i + 4]), i + 4
        else:
            raise ValueError("unsupported wire type %d (field %d)" % (wt, fn))
        yield fn, wt, v


def _scalar(t, wt, v):
    if t in ("int64", "int32"):
        return v - (1 << 64) if v >= (1 << 63) else v
    if t in ("uint64", "uint32"):
        return v
    if t == "bool":
        return bool(v)
    if t == "double":
        return struct.unpack("<d", v)[0]
    if t == "string":
        return v.decode("utf-8", "replace")
    if t == "bytes":
        return v
    if t.startswith("enum:"):
        return ENUMS[t[5:]].get(v, v)
    raise ValueError(t)


def decode(buf, typename):
    schema = SCHEMAS[typename]
    out = {}
    for fn, wt, v in fields(buf):
        spec = schema.get(fn)
        if spec is None:
            out.setdefault("_unknown", []).append((fn, wt, v))
            continue
        name, t = spec[0], spec[1]
        rep = len(spec) > 2
        if t.startswith("map<"):
            kt, vt = t[4:-1].split(",")
            k = val = None
            for efn, ewt, ev in fields(v):
                if efn == 1:
                    k = _scalar(kt, ewt, ev)
                elif efn == 2:
                    val = decode(ev, vt) if vt in SCHEMAS else _scalar(vt, ewt, ev)
            if val is None:
                val = {} if vt in SCHEMAS else None
            out.setdefault(name, {})[k if k is not None else (0 if kt != "string" else "")] = val
            continue
        if t in SCHEMAS:
            val = decode(v, t)
            vals = [val]
        elif rep and wt == 2 and (t in VARINT_TYPES):  # packed
            vals, j = [], 0
            while j < len(v):
                x, j = read_varint(v, j)
                vals.append(_scalar(t, 0, x))
        else:
            vals = [_scalar(t, wt, v)]
        if rep:
            out.setdefault(name, []).extend(vals)
        else:
            out[name] = vals[-1]
    return out


# --- encoder ------------------------------------------------------------
def _varint(v):
    if v < 0:
        v += 1 << 64
    b = bytearray()
    while True:
        x = v & 0x7F
        v >>= 7
        if v:
            b.append(x | 0x80)
        else:
            b.append(x)
            return bytes(b)


def _key(fn, wt):
    return _varint((fn << 3) | wt)


def _enc_value(fn, t, v):
    if t in SCHEMAS:
        body = encode(v, t)
        return _key(fn, 2) + _varint(len(body)) + body
    if t in VARINT_TYPES:
        return _key(fn, 0) + _varint(int(v))
    if t.startswith("enum:"):
        if isinstance(v, str):
            v = {n: k for k, n in ENUMS[t[5:]].items()}[v]
        return _key(fn, 0) + _varint(v)
    if t == "double":
        return _key(fn, 1) + struct.pack("<d", v)
    if t in ("string", "bytes"):
        b = v.encode() if isinstance(v, str) else v
        return _key(fn, 2) + _varint(len(b)) + b
    raise ValueError(t)


def encode(msg, typename):
    """Encodes a dict (same shape as decode() returns) in field-number order."""
    schema = SCHEMAS[typename]
    out = bytearray()
    for fn in sorted(schema):
        name, t = schema[fn][0], schema[fn][1]
        if name not in msg:
            continue
        v = msg[name]
        if t.startswith("map<"):
            kt, vt = t[4:-1].split(",")
            for k, val in v.items():
                body = _enc_value(1, kt, k) + _enc_value(2, vt, val)
                out += _key(fn, 2) + _varint(len(body)) + body
        elif len(schema[fn]) > 2:
            for x in v:
                out += _enc_value(fn, t, x)
        else:
            out += _enc_value(fn, t, v)
    return bytes(out)


# --- text rendering (protobuf text-format style, with field numbers) ------
def to_text(msg, typename, indent=0):
    schema = SCHEMAS[typename]
    by_name = {spec[0]: (fn, spec) for fn, spec in schema.items()}
    pad = "  " * indent
    lines = []
    for name, v in msg.items():
        if name == "_unknown":
            for fn, wt, raw in v:
                lines.append("%s%d: %r  # field %d, wire type %d, not in schema" % (pad, fn, raw, fn, wt))
            continue
        fn, spec = by_name[name]
        t = spec[1]
        if t.startswith("map<"):
            kt, vt = t[4:-1].split(",")
            for k, val in v.items():
                lines.append("%s%s {  # field %d (map entry)" % (pad, name, fn))
                lines.append("%s  key: %s" % (pad, _fmt(kt, k)))
                if vt in SCHEMAS:
                    lines.append("%s  value {" % pad)
                    lines.append(to_text(val, vt, indent + 2))
                    lines.append("%s  }" % pad)
                else:
                    lines.append("%s  value: %s" % (pad, _fmt(vt, val)))
                lines.append("%s}" % pad)
            continue
        for x in (v if len(spec) > 2 else [v]):
            if t in SCHEMAS:
                lines.append("%s%s {  # field %d" % (pad, name, fn))
                body = to_text(x, t, indent + 1)
                if body:
                    lines.append(body)
                lines.append("%s}" % pad)
            else:
                lines.append("%s%s: %s  # field %d" % (pad, name, _fmt(t, x), fn))
    return "\n".join(l for l in lines if l != "")


def _fmt(t, v):
    if t == "string":
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    if t == "bytes":
        return '"<%d bytes>"' % len(v)
    if t == "bool":
        return "true" if v else "false"
    return str(v)


def raw_dump(buf, indent=0, depth=0):
    """Schema-free dump: field number, wire type, value (nested messages are
    tried recursively when they parse cleanly)."""
    pad = "  " * indent
    out = []
    for fn, wt, v in fields(buf):
        if wt == 2:
            nested = None
            if depth < 4 and v:
                try:
                    list(fields(v))
                    nested = raw_dump(v, indent + 1, depth + 1)
                except Exception:
                    nested = None
            try:
                s = v.decode("utf-8")
                printable = all(c.isprintable() for c in s)
            except UnicodeDecodeError:
                printable = False
            if printable and s:
                out.append('%s%d (len): "%s"' % (pad, fn, s))
            elif nested:
                out.append("%s%d (len) {\n%s\n%s}" % (pad, fn, nested, pad))
            else:
                out.append("%s%d (len): <%d bytes>" % (pad, fn, len(v)))
        elif wt == 0:
            out.append("%s%d (varint): %d" % (pad, fn, v))
        else:
            out.append("%s%d (fixed%d): %s" % (pad, fn, 64 if wt == 1 else 32, v.hex()))
    return "\n".join(out)
