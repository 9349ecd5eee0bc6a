# dom.py — reads a page as headless Chromium left it (--dump-dom, after the
# report's script ran) for the report tests: `python3 dom.py FILE QUERY...`
# prints one line per query. Queries:
#   ready              1 when the script finished, else 0
#   error              the JS error marker's text, or "none"
#   id:ID              data-value of the element with that id
#   snap               the instant of the live set shown (data-snap of fg-total)
#   axis               the timeline's x axis: time or events
#   node:NAME          sum of data-value of the flame graph frames named NAME
#                      (zoomed-out ancestors left out)
#   nodes              how many frames are drawn
#   frame:D:NAME       sum of the values of the frames named NAME at depth D
#   cc:ROLE:NAME       the callers/callees table's value of the ROLE row
#                      (function, self, caller, callee) whose name starts with NAME
#   hist:C             the size histogram's class C: calls|bytes, or "missing"
#   histclasses        the classes the histogram lists, ','-joined
#   range              the time window shown: from|to (data-from, data-to)
#   present:ID         1 if an element has that id, else 0
#   topfn:N            the Nth row of the top table: its function cell
#   topfns             every function cell of the top table, one name a line
#   toprow:N           the Nth row of the top table: its cells, '|'-joined
#   heaprow:ID         the heaps table's row of heap id ID, '|'-joined
#   frag:KEY           the fragmentation table's data-value cells of KEY, ','-joined
#   owner:PATH         the ownership table's walk bytes of owner PATH
#   attr:NAME          the <html> element's attribute NAME (a test's probe script
#                      leaves what it saw there), or "missing"
import json
import sys
from html.parser import HTMLParser


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.els, self.rows, self.cur_table = [], [], {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        e = {"tag": tag, "a": a, "text": ""}
        self.els.append(e)
        if tag == "table":
            self.cur_table.append(a.get("id", ""))
            self.rows.setdefault(a.get("id", ""), [])
        if tag == "tr" and self.cur_table:
            self.rows[self.cur_table[-1]].append(e)
            e["cells"] = []
        if tag in ("td", "th") and self.cur_table and self.rows[self.cur_table[-1]]:
            self.rows[self.cur_table[-1]][-1]["cells"].append(e)
        if tag not in ("br", "meta", "input", "link", "img"):
            self.stack.append(e)

    def handle_endtag(self, tag):
        if tag == "table" and self.cur_table:
            self.cur_table.pop()
        while self.stack:
            e = self.stack.pop()
            if e["tag"] == tag:
                break

    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data


d = Dom()
d.feed(open(sys.argv[1], encoding="utf-8").read())
root = next((e for e in d.els if e["tag"] == "html"), {"a": {}})
byid = {e["a"]["id"]: e for e in d.els if "id" in e["a"]}
# the flame graph's frames as drawn (report.js paints them on a canvas and
# lists them in #fg's data-frames: node, label, value, ancestor?, x, depth, width)
frames = json.loads(byid["fg"]["a"].get("data-frames") or "[]") if "fg" in byid else []
for q in sys.argv[2:]:
    k, _, v = q.partition(":")
    if k == "ready":
        print(1 if root["a"].get("data-ready") == "1" else 0)
    elif k == "error":
        e = byid.get("js-error")
        print(e["text"].strip() if e else root["a"].get("data-js-error", "none"))
    elif k == "id":
        e = byid.get(v)
        print(e["a"].get("data-value", "missing") if e else "missing")
    elif k == "snap":
        e = byid.get("fg-total")
        print(e["a"].get("data-snap", "missing") if e else "missing")
    elif k == "axis":
        e = byid.get("tl-peak")
        print(e["a"].get("data-axis", "missing") if e else "missing")
    elif k == "node":
        # frames drawn for the zoomed-in view: a name may occur at several depths
        total = sum(f[2] for f in frames if f[1] == v and not f[3])
        print(total)
    elif k == "nodes":
        print(len(frames))
    elif k == "frame":
        depth, _, name = v.partition(":")
        print(sum(f[2] for f in frames if f[1] == name and f[5] == int(depth) and not f[3]))
    elif k == "cc":
        role, _, name = v.partition(":")
        r = next((r for r in d.rows.get("cctable", []) if r["a"].get("data-role") == role
                  and r["a"].get("data-name", "").startswith(name)), None)
        print(r["cells"][2]["a"].get("data-value", "missing") if r else "missing")
    elif k == "hist":
        r = next((r for r in d.rows.get("histtable", []) if r["a"].get("data-class") == v), None)
        print("|".join(c["a"]["data-value"] for c in r["cells"] if "data-value" in c["a"]) if r else "missing")
    elif k == "histclasses":
        print(",".join(r["a"]["data-class"] for r in d.rows.get("histtable", []) if "data-class" in r["a"]))
    elif k == "range":
        e = byid.get("range-info")
        print(e["a"]["data-from"] + "|" + e["a"]["data-to"] if e else "none")
    elif k == "present":
        print(1 if v in byid else 0)
    elif k == "topfns":
        print("\n".join(r["cells"][-1]["text"].strip().split(" (")[0]
                        for r in d.rows.get("toptable", [])[1:]))
    elif k == "topfn":
        rows = d.rows.get("toptable", [])
        r = rows[int(v)] if int(v) < len(rows) else None
        print(r["cells"][-1]["text"].strip() if r else "missing")
    elif k == "toprow":
        rows = d.rows.get("toptable", [])
        r = rows[int(v)] if int(v) < len(rows) else None
        print("|".join(c["a"].get("data-value", c["text"].strip()) for c in r["cells"]) if r else "missing")
    elif k == "heaprow":
        r = next((r for r in d.rows.get("heaptable", []) if r["a"].get("data-heap") == v), None)
        print("|".join(c["a"].get("data-value", c["text"].strip()) for c in r["cells"]) if r else "missing")
    elif k == "frag":
        r = [c["a"]["data-value"] for c in d.els if c["a"].get("data-key") == v]
        print(",".join(r) if r else "missing")
    elif k == "owner":
        r = next((r for r in d.rows.get("owntable", []) if r["a"].get("data-owner") == v), None)
        print(r["a"]["data-walk"] if r else "missing")
    elif k == "attr":
        print(root["a"].get(v, "missing"))
    else:
        sys.exit("dom.py: unknown query " + q)
