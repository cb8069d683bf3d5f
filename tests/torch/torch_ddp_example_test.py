"""Smoke test of examples/torch_ddp/train.py: a short DDP run on the "chorus"
backend (2 processes, 20 steps) ends with a DDP_RESULT line whose numbers
parse and are finite.

Runs with Debian's /usr/bin/python3 (python3-torch) and the build's python/
on PYTHONPATH: build/tests/torch/torch_ddp_example_test does both."""
import math
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gtest_style  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "torch_ddp", "train.py")
DATA = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def result_line(output):
    lines = [line for line in output.splitlines() if line.startswith("DDP_RESULT ")]
    if len(lines) != 1:
        raise AssertionError(f"expected one DDP_RESULT line, got {len(lines)}:\n{output[-3000:]}")
    return dict(field.split("=", 1) for field in lines[0].split()[1:])


class TorchDdpExampleTest(unittest.TestCase):
    @unittest.skipUnless(os.path.exists(DATA), "dataset-fashion-mnist is not installed")
    def test_two_processes_twenty_steps_on_chorus(self):
        command = [sys.executable, SCRIPT, "--nproc", "2", "--backend", "chorus", "--max-steps", "20",
                   "--warmup-steps", "5"]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout[-3000:])
        fields = result_line(done.stdout)
        self.assertEqual(fields["backend"], "chorus")
        self.assertEqual(int(fields["nproc"]), 2)
        self.assertEqual(int(fields["steps"]), 20)
        self.assertEqual(int(fields["timed_steps"]), 15)
        for name in ("images_per_s", "train_s", "loss", "test_accuracy"):
            value = float(fields[name])
            self.assertTrue(math.isfinite(value), f"{name}={fields[name]}")
        self.assertGreater(float(fields["images_per_s"]), 0.0)
        self.assertGreaterEqual(float(fields["test_accuracy"]), 0.0)
        self.assertLessEqual(float(fields["test_accuracy"]), 100.0)


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(TorchDdpExampleTest)
    sys.exit(gtest_style.run(suite))
