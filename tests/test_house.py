"""The house's plan (issue 46), checked from the source: no import circle
among scripts/' modules (and, issue 60, no link in README.md or docs/ that
leads nowhere).  A circle is a module that, through its imports
(at the top or inside a function: both run), imports itself; a module's
own package is not counted, since Python has it before the module runs.

    cd tests && python3 -m unittest test_house
"""
import ast
import os
import re
import tempfile
import unittest

from kit_test import ROOT, SCRIPTS


def plant(top, files):
    """A hand-made tree under TOP: FILES, {path: text}."""
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(top, name)), exist_ok=True)
        with open(os.path.join(top, name), "w") as f:
            f.write(text)

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
            plant(tmp, files)
            self.assertEqual(circles(imports(tmp)), [["a", "b", "c"], ["p.q", "p.r"]])



# The floors above the ground: the wings (each command's rooms, and the
# rooms they share: measure/, tracers/, stats/), the report's render/, and
# the doors.  record/ is the ground floor's: the results formats.
WINGS = ("atlas", "fleet", "lab", "lava", "lifecycle", "measure", "record", "stats", "tracers")
DOORS = ("run", "report")  # and each wing's __main__


def arrows_back_up(top):
    """[(importer, imported, why)] of the imports under TOP that run back
    up: a wing's module (not its door) importing render/; anything importing a door; a
    record/ module importing a room above the ground (the formats import
    only each other and the ground: rooms that import nothing of the kit,
    or only such rooms, as host.py imports procs.py); and, at
    the level of folders (a top-level package a node, a top-level module a
    node), each circle: folders that import one another through different
    modules, which one more import makes a circle of modules."""
    graph = imports(top)
    rooms = {m for m, path in modules(top).items()
             if "." not in m and not path.endswith("__init__.py")}  # the top floor's rooms
    bare = {m for m in graph if not graph[m]}  # importing nothing of the kit
    ground = bare | {m for m in rooms if graph[m] <= bare & rooms}  # (host.py -> procs.py)
    found = []
    for a, bs in sorted(graph.items()):
        for b in sorted(bs):
            fa, fb = a.split(".")[0], b.split(".")[0]
            if fa in WINGS and fb == "render" and not a.endswith(".__main__"):
                found.append((a, b, "a wing imports render/"))
            if b in DOORS or b.endswith(".__main__"):
                found.append((a, b, "a door is imported"))
            if fa == "record" and fb != "record" and b not in ground:
                found.append((a, b, "record/ imports above the ground"))
    folders = {}
    for a, bs in graph.items():
        folders.setdefault(a.split(".")[0], set()).update(
            b.split(".")[0] for b in bs if b.split(".")[0] != a.split(".")[0])
    found += [(" -> ".join(c), "", "folders in a circle") for c in circles(folders)]
    return found


class Floors(unittest.TestCase):
    def test_no_arrow_runs_back_up(self):
        """No wing imports render/ (make lifecycle's rooms and the lab's
        merge took lifecycle.csv's columns from render/lifecycle.py, make
        fleet's and make atlas's their files' names from render/), nothing
        imports a door (make fleet imported run.py), record/ imports only
        the ground, and no folders import one another (render/ -> guest/ ->
        cycles/ -> render/ was one import short of a circle)."""
        self.assertEqual(arrows_back_up(SCRIPTS), [])

    def test_the_check_finds_them(self):
        """Hand-made: a folder circle render/ -> lab/ -> lifecycle/ ->
        render/ with no module circle, a wing importing render/, a module
        importing a door, and record/ importing a wing, a room that imports
        a wing, and a room two levels above the ground; record/ importing
        host.py, which imports only procs.py, and a door importing
        everything are no fault."""
        files = {
            "host.py": "import procs\n",
            "run.py": "import lab.merge\nimport render.x\n",
            "render/__init__.py": "", "render/x.py": "import lab.merge\n",
            "render/y.py": "import record.runs\n",
            "lab/__init__.py": "", "lab/merge.py": "import lifecycle.kit\n",
            "lab/__main__.py": "import lab.merge\nimport render.x\n",
            "lifecycle/__init__.py": "", "lifecycle/kit.py": "from render import y\n",
            "fleet/__init__.py": "", "fleet/inputs.py": "import run\n",
            "record/__init__.py": "", "record/runs.py": "import host\nimport procs\n",
            "procs.py": "", "record/where.py": "import stepping\nimport table\n",
            "stepping.py": "import tools.x\n", "tools/__init__.py": "", "tools/x.py": "",
            "table.py": "import host\n",  # two levels up: host.py -> procs.py
            "record/lab.py": "import lab.merge\n",
        }
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, files)
            self.assertEqual(arrows_back_up(tmp), [
                ("fleet.inputs", "run", "a door is imported"),
                ("lifecycle.kit", "render", "a wing imports render/"),
                ("lifecycle.kit", "render.y", "a wing imports render/"),
                ("record.lab", "lab.merge", "record/ imports above the ground"),
                ("record.where", "stepping", "record/ imports above the ground"),
                ("record.where", "table", "record/ imports above the ground"),
                ("lab -> lifecycle -> record -> render", "", "folders in a circle")])


