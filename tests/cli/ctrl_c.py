# SPDX-License-Identifier: LGPL-2.1-or-later
# Run pidlock as the foreground job of a pseudo-terminal, type Ctrl-C,
# and report how many SIGINTs the command got.
# usage: tty.py PIDLOCK LOCKFILE DIR [TRACE]
# PIDLOCK_OPTS: more options for pidlock, before LOCKFILE.
import os, pty, select, subprocess, sys, time

pidlock, lockfile, work = sys.argv[1:4]
trace = sys.argv[4] if len(sys.argv) > 4 else None
ready = os.path.join(work, "tty.ready")
count = os.path.join(work, "tty.count")
for stale in (ready, count):
    if os.path.exists(stale):
        os.unlink(stale)
child = r'''
import os, signal, sys, time
n = 0
def on_int(sig, frame):
    global n
    n += 1
signal.signal(signal.SIGINT, on_int)
open(sys.argv[1], "w").close()
deadline = time.time() + 10
while n == 0 and time.time() < deadline:
    time.sleep(0.01)
time.sleep(0.5)             # room for a second copy to arrive
with open(sys.argv[2], "w") as f:
    f.write(str(n))
'''

pid, fd = pty.fork()
if pid == 0:
    opts = os.environ.get("PIDLOCK_OPTS", "").split()
    os.execv(pidlock, [pidlock] + opts + [lockfile, sys.executable, "-c",
                                          child, ready, count])

def drain(seconds):
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                os.read(fd, 1024)
            except OSError:
                return

deadline = time.time() + 10
while not os.path.exists(ready) and time.time() < deadline:
    drain(0.05)
if not os.path.exists(ready):
    sys.exit("the command never started")
tracer = None
if trace:
    # Attached from outside the terminal's session, so that the
    # interrupt does not reach strace.
    tracer = subprocess.Popen(["strace", "-e", "trace=kill", "-e",
                               "signal=none", "-o", trace, "-p", str(pid)],
                              stderr=subprocess.PIPE,
                              start_new_session=True)
    # strace says so once the tracee is stopped and traced.
    line = tracer.stderr.readline()
    if b"attached" not in line:
        sys.exit("strace did not attach: %r" % line)
os.write(fd, b"\x03")          # the terminal's interrupt character
drain(0.1)
_, status = os.waitpid(pid, 0)
if tracer:
    tracer.wait()
print("status", os.waitstatus_to_exitcode(status))
print("count", open(count).read())
