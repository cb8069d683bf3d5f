/* malloc under libchorus_mpi.so (interpose/mpi/shared_heap_malloc.cc), no
 * MPI needed: large blocks come from Chorus's shared heap (asked through
 * chorusMemGetSize, which the preloaded library brings), small ones from
 * the C library; realloc, calloc and the aligned forms keep their contracts;
 * and across fork parent and child keep their own copies of heap blocks,
 * while the child's fresh heap sits at another range with the C library's
 * memory between the two, which free must still hand to the C library.
 * Prints "heap: on" or "heap: off", then "heap malloc check: ok"; exits 1
 * with the reason otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*GetSize)(const void* ptr, size_t* size);

static GetSize get_size;

static int InHeap(const void* ptr) {
  size_t size = 0;
  return get_size != NULL && get_size(ptr, &size) == 0 && size > 0;
}

static int Fail(const char* what) {
  printf("heap malloc check: %s\n", what);
  return 1;
}

static int Filled(const char* block, size_t bytes, char value) {
  for (size_t i = 0; i < bytes; i += 4093) {
    if (block[i] != value) return 0;
  }
  return block[bytes - 1] == value;
}

int main(void) {
  get_size = (GetSize)dlsym(RTLD_DEFAULT, "chorusMemGetSize");
  const size_t big = 8 << 20;
  char* block = malloc(big);
  if (block == NULL) return Fail("malloc of 8 MiB failed");
  const int heap = InHeap(block);
  printf("heap: %s\n", heap ? "on" : "off");
  memset(block, 'A', big);
  char* small = malloc(1000);
  if (small == NULL || InHeap(small)) return Fail("a small block came from the heap");
  strcpy(small, "small");

  /* The contracts. */
  char* grown = realloc(block, 2 * big);
  if (grown == NULL || !Filled(grown, big, 'A')) return Fail("realloc lost the contents");
  block = realloc(grown, big / 2);
  if (block == NULL || !Filled(block, big / 2, 'A')) return Fail("shrinking realloc lost the contents");
  block = realloc(block, big);
  if (block == NULL) return Fail("realloc back failed");
  memset(block, 'A', big);
  if (malloc_usable_size(block) < big) return Fail("malloc_usable_size below the request");
  unsigned char* zeros = calloc(1 << 20, 1);
  if (zeros == NULL) return Fail("calloc failed");
  for (size_t i = 0; i < (1 << 20); ++i) {
    if (zeros[i] != 0) return Fail("calloc returned a non-zero byte");
  }
  void* aligned = NULL;
  if (posix_memalign(&aligned, 4096, 1 << 20) != 0 || ((uintptr_t)aligned & 4095) != 0) {
    return Fail("posix_memalign");
  }
  void* wide = aligned_alloc(1 << 16, 1 << 20);
  if (wide == NULL || ((uintptr_t)wide & 0xffff) != 0) return Fail("aligned_alloc of 64 KiB alignment");
  /* The C library's memory of a huge zeroed block: an mmap of its own. */
  char* libc_huge = calloc(80 << 20, 1);
  if (libc_huge == NULL || InHeap(libc_huge)) return Fail("a calloc of 80 MiB came from the heap");

  fflush(stdout);
  int to_parent[2];
  if (pipe(to_parent) != 0) return Fail("pipe");
  const pid_t child = fork();
  if (child < 0) return Fail("fork");
  if (child == 0) {
    char verdict = 'y';
    if (!Filled(block, big, 'A')) verdict = 'a';
    memset(block, 'B', big);
    /* New blocks: from a fresh heap, at another range. */
    for (int i = 0; i < 50; ++i) {
      char* next = malloc((size_t)(i % 5 + 1) << 20);
      if (next == NULL) {
        verdict = 'm';
        break;
      }
      memset(next, i, 4096);
      free(next);
    }
    char* fresh = malloc(big);
    if (fresh == NULL || (heap && !InHeap(fresh))) verdict = 'f';
    free(libc_huge); /* the C library's, wherever the heaps now lie */
    free(block);
    free(fresh);
    if (write(to_parent[1], &verdict, 1) != 1) _exit(3);
    _exit(0);
  }
  char verdict = 0;
  if (read(to_parent[0], &verdict, 1) != 1) return Fail("the child said nothing (it crashed?)");
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Fail("the child did not exit cleanly");
  }
  if (verdict == 'a') return Fail("the child did not see the parent's block as it was at the fork");
  if (verdict == 'm') return Fail("malloc failed in the child");
  if (verdict == 'f') return Fail("the child's new large block is not a heap block");
  if (!Filled(block, big, 'A')) return Fail("the parent saw the child's writes");
  char* after = malloc(big);
  if (after == NULL || (heap && !InHeap(after))) return Fail("the parent's new large block is not a heap block");
  memset(after, 'C', big);
  free(after);
  free(libc_huge);
  free(block);
  free(zeros);
  free(aligned);
  free(wide);
  if (strcmp(small, "small") != 0) return Fail("a small block changed");
  free(small);
  printf("heap malloc check: ok\n");
  return 0;
}
