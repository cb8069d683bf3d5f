"""PyTorch's own distributed test suite against a backend: the test class
torch.testing._internal.distributed.distributed_test.DistributedTest.
_DistTestBase that Debian's python3-torch ships, driven the way PyTorch's
test/distributed/test_distributed_spawn.py drives it (environment BACKEND,
WORLD_SIZE, TEMP_DIR and INIT_METHOD; a TestDistBackend subclass that spawns
one process per rank for every test and meets in a file).

    distributed_suite.py --backend chorus --world-size 3 --compare-with gloo
    distributed_suite.py --backend gloo --world-size 2 --record gloo_ws2.txt
    distributed_suite.py --backend chorus --world-size 2 --reference gloo_ws2.txt
    distributed_suite.py --backend chorus --world-size 2 --reference gloo_ws2.txt --compare-with gloo
    distributed_suite.py --backend chorus --world-size 3 --lift-gloo-gates

Prints GoogleTest-style lines (gtest_style.py), so ./test.sh counts the cases.
Tests listed in distributed_suite_skips.py (failing for every backend, or run
by the suite only for gloo) are skipped with their reason. Against a
reference backend (--compare-with runs it first on the same tests, in a
child process, since the suite reads BACKEND when imported; --reference reads
what an earlier --record wrote), a test the reference fails or skips is
skipped here with the reference's reason, and a test the reference passes
must pass here: a skip for any reason not listed counts as a failure.

--reference FILE with --compare-with BACKEND takes BACKEND's results from
FILE (recorded on this machine's torch, Python and GPU count, at this world
size; otherwise BACKEND runs live, as with --compare-with alone) and runs
BACKEND live only where FILE cannot decide: tests FILE lacks, and tests FILE
says BACKEND passes that this backend fails or skips. Those fail only if
BACKEND passes them again now; a recorded result BACKEND no longer gets is
named, so that FILE can be recorded anew. The same verdicts as a live
comparison, without running BACKEND on every test.

--lift-gloo-gates runs, for a backend other than gloo, the tests the suite
runs only for gloo (GLOO_ONLY in distributed_suite_skips.py, all passing with
gloo): the suite is imported with BACKEND=gloo, so that its decorators let
them through, and the tests then initialise this backend. Not how PyTorch
runs a backend; a check that the backend does what those tests ask of gloo.
"""
import argparse
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", required=True, help="chorus, gloo, ...")
    parser.add_argument("--world-size", type=int, required=True)
    parser.add_argument("--compare-with", metavar="BACKEND",
                        help="run these tests with BACKEND first and hold this backend to its results")
    parser.add_argument("--reference", metavar="FILE",
                        help="per-test results of a reference backend (--record's format); with --compare-with, "
                             "that backend's recorded results, rerun live where they cannot decide")
    parser.add_argument("--record", metavar="FILE", help="write each test's result to FILE")
    parser.add_argument("--filter", action="append", default=[],
                        help="run only tests whose name contains this (repeatable)")
    parser.add_argument("--only", metavar="FILE", help="run only the tests named in FILE, one a line")
    parser.add_argument("--shard", default="1/1", metavar="K/N", help="run the K-th of N interleaved slices of the tests")
    parser.add_argument("--lift-gloo-gates", action="store_true",
                        help="run the tests the suite runs only for gloo, with this backend")
    args = parser.parse_args(argv)
    if args.lift_gloo_gates and (args.backend == "gloo" or args.compare_with or args.reference):
        parser.error("--lift-gloo-gates runs another backend than gloo, without a reference")
    return args


if __name__ == "__main__":
    ARGS = _parse_args(sys.argv[1:])
    # The backend the suite sees when imported, and the one under test.
    os.environ["BACKEND"] = "gloo" if ARGS.lift_gloo_gates else ARGS.backend
    os.environ["DISTRIBUTED_SUITE_BACKEND"] = ARGS.backend
    os.environ["WORLD_SIZE"] = str(ARGS.world_size)
    # torch's common_utils parses sys.argv when imported, here and in every
    # spawned rank (which inherits this argv): leave it only the script.
    sys.argv = sys.argv[:1]
if "TEMP_DIR" not in os.environ:
    os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="distributed_suite_")
    atexit.register(shutil.rmtree, os.environ["TEMP_DIR"], True)
# As PyTorch's run_test.py sets it for its file:// configuration: the
# TestDistBackend harness meets in a file either way, and the tests that
# re-initialise the default group run only under file://.
os.environ.setdefault("INIT_METHOD", "file://" + os.path.join(os.environ["TEMP_DIR"], ""))
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _install_expecttest_stand_in():
    """torch.testing._internal.common_utils imports `expecttest` (a PyPI
    package Debian does not ship) for TestCase's base class and its ACCEPT
    flag. The distributed suite neither compares against expect files nor
    accepts output, so a unittest.TestCase stands in."""
    try:
        import expecttest  # noqa: F401
        return
    except ImportError:
        pass
    module = types.ModuleType("expecttest")
    module.ACCEPT = False

    class TestCase(unittest.TestCase):
        longMessage = True

        def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802
            self.assertEqual(actual, expect)

    module.TestCase = TestCase
    sys.modules["expecttest"] = module


