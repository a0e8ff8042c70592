#!/usr/bin/env python3
# An opencode database of N sessions shaped as opencode 1.18.33 writes them
# (the tables the scan reads), for the scan's speed: each session a prompt
# and `turns` assistant messages of a completed bash call with `size` bytes
# of output; every 50th session ends on a call left `running`.
import json, sqlite3, sys, os
path, sessions, turns, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if os.path.exists(path): os.remove(path)
db = sqlite3.connect(path)
db.executescript("""PRAGMA journal_mode=WAL;
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);""")
out = "x" * size
user = json.dumps({"role": "user", "time": {"created": 1}})
asst = json.dumps({"role": "assistant", "providerID": "anthropic", "modelID": "claude-sonnet-4-5"})
for s in range(sessions):
    sid = f"ses_{s:06d}"
    db.execute("INSERT INTO session VALUES (?, 'global', NULL, 'slug', '/home/ann/app', 't', '1.18.33', ?, ?)", (sid, s, s))
    db.execute("INSERT INTO message VALUES (?, ?, 0, 0, ?)", (f"msg_{s:06d}_0000", sid, user))
    db.execute("INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)", (f"prt_{s:06d}_0000", f"msg_{s:06d}_0000", sid, json.dumps({"type": "text", "text": "go"})))
    for t in range(1, turns + 1):
        mid = f"msg_{s:06d}_{t:04d}"
        db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, t, t, asst))
        status = "running" if (s % 50 == 0 and t == turns) else "completed"
        state = {"status": status, "input": {"command": "ls"}}
        if status == "completed": state["output"] = out
        db.execute("INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)", (f"prt_{s:06d}_{t:04d}", mid, sid, json.dumps({"type": "tool", "tool": "bash", "callID": f"toolu_{s}_{t}", "state": state})))
db.commit()
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
print(os.path.getsize(path))
