"""environment.py: report.md's environment section, from meta.json: the
machine, kernel, tools, inputs and the instruction at each probe site.

Nothing to run: `from render.environment import environment`.
"""
import json
from render.formats import normalise, table


# -- the environment and a guest's section -------------------------------------
def environment(env):
    lines = ["## Environment", ""]
    for k in ("host", "cpu_model", "cpus", "kernel", "clocksource"):
        lines.append(f"- {k}: {env.get(k, 'unknown')}")
    for line in (env.get("tracers") or {}).values():
        lines.append(f"- {normalise(line)}")
    for k, v in (env.get("tools") or {}).items():
        lines.append(f"- {k}: {v or 'not installed'}")
    inp = dict(env.get("inputs") or {})
    if len(inp.get("configs") or []) > 8:  # meta.json keeps the list
        inp["configs"] = f"{len(inp['configs'])} configurations (listed in meta.json)"
    if inp:
        lines.append(f"- inputs: {json.dumps(inp, sort_keys=True)}")
    sites = env.get("probe_sites") or {}
    if sites:
        lines += ["", "Probe sites (instruction bytes where the uprobe goes):", ""]
        rows = []
        for b, s in sorted(sites.items()):
            rows.append([b, "single_trace entry", s["function"]["file_offset"],
                         s["function"]["bytes"]])
            for m in s.get("markers", []):
                rows.append([b, f"marker {m['provider']}:{m['name']} ({m['args']})",
                             m["file_offset"], m["bytes"]])
        lines.append(table(["build", "site", "file offset", "bytes"], rows))
    return lines
