/*
 * The native sandbox launcher (issue 39): a static, libc-free program that carries out a plan the
 * parent computed in TypeScript (src/sandbox/launch-plan.ts) and execve's the plugin host. It
 * decides nothing: every path, right, port, filter byte and limit is in its argv. It runs on its
 * one thread, with raw system calls, so Landlock and seccomp hold for everything the host starts.
 *
 *   cxagent-sandbox WORD... -- HOST-ARGV...
 *
 * Words, carried out in the order given (src/sandbox/launch-plan.ts writes them in this order):
 *   tmp BASE                         make BASE/sandbox-<pid> (0700, with its parents); ${tmp} below is it, and TMPDIR
 *   cgroup BASE MAX                  make BASE/host-<pid>, pids.max = MAX, move this process in
 *   netns                            unshare(CLONE_NEWNET)
 *   nnp                              prctl(PR_SET_NO_NEW_PRIVS, 1)
 *   landlock FS NET SCOPED FILE      landlock_create_ruleset (FILE: the rights a rule on a non-folder keeps)
 *   path RIGHTS PATH                 a PATH_BENEATH rule (a path that does not exist is skipped)
 *   port RIGHT PORT                  a NET_PORT rule
 *   restrict                         landlock_restrict_self
 *   seccomp HEX                      install this classic BPF program (struct sock_filter[], as hex)
 *   env KEY=VALUE                    set in the host's environment (replacing KEY)
 *   rlimit RESOURCE VALUE NAME       setrlimit (soft = hard = VALUE)
 *
 * A step that fails, or a word it does not know, refuses: one line on stderr,
 * `cxagent-sandbox-refused: {"layer": ..., "why": ...}`, and exit 78. The host never starts less
 * confined than planned.
 */

typedef unsigned long size_t;
typedef unsigned long long u64;
typedef unsigned short u16;
typedef unsigned char u8;

#if defined(__x86_64__)
enum { NR_write = 1, NR_close = 3, NR_getpid = 39, NR_execve = 59, NR_exit_group = 231, NR_openat = 257, NR_mkdirat = 258,
       NR_unshare = 272, NR_prctl = 157, NR_prlimit64 = 302, NR_seccomp = 317 };
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
  long r;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
  return r;
}
#elif defined(__aarch64__)
enum { NR_write = 64, NR_close = 57, NR_getpid = 172, NR_execve = 221, NR_exit_group = 94, NR_openat = 56, NR_mkdirat = 34,
       NR_unshare = 97, NR_prctl = 167, NR_prlimit64 = 261, NR_seccomp = 277 };
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  return x0;
}
#else
#error "the sandbox launcher knows x86_64 and aarch64"
#endif
enum { NR_landlock_create_ruleset = 444, NR_landlock_add_rule = 445, NR_landlock_restrict_self = 446 };

#define SYS(n, a, b, c) sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define AT_FDCWD (-100)
#define O_WRONLY 01
#define O_DIRECTORY 0200000
#define O_CLOEXEC 02000000
#define O_PATH 010000000
#define EEXIST 17
#define ENOTDIR 20
#define PATH_MAX 4096
#define REFUSED_EXIT 78

