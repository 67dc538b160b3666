#!/usr/bin/env python3
"""tests/answers.py - every HTTP answer of a server, saved or compared byte for byte.

A refactor must not change what users see.  This walks a running server the
way the dashboard does: runs -> run_tools -> hosts, then asks each tool of
each host (and ALL_HOSTS where offered) for `data` (and `data_csv`, every
table of it, for the tools whose answer is a table), plus a few
parameterised queries per tool
(op_profile grouped three ways, trace viewport, ...).  Every answer is
stored as one file named after its query.

  answers.py save URL DIR      ask a server at URL, write DIR/<query>.bin
  answers.py compare URL DIR   ask again, compare with DIR: exit 1 listing
                               every query whose status or bytes differ

Typical use (before/after a change, on the real profiles):
  build-old/xpview --logdir ../shared/testdata/real --port 7001 &
  python3 tests/answers.py save http://127.0.0.1:7001 /tmp/ans
  build/xpview --logdir ../shared/testdata/real --port 7002 &
  python3 tests/answers.py compare http://127.0.0.1:7002 /tmp/ans

Only 127.0.0.1 is contacted (the URL given).  Answers that carry the
server's own clock or process (the `version` route, capture tokens) are
not asked.
"""
import hashlib
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

# Extra queries per tool, on top of the plain one.
EXTRA = {
    "op_profile": [{"group_by": "category"}, {"group_by": "provenance"}],
    "trace_viewer": [{"resolution": "1000"}],
    "memory_profile": [],
    "graph_viewer": [{"type": "module_list"}],
    "memory_viewer": [{"type": "module_list"}],
}
TABLE_TOOLS = {"framework_op_stats", "kernel_stats", "hlo_stats",
               "roofline_model", "tf_data_bottleneck_analysis",
               "overview_page", "input_pipeline_analyzer"}
MAX_TABLES = 10   # data_csv?table=N asked up to the first N that fails


def get(base, route, params):
    url = base.rstrip("/") + "/data/plugin/profile/" + route
    if params:
        url += "?" + urllib.parse.urlencode(sorted(params.items()))
    try:
        with urllib.request.urlopen(url, timeout=300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def queries(base):
    """Yield (name, route, params) for every answer the dashboard can ask."""
    st, body = get(base, "runs", {})
    yield "runs", "runs", {}
    for run in json.loads(body):
        yield "run_tools " + run, "run_tools", {"run": run}
        st, body = get(base, "run_tools", {"run": run})
        if st != 200:
            continue
        for tool in json.loads(body):
            tool = tool.rstrip("^")
            st, hb = get(base, "hosts", {"run": run, "tag": tool})
            yield "hosts %s %s" % (run, tool), "hosts", {"run": run, "tag": tool}
            if st != 200:
                continue
            for h in json.loads(hb):
                host = h["hostname"] if isinstance(h, dict) else h
                for extra in [{}] + EXTRA.get(tool, []):
                    p = {"run": run, "tag": tool, "host": host}
                    p.update(extra)
                    yield "data " + json.dumps(p, sort_keys=True), "data", p
                p = {"run": run, "tag": tool, "host": host}
                if tool in TABLE_TOOLS:
                    yield "data_csv " + json.dumps(p, sort_keys=True), "data_csv", p
                    # Every table of the answer, and the first index past them.
                    for t in range(1, MAX_TABLES):
                        pt = dict(p, table=str(t))
                        yield ("data_csv " + json.dumps(pt, sort_keys=True),
                               "data_csv", pt)
                        if get(base, "data_csv", pt)[0] != 200:
                            break
                yield "profile_info " + json.dumps(p, sort_keys=True), "profile_info", p


def fname(name):
    return hashlib.sha256(name.encode()).hexdigest()[:24] + ".bin"


def main(argv):
    if len(argv) != 4 or argv[1] not in ("save", "compare"):
        sys.stderr.write(__doc__)
        return 2
    mode, base, out = argv[1], argv[2], argv[3]
    host = urllib.parse.urlparse(base).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.stderr.write("answers.py: only loopback servers are asked\n")
        return 2
    os.makedirs(out, exist_ok=True)
    n = diff = 0
    index = {}
    for name, route, params in queries(base):
        st, body = get(base, route, params)
        blob = b"%d\n" % st + body
        path = os.path.join(out, fname(name))
        n += 1
        index[fname(name)] = name
        if mode == "save":
            with open(path, "wb") as f:
                f.write(blob)
            continue
        try:
            with open(path, "rb") as f:
                old = f.read()
        except FileNotFoundError:
            print("NEW   %s (status %d)" % (name, st))
            diff += 1
            continue
        if old != blob:
            print("DIFF  %s (status %s -> %d, %d -> %d bytes)"
                  % (name, old.split(b"\n", 1)[0].decode(), st, len(old), len(blob)))
            diff += 1
    if mode == "save":
        with open(os.path.join(out, "index.json"), "w") as f:
            json.dump(index, f, indent=1, sort_keys=True)
        print("saved %d answers in %s" % (n, out))
        return 0
    print("%d answers compared, %d differ" % (n, diff))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
