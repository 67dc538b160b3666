"""Prints independent facts counted from a profile file.

usage: python3 facts.py FILE [--scope NAME]
  FILE: *.xplane.pb, *.xplane.pb.gz, or a PyTorch *.pt.trace.json(.gz)
No dependencies beyond the standard library (uses pbwire.py beside it).
"""
import collections
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbwire  # noqa: E402


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def stat_map(plane, stats):
    """{stat name: value} for a list of XStat, resolving ref_value."""
    smd = plane.get("stat_metadata", {})
    out = {}
    for s in stats:
        name = smd.get(s.get("metadata_id", 0), {}).get("name", "#%d" % s.get("metadata_id", 0))
        if "ref_value" in s:
            v = smd.get(s["ref_value"], {}).get("name", "#ref%d" % s["ref_value"])
        else:
            v = next((s[k] for k in ("str_value", "int64_value", "uint64_value", "double_value",
                                     "bytes_value", "compressed_str_value") if k in s), None)
        out[name] = v
    return out


def xplane_facts(path, scope):
    space = pbwire.decode(read(path), "XSpace")
    planes = space.get("planes", [])
    print("file: %s (%d bytes on disk)" % (os.path.basename(path), os.path.getsize(path)))
    print("hostnames: %s" % space.get("hostnames", []))
    print("errors: %d  warnings: %d" % (len(space.get("errors", [])), len(space.get("warnings", []))))
    for e in space.get("errors", [])[:5]:
        print("  error: %s" % e[:200])
    for w in space.get("warnings", [])[:5]:
        print("  warning: %s" % w[:200])
    print("planes: %d" % len(planes))
    for p in planes:
        nev = sum(len(l.get("events", [])) for l in p.get("lines", []))
        pstats = stat_map(p, p.get("stats", []))
        print("  plane id=%s name=%r lines=%d events=%d event_metadata=%d stat_metadata=%d plane_stats=%s"
              % (p.get("id", 0), p.get("name", ""), len(p.get("lines", [])), nev,
                 len(p.get("event_metadata", {})), len(p.get("stat_metadata", {})),
                 sorted(pstats)))
    for p in planes:
        name = p.get("name", "")
        emd = p.get("event_metadata", {})
        if name.startswith("/device:GPU:"):
            print("GPU plane %r:" % name)
            pstats = stat_map(p, p.get("stats", []))
            for k in sorted(pstats):
                v = pstats[k]
                if isinstance(v, bytes):
                    v = "<%d bytes>" % len(v)
                print("  plane stat %s = %s" % (k, v))
            kern = hlo_op = hlo_mod = memcpy = 0
            modules = collections.Counter()
            ops = set()
            stat_names = collections.Counter()
            for l in p.get("lines", []):
                evs = l.get("events", [])
                print("  line id=%s name=%r display_name=%r events=%d"
                      % (l.get("id", 0), l.get("name", ""), l.get("display_name", ""), len(evs)))
                for e in evs:
                    st = stat_map(p, e.get("stats", []))
                    md = emd.get(e.get("metadata_id", 0), {})
                    st.update({k: v for k, v in stat_map(p, md.get("stats", [])).items() if k not in st})
                    stat_names.update(st.keys())
                    if "kernel_details" in st:
                        kern += 1
                    if "memcpy_details" in st:
                        memcpy += 1
                    if "hlo_op" in st:
                        hlo_op += 1
                        ops.add(st["hlo_op"])
                    if "hlo_module" in st:
                        hlo_mod += 1
                        modules[st["hlo_module"]] += 1
            print("  events with kernel_details stat (kernels): %d" % kern)
            print("  events with memcpy_details stat: %d" % memcpy)
            print("  events with hlo_op stat: %d (distinct hlo_op values: %d: %s)"
                  % (hlo_op, len(ops), sorted(ops)[:40]))
            print("  events with hlo_module stat: %d; per module: %s" % (hlo_mod, dict(modules)))
            print("  stat names seen on events: %s" % sorted(stat_names))
            kn = collections.Counter(emd.get(e.get("metadata_id", 0), {}).get("name", "")
                                     for l in p.get("lines", []) for e in l.get("events", []))
            print("  event names (top 12): %s" % kn.most_common(12))
        elif name == "/host:metadata":
            print("/host:metadata plane:")
            n_hlo = 0
            for mid, md in sorted(emd.items()):
                st = stat_map(p, md.get("stats", []))
                protos = {k: v for k, v in st.items() if isinstance(v, bytes)}
                if "Hlo Proto" in protos:
                    n_hlo += 1
                for k, v in protos.items():
                    print("  event_metadata id=%d name=%r stat %r: %d bytes; contains %r: %s"
                          % (mid, md.get("name", ""), k, len(v), scope, scope.encode() in v))
            print("  HLO protos (event_metadata with an 'Hlo Proto' stat): %d" % n_hlo)
        elif name.startswith("/host:"):
            print("host plane %r:" % name)
            lines = p.get("lines", [])
            print("  lines: %d; names: %s" % (len(lines), [l.get("name", "") for l in lines][:40]))
            steps = []
            names = collections.Counter()
            for l in lines:
                for e in l.get("events", []):
                    md = emd.get(e.get("metadata_id", 0), {})
                    n = md.get("name", "")
                    names[n] += 1
                    st = stat_map(p, e.get("stats", []))
                    if "step_num" in st:
                        steps.append((n, st["step_num"], e.get("duration_ps", 0)))
            print("  events with a step_num stat: %d: %s" % (len(steps), [(n, s) for n, s, _ in steps]))
            py = sum(c for n, c in names.items() if n.startswith("$"))
            print("  python-tracer events (names starting with '$'): %d" % py)
            print("  event names (top 15): %s" % names.most_common(15))
        else:
            print("other plane %r: line names %s" % (name, [l.get("name", "") for l in p.get("lines", [])][:20]))
            for k, v in sorted(stat_map(p, p.get("stats", [])).items()):
                if k == "profile_options" and isinstance(v, bytes):
                    v = "ProfileOptions { %s }" % pbwire.to_text(
                        pbwire.decode(v, "ProfileOptions"), "ProfileOptions").replace("\n", ";")
                print("  plane stat %s = %s" % (k, v))


