"""Bad input, everywhere it can come in: the runner's variables (refused
before anything is installed, built or attached), the target's own
arguments, and the limits both must agree on."""
import glob
import os
import re
import shutil
import tempfile
import unittest

from kit_test import (EXAMPLE, EXPECTED, REPORT_PY, ROOT, RUN_PY, SCRIPTS, StateTest, build, kit,
                      run)
import configs
import params


class BadInput(StateTest):
    CASES = [
        (["--threads", "0"], "THREADS '0' is not allowed"),
        (["--threads", "8..1"], "THREADS '8..1' is not allowed"),
        (["--threads", "a"], "THREADS 'a' is not allowed"),
        (["--threads", "1;touch x"], "THREADS '1;touch x' is not allowed"),
        (["--threads", "2000"], "THREADS '2000' is not allowed"),
        (["--iter", "-1"], "ITER '-1' is not allowed: want a whole number in 1..1000000000000"),
        (["--iter", "10k"], "ITER '10k' is not allowed"),
        (["--runs", "0"], "RUNS '0' is not allowed"),
        (["--configs", "nope"], "CONFIGS 'nope' matches no configuration; allowed: baseline"),
        (["--quick", "yes"], "QUICK 'yes' is not allowed: want 0 or 1"),
        (["--stap-runtime", "kernel"], "STAP_RUNTIME 'kernel' is not allowed"),
        (["--rate", "0"], "RATE '0' is not allowed: want a comma-separated list of whole "
                          "numbers in 1..1000000000 or max"),
        (["--rate", "-5"], "RATE '-5' is not allowed"),
        (["--rate", "1e3x"], "RATE '1e3x' is not allowed"),
        (["--rate", "10,,20"], "RATE '10,,20' is not allowed"),
        (["--rate", "1000000001"], "RATE '1000000001' is not allowed"),
        (["--duration", "0"], "DURATION '0' is not allowed: want seconds in 0.01..3600"),
        (["--miss", "-1"], "MISS '-1' is not allowed: want a whole number in 0..1000000000000"),
        (["--miss", "1k"], "MISS '1k' is not allowed"),
        (["--min-runs", "1"], "MIN_RUNS '1' is not allowed: want a whole number in 2..1000"),
        (["--max-runs", "2"], "MAX_RUNS '2' is not allowed: want a whole number in 3..1000 "
                              "(at least MIN_RUNS)"),
        (["--min-runs", "5", "--max-runs", "4"], "MAX_RUNS '4' is not allowed: want a whole "
                                                 "number in 5..1000"),
        (["--min-runs", "5", "--sliced-runs", "4"], "SLICED_RUNS '4' is not allowed: want a "
                                                    "whole number in 5..1000"),
        (["--pilot-s", "-1"], "PILOT_S '-1' is not allowed: want seconds in 0..3600 (0: "
                              "MIN_RUNS)"),
        (["--pilot-s", "3601"], "PILOT_S '3601' is not allowed"),
        (["--precision", "-0.1"], "PRECISION '-0.1' is not allowed: want a fraction in 0..1"),
        (["--precision", "1.5"], "PRECISION '1.5' is not allowed: want a fraction in 0..1"),
        (["--precision", "ten"], "PRECISION 'ten' is not allowed"),
        (["--precision-ns", "-1"], "PRECISION_NS '-1' is not allowed: want ns in 0..1000000"),
        (["--warm-up", "1"], "WARM_UP '1' is not allowed: want auto or all"),
        (["--timings", "/no/such/folder/t.json"], "TIMINGS '/no/such/folder/t.json' is not "
                                                  "allowed: want a file in an existing folder"),
        # A user's program: TARGET, PROBE and WORKLOAD, all three, the marker TARGET's.
        (["--target", "/no/such/program"], "TARGET '/no/such/program' is not allowed: want an "
                                           "ELF file with SDT markers"),
        (["--target", os.path.join(ROOT, "README.md")], "is not allowed: want an ELF file"),
        (["--target", "/bin/true"], "TARGET '/bin/true' is not allowed: it has no SDT markers"),
        (["--target", "/tmp/a b"], "TARGET '/tmp/a b' is not allowed: its path may hold no "
                                   "space"),
        (["--probe", "single_trace"], "PROBE 'single_trace' is not allowed: want provider:name"),
        (["--workload", "'unclosed"], "WORKLOAD ''unclosed' is not allowed: No closing quotation"),
        (["--target", build("sdt"), "--probe", "benchmark:single_trace"],
         "TARGET, PROBE and WORKLOAD go together: WORKLOAD missing"),
        (["--target", build("sdt"), "--probe", "benchmark:nope", "--workload", "true"],
         f"PROBE 'benchmark:nope' is not allowed: {build('sdt')} has no such marker; it has "
         "benchmark:single_trace"),
    ]

    def test_refused_before_anything(self):
        with tempfile.TemporaryDirectory() as res:
            for args, message in self.CASES:
                with self.subTest(args=args):
                    r = kit(args, res)
                    self.assertEqual(r.returncode, 2)
                    self.assertIn(message, r.stderr)
                    self.assertEqual(os.listdir(res), [], "a results folder was left")
            self.assertFalse(os.path.exists(os.path.join(ROOT, "x")))

    def test_unwritable_results(self):
        """A results folder that cannot be written: a clear error before
        anything is installed, built or attached (the state check), and
        nothing made there."""
        r = kit(["--quick", "1", "--configs", "baseline,ftrace-sdt"], "/proc/kit-test/results")
        self.assertEqual(r.returncode, 2, r.stderr[-2000:])
        self.assertIn("run: cannot write results under /proc/kit-test/results: /proc: ", r.stderr)
        self.assertIn("nothing was done", r.stderr)
        self.assertNotIn("installing", r.stderr)
        self.assertFalse(os.path.exists("/proc/kit-test"))

    def test_variables_from_the_environment(self):
        """make hands the variables over in the environment: checked the
        same way, and a flag given to run.py wins over them."""
        with tempfile.TemporaryDirectory() as res:
            r = kit(["--list"], res, env=dict(os.environ, ITER="-1"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("ITER '-1' is not allowed: want a whole number in 1..", r.stderr)
            r = kit(["--iter", "5", "--list"], res, env=dict(os.environ, ITER="-1"))
            self.assertEqual(r.returncode, 0, r.stderr)
            r = kit(["--vars"], res, env=dict(os.environ, RUNS="7"))
            self.assertIn("RUNS=adaptive", r.stdout.splitlines(), "--vars prints defaults")
            self.assertEqual(os.listdir(res), [])

    def test_make_variables(self):
        """The same checks through `make run`, whose variables reach the
        runner without passing through a shell command line."""
        before = sorted(os.listdir(os.path.join(ROOT, "results")))
        for var, message in (("THREADS=1;touch x", "THREADS '1;touch x' is not allowed"),
                             ("ITER=-1", "ITER '-1' is not allowed"),
                             ("CONFIGS=nope*", "CONFIGS 'nope*' matches no configuration"),
                             ("THREADS=$(touch x)", "THREADS '$(touch x)' is not allowed"),
                             ("ITER=", "ITER '' is not allowed"),
                             ("RATE=10,,20", "RATE '10,,20' is not allowed")):
            with self.subTest(var=var):
                r = run(["make", "-s", "--no-print-directory", "run", var, "NO_INSTALL=1"])
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(message, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(ROOT, "x")))
        self.assertEqual(sorted(os.listdir(os.path.join(ROOT, "results"))), before)

    def test_help(self):
        """--help lists every variable (argparse formats help text with %;
        a bare one in a variable's help broke it, and newer Pythons refuse
        it when the parser is built, as the lab's guest did)."""
        r = kit(["--help"], "/nonexistent")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        for name in ("PRECISION", "PRECISION_NS", "MIN_RUNS", "MAX_RUNS", "STAP_RUNTIME"):
            self.assertIn(name, r.stdout)
        self.assertIn("95% interval", r.stdout)

    def test_list(self):
        r = kit(["--list"], "/nonexistent")
        self.assertEqual(r.returncode, 0)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[1].split()[0], "baseline", "baselines come first")
        self.assertEqual(len(lines), len(configs.CONFIGS) + 1)


