#!/usr/bin/env python3
"""usage: check_include_rule.py ROOT   (the project's root)

The library's include rule (docs/ARCHITECTURE.md "Folders"). Its subsystems form layers,
  core < transport < diagnostics < checkpoint < runtime < server, worker
and every quoted #include counts, the public headers' too:
  - a file of lib/asyncps/ includes its own folder's headers and those of folders below its own,
    never one above, and server and worker never each other;
  - a public header (include/asyncps/X.h) has the layer of the code that defines what it declares
    (PUBLIC below); a library file includes it only from that layer or above, and a public
    header includes only public headers of its layer or below;
  - private headers are named by their folder ("transport/window.h"), a bare "x.h" is refused,
    every file lives in a folder, and no unit (x.h with x.cpp) reaches itself through its
    includes (no cycles);
  - lib/cpu ("cpu/level.h") is below every layer.
The holes still open are listed in KNOWN, each with what closes it; a listed include that no
longer exists fails too, so the list only shrinks."""
import os
import re
import sys

RANK = {"core": 0, "transport": 1, "diagnostics": 2, "checkpoint": 3, "runtime": 4, "server": 5, "worker": 5}
PUBLIC = {
    "error": "core", "limits": "core", "log": "core", "param_layout": "core", "roles": "core", "staleness": "core",
    "cpu_kernels": "core", "options": "core", "option_choices": "core", "option_table": "core", "version": "core",
    "stall_watch": "diagnostics", "summary_writer": "diagnostics",
    "checkpoint": "checkpoint",
    "session": "runtime", "mpi_environment": "runtime",
    "parameter_server": "server",
    "worker_client": "worker", "embedding_table": "worker", "shadow_store": "worker", "step_loop": "worker",
    "asyncps": None,  # the umbrella header: for programs only
}
# (file, include) pairs that break the rule today, and what closes each
KNOWN = {}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    lib, pub = os.path.join(root, "lib/asyncps"), os.path.join(root, "include/asyncps")
    fails, checked, used_known = [], 0, set()
    graph = {}

    def layer_of_include(inc):
        """(layer name or None, node name) of an include, or raises ValueError with the problem."""
        if inc.startswith("cpu/"):
            return "cpu", None
        if inc.startswith("asyncps/"):
            name = inc[len("asyncps/"):-2] if inc.endswith(".h") else inc
            if name not in PUBLIC:
                raise ValueError(f'"{inc}" is a public header with no layer in the rule (add it to PUBLIC)')
            return PUBLIC[name], "include/" + inc
        if "/" not in inc:
            raise ValueError(f'includes "{inc}" without its folder')
        to = inc.split("/")[0]
        if to not in RANK:
            raise ValueError(f'includes "{inc}": no such subsystem')
        return to, "lib/asyncps/" + inc

    def unit(path):  # a file and its header are one unit: x.h, x.cpp, x.inc -> x
        return os.path.splitext(path)[0]

    def check(node, layer, incs):
        nonlocal checked
        graph.setdefault(unit(node), [])
        for inc in incs:
            checked += 1
            try:
                to, target = layer_of_include(inc)
            except ValueError as e:
                fails.append(f"{node}: {e}")
                continue
            if target and unit(target) != unit(node):
                graph.setdefault(unit(node), []).append(unit(target))
            if to == "cpu":
                continue
            if to is None:
                fails.append(f'{node} includes "{inc}", the umbrella header (programs only)')
                continue
            short = node.replace("lib/asyncps/", "")
            above = RANK[to] > RANK[layer] or (to != layer and RANK[to] == RANK[layer] and layer != "core")
            if above:
                if (short, inc) in KNOWN:
                    used_known.add((short, inc))
                    continue
                fails.append(f'{node} ({layer}) includes "{inc}" ({to}): a layer includes only its own and the ones below it')

    for dirpath, _, files in os.walk(lib):
        for fn in sorted(files):
            if not fn.endswith((".h", ".cpp", ".inc")):
                continue
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, lib)
            if "/" not in rel:
                fails.append(f"lib/asyncps/{rel} is outside the subsystem folders")
                continue
            folder = rel.split("/")[0]
            if folder not in RANK:
                fails.append(f"lib/asyncps/{rel}: folder '{folder}' has no place in the rule")
                continue
            check("lib/asyncps/" + rel, folder, includes(full))
    for fn in sorted(os.listdir(pub)):
        if not fn.endswith(".h"):
            continue
        name = fn[:-2]
        if name not in PUBLIC:
            fails.append(f"include/asyncps/{fn} has no layer in the rule (add it to PUBLIC)")
            continue
        incs = includes(os.path.join(pub, fn))
        if PUBLIC[name] is None:  # the umbrella: anything public
            graph[unit("include/asyncps/" + fn)] = [unit("include/" + i) for i in incs if i.startswith("asyncps/")]
            checked += len(incs)
            continue
        check("include/asyncps/" + fn, PUBLIC[name], incs)
    for k in sorted(set(KNOWN) - used_known):
        fails.append(f"KNOWN lists {k[0]} -> {k[1]}, which no longer breaks the rule: take it off the list")

    # cycles: a depth-first walk over the units (a file and its header: x.cpp including y.h while
    # y.cpp includes x.h is a cycle of x and y)
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                cyc = stack[stack.index(m):] + [m]
                fails.append("include cycle: " + " -> ".join(cyc))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)

    for f in fails:
        print("FAIL:", f)
    if fails:
        return 1
    print(f"PASS: {checked} quoted includes of lib/asyncps and include/asyncps keep the layer rule, no cycles "
          f"({len(KNOWN)} known holes listed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