def json_facts(path):
    d = json.loads(read(path))
    evs = d.get("traceEvents", [])
    print("file: %s (%d bytes on disk)" % (os.path.basename(path), os.path.getsize(path)))
    print("top-level keys: %s" % sorted(d.keys()))
    print("schemaVersion: %s" % d.get("schemaVersion"))
    print("deviceProperties: %s" % [p.get("name") for p in d.get("deviceProperties", [])])
    print("traceEvents: %d" % len(evs))
    print("events by ph: %s" % dict(collections.Counter(e.get("ph") for e in evs)))
    print("events by cat: %s" % dict(collections.Counter(e.get("cat") for e in evs)))
    steps = sorted((e["name"], e.get("cat")) for e in evs
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X")
    print("ProfilerStep# X events (name, cat): %s" % steps)
    pn = {}
    for e in evs:
        if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name"):
            pn.setdefault(e["name"], []).append((e.get("pid"), e.get("tid"), e.get("args", {}).get("name")))
    print("process_name metadata: %s" % pn.get("process_name", []))
    print("thread_name metadata: %d entries, first: %s" % (len(pn.get("thread_name", [])),
                                                          pn.get("thread_name", [])[:12]))
    print("kernel events (cat=kernel): %d" % sum(1 for e in evs if e.get("cat") == "kernel"))
    print("gpu_user_annotation events: %d" % sum(1 for e in evs if e.get("cat") == "gpu_user_annotation"))
    print("distinct kernel names: %d" % len({e["name"] for e in evs if e.get("cat") == "kernel"}))
    pids = collections.Counter(str(e.get("pid")) for e in evs if e.get("ph") == "X")
    print("X events per pid: %s" % dict(pids))


if __name__ == "__main__":
    path = sys.argv[1]
    scope = sys.argv[sys.argv.index("--scope") + 1] if "--scope" in sys.argv else "mlp"
    if ".json" in path:
        json_facts(path)
    else:
        xplane_facts(path, scope)
