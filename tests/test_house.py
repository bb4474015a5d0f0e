"""The house's plan (issue 46), checked from the source: no import circle
among scripts/' modules.  A circle is a module that, through its imports
(at the top or inside a function: both run), imports itself; a module's
own package is not counted, since Python has it before the module runs.

    cd tests && python3 -m unittest test_house
"""
import ast
import os
import tempfile
import unittest

from kit_test import SCRIPTS


def modules(top):
    """{dotted name: path} of every .py under TOP (a package's __init__.py
    is the package's own name)."""
    out = {}
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                name = os.path.relpath(os.path.join(d, f), top)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = \
                    os.path.join(d, f)
    return out


def imports(top):
    """{module: {the modules under TOP it imports}}: `import a.b` and
    `from a import b` reach a, then a.b where that is a module."""
    mods = modules(top)
    graph = {}
    for name, path in mods.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        wanted = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package up
                    p = package
                    for _ in range(node.level - 1):
                        p = p.rpartition(".")[0]
                    base = f"{p}.{base}" if base else p
                wanted += [base] + [f"{base}.{a.name}" for a in node.names]
        graph[name] = set()
        for w in wanted:
            parts = w.split(".")
            for i in range(1, len(parts) + 1):
                m = ".".join(parts[:i])
                if m in mods and m != name and not name.startswith(m + "."):
                    graph[name].add(m)
    return graph


def circles(graph):
    """The graph's circles: each strongly connected set of two or more
    modules, sorted (Tarjan's algorithm, without recursion)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


class ImportCircles(unittest.TestCase):
    def test_none_among_the_kits_modules(self):
        """scripts/ has no import circle (there were two: render.guest and
        render.lifecycle over kernel_facts, now in render/formats.py; and
        kernel -> tracers -> tracers.ftrace -> kernel, kernel now handed
        the back-ends' orders)."""
        self.assertEqual(circles(imports(SCRIPTS)), [])

    def test_the_check_finds_one(self):
        """Hand-made trees: a top-level circle through a function's import,
        a relative import inside a package, and a package whose modules
        import their own package (no circle)."""
        files = {
            "a.py": "import b\n",
            "b.py": "def f():\n    import c\n",
            "c.py": "from a import x\n",
            "p/__init__.py": "from . import q, r\n",
            "p/q.py": "from .r import y\n",
            "p/r.py": "from p import q\n",  # p.r -> p.q -> p.r
            "s/__init__.py": "from . import t\n",
            "s/t.py": "from s import u\n",
            "s/u.py": "",
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            self.assertEqual(circles(imports(tmp)), [["a", "b", "c"], ["p.q", "p.r"]])


if __name__ == "__main__":
    unittest.main()
