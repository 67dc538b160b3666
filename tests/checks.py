"""tests/checks.py - the "ok   MSG" / "FAIL MSG" lines of the Python parts of
the shell tests (dockerignore.sh, hostile.sh, hosts.sh), and the count of
failures they exit on."""

fails = 0


def ok(msg):
    print("ok   " + msg)


def bad(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def check(cond, msg):
    (ok if cond else bad)(msg)
