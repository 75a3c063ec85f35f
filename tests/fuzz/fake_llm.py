"""A stand-in OpenAI Chat Completions server on loopback for the schemathesis run: it answers
every well-formed chat request with a fixed completion, so the fuzzed server's coaching
endpoints go all the way through the OpenAI-compatible adapter."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        ok = self.path == "/v1/chat/completions" and body.get("max_tokens") == 1024 and body.get("messages")
        answer = {
            "model": body.get("model", "fuzz"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Brake later."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3},
        }
        data = json.dumps(answer if ok else {"error": "bad request"}).encode()
        self.send_response(200 if ok else 400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
