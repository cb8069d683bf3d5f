"""Runs unittest suites and reports them the way GoogleTest does, so that
./test.sh counts Python cases with the C++ ones ("[  PASSED  ] N tests.")."""
import sys
import time
import unittest


class GTestStyleResult(unittest.TestResult):
    def __init__(self, stream):
        super().__init__()
        self.stream = stream
        self.passed = []
        self.failed_names = []
        self.skipped_names = []
        self._start = 0.0

    @staticmethod
    def name(test):
        return f"{type(test).__name__}.{test._testMethodName}" if hasattr(test, "_testMethodName") else str(test)

    def _line(self, text):
        self.stream.write(text + "\n")
        self.stream.flush()

    def startTest(self, test):
        super().startTest(test)
        self._start = time.monotonic()
        self._line(f"[ RUN      ] {self.name(test)}")

    def _ms(self):
        return int((time.monotonic() - self._start) * 1000)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed.append(self.name(test))
        self._line(f"[       OK ] {self.name(test)} ({self._ms()} ms)")

    def _fail(self, test, err):
        self.failed_names.append(self.name(test))
        self._line(self._exc_info_to_string(err, test).rstrip())
        self._line(f"[  FAILED  ] {self.name(test)} ({self._ms()} ms)")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.skipped_names.append(self.name(test))
        self._line(f"[  SKIPPED ] {self.name(test)}: {reason}")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.passed.append(self.name(test))
        self._line(f"[       OK ] {self.name(test)} (expected failure) ({self._ms()} ms)")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._fail(test, (AssertionError, AssertionError("unexpected success"), None))


def run(suite, stream=sys.stdout):
    """Runs `suite`; prints the gtest summary lines; returns the exit status."""
    result = GTestStyleResult(stream)
    started = time.monotonic()
    suite.run(result)
    total_ms = int((time.monotonic() - started) * 1000)
    stream.write(f"[==========] {result.testsRun} tests ran. ({total_ms} ms total)\n")
    stream.write(f"[  PASSED  ] {len(result.passed)} tests.\n")
    if result.skipped_names:
        stream.write(f"[  SKIPPED ] {len(result.skipped_names)} tests.\n")
    if result.failed_names:
        stream.write(f"[  FAILED  ] {len(result.failed_names)} tests, listed below:\n")
        for name in result.failed_names:
            stream.write(f"[  FAILED  ] {name}\n")
    stream.flush()
    return 1 if result.failed_names else 0