static size_t len(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}
static int same(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

/* ---- the refusal line: JSON, built in one buffer, written once ---- */
static char line[8192];
static size_t used;
static void put(const char *s) {
  for (; *s && used < sizeof line - 8; s++) line[used++] = *s;
}
static void put_json(const char *s) {
  static const char hex[] = "0123456789abcdef";
  for (; *s && used < sizeof line - 16; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') line[used++] = '\\', line[used++] = (char)c;
    else if (c < 0x20) line[used++] = '\\', line[used++] = 'u', line[used++] = '0', line[used++] = '0', line[used++] = hex[c >> 4], line[used++] = hex[c & 15];
    else line[used++] = (char)c;
  }
}
static void put_num(u64 n) {
  char d[24];
  int i = 0;
  do d[i++] = (char)('0' + n % 10), n /= 10; while (n);
  while (i && used < sizeof line - 8) line[used++] = d[--i];
}
static const char *errno_name(long e) {
  switch (e) {
    case 1: return "EPERM"; case 2: return "ENOENT"; case 7: return "E2BIG"; case 9: return "EBADF"; case 12: return "ENOMEM";
    case 13: return "EACCES"; case 14: return "EFAULT"; case 16: return "EBUSY"; case 17: return "EEXIST"; case 20: return "ENOTDIR";
    case 21: return "EISDIR"; case 22: return "EINVAL"; case 24: return "EMFILE"; case 28: return "ENOSPC"; case 30: return "EROFS";
    case 36: return "ENAMETOOLONG"; case 38: return "ENOSYS"; case 95: return "EOPNOTSUPP"; default: return "errno";
  }
}
/* Refuses naming the layer: `what` (a step), `subject` (a path, or null) and the error (0: none). */
__attribute__((noreturn)) static void refuse(const char *layer, const char *what, const char *subject, long err) {
  used = 0;
  put("cxagent-sandbox-refused: {\"layer\":\"");
  put(layer);
  put("\",\"why\":\"");
  put_json(what);
  if (subject) put(" "), put_json(subject);
  if (err) put(" failed: "), put(errno_name(err)), put(" ("), put_num((u64)err), put(")");
  put("\"}\n");
  SYS(NR_write, 2, line, used);
  SYS(NR_exit_group, REFUSED_EXIT, 0, 0);
  __builtin_unreachable();
}

static u64 number(const char *s, const char *word) {
  u64 n = 0;
  if (!s || !*s) refuse("launcher", "a number is missing after", word, 0);
  for (; *s; s++) {
    if (*s < '0' || *s > '9') refuse("launcher", "not a number after", word, 0);
    n = n * 10 + (u64)(*s - '0');
  }
  return n;
}

/* dst = a + b, or refuse. */
static char *join(char *dst, const char *a, const char *b) {
  size_t la = len(a), lb = len(b);
  if (la + lb + 1 > PATH_MAX) refuse("launcher", "a path is too long:", a, 0);
  for (size_t i = 0; i < la; i++) dst[i] = a[i];
  for (size_t i = 0; i <= lb; i++) dst[la + i] = b[i];
  return dst;
}

/* mkdir -p, each folder made 0700 (`mode`); an existing one is fine. Returns 0 or the error. */
static long make_folders(char *path, long mode) {
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != 0) continue;
    char kept = *p;
    *p = 0;
    long r = SYS(NR_mkdirat, AT_FDCWD, path, mode);
    *p = kept;
    if (r < 0 && r != -EEXIST) return -r;
    if (!kept) return 0;
  }
}

