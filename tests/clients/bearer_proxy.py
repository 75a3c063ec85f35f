"""A loopback forwarder that adds a driver's personal access token to every request: the
setup a driver uses to give a tool without OAuth support (here the MCP conformance suite, whose
client sends no credential) access to the MCP endpoint. Everything else passes unchanged.

Usage: bearer_proxy.py <listen port> <upstream base URL> <token>
"""

import http.client
import http.server
import sys
import urllib.parse

PORT, UPSTREAM, TOKEN = int(sys.argv[1]), urllib.parse.urlsplit(sys.argv[2]), sys.argv[3]
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}


class Forward(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["authorization"] = f"Bearer {TOKEN}"
        upstream = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=30)
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    do_GET = do_POST = do_DELETE = do_PUT = do_OPTIONS = forward

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Forward).serve_forever()
