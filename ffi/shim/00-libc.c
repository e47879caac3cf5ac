/*
 * The cxagent shim — the native half of a cxagent plugin host. Its source is the files in
 * ffi/shim/, one per section, joined in name order into one translation unit at build time
 * (scripts/build-native.ts writes ffi/build/cxagent_shim.c; the plugin host joins them itself when
 * it compiles the shim with TinyCC). This first part holds the integer types and the libc imports.
 *
 * One plugin host process serves one plugin. Its JavaScript main thread loads the plugin, checks the
 * handshake and the manifest, and then hands the plugin's exports to this shim, which serves the
 * wire protocol (SPEC §5) on a pool of native threads:
 *
 *   - leader/follower: an idle pool thread reads the next request line from stdin itself and then
 *     serves it, so a request costs no extra thread hop on its way to the plugin;
 *   - every protocol line (replies, events, the startup line) leaves through one mutex-protected
 *     write loop, which keeps long lines whole and puts every event of a call before its reply;
 *   - the host table given to cxagent_plugin_attach is implemented here, callable from any thread;
 *   - a poll thread calls cxagent_plugin_poll on an interval, never concurrently with itself.
 *
 * The shim includes no header at all. libc is reached through a table of function pointers the
 * host fills in at run time (shim_imports), so the same source builds with gcc -nostdlib into a
 * libc-agnostic .so, or with Bun's TinyCC on a machine that has no C headers.
 */

typedef unsigned long size_t;
typedef long ssize_t;
typedef long long i64;
typedef unsigned long long u64;
typedef int i32;
typedef unsigned int u32;
typedef unsigned char u8;
#define NULL ((void *)0)

/* Opaque storage big enough for pthread_mutex_t / pthread_cond_t on glibc, musl and darwin. */
typedef union { char bytes[64]; long long align; } shim_mutex_t;
typedef union { char bytes[64]; long long align; } shim_cond_t;
typedef unsigned long shim_thread_t;
typedef unsigned int shim_key_t;
struct shim_pollfd { int fd; short events; short revents; };
struct shim_timespec { long tv_sec; long tv_nsec; };
/* struct dirent as glibc and musl lay it out on 64-bit Linux. */
struct shim_dirent { u64 d_ino; i64 d_off; unsigned short d_reclen; unsigned char d_type; char d_name[256]; };

#define SHIM_EINTR 4
#define SHIM_EAGAIN 11
#define SHIM_POLLIN 1
#define SHIM_POLLOUT 4
#define SHIM_O_RDONLY 0
#define SHIM_O_WRONLY 1
/* Every file the shim opens is close-on-exec: a plugin thread's fork and exec at that moment must
 * not pass it on. Linux's value; the files it opens are all under /proc. */
#if defined(__APPLE__)
#define SHIM_O_CLOEXEC 0x01000000
#else
#define SHIM_O_CLOEXEC 02000000
#endif
#define SHIM_CLOCK_REALTIME 0
#define SHIM_CLOCK_MONOTONIC 1
#define SHIM_SIGKILL 9
#define SHIM_SIGTERM 15
#define SHIM_SIG_IGN ((void *)1)
#define SHIM_SYS_PIDFD_OPEN 434 /* the same number on every Linux architecture */

/* The libc entry points the shim uses, in the order shim_imports() receives them. */
#define SHIM_IMPORT_LIST(X)                                                          \
  X(void *, malloc, (size_t))                                                        \
  X(void *, realloc, (void *, size_t))                                               \
  X(void, free, (void *))                                                            \
  X(ssize_t, read, (int, void *, size_t))                                            \
  X(ssize_t, write, (int, const void *, size_t))                                     \
  X(int *, __errno_location, (void))                                                 \
  X(int, poll, (struct shim_pollfd *, unsigned long, int))                           \
  X(int, open, (const char *, int, ...))                                             \
  X(int, close, (int))                                                               \
  X(int, pthread_create, (shim_thread_t *, const void *, void *(*)(void *), void *)) \
  X(int, pthread_detach, (shim_thread_t))                                            \
  X(int, pthread_key_create, (shim_key_t *, void (*)(void *)))                       \
  X(void *, pthread_getspecific, (shim_key_t))                                       \
  X(int, pthread_setspecific, (shim_key_t, const void *))                            \
  X(int, pthread_mutex_init, (shim_mutex_t *, const void *))                         \
  X(int, pthread_mutex_lock, (shim_mutex_t *))                                       \
  X(int, pthread_mutex_unlock, (shim_mutex_t *))                                     \
  X(int, pthread_cond_init, (shim_cond_t *, const void *))                           \
  X(int, pthread_cond_wait, (shim_cond_t *, shim_mutex_t *))                         \
  X(int, pthread_cond_broadcast, (shim_cond_t *))                                   \
  X(int, pthread_cond_timedwait, (shim_cond_t *, shim_mutex_t *, const struct shim_timespec *)) \
  X(int, clock_gettime, (int, struct shim_timespec *))                               \
  X(int, getpid, (void))                                                             \
  X(int, getppid, (void))                                                            \
  X(int, getpgrp, (void))                                                            \
  X(int, kill, (int, int))                                                           \
  X(long, syscall, (long, ...))                                                      \
  X(void *, signal, (int, void *))                                                   \
  X(void *, opendir, (const char *))                                                 \
  X(struct shim_dirent *, readdir, (void *))                                         \
  X(int, closedir, (void *))

#define SHIM_DECLARE(ret, name, args) static ret(*x_##name) args;
SHIM_IMPORT_LIST(SHIM_DECLARE)
#undef SHIM_DECLARE