static long write_file(const char *path, const char *text) {
  long fd = SYS(NR_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -fd;
  long r = SYS(NR_write, fd, text, len(text));
  SYS(NR_close, fd, 0, 0);
  return r < 0 ? -r : 0;
}

static char *decimal(char *out, u64 n) {
  char d[24];
  int i = 0, o = 0;
  do d[i++] = (char)('0' + n % 10), n /= 10; while (n);
  while (i) out[o++] = d[--i];
  out[o] = 0;
  return out;
}

static char tmp[PATH_MAX];
static char tmpdir_env[PATH_MAX + 8];
static char scratch[PATH_MAX];
static u8 filter[32768];
static char pid_text[24];

/* `path`, with a leading ${tmp} replaced by the host's ${tmp}. */
static const char *expand(const char *path) {
  const char *p = "${tmp}";
  size_t i = 0;
  while (p[i] && path[i] == p[i]) i++;
  if (p[i] || (path[i] != 0 && path[i] != '/')) return path;
  if (!tmp[0]) refuse("launcher", "${tmp} is named before the tmp word:", path, 0);
  return join(scratch, tmp, path + i);
}

static int hex(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

__attribute__((noreturn)) static void launch(int argc, char **argv, char **envp) {
  long ruleset = -1;
  u64 file_rights = 0;
  int i = 1, extra = 0;
  char **env_words = argv; /* the env words, collected in place: argv[0 .. extra) */
  decimal(pid_text, (u64)SYS(NR_getpid, 0, 0, 0));
  while (i < argc && !same(argv[i], "--")) {
    const char *w = argv[i++];
    const char *a = i < argc ? argv[i] : 0;
#define ARG(n) (i + (n) <= argc ? argv[i + (n) - 1] : (refuse("launcher", "an argument is missing after", w, 0), (char *)0))
    if (same(w, "tmp")) {
      join(tmp, ARG(1), "/sandbox-");
      join(tmp, tmp, pid_text);
      long e = make_folders(tmp, 0700);
      if (e) refuse("landlock", "the host's private folder could not be made:", tmp, e);
      join(tmpdir_env, "TMPDIR=", tmp);
      i += 1;
    } else if (same(w, "cgroup")) {
      char folder[PATH_MAX], file[PATH_MAX], max[24];
      join(folder, ARG(1), "/host-");
      join(folder, folder, pid_text);
      decimal(max, number(ARG(2), w));
      long e = make_folders(folder, 0755);
      if (e) refuse("pids", "the pids cgroup could not be made:", folder, e);
      if ((e = write_file(join(file, folder, "/pids.max"), max))) refuse("pids", "the pids cgroup's limit could not be set:", file, e);
      if ((e = write_file(join(file, folder, "/cgroup.procs"), pid_text))) refuse("pids", "the launcher could not join its pids cgroup:", file, e);
      i += 2;
    } else if (same(w, "netns")) {
      long r = SYS(NR_unshare, 0x40000000 /* CLONE_NEWNET */, 0, 0);
      if (r < 0) refuse("netns", "unshare(CLONE_NEWNET)", 0, -r);
    } else if (same(w, "nnp")) {
      long r = SYS(NR_prctl, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0);
      if (r < 0) refuse("no_new_privs", "prctl(PR_SET_NO_NEW_PRIVS)", 0, -r);
    } else if (same(w, "landlock")) {
      u64 attr[3] = {number(ARG(1), w), number(ARG(2), w), number(ARG(3), w)};
      file_rights = number(ARG(4), w);
      long size = attr[2] ? 24 : attr[1] ? 16 : 8;
      ruleset = SYS(NR_landlock_create_ruleset, attr, size, 0);
      if (ruleset < 0) refuse("landlock", "landlock_create_ruleset", 0, -ruleset);
      i += 4;
    } else if (same(w, "path")) {
      if (ruleset < 0) refuse("launcher", "a path rule comes before the landlock word:", a, 0);
      u64 rights = number(ARG(1), w);
      const char *path = expand(ARG(2));
      /* A folder keeps every right; anything else (a file, a device) only a file's. Missing: skipped. */
      long fd = SYS(NR_openat, AT_FDCWD, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd == -ENOTDIR) {
        fd = SYS(NR_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC);
        rights &= file_rights;
      }
      if (fd >= 0) {
        struct __attribute__((packed)) { u64 allowed; int fd; } beneath = {rights, (int)fd};
        long r = sys6(NR_landlock_add_rule, ruleset, 1 /* PATH_BENEATH */, (long)&beneath, 0, 0, 0);
        SYS(NR_close, fd, 0, 0);
        if (r < 0) refuse("landlock", "landlock_add_rule for", path, -r);
      }
      i += 2;
    } else if (same(w, "port")) {
      if (ruleset < 0) refuse("launcher", "a port rule comes before the landlock word:", a, 0);
      u64 port[2] = {number(ARG(1), w), number(ARG(2), w)};
      long r = sys6(NR_landlock_add_rule, ruleset, 2 /* NET_PORT */, (long)port, 0, 0, 0);
      if (r < 0) refuse("landlock", "landlock_add_rule for TCP port", ARG(2), -r);
      i += 2;
    } else if (same(w, "restrict")) {
      if (ruleset < 0) refuse("launcher", "restrict comes before the landlock word", 0, 0);
      long r = SYS(NR_landlock_restrict_self, ruleset, 0, 0);
      if (r < 0) refuse("landlock", "landlock_restrict_self", 0, -r);
      SYS(NR_close, ruleset, 0, 0);
      ruleset = -1;
    } else if (same(w, "seccomp")) {
      const char *h = ARG(1);
      size_t n = len(h);
      if (n == 0 || n % 16 || n / 2 > sizeof filter) refuse("launcher", "the seccomp program is not whole instructions of 8 bytes", 0, 0);
      for (size_t k = 0; k < n / 2; k++) {
        int hi = hex(h[2 * k]), lo = hex(h[2 * k + 1]);
        if (hi < 0 || lo < 0) refuse("launcher", "the seccomp program is not hexadecimal", 0, 0);
        filter[k] = (u8)(hi << 4 | lo);
      }
      struct { u16 len; u8 *filter; } prog = {(u16)(n / 16), filter};
      long r = SYS(NR_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, &prog);
      if (r < 0) refuse("seccomp", "seccomp(SET_MODE_FILTER)", 0, -r);
      i += 1;
    } else if (same(w, "env")) {
      env_words[extra++] = ARG(1);
      i += 1;
    } else if (same(w, "rlimit")) {
      u64 value = number(ARG(2), w), limit[2] = {value, value};
      long r = sys6(NR_prlimit64, 0, (long)number(ARG(1), w), (long)limit, 0, 0, 0);
      if (r < 0) {
        join(scratch, "setrlimit(RLIMIT_", ARG(3));
        refuse("rlimits", join(scratch, scratch, ")"), 0, -r);
      }
      i += 3;
    } else {
      refuse("launcher", "an unknown word in the plan:", w, 0);
    }
  }
  if (ruleset >= 0) refuse("launcher", "the landlock ruleset was never applied (no restrict word)", 0, 0);
  if (i + 1 >= argc) refuse("launcher", "no host command was given (after --)", 0, 0);
  char **host = argv + i + 1;
  /* The host's environment: this one's, less what the plan sets, then the plan's (TMPDIR first). */
  size_t count = 0;
  while (envp[count]) count++;
  char *env[count + (size_t)extra + 2];
  size_t n = 0;
  if (tmp[0]) env_words[extra++] = tmpdir_env;
  for (size_t k = 0; k < count; k++) {
    int replaced = 0;
    for (int x = 0; x < extra && !replaced; x++) {
      const char *a = envp[k], *b = env_words[x];
      while (*a && *a != '=' && *a == *b) a++, b++;
      replaced = *a == '=' && *b == '=';
    }
    if (!replaced) env[n++] = envp[k];
  }
  for (int x = 0; x < extra; x++) env[n++] = env_words[x];
  env[n] = 0;
  long r = SYS(NR_execve, host[0], host, env);
  refuse("launcher", "execve", host[0], -r);
}

/* The entry point: the kernel's initial stack holds argc, argv[], NULL, envp[]. */
#if defined(__x86_64__)
__asm__(".globl _start\n_start:\n  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n  call start_c\n  hlt\n");
#else
__asm__(".globl _start\n_start:\n  mov x29, #0\n  mov x30, #0\n  mov x0, sp\n  and sp, x0, #-16\n  bl start_c\n");
#endif
__attribute__((used, noreturn)) void start_c(long *stack) {
  int argc = (int)stack[0];
  char **argv = (char **)(stack + 1);
  char **envp = argv + argc + 1;
  launch(argc, argv, envp);
  SYS(NR_exit_group, REFUSED_EXIT, 0, 0);
  __builtin_unreachable();
}
