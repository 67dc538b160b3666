#!/usr/bin/env python3
"""small_seeds.py - fuzzing seeds that fit a campaign's -max_len.

    python3 tests/fuzz/small_seeds.py MAX_BYTES OUT_DIR XSPACE...

libFuzzer truncates seeds to -max_len, and a truncated XSpace no longer
decodes (its last field runs past the end), so the targets that analyse a
decoded profile (fuzz_tools, fuzz_group_events, fuzz_derived_lines,
fuzz_hlo) would only ever fuzz the decoder's error paths with 8 KiB inputs
and real-sized seeds.  For each XSPACE this writes OUT_DIR/<n>.xplane.pb,
a valid XSpace of at most MAX_BYTES: the same planes, lines, stats and
stat metadata, each line cut to its first K events (K as large as fits),
event metadata kept only where an event or a kept metadata entry refers
to it (planes without lines, such as /host:metadata, keep all theirs), bytes
stats over MAX_BYTES/4 (then /16, then any) dropped.  It also writes
OUT_DIR/<n>.hlo<i> for every `Hlo Proto` bytes stat of the input that fits
(the raw HloProto fuzz_hlo wraps itself).  Prints what it wrote.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "device"))
import pbwire  # noqa: E402


def hlo_protos(space):
    """Bytes of every `Hlo Proto` stat of an event metadata entry."""
    out = []
    for pl in space.get("planes", []):
        names = {k: m.get("name", "") for k, m in pl.get("stat_metadata", {}).items()}
        for em in pl.get("event_metadata", {}).values():
            for st in em.get("stats", []):
                if names.get(st.get("metadata_id")) == "Hlo Proto" and "bytes_value" in st:
                    out.append(st["bytes_value"])
    return out


def cut(space, k, big):
    """A copy of `space` with at most k events a line (see the module text)."""
    planes = []
    for pl in space.get("planes", []):
        q = dict(pl)
        used = set()
        lines = []
        for ln in pl.get("lines", []):
            l2 = dict(ln)
            l2["events"] = ln.get("events", [])[:k]
            used.update(e.get("metadata_id", 0) for e in l2["events"])
            lines.append(l2)
        q["lines"] = lines
        ems = pl.get("event_metadata", {})
        # Children of kept entries (XProf's child_id), one level.
        for i in list(used):
            used.update(ems.get(i, {}).get("child_id", []))
        kept = {}
        for i, em in ems.items():
            if i not in used and lines:   # planes without lines: all (HLO protos)
                continue
            e2 = dict(em)
            e2.pop("metadata", None)
            e2["stats"] = [s for s in em.get("stats", []) if len(s.get("bytes_value", b"")) <= big]
            kept[i] = e2
        q["event_metadata"] = kept
        q["stats"] = [s for s in pl.get("stats", []) if len(s.get("bytes_value", b"")) <= big]
        planes.append(q)
    s2 = dict(space)
    s2["planes"] = planes
    return pbwire.encode(s2, "XSpace")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    cap, outdir = int(sys.argv[1]), sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    for n, path in enumerate(sys.argv[3:]):
        with open(path, "rb") as f:
            space = pbwire.decode(f.read(), "XSpace")
        for i, proto in enumerate(p for p in hlo_protos(space) if len(p) < cap):
            with open(os.path.join(outdir, "%d.hlo%d" % (n, i)), "wb") as f:
                f.write(proto)
        fits = ((k, big) for big in (cap // 4, cap // 16, 0) for k in (64, 32, 16, 8, 4, 2, 1, 0))
        for k, big in fits:
            b = cut(space, k, big)
            if len(b) <= cap:
                with open(os.path.join(outdir, "%d.xplane.pb" % n), "wb") as f:
                    f.write(b)
                print("%s: %d bytes, %d events a line, bytes stats up to %d" % (path, len(b), k, big))
                break
        else:
            print("%s: does not fit in %d bytes" % (path, cap))


if __name__ == "__main__":
    main()
