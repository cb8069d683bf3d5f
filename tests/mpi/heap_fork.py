"""numpy arrays and a forked child (multiprocessing) under libchorus_mpi.so.

The interposer serves malloc, so the parent's large arrays are blocks of
Chorus's shared heap; the child must see them as they were at the fork,
its writes must stay its own, and its allocations (a fresh heap, at another
range, with the C library's memory between the two) must work.
Prints "heap fork: ok"; exits 1 with the reason otherwise.
"""
import multiprocessing
import sys

import numpy as np

parent_array = np.full(1 << 20, 7.0)  # 8 MiB


def child(queue):
    queue.put(float(parent_array.sum()))
    parent_array[:] = 1.0
    fresh = [np.ones(n << 16) for n in range(1, 40)]
    queue.put(float(sum(a.sum() for a in fresh)))


def main():
    multiprocessing.set_start_method("fork")
    queue = multiprocessing.Queue()
    process = multiprocessing.Process(target=child, args=(queue,))
    process.start()
    process.join(60)
    if process.exitcode != 0:
        print("heap fork: the child ended with %s" % process.exitcode)
        return 1
    seen = queue.get(timeout=10)
    fresh = queue.get(timeout=10)
    if seen != 7.0 * (1 << 20):
        print("heap fork: the child saw %s" % seen)
        return 1
    if fresh != float(sum(n << 16 for n in range(1, 40))):
        print("heap fork: the child's arrays summed to %s" % fresh)
        return 1
    if float(parent_array.sum()) != 7.0 * (1 << 20):
        print("heap fork: the parent saw the child's writes")
        return 1
    later = np.zeros(1 << 20)
    later += 2.0
    if float(later.sum()) != 2.0 * (1 << 20):
        print("heap fork: a later array is wrong")
        return 1
    print("heap fork: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
