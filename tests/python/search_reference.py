"""The reference for search: SQLite FTS5 (Python's sqlite3, tokenizer
`unicode61 remove_diacritics 2`) over the same texts the service indexed.

Usage: search_reference.py < input.json

The input: {"docs": [{"id", "ms", "folder", "unread", "outbound",
"attachment", "fields": [subject, from, to, cc, body, filename]}],
"queries": [{"name", "where"}]}. Each `where` is an SQL condition over the
columns of `meta` (id, ms, folder: 0 inbox, 1 archive, 2 trash, 3 spam; unread,
outbound, attachment: 0 or 1), in which M[...] stands for "the message
matches this FTS5 query" (columns subject, sender, recipient, cc, body,
filename).

Prints {"<name>": [ids, newest first]}.
"""

import json
import re
import sqlite3
import sys


def main():
    data = json.load(sys.stdin)
    db = sqlite3.connect(":memory:")
    db.execute(
        "create virtual table t using fts5(subject, sender, recipient, cc, body, filename, "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    db.execute(
        "create table meta(n integer primary key, id text, ms integer, folder integer, "
        "unread integer, outbound integer, attachment integer)"
    )
    for n, doc in enumerate(data["docs"], start=1):
        db.execute("insert into t(rowid, subject, sender, recipient, cc, body, filename) values (?,?,?,?,?,?,?)",
                   [n] + doc["fields"])
        db.execute(
            "insert into meta values (?,?,?,?,?,?,?)",
            (n, doc["id"], doc["ms"], doc["folder"], int(doc["unread"]), int(doc["outbound"]),
             int(doc["attachment"])),
        )
    out = {}
    for q in data["queries"]:
        params = []

        def match(m):
            params.append(m.group(1))
            return "n IN (SELECT rowid FROM t WHERE t MATCH ?)"

        where = re.sub(r"M\[(.*?)\]", match, q["where"])
        rows = db.execute(f"SELECT id FROM meta WHERE {where} ORDER BY id DESC", params).fetchall()
        out[q["name"]] = [r[0] for r in rows]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
