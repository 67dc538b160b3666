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