# A tracer's verbs: make run's (tracers/base.py) and make lifecycle's
# (tracers/attached.py); a class with three of them is a tracer.
VERBS = {"attach", "detach", "events", "start", "ready", "counts", "stop"}


def tracer_classes(top):
    """[(path under TOP, class)] of the classes outside TOP/tracers/ that
    define three or more of VERBS."""
    found = []
    for name, path in sorted(modules(top).items()):
        if name == "tracers" or name.startswith("tracers."):
            continue
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                verbs = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} & VERBS
                if len(verbs) >= 3:
                    found.append((os.path.relpath(path, top), node.name))
    return found


class OneHomePerTracer(unittest.TestCase):
    def test_no_tracer_class_outside_tracers(self):
        """Every class with a tracer's verbs is a back-end's, under
        scripts/tracers/ (make lifecycle had four of its own: Ftrace,
        Bpftrace, Perf and Stap, now each back-end's Attached)."""
        self.assertEqual(tracer_classes(SCRIPTS), [])

    def test_the_check_finds_one(self):
        """Hand-made: a class with start, counts and stop outside tracers/
        is found; one with two verbs is not, nor one under tracers/."""
        files = {"x.py": "class T:\n    def start(self): pass\n    def counts(self): pass\n"
                         "    def stop(self, limit): pass\n",
                 "y.py": "class U:\n    def start(self): pass\n    def stop(self): pass\n",
                 "tracers/__init__.py": "",
                 "tracers/z.py": "class Attached:\n    def start(self): pass\n"
                                 "    def ready(self): pass\n    def stop(self): pass\n"}
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, files)
            self.assertEqual(tracer_classes(tmp), [("x.py", "T")])


ROOM_LINES, WALL, FUNCTION_LINES = 450, 500, 70  # the house's sizes (issues 46, 69)
REASON = "past the house's ~450"  # a room over its size says why, at its top, so
REASON_LINES = 5  # ... within its docstring's first lines (issue 69: a reason at a
# room's foot was read by no one, and each wave went a little further past it)


