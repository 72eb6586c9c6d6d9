# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A stand-in SGLang PD server for the wait_ready_unit scenario (stdlib only).

fake_sglang.py serve PORT   answer /health, /server_info (prefill) and /health_generate with 200
fake_sglang.py crash        print loading lines, then die like a server whose kernels do not fit
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path in ('/health', '/health_generate'):
            body = b''
        elif self.path == '/server_info':
            body = json.dumps({'disaggregation_mode': 'prefill', 'served_model_name': 'fake'}).encode()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    if sys.argv[1] == 'serve':
        HTTPServer(('127.0.0.1', int(sys.argv[2])), Handler).serve_forever()
    print('Loading safetensors checkpoint shards: 0% Completed', flush=True)
    time.sleep(2)
    print('RuntimeError: CUDA error: no kernel image is available for execution on the device', flush=True)
    sys.exit(1)


if __name__ == '__main__':
    main()
