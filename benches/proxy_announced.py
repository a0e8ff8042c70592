"""What bodies announced but not sent cost the proxy (issue 38's attack,
measured again for issue 62's larger first reserve): N connections each
announce a 250 MB request body, send one byte and hold on; after two
seconds, the proxy's resident memory and address space.

Usage: python3 benches/proxy_announced.py [N]   (default 500; the proxy
takes 512 connections at once). Builds nothing: run
`cargo build --release -p loopdbg` first.
"""

import os
import socket
import subprocess
import sys
import time

TARGET = os.environ.get("CARGO_TARGET_DIR", "target")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    # The upstream is never reached: no body ends.
    proxy = subprocess.Popen(
        [os.path.join(TARGET, "release", "loopdbg"), "proxy", "--no-tui", "--listen", "127.0.0.1:0",
         "--upstream", "http://127.0.0.1:9", "--on-invalid", "block"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = proxy.stderr.readline()
        port = int(banner.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
        held = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 262144000\r\n\r\n{")
            held.append(s)
        time.sleep(2)
        status = {l.split(":")[0]: int(l.split()[1]) for l in open(f"/proc/{proxy.pid}/status")
                  if l.startswith(("VmRSS", "VmHWM", "VmSize"))}
        print(f"{n} connections announcing 250 MB, one byte sent: resident {status['VmRSS'] / 1024:.1f} MB "
              f"(peak {status['VmHWM'] / 1024:.1f}), address space {status['VmSize'] / 1024 / 1024:.2f} GB")
    finally:
        proxy.kill()


if __name__ == "__main__":
    main()