_install_expecttest_stand_in()

import torch  # noqa: E402
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

from distributed_suite_skips import FEATURES, GLOO_ONLY, skip_reason  # noqa: E402

SUITE_BACKEND = os.environ["BACKEND"]
BACKEND = os.environ.get("DISTRIBUTED_SUITE_BACKEND", SUITE_BACKEND)
LIFTED = BACKEND != SUITE_BACKEND
if BACKEND == "chorus":
    import torch_chorus  # noqa: F401  registers "chorus", here and in every spawned rank
# A third-party backend is a "plugin", and joins the feature sets it
# supports; both before distributed_test is imported: its decorators read
# them when the test class is defined.
if BACKEND in FEATURES:
    DistTestCases.backend_feature["plugin"].add(BACKEND)
    for feature in FEATURES[BACKEND]:
        DistTestCases.backend_feature[feature].add(BACKEND)

import torch.testing._internal.distributed.distributed_test as distributed_test  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)

if LIFTED:
    # Decorators ran for SUITE_BACKEND; init_process_group and the tests'
    # own checks read this at run time.
    distributed_test.BACKEND = BACKEND

torch.backends.cuda.matmul.allow_tf32 = False


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    def tearDown(self):
        super().tearDown()
        # MultiProcessTestCase leaves the file its ranks met in.
        if os.path.exists(self.file_name):
            os.remove(self.file_name)


def read_results(path):
    """{test name: (PASS|FAIL|SKIP, reason)} from a file --record wrote."""
    results = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                name, status, *reason = line.split(" ", 2)
                results[name] = (status, reason[0] if reason else "")
    return results


def _record_header(backend, world_size, lifted):
    """The first line of a --record file: what the results depend on."""
    python = ".".join(str(v) for v in sys.version_info[:3])
    gates = ", gloo's gates lifted" if lifted else ""
    return (f"# torch {torch.__version__}, Python {python}, CUDA devices {torch.cuda.device_count()}, "
            f"backend {backend}{gates}, world size {world_size}: test, PASS/FAIL/SKIP, reason")


def _recorded_here(path, backend):
    """None when `path` holds `backend`'s results for this machine's torch,
    Python, GPU count and world size; otherwise why it does not."""
    try:
        with open(path) as f:
            header = f.readline().rstrip("\n")
    except OSError as e:
        return f"{path} cannot be read ({e.strerror})"
    expected = _record_header(backend, ARGS.world_size, False)
    return None if header == expected else f"{path} was recorded as '{header}', not '{expected}'"


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _error_line(err):
    """The line of a failure that says what went wrong: the first exception
    a rank raised (the parent's RuntimeError quotes each rank's traceback)."""
    text = "".join(traceback.format_exception_only(err[0], err[1]))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    raised = [ln for ln in lines
              if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Failure)(:|$)", ln)
              and not re.match(r"^RuntimeError: Process \d+ (exited|terminated)", ln)]
    return _one_line(raised[0] if raised else lines[0] if lines else err[0].__name__)


def _selected_tests():
    names = unittest.TestLoader().getTestCaseNames(TestDistBackendWithSpawn)
    if LIFTED:
        names = [n for n in names if n in GLOO_ONLY]
    if ARGS.only:
        with open(ARGS.only) as f:
            wanted = {line.strip() for line in f if line.strip()}
        names = [n for n in names if n in wanted]
    if ARGS.filter:
        names = [n for n in names if any(f in n for f in ARGS.filter)]
    k, n = (int(x) for x in ARGS.shard.split("/"))
    return [name for i, name in enumerate(names) if i % n == k - 1]


def _run_reference(backend, names):
    """Runs `names` with `backend` in a child process; returns its results."""
    workdir = tempfile.mkdtemp(prefix=f"distributed_suite_{backend}_")
    only, record, log = (os.path.join(workdir, f) for f in ("tests.txt", "results.txt", "output.log"))
    with open(only, "w") as f:
        f.write("".join(name + "\n" for name in names))
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEMP_DIR", "INIT_METHOD", "BACKEND", "DISTRIBUTED_SUITE_BACKEND")}
    command = [sys.executable, os.path.abspath(__file__), "--backend", backend, "--world-size",
               str(ARGS.world_size), "--only", only, "--record", record]
    started = time.monotonic()
    with open(log, "w") as out:
        status = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    seconds = time.monotonic() - started
    results = read_results(record) if os.path.exists(record) else {}
    counts = {s: sum(1 for v in results.values() if v[0] == s) for s in ("PASS", "SKIP", "FAIL")}
    print(f"{backend} reference, world size {ARGS.world_size}, shard {ARGS.shard}: {counts['PASS']} passed, "
          f"{counts['SKIP']} skipped, {counts['FAIL']} failed of {len(names)} in {seconds:.0f} s", flush=True)
    for name, (state, reason) in sorted(results.items()):
        if state == "FAIL":
            print(f"{backend} reference fails {name}: {reason}", flush=True)
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"{backend} reference exited with status {status} after {len(results)} of {len(names)} tests; "
              f"its output: {log}", flush=True)
    return results