class Inputs(unittest.TestCase):
    def test_a_default_follows_min_runs(self):
        """MAX_RUNS and SLICED_RUNS not given rise to MIN_RUNS (make run
        MIN_RUNS=4 once SLICED_RUNS's default went to 3); given, they are
        refused below it (BadInput.CASES)."""
        a = params.parse_args(["--min-runs", "4"])
        self.assertEqual((a.min_runs, a.sliced_runs, a.max_runs), (4, 4, 10))
        a = params.parse_args(["--min-runs", "12"])
        self.assertEqual((a.sliced_runs, a.max_runs), (12, 12))
        a = params.parse_args([])
        self.assertEqual((a.sliced_runs, a.max_runs), (params.BY_NAME["SLICED_RUNS"].default,
                                                       params.BY_NAME["MAX_RUNS"].default))

    def test_bad_inputs(self):
        with open(os.path.join(EXPECTED, "bad-inputs.txt")) as f:
            cases = [ln.rstrip("\n").split(" | ") for ln in f
                     if ln.strip() and not ln.startswith("#")]
        self.assertGreater(len(cases), 10)
        for args, message in cases:
            with self.subTest(args=args):
                r = run([build("plain"), *args.split()])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stdout, "", "a refused run printed a record")

    def test_help(self):
        r = run([build("plain"), "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--threads N", r.stdout)


if __name__ == "__main__":
    unittest.main()


class Ties(unittest.TestCase):
    """The limits and paths written in two places agree: the runner's
    (params.py) with the target's own (its --help, src/benchmark.c), the
    expected refusals (tests/expected/bad-inputs.txt) with both, and every
    SystemTap script in stp/ with the target the back-end runs it on."""

    def help_range(self, flag):
        r = run([build("plain"), "--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        # the option's text: its line and those below it, up to the next option
        m = re.search(rf"^  -\w, --{flag} .*?(?=^  -|\Z)", r.stdout, re.M | re.S)
        self.assertIsNotNone(m, r.stdout)
        text, m = m.group(0), re.search(r"\((\d+)\.\.(\d+)", m.group(0))
        self.assertIsNotNone(m, text)
        return int(m.group(1)), int(m.group(2))

    def test_params_match_the_target(self):
        self.assertEqual(self.help_range("threads"), (1, params.MAX_THREADS))
        self.assertEqual(self.help_range("iterations"), (1, params.MAX_ITER))
        self.assertEqual(self.help_range("rate"), (1, params.MAX_RATE))
        lo, hi = self.help_range("fork")
        self.assertTrue(lo <= configs.FORK_CALLS <= hi, (lo, hi, configs.FORK_CALLS))

    def test_expected_refusals_name_the_limits(self):
        with open(os.path.join(EXPECTED, "bad-inputs.txt")) as f:
            text = f.read()
        for flag, top in (("threads", params.MAX_THREADS), ("iterations", params.MAX_ITER),
                          ("rate", params.MAX_RATE)):
            with self.subTest(flag=flag):
                said = set(re.findall(rf"--{flag} '[^']*' is not allowed: want a whole number "
                                      rf"in 1\.\.(\d+)", text))
                self.assertEqual(said, {str(top)})

    def test_scripts_probe_the_backends_target(self):
        from tracers import stap_preflight as stap
        scripts = sorted(glob.glob(os.path.join(ROOT, "stp", "*.stp")))
        self.assertGreater(len(scripts), 3)
        used = {c.script for c in configs.CONFIGS if c.script}
        for path in scripts:
            with self.subTest(script=os.path.basename(path)):
                with open(path) as f:
                    text = f.read()
                named = set(re.findall(r'process\("([^"]+)"\)', text))
                rel = os.path.relpath(path, ROOT)
                if "process(@1)" in text:  # a real program's: the back-end passes its path
                    self.assertEqual(named, set())
                    self.assertTrue(all(c.workload for c in configs.CONFIGS if c.script == rel))
                else:  # the kit's target of the rows that run it (stp/body-*: the body build)
                    self.assertEqual(named, {f"build/benchmark-{c.build}" for c in configs.CONFIGS
                                             if c.script == rel})
                    self.assertEqual(named - {"build/benchmark-body"}, {stap.TARGET} & named)
                self.assertIn(rel, used)


class Readme(unittest.TestCase):
    """README.md tells the truth: its answers block is what the report
    prints for docs/example today, and every make target and variable it
    names exists."""
    START = "<!-- answers: python3 scripts/report.py docs/example -->"
    END = "<!-- /answers -->"

    def readme(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            return f.read()

    def test_answers_block_is_the_reports(self):
        text = self.readme()
        self.assertIn(self.START, text)
        block = text[text.index(self.START) + len(self.START):text.index(self.END)]
        block = block.strip().removeprefix("```").removesuffix("```").strip("\n")
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "example")
            shutil.copytree(EXAMPLE, copy)
            r = run(["python3", REPORT_PY, copy])
        self.assertEqual(r.returncode, 0, r.stderr)
        printed = r.stdout.replace(copy, "docs/example").strip("\n")
        self.assertEqual(block, printed)

    def test_make_targets_and_variables_exist(self):
        text = self.readme()
        with open(os.path.join(ROOT, "Makefile")) as f:
            makefile = f.read()
        phony = set(re.search(r"^\.PHONY:(.*)$", makefile, re.M).group(1).split())
        targets = set(re.findall(r"`make ([a-z][\w-]*)", text)) - {"run"} | {"run"}
        self.assertGreater(len(targets), 3)
        self.assertEqual(sorted(targets - phony), [], "targets README names that make lacks")
        known = {ln.split("=")[0] for ln in run(["python3", RUN_PY, "--vars"]).stdout.split()}
        for entry in ("lab", "fleet", "atlas"):
            known |= {ln.split("=")[0] for ln in run(
                ["python3", os.path.join(SCRIPTS, entry), "--vars"]).stdout.split()}
        known |= {"V", "CC", "CFLAGS", "TESTS", "RESULTS", "PYTHON", "DTRACE"}
        named = set(re.findall(r"(?<![\w-])([A-Z][A-Z0-9_]{1,})=", text))
        self.assertGreater(len(named), 3)
        self.assertEqual(sorted(named - known), [], "variables README names that nothing reads")
