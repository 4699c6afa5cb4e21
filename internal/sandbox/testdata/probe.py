"""Tries what a sandboxed program should and should not be able to do, and
prints one JSON object: for each attempt, {"ok": value} or {"err": reason}.
Arguments: one JSON object naming the paths and ports to try."""
import json
import os
import socket
import sys

args = json.loads(sys.argv[1])
out = {}


def attempt(name, f):
    try:
        out[name] = {"ok": f()}
    except Exception as e:  # the reason is the result
        out[name] = {"err": "%s: %s" % (type(e).__name__, e)}


def write(path):
    with open(path, "w") as f:
        f.write("written")
    return path


def read(path):
    with open(path) as f:
        return f.read()


def loopback():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=2)
    s, _ = srv.accept()
    c.sendall(b"ping")
    got = s.recv(4).decode()
    for x in (c, s, srv):
        x.close()
    return got


def connect(port, proto=0):
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    c.settimeout(2)
    c.connect(("127.0.0.1", port))
    c.close()
    return "connected"


def udp(port):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"leak", ("127.0.0.1", port))
    u.close()
    return "sent"


def cap_eff():
    for line in read("/proc/self/status").splitlines():
        if line.startswith("CapEff:"):
            return line.split()[1]


attempt("write_inside", lambda: write("inside.txt"))
attempt("write_outside", lambda: write(args["outside"]))
attempt("read_hidden_file", lambda: read(args["hidden_file"]))
attempt("read_in_hidden_dir", lambda: read(args["hidden_dir_file"]))
attempt("read_sibling", lambda: read(args["sibling"]))
attempt("read_fd3", lambda: os.read(3, 1000).decode())
attempt("fd4", lambda: os.fstat(4).st_mode)  # the sandbox's status pipe must not leak in
attempt("loopback", loopback)
attempt("host_port", lambda: connect(args["host_port"]))
attempt("host_port_mptcp", lambda: connect(args["host_port"], 262))  # IPPROTO_MPTCP
attempt("host_udp", lambda: udp(args["host_udp"]))
attempt("signal_runner", lambda: os.kill(args["runner_pid"], 0))
attempt("cap_eff", cap_eff)
print(json.dumps(out))
