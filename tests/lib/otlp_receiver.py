#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small OTLP/HTTP receiver for the exporter's tests (driven by tests/unit/otlp_receiver.h: from
tests/unit/sink/otlp/test_otlp_export.c, net/test_curl.c, ... and test_otlp_collect.c): HTTP/1.1
with keep-alive on 127.0.0.1, standard library only. It stores every request and answers as a
control file says, which a test may change while it runs.

  otlp_receiver.py --dir DIR [--control JSON] [--tls-cert PEM --tls-key PEM]

DIR/port           the port, written once chosen (atomically: a reader sees all of it or nothing);
                   the receiver keeps that port when it goes away and comes back
DIR/requests.tsv   one line per request, appended once the request is stored:
                     seq conn t method path raw_len body_len content_encoding content_type action
                   seq counts requests from 1; conn numbers connections from 1 (keep-alive reuse:
                   several requests with one conn); t is time.monotonic() when the request had
                   arrived whole; '-' for an absent header
DIR/<seq>.body     the body, gunzipped when Content-Encoding is gzip (a body that is not valid gzip
                   is stored as it came, with action 'badgzip')
DIR/<seq>.headers  the request's header lines as received, "Name: value" each

DIR/control.json   read at start (or --control), and again whenever its text changes (write a new
                   file and rename it over: the receiver looks every 20 ms); once a control is in
                   effect (listening or not as it says, its actions restarted) the receiver writes
                   its text to DIR/applied, so a test knows when to go on:
  {"listen": true,              false: the listening socket and every open connection are closed
                                (the collector goes away); true again: it listens on the same port
   "actions": ["503:2", ...],   one per request, in order (replacing the file starts them again)
   "default": "200"}            once the actions are used up
Actions: 200 | 200partial:N (a partial success rejecting N points) | close200 (200, Connection:
close) | chunked (200, chunked body) | 503[:RA] | 503date:S (Retry-After as an HTTP-date S seconds
ahead) | 429[:RA] | 502 | 504 | 400 (with a google.rpc.Status) | slow:S (sleeps S seconds, then 200)
| close (closes the connection without answering: "refuse") | 400echo and 200echo (a collector that
echoes the request's headers, the Authorization header among them, in its answer: a 400 whose
google.rpc.Status message, and a 200 whose partial success's error message, holds every header line
as received).

