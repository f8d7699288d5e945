/*
 * wasm-dirty: which pages of a WebAssembly memory were written since they were last marked clean,
 * from the kernel (Linux >= 6.7: userfaultfd write-protection in asynchronous mode + the
 * PAGEMAP_SCAN ioctl of /proc/self/pagemap, the mechanism CRIU uses to track dirty memory).
 *
 * Why: the Python sandbox restores its interpreter's memory snapshot after every run
 * (src/sandbox/python-worker.ts). Copying all of it (~25 MB) was most of a short run's cost; a
 * short run writes ~250 of its ~6,400 pages. With this module the host copies back only the pages
 * the kernel saw written.
 *
 * How: the memory's pages are registered with a userfaultfd in write-protect mode with
 * UFFD_FEATURE_WP_ASYNC: a write to a protected page is resolved by the kernel itself (no handler
 * thread, ~0.7 us per first write to a page) and leaves the page marked written. PAGEMAP_SCAN lists
 * the written pages and, with PM_SCAN_WP_MATCHING, protects them again. Write protection with
 * UFFD_FEATURE_WP_UNPOPULATED covers pages never touched yet too, so a first write anywhere in the
 * range is seen. The kernel reports a superset of what was written (never less): correctness of
 * the restore rests on that.
 *
 * One memory per process (the Python host has one interpreter). Nothing here is given to the
 * guest: the host's JavaScript calls it between runs.
 *
 * JavaScript API (all take the memory's current ArrayBuffer, whose address is checked: a memory
 * that moved is reported, never scanned at the old address):
 *   track(buffer) -> 0 | negative errno      register [0, byteLength) and protect it all
 *   extend(buffer) -> 0 | negative errno     register the part grown since (and protect it)
 *   written(buffer, out: Float64Array) -> n  write n [start, end) byte offset pairs of written pages
 *                                            into out; -1 if they did not fit (restore everything)
 *   clean(buffer) -> 0 | negative errno      protect every written page again
 * A negative result other than -1 from written() means the tracking is unusable (the caller
 * restores everything and stops using it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

/* Newer than some distributions' kernel headers: the values are the kernel's ABI. */
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define FEATURE_WP_UNPOPULATED (1 << 13)
#define FEATURE_WP_ASYNC (1 << 15)
struct page_region_abi {
  uint64_t start, end, categories;
};
struct pm_scan_arg_abi {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGE_IS_WRITTEN (1 << 1)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg_abi)

#define MAX_REGIONS 4096

static int uffd = -1;
static int pagemap = -1;
static uintptr_t base = 0;
static size_t tracked = 0;
static struct page_region_abi regions[MAX_REGIONS];

static int buffer_of(napi_env env, napi_value value, uintptr_t *data, size_t *length) {
  void *ptr = NULL;
  size_t len = 0;
  if (napi_get_arraybuffer_info(env, value, &ptr, &len) != napi_ok) return -EINVAL;
  *data = (uintptr_t)ptr;
  *length = len;
  return 0;
}

static napi_value number(napi_env env, double n) {
  napi_value v;
  napi_create_double(env, n, &v);
  return v;
}

/* PAGEMAP_SCAN over [from, to): written pages into `vec` (if given), protecting them if `protect`. */
static long scan(uintptr_t from, uintptr_t to, struct page_region_abi *vec, size_t vec_len, int protect) {
  struct pm_scan_arg_abi arg;
  memset(&arg, 0, sizeof arg);
  arg.size = sizeof arg;
  arg.flags = PM_SCAN_CHECK_WPASYNC | (protect ? PM_SCAN_WP_MATCHING : 0);
  arg.start = from;
  arg.end = to;
  arg.vec = (uint64_t)(uintptr_t)vec;
  arg.vec_len = vec_len;
  arg.category_mask = PAGE_IS_WRITTEN;
  arg.return_mask = PAGE_IS_WRITTEN;
  long n = ioctl(pagemap, PAGEMAP_SCAN, &arg);
  if (n < 0) return -errno;
  /* Stopped early: more regions than fit. */
  if (vec && arg.walk_end < arg.end) return -ENOSPC;
  return n;
}

