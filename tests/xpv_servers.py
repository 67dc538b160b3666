"""tests/xpv_servers.py - xpview servers for the Python parts of the shell
tests (hostile.sh, hosts.sh): each on 127.0.0.1 with an ephemeral port, its
output in TMP/srvN.out, and every one still running killed when the test
exits (normally, on a failed check, or on SIGTERM)."""
import atexit
import os
import re
import signal
import subprocess
import sys
import time

procs = []


def cleanup(*_):
    """Kill every server started here that is still running."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(cleanup)   # also when a check raises
signal.signal(signal.SIGTERM, lambda *a: (cleanup(), sys.exit(1)))


def start(bin_path, tmp, *args, env=None):
    """Start `bin_path --port 0 --host 127.0.0.1 ARGS` (with `env` added to
    the environment) and wait for its startup line: (Popen, port).  Prints
    what the server said and exits 1 when it does not start."""
    out = open(os.path.join(tmp, "srv%d.out" % len(procs)), "w+")
    p = subprocess.Popen([bin_path, "--port", "0", "--host", "127.0.0.1"] + list(args),
                         stdout=out, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **env) if env else None)
    procs.append(p)
    for _ in range(400):
        out.seek(0)
        m = re.search(r"at http://localhost:(\d+)/", out.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.05)
    out.seek(0)
    print("FAIL server did not start: " + out.read())
    cleanup()
    sys.exit(1)


def rss_anon_kb(p):
    """Anonymous resident memory of process `p` in KiB (RssAnon in
    /proc/PID/status): heap and stacks, not the page cache of the profiles
    it maps (RssFile), which the kernel can reclaim and --cache_mb does not
    budget.  0 once the process is gone."""
    try:
        with open("/proc/%d/status" % p.pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class AnonPeak:
    """The peak of rss_anon_kb(p), sampled every 2 ms on a thread from
    construction until stop() (the kernel keeps no high-water mark of
    anonymous memory alone, as VmHWM is for all of RSS).  A peak shorter
    than a sample can be missed: the bounds checked with it have margins
    far above what 2 ms of allocation adds."""

    def __init__(self, p):
        import threading
        self.p, self.peak_kb, self.done = p, rss_anon_kb(p), threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.done.wait(0.002):
            self.peak_kb = max(self.peak_kb, rss_anon_kb(self.p))

    def mib(self):
        """The peak so far, in MiB (sampling goes on)."""
        return max(self.peak_kb, rss_anon_kb(self.p)) // 1024

    def stop(self):
        self.done.set()
        self.t.join()
        return self.mib()