It exits on SIGTERM or SIGINT, and by itself when its parent process is gone (a test that crashed
leaves no receiver behind; with --rm-on-orphan it removes DIR too).
"""

import argparse
import email.utils
import gzip
import json
import os
import shutil
import signal
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def pb_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def pb_field(num, wt, payload):
    key = pb_varint((num << 3) | wt)
    if wt == 0:
        return key + pb_varint(payload)
    return key + pb_varint(len(payload)) + payload


class State:
    def __init__(self, d):
        self.dir = d
        self.lock = threading.Lock()
        self.seq = 0
        self.conns = 0
        self.control = {"listen": True, "actions": [], "default": "200"}
        self.action_i = 0
        self.active = set()

    def next_action(self):
        with self.lock:
            acts = self.control.get("actions") or []
            if self.action_i < len(acts):
                a = acts[self.action_i]
                self.action_i += 1
                return str(a)
            return str(self.control.get("default", "200"))

    def set_control(self, c):
        with self.lock:
            self.control = c
            self.action_i = 0

    def new_conn(self, sock):
        with self.lock:
            self.conns += 1
            self.active.add(sock)
            return self.conns

    def end_conn(self, sock):
        with self.lock:
            self.active.discard(sock)

    def record(self, conn, method, path, headers, raw, action):
        """Stores one request; returns the action (possibly 'badgzip')."""
        t = time.monotonic()
        enc = headers.get("Content-Encoding")
        body = raw
        if enc and enc.lower() == "gzip":
            try:
                body = gzip.decompress(raw)
            except Exception:
                action = "badgzip"
        with self.lock:
            self.seq += 1
            seq = self.seq
            with open(os.path.join(self.dir, "%d.body" % seq), "wb") as f:
                f.write(body)
            with open(os.path.join(self.dir, "%d.headers" % seq), "w", encoding="latin-1") as f:
                for k, v in headers.items():
                    f.write("%s: %s\n" % (k, v))
            line = "\t".join(str(x) for x in (
                seq, conn, "%.6f" % t, method, path, len(raw), len(body), enc or "-",
                headers.get("Content-Type") or "-", action)) + "\n"
            with open(os.path.join(self.dir, "requests.tsv"), "a") as f:
                f.write(line)
        return action


STATE = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection carries many requests

    def setup(self):
        super().setup()
        # an answer goes out in two writes (head, body): without this, Nagle holds the second
        # until the exporter's delayed ACK, 40 ms a request
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn_id = STATE.new_conn(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            STATE.end_conn(self.connection)

    def log_message(self, fmt, *args):  # quiet
        pass

    def answer(self, status, body=b"", ctype=None, extra=(), chunked=False, close=False):
        self.send_response(status)
        self.send_header("Content-Type", ctype or self.ctype)
        for k, v in extra:
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(body), 3):
                part = body[i:i + 3]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        self.wfile.flush()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        json_req = (self.headers.get("Content-Type") or "").startswith("application/json")
        self.ctype = "application/json" if json_req else "application/x-protobuf"
        ok_body = b"{}" if json_req else b""
        action = STATE.next_action()
        action = STATE.record(self.conn_id, "POST", self.path, self.headers, raw, action)
        name, _, arg = action.partition(":")
        if name == "close":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if name == "slow":
            time.sleep(float(arg or 5))
            name = "200"
        if name in ("200", "badgzip"):
            self.answer(200, ok_body)
        elif name == "close200":
            self.answer(200, ok_body, close=True)
        elif name == "chunked":
            body = b'{"partialSuccess":{}}' if json_req else b""
            self.answer(200, body or b"\x0a\x00", chunked=True)  # an empty partial_success
        elif name == "200partial":
            rejected = int(arg or 1)
            msg = "test rejects %d points" % rejected
            if json_req:
                body = json.dumps({"partialSuccess": {"rejectedDataPoints": str(rejected),
                                                      "errorMessage": msg}}).encode()
            else:
                body = pb_field(1, 2, pb_field(1, 0, rejected) + pb_field(2, 2, msg.encode()))
            self.answer(200, body)
        elif name in ("503", "429", "502", "504"):
            extra = [("Retry-After", arg)] if arg else []
            self.answer(int(name), b"", extra=extra)
        elif name == "503date":
            when = email.utils.formatdate(time.time() + float(arg), usegmt=True)
            self.answer(503, b"", extra=[("Retry-After", when)])
        elif name in ("400echo", "200echo"):
            msg = "the test collector echoes your request's headers: " + "; ".join(
                "%s: %s" % (k, v) for k, v in self.headers.items())
            if name == "200echo":
                if json_req:
                    body = json.dumps({"partialSuccess": {"rejectedDataPoints": "1",
                                                          "errorMessage": msg}}).encode()
                else:
                    body = pb_field(1, 2, pb_field(1, 0, 1) + pb_field(2, 2, msg.encode()))
                self.answer(200, body)
            else:
                if json_req:
                    body = json.dumps({"code": 3, "message": msg}).encode()
                else:
                    body = pb_field(1, 0, 3) + pb_field(2, 2, msg.encode())
                self.answer(400, body)
        elif name == "400":
            msg = b"the test collector rejects this body"
            if json_req:
                body = json.dumps({"code": 3, "message": msg.decode()}).encode()
            else:
                body = pb_field(1, 0, 3) + pb_field(2, 2, msg)
            self.answer(400, body)
        else:
            self.answer(500, b"unknown action " + action.encode(), ctype="text/plain")


class Server(ThreadingHTTPServer):
    allow_reuse_address = True  # come back on the same port at once
    daemon_threads = True
    tls = None

    def handle_error(self, request, client_address):  # a client that went away: expected here
        pass

    def finish_request(self, request, client_address):
        if self.tls:  # the handshake in the connection's own thread, not the accept loop
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)


class Listener:
    def __init__(self, port, tls):
        self.port, self.tls, self.srv, self.thread = port, tls, None, None

    def up(self):
        if self.srv:
            return
        for _ in range(100):  # the old socket may linger a moment in the kernel
            try:
                self.srv = Server(("127.0.0.1", self.port), Handler)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("cannot listen on port %d again" % self.port)
        self.srv.tls = self.tls
        self.port = self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    def down(self):
        if not self.srv:
            return
        self.srv.shutdown()
        self.srv.server_close()
        self.srv = None
        with STATE.lock:
            socks = list(STATE.active)
        for s in socks:  # the collector is gone: so are its connections
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def main():
    global STATE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--control", help="initial control (JSON), else DIR/control.json if present")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--rm-on-orphan", action="store_true")
    a = ap.parse_args()
    STATE = State(a.dir)
    cpath = os.path.join(a.dir, "control.json")
    text = a.control if a.control else read_text(cpath)
    if text:
        STATE.set_control(json.loads(text))
    tls = None
    if a.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(a.tls_cert, a.tls_key)

    # The port is kept for the whole run, also when starting away (then a free one is probed).
    if STATE.control.get("listen", True):
        lst = Listener(0, tls)
        lst.up()
    else:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        lst = Listener(probe.getsockname()[1], tls)
        probe.close()
    write_atomic(os.path.join(a.dir, "applied"), text or "")
    write_atomic(os.path.join(a.dir, "port"), "%d\n" % lst.port)

    # The handlers only append to a list: a threading.Event set from a signal handler
    # deadlocks when the signal lands while the main thread is inside Event.wait().
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    parent = os.getppid()
    orphan = False
    last = read_text(cpath) if not a.control else None
    while not stop:
        time.sleep(0.02)
        if os.getppid() != parent:
            orphan = True
            break
        t = read_text(cpath)
        if t is None or t == last:
            continue
        last = t
        try:
            c = json.loads(t)
        except ValueError:
            continue
        STATE.set_control(c)
        if c.get("listen", True):
            lst.up()
        else:
            lst.down()
        write_atomic(os.path.join(a.dir, "applied"), t)
    lst.down()
    if orphan and a.rm_on_orphan:
        shutil.rmtree(a.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