def oversized(top):
    """[(path under TOP, what)] of the rooms past WALL lines (whatever they
    say), the rooms past ROOM_LINES whose docstring gives no reason
    (REASON) in its first REASON_LINES lines, and the functions past
    FUNCTION_LINES."""
    found = []
    for name, path in sorted(modules(top).items()):
        with open(path) as f:
            text = f.read()
        tree = ast.parse(text, path)
        rel, lines = os.path.relpath(path, top), text.count("\n")
        top_lines = "\n".join((ast.get_docstring(tree) or "").split("\n")[:REASON_LINES])
        if lines > WALL:
            found.append((rel, f"{lines} lines, past the wall"))
        elif lines > ROOM_LINES and REASON not in " ".join(top_lines.split()):
            found.append((rel, f"{lines} lines"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.end_lineno - node.lineno + 1 > FUNCTION_LINES:
                found.append((rel, f"{node.name}: {node.end_lineno - node.lineno + 1} lines"))
    return found


class Sizes(unittest.TestCase):
    def test_rooms_and_functions(self):
        """No room of scripts/ past 500 lines, none past 450 without its
        reason on its first lines (workloads.py was 557, its reason at its
        foot; now a room for PostgreSQL's clusters beside it), and no
        function past 70 lines (fleet.main was 110)."""
        self.assertEqual(oversized(SCRIPTS), [])

    def test_the_check_finds_them(self):
        """Hand-made: a 460-line room without a reason, one whose reason is
        at its foot, a 501-line room that says why, and an 80-line function
        are found; a 460-line room that says why at its top is not."""
        long_body = "".join(f"    x{i} = {i}\n" for i in range(80))
        foot = "\n".join(["foot"] + ["more"] * REASON_LINES + [REASON])
        files = {"big.py": '"""big"""\n' + "y = 1\n" * 459,
                 "said.py": f'"""said: {REASON},\nbecause."""\n' + "y = 1\n" * 459,
                 "foot.py": f'"""{foot}"""\n' + "y = 1\n" * 453,
                 "wall.py": f'"""wall: {REASON}, because."""\n' + "y = 1\n" * 500,
                 "fn.py": "def f():\n" + long_body}
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, files)
            self.assertEqual(oversized(tmp), [
                ("big.py", "460 lines"), ("fn.py", "f: 81 lines"), ("foot.py", "460 lines"),
                ("wall.py", "501 lines, past the wall")])


# The make targets that run a command of scripts/: `$(PYTHON) scripts/NAME`.
# (record/'s door prints the statuses, a reference in the README: not a command.)
NOT_COMMANDS = ("record",)
COMMAND = re.compile(r"^([a-z][-a-z]*):.*\n(?:\t.*\n)*?\t\$\(Q\)\$\(PYTHON\) scripts/([a-z]+)\b",
                     re.M)


def commands(makefile, top):
    """[(make target, what it runs, where its code is or why it is not in
    its place)]: each command a door (DOORS, scripts/NAME.py) or a wing of
    its own name (scripts/TARGET/__main__.py), and every wing that is a
    command (it has a __main__.py) run by a make target of its name."""
    with open(makefile) as f:
        text = f.read()
    found, run = [], {}
    for target, name in COMMAND.findall(text):
        run.setdefault(name, target)
        if name in DOORS and os.path.isfile(os.path.join(top, f"{name}.py")):
            continue
        if not os.path.isfile(os.path.join(top, name, "__main__.py")):
            found.append((target, name, "not a door, nor a wing with its door"))
        elif not target.startswith(name):
            found.append((target, name, "a wing not named after its command"))
    for d in sorted(os.listdir(top)):
        if os.path.isfile(os.path.join(top, d, "__main__.py")) and d not in run \
                and d not in NOT_COMMANDS:
            found.append(("", d, "a wing no make target runs"))
    return found


class Commands(unittest.TestCase):
    def test_each_command_its_wing(self):
        """Every command make runs is a door or a wing named after it, and
        every wing with a door is a command (LAVA was scripts/lava.py, a
        room on the top floor with no command in the Makefile; now
        scripts/lava/, `make lava`)."""
        self.assertEqual(commands(os.path.join(ROOT, "Makefile"), SCRIPTS), [])

    def test_the_check_finds_them(self):
        """Hand-made: a top-floor room run by make, a wing run by a target of
        another name, and a wing no target runs."""
        make = ("run:\n\t$(Q)$(PYTHON) scripts/run.py\n"
                "lab:\n\t@x\n\t$(Q)$(PYTHON) scripts/lab\n"
                "lab-shell:\n\t$(Q)$(PYTHON) scripts/lab --shell\n"
                "ship:\n\t$(Q)$(PYTHON) scripts/lava.py run\n"
                "go:\n\t$(Q)$(PYTHON) scripts/fleet\n")
        files = {"run.py": "", "lava.py": "", "lab/__main__.py": "", "fleet/__main__.py": "",
                 "atlas/__main__.py": "", "record/__init__.py": "", "Makefile": make}
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, files)
            self.assertEqual(commands(os.path.join(tmp, "Makefile"), tmp), [
                ("ship", "lava", "not a door, nor a wing with its door"),
                ("go", "fleet", "a wing not named after its command"),
                ("", "atlas", "a wing no make target runs")])


PROLOGUE = 6  # lines two doors may share in one run (their two path lines and a few imports)