static int register_range(uintptr_t start, size_t length) {
  struct uffdio_register reg;
  memset(&reg, 0, sizeof reg);
  reg.range.start = start;
  reg.range.len = length;
  reg.mode = UFFDIO_REGISTER_MODE_WP;
  if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) return -errno;
  return 0;
}

static long page_size(void) {
  return sysconf(_SC_PAGESIZE);
}

static napi_value track(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uintptr_t data;
  size_t length;
  int err = argc < 1 ? -EINVAL : buffer_of(env, argv[0], &data, &length);
  if (err) return number(env, err);
  if (uffd >= 0) return number(env, -EALREADY);
  if (data % page_size() != 0 || length % page_size() != 0 || length == 0) return number(env, -EINVAL);
  uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
  if (uffd < 0) return number(env, -errno);
  struct uffdio_api api;
  memset(&api, 0, sizeof api);
  api.api = UFFD_API;
  api.features = FEATURE_WP_ASYNC | FEATURE_WP_UNPOPULATED;
  if (ioctl(uffd, UFFDIO_API, &api) != 0) {
    err = -errno;
    goto fail;
  }
  pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) {
    err = -errno;
    goto fail;
  }
  err = register_range(data, length);
  if (err) goto fail;
  base = data;
  tracked = length;
  long n = scan(base, base + tracked, NULL, 0, 1);
  if (n < 0) {
    err = (int)n;
    goto fail;
  }
  return number(env, 0);
fail:
  if (pagemap >= 0) close(pagemap);
  if (uffd >= 0) close(uffd);
  pagemap = uffd = -1;
  base = 0;
  tracked = 0;
  return number(env, err);
}

/* The memory this module tracks, still at the same address; its current length. */
static int same_memory(napi_env env, napi_value value, size_t *length) {
  uintptr_t data;
  int err = buffer_of(env, value, &data, length);
  if (err) return err;
  if (uffd < 0) return -EBADF;
  if (data != base || *length < tracked) return -EFAULT;
  return 0;
}

/* A call's `want` arguments, the first of which is the tracked memory's buffer (its length into `length`). */
static int memory_call(napi_env env, napi_callback_info info, size_t want, napi_value *argv, size_t *length) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) return -EINVAL;
  return same_memory(env, argv[0], length);
}

static napi_value extend(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  size_t length;
  int err = memory_call(env, info, 1, argv, &length);
  if (err) return number(env, err);
  if (length == tracked) return number(env, 0);
  if (length % page_size() != 0) return number(env, -EINVAL);
  err = register_range(base + tracked, length - tracked);
  if (err) return number(env, err);
  /* Only the new part: the pages the run wrote below it must stay marked written until the restore. */
  long n = scan(base + tracked, base + length, NULL, 0, 1);
  tracked = length;
  return number(env, n < 0 ? (double)n : 0);
}

static napi_value written(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  size_t length;
  int err = memory_call(env, info, 2, argv, &length);
  if (err) return number(env, err);
  napi_typedarray_type type;
  size_t count;
  void *out;
  if (napi_get_typedarray_info(env, argv[1], &type, &count, &out, NULL, NULL) != napi_ok || type != napi_float64_array) return number(env, -EINVAL);
  size_t room = count / 2 < MAX_REGIONS ? count / 2 : MAX_REGIONS;
  long n = scan(base, base + tracked, regions, room, 0);
  if (n == -ENOSPC) return number(env, -1);
  if (n < 0) return number(env, (double)n);
  double *pairs = (double *)out;
  for (long i = 0; i < n; i++) {
    pairs[2 * i] = (double)(regions[i].start - base);
    pairs[2 * i + 1] = (double)(regions[i].end - base);
  }
  return number(env, (double)n);
}

static napi_value clean(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  size_t length;
  int err = memory_call(env, info, 1, argv, &length);
  if (err) return number(env, err);
  long n = scan(base, base + tracked, NULL, 0, 1);
  return number(env, n < 0 ? (double)n : 0);
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"track", NULL, track, NULL, NULL, NULL, napi_enumerable, NULL},
      {"extend", NULL, extend, NULL, NULL, NULL, napi_enumerable, NULL},
      {"written", NULL, written, NULL, NULL, NULL, napi_enumerable, NULL},
      {"clean", NULL, clean, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
