#!/usr/bin/env python3
"""A Gemini CLI chat (JSON Lines store of Gemini CLI 0.4x) with what the CLI
writes for its own screen beside what it sends: per turn a prompt, then a
reply whose `thoughts` it shows and whose edit call carries a
`resultDisplay` with the file before and after (`fileDiff`,
`originalContent`, `newContent`, as chatRecordingService.ts records a
ToolCallRecord), its `description` and `displayName`, then the answer.
For `check` and `doctor --scan` on a chat whose screen-only fields are
most of its bytes (benches/gen_home.py's chats have almost none).

Usage: gen_gemini_chat.py FILE [MEGABYTES]   (default 8)
"""
import json
import sys

FILE = "\n".join(f"pub fn case_{n}(x: u32) -> u32 {{ x + {n} }}" for n in range(120))


def stamp(s: int) -> str:
    return f"2026-11-03T{9 + s // 3600 % 12:02}:{s // 60 % 60:02}:{s % 60:02}.000Z"


def main() -> None:
    path = sys.argv[1]
    size = int(float(sys.argv[2]) * (1 << 20)) if len(sys.argv) > 2 else 8 << 20
    with open(path, "w") as f:
        f.write(json.dumps({"sessionId": "8f0e1c2d-3b4a-5968-7a6b-5c4d3e2f1a0b", "projectHash": "e3b0c442",
                            "startTime": stamp(0), "lastUpdated": stamp(0), "kind": "main"}) + "\n")
        t = 0
        while f.tell() < size:
            s = 1 + t * 3
            call = f"replace-{1762160404000 + t}-a{t}"
            after = FILE.replace(f"x + {t % 120} ", f"x + {t % 120 + 1} ")
            f.write(json.dumps({"id": f"u{t}", "timestamp": stamp(s), "type": "user",
                                "content": [{"text": f"Turn {t}: bump case_{t % 120}."}]}) + "\n")
            f.write(json.dumps({
                "id": f"g{t}", "timestamp": stamp(s + 1), "type": "gemini", "content": "", "model": "gemini-2.5-pro",
                "thoughts": [{"subject": "Planning the edit", "description": "I will change one line of src/cases.rs. " * 8,
                              "timestamp": stamp(s + 1)}],
                "tokens": {"input": 12000 + t, "output": 80, "cached": 9000, "thoughts": 40, "tool": 0, "total": 12120 + t},
                "toolCalls": [{"id": call, "name": "replace", "args": {"file_path": "/home/dev/shop/src/cases.rs",
                                                                        "old_string": f"x + {t % 120} ", "new_string": f"x + {t % 120 + 1} "},
                               "status": "success", "timestamp": stamp(s + 1), "displayName": "Edit",
                               "description": "Replaces text within a file.",
                               "resultDisplay": {"fileDiff": f"@@ -1 +1 @@\n-x + {t % 120}\n+x + {t % 120 + 1}\n", "fileName": "cases.rs",
                                                 "originalContent": FILE, "newContent": after,
                                                 "diffStat": {"model_added_lines": 1, "model_removed_lines": 1}},
                               "renderOutputAsMarkdown": False,
                               "result": [{"functionResponse": {"id": call, "name": "replace",
                                                                "response": {"output": "Successfully modified file: /home/dev/shop/src/cases.rs (1 replacements)."}}}]}]}) + "\n")
            f.write(json.dumps({"id": f"a{t}", "timestamp": stamp(s + 2), "type": "gemini", "content": f"Turn {t}: done.",
                                "model": "gemini-2.5-pro"}) + "\n")
            t += 1


if __name__ == "__main__":
    main()