def shared_run(a, b):
    """The longest run of lines (stripped, blank ones out) that A and B,
    two texts, share, as (its length, its first line)."""
    x = [ln.strip() for ln in a.splitlines() if ln.strip()]
    y = [ln.strip() for ln in b.splitlines() if ln.strip()]
    best, prev = (0, ""), [0] * (len(y) + 1)
    for i in range(1, len(x) + 1):
        cur = [0] * (len(y) + 1)
        for j in range(1, len(y) + 1):
            if x[i - 1] == y[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best[0]:
                    best = (cur[j], x[i - cur[j]])
        prev = cur
    return best


# What a door does first and last, each verb's one home: its inputs with make's
# --vars (door.inputs), the lab's kernels and root refused and its lock and
# tools (lab/suite.py's refused and host_ready), the report (door.report).
OPENING = ("params.defaults(", "the_kernels_there(", "need_host_tools(", "trusted.make_all(",
           '"report.py")')


def shared_prologues(top):
    """[(door, door or the verb, lines)] of the pairs of doors (DOORS,
    each wing's __main__.py) that share a run of more than PROLOGUE
    lines, and of the doors that do an OPENING verb themselves."""
    doors = [os.path.join(top, f"{d}.py") for d in DOORS] + sorted(
        os.path.join(top, d, "__main__.py") for d in os.listdir(top)
        if os.path.isfile(os.path.join(top, d, "__main__.py")))
    texts = {}
    for p in doors:
        if os.path.isfile(p):
            with open(p) as f:
                texts[os.path.relpath(p, top)] = f.read()
    names = sorted(texts)
    return [(a, b, n) for k, a in enumerate(names) for b in names[k + 1:]
            for n, _ in [shared_run(texts[a], texts[b])] if n > PROLOGUE] + [
        (a, verb, texts[a].count(verb)) for a in names for verb in OPENING if verb in texts[a]]


class Prologues(unittest.TestCase):
    def test_no_two_doors_share_one(self):
        """No two doors open (or go on) with the same lines: what each does
        first, its inputs read with make's --vars, the lab's kernels and
        root refused before anything is built, the lock and the tools, and
        the report over what it wrote, is door.py's and lab/suite.py's
        (atlas/__main__.py and lab/__main__.py shared twenty lines)."""
        self.assertEqual(shared_prologues(SCRIPTS), [])

    def test_the_check_finds_them(self):
        """Hand-made: two wings' doors that share seven lines in a row are
        found; the same seven lines with one between them are not; a door
        that prints make's --vars itself is found."""
        seven = "".join(f"import m{i}\n" for i in range(7))
        split = seven.replace("import m3\n", "import m3\nimport other\n")
        files = {"run.py": seven, "report.py": "x = 1\n", "a/__main__.py": seven,
                 "b/__main__.py": split,
                 "c/__main__.py": "if a.vars:\n    print(params.defaults(PARAMS))\n"}
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, files)
            self.assertEqual(shared_prologues(tmp), [("a/__main__.py", "run.py", 7),
                                                     ("c/__main__.py", "params.defaults(", 1)])


# A markdown link's target: [text](target), the target without spaces.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files(root):
    """README.md and every .md under ROOT/docs/, relative to ROOT."""
    out = ["README.md"] if os.path.isfile(os.path.join(root, "README.md")) else []
    for d, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        out += sorted(os.path.relpath(os.path.join(d, f), root)
                      for f in files if f.endswith(".md"))
    return out


def dangling(root):
    """[(file, target)] of the relative links in markdown_files(ROOT) whose
    file or folder is not there (code, fenced or inline, is not read: a
    command's output may name files it writes)."""
    found = []
    for rel in markdown_files(root):
        with open(os.path.join(root, rel)) as f:
            text = f.read()
        text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in LINK.findall(text):
            path = target.split("#")[0]
            if not path or re.match(r"[a-z][a-z0-9+.-]*:", path):  # an anchor alone, a URL
                continue
            if not os.path.exists(os.path.join(root, os.path.dirname(rel), path)):
                found.append((rel, target))
    return found


class DocLinks(unittest.TestCase):
    def test_none_dangles(self):
        """Every relative link in README.md and docs/ leads to a file or
        folder that is there (the run folders once in docs/ left git for
        its history, issue 60: a link to one would lead nowhere)."""
        self.assertEqual(dangling(ROOT), [])

    def test_the_check_finds_them(self):
        """Hand-made: a link to a file that is not there, and one up out of
        docs/ to one that is not, are found; a link that is there (file,
        folder, with its anchor), a URL, an anchor alone and a link in
        code are not."""
        files = {"README.md": "[a](docs/a.md) [gone](docs/gone.md) [w](https://x.org/y)\n",
                 "docs/a.md": "[d](sub/) [b](sub/b.md#top) [here](#x) [up](../README.md)\n"
                              "`[c](code.md)`\n```\n[f](fenced.md)\n```\n[up](../none.py)\n",
                 "docs/sub/b.md": "[a](../a.md)\n"}
        with tempfile.TemporaryDirectory() as tmp:
            plant(tmp, files)
            self.assertEqual(dangling(tmp), [("README.md", "docs/gone.md"),
                                             ("docs/a.md", "../none.py")])


if __name__ == "__main__":
    unittest.main()