def main():
    import gtest_style

    names = _selected_tests()
    # The reference runs what this backend will run: not what the skip list
    # takes out for this backend.
    to_compare = [n for n in names if skip_reason(n, BACKEND, ARGS.world_size, LIFTED) is None]
    reference_name, reference = None, {}
    # The backend that decides live what a recorded result cannot.
    confirm_with = None
    if ARGS.compare_with:
        reference_name = ARGS.compare_with
        stale = _recorded_here(ARGS.reference, ARGS.compare_with) if ARGS.reference else "no record"
        if stale is None:
            confirm_with = ARGS.compare_with
            reference = read_results(ARGS.reference)
            unrecorded = [n for n in to_compare if n not in reference]
            print(f"{reference_name} results recorded in {os.path.basename(ARGS.reference)}; "
                  f"{len(unrecorded)} of these {len(to_compare)} tests not recorded, run live", flush=True)
            if unrecorded:
                reference.update(_run_reference(ARGS.compare_with, unrecorded))
        else:
            if ARGS.reference:
                print(f"{stale}: {reference_name} runs live", flush=True)
            reference = _run_reference(ARGS.compare_with, to_compare)
    elif ARGS.reference:
        reference_name, reference = os.path.basename(ARGS.reference), read_results(ARGS.reference)

    listed = set()  # skipped by this runner, with a listed reason
    suite = unittest.TestSuite()
    for name in names:
        test = TestDistBackendWithSpawn(name)
        reason = skip_reason(name, BACKEND, ARGS.world_size, LIFTED)
        if reason is None and reference_name is not None:
            state, why = reference.get(name, ("MISSING", ""))
            if state == "MISSING":
                reason = f"no result from {reference_name}"
            elif state != "PASS":
                verb = "fails" if state == "FAIL" else "skipped"
                reason = f"{verb} with {reference_name} too" + (f": {why}" if why else "")
        if reason is not None:
            listed.add(name)
            setattr(test, name, unittest.skip(reason)(lambda: None))
        suite.addTest(test)

    results = {}

    def passes_live(name):
        """Whether the live reference still passes a test its record says it
        passes (and this backend did not); with no live reference, True."""
        if confirm_with is None:
            return True
        state, why = _run_reference(confirm_with, [name]).get(name, ("MISSING", ""))
        if state == "PASS":
            return True
        print(f"{os.path.basename(ARGS.reference)} says {confirm_with} passes {name}; "
              f"now {confirm_with} {state}: {why}; record it anew", flush=True)
        reference[name] = (state, why)
        return False

    class Result(gtest_style.GTestStyleResult):
        def addSuccess(self, test):
            results[test._testMethodName] = ("PASS", "")
            super().addSuccess(test)

        def _not_passed(self, test, err, report):
            name = test._testMethodName
            if reference.get(name, ("",))[0] == "PASS" and not passes_live(name):
                state, why = reference[name]
                self.addSkip(test, f"{'fails' if state == 'FAIL' else 'skipped'} with {reference_name} too, "
                                   f"rerun live" + (f": {why}" if why else ""))
                return
            self._failed(test, err, report)

        @staticmethod
        def _failed(test, err, report):
            results[test._testMethodName] = ("FAIL", _error_line(err))
            report(test, err)

        def addFailure(self, test, err):
            self._not_passed(test, err, super().addFailure)

        def addError(self, test, err):
            self._not_passed(test, err, super().addError)

        def addSkip(self, test, reason):
            name = test._testMethodName
            if name not in listed and reference.get(name, ("",))[0] == "PASS":
                if passes_live(name):
                    # The reference passes it and nothing listed says why not here.
                    error = AssertionError(f"{reference_name} passes this test; {BACKEND} skipped it: {reason}")
                    self._failed(test, (AssertionError, error, None), super().addFailure)
                    return
                reason = f"{reason} (skipped with {reference_name} too, rerun live)"
            results[name] = ("SKIP", _one_line(reason))
            super().addSkip(test, reason)

    gtest_style.GTestStyleResult = Result
    status = gtest_style.run(suite)
    missing = [n for n in to_compare if reference_name is not None and n not in reference]
    if missing:
        # Without the reference's results nothing was compared: not a pass.
        print(f"{reference_name} has no result for {len(missing)} of these tests ({', '.join(missing[:3])}"
              f"{', ...' if len(missing) > 3 else ''}): nothing to compare them with", flush=True)
        status = 1
    if ARGS.record:
        with open(ARGS.record, "w") as f:
            f.write(_record_header(BACKEND, ARGS.world_size, LIFTED) + "\n")
            for name in sorted(results):
                state, why = results[name]
                f.write(f"{name} {state} {why}".rstrip() + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
