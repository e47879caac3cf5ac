/*
 * c-limit.c — the C limit: what a process-isolated call costs when nothing but C stands between
 * the caller and the plugin. A C parent forks C children; each talks to its parent over two pipes
 * with the same newline-JSON request line cxagent sends ({"id":…,"kind":"invoke","tool":…,
 * "arguments":…}), calls the same plugin library's invoke and free, and answers {"id":N,…envelope}.
 * The child finds id, tool and arguments by position (no full validation); the parent only looks
 * for the newlines. Replies are gathered per read into one write, requests per read likewise.
 *
 * Usage (scripts/bench builds it with cc at bench time):
 *   c-limit <library> seq <calls> <payload>            one call at a time, per-call latency
 *   c-limit <library> window <calls> <width> <payload> <width> calls in flight at all times
 *   c-limit <library> multi <calls> <children>         <children> children, one call in flight each
 *   c-limit burn                                       a CPU-bound competitor, until killed
 *   c-limit start <ms>                                 a process start at its ideal: computes on
 *                                                      one thread for <ms> ms of CPU, answers the
 *                                                      first line it reads, stays until stdin ends
 * With C_LIMIT_SPIN_US=N in the environment, both sides poll their pipe for up to N µs before each
 * blocking read (where waking a sleeping process is dear, a spinning reader is the faster design).
 * <payload> is "noop", "reply:<bytes>" (tool reply, {"bytes":N}) or "request:<bytes>" (tool take,
 * {"data":"aaa…"} of that many bytes). Prints one JSON line: calls, wall time, latency (seq),
 * and the CPU time of the parent (getrusage) and of the children (/proc/<pid>/schedstat), in µs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef const char *(*invoke_fn)(const char *, const char *);
typedef void (*free_fn)(const char *);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void die(const char *what) {
  fprintf(stderr, "c-limit: %s: %s\n", what, strerror(errno));
  exit(1);
}

static long g_spin_us;

/* Before a blocking read: poll the pipe for up to g_spin_us (0: not at all). */
static void spin_for(int fd) {
  if (g_spin_us <= 0) return;
  double until = now_us() + (double)g_spin_us;
  struct pollfd p = {fd, POLLIN, 0};
  while (poll(&p, 1, 0) == 0 && now_us() < until) {}
}

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("write");
    p += w;
    n -= (size_t)w;
  }
}

/* ---- the child ------------------------------------------------------------------------------ */

static void child(const char *library, int in, int out) {
  void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "c-limit: %s\n", dlerror());
    exit(1);
  }
  invoke_fn invoke = (invoke_fn)dlsym(lib, "cxagent_plugin_invoke");
  free_fn release = (free_fn)dlsym(lib, "cxagent_plugin_free");
  size_t cap = 1 << 20, len = 0, scanned = 0, ocap = 1 << 16;
  char *buf = malloc(cap), *o = malloc(ocap), *tool = malloc(256), *args = malloc(1 << 16);
  size_t acap = 1 << 16;
  for (;;) {
    if (cap - len < 65536) buf = realloc(buf, cap *= 2);
    spin_for(in);
    ssize_t r = read(in, buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) exit(0);
    len += (size_t)r;
    size_t start = 0, on = 0;
    char *nl;
    /* the first search resumes where the last read's search ended */
    while ((nl = memchr(buf + (start > scanned ? start : scanned), '\n', len - (start > scanned ? start : scanned)))) {
      char *line = buf + start;
      size_t n = (size_t)(nl - line);
      long id = strtol(strstr(line, "\"id\":") + 5, NULL, 10);
      char *t = strstr(line, "\"tool\":\"") + 8;
      size_t tn = (size_t)(strchr(t, '"') - t);
      memcpy(tool, t, tn);
      tool[tn] = 0;
      char *a = strstr(t, "\"arguments\":") + 12;
      size_t an = (size_t)(line + n - 1 - a); /* up to the request's closing brace */
      if (an + 1 > acap) args = realloc(args, acap = an + 1);
      memcpy(args, a, an);
      args[an] = 0;
      const char *res = invoke(tool, args);
      size_t rn = strlen(res);
      if (on + rn + 32 > ocap) {
        while (on + rn + 32 > ocap) ocap *= 2;
        o = realloc(o, ocap);
      }
      on += (size_t)sprintf(o + on, "{\"id\":%ld,", id);
      memcpy(o + on, res + 1, rn - 1); /* the envelope without its opening brace */
      on += rn - 1;
      o[on++] = '\n';
      release(res);
      start = n + 1 + (size_t)(line - buf);
    }
    if (on) write_all(out, o, on);
    memmove(buf, buf + start, len - start);
    len -= start;
    scanned = len;
  }
}

/* ---- the parent ----------------------------------------------------------------------------- */

typedef struct {
  pid_t pid;
  int to, from;
} peer;

static peer start_child(const char *library) {
  int down[2], up[2];
  if (pipe(down) || pipe(up)) die("pipe");
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    child(library, down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  return (peer){pid, down[1], up[0]};
}

/* A request line with a fixed-width id, patched in place for every call. */
typedef struct {
  char *text;
  size_t n, id_at;
} request;

static request make_request(const char *payload) {
  const char *tool = "noop";
  char *args;
  if (!strncmp(payload, "reply:", 6)) {
    tool = "reply";
    args = malloc(64);
    snprintf(args, 64, "{\"bytes\":%ld}", atol(payload + 6));
  } else if (!strncmp(payload, "request:", 8)) {
    tool = "take";
    long bytes = atol(payload + 8);
    args = malloc((size_t)bytes + 16);
    strcpy(args, "{\"data\":\"");
    memset(args + 9, 'a', (size_t)bytes);
    strcpy(args + 9 + bytes, "\"}");
  } else {
    args = strdup("{\"i\":1}");
  }
  request r;
  size_t an = strlen(args);
  r.text = malloc(an + 128);
  int head = sprintf(r.text, "{\"id\":%12d,\"kind\":\"invoke\",\"tool\":\"%s\",\"arguments\":", 0, tool);
  r.id_at = 6;
  memcpy(r.text + head, args, an);
  r.n = (size_t)head + an;
  r.text[r.n++] = '}';
  r.text[r.n++] = '\n';
  free(args);
  return r;
}

static void set_id(request *r, long id) {
  char digits[24];
  snprintf(digits, sizeof digits, "%12ld", id % 1000000000000L);
  memcpy(r->text + r->id_at, digits, 12);
}

static double cpu_self_us(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_sec * 1e6 + u.ru_stime.tv_usec;
}

static double cpu_child_us(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  unsigned long long ns = 0;
  if (fscanf(f, "%llu", &ns) != 1) ns = 0;
  fclose(f);
  return ns / 1e3;
}

/* Reads what is there and returns how many replies it completed. */
static char g_rbuf[1 << 20];
static long read_replies(int fd) {
  for (;;) {
    spin_for(fd);
    ssize_t r = read(fd, g_rbuf, sizeof g_rbuf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("read");
    long k = 0;
    for (char *p = g_rbuf, *end = g_rbuf + r; (p = memchr(p, '\n', (size_t)(end - p))); p++) k++;
    return k;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/*
 * The ideal CPU-bound start, for the parallel-load reference: one thread, no waiting, nothing but
 * its own computation. Started 32 at a time on N CPUs, such starts can at best take 1/N as long as
 * one after another.
 */
static int ideal_start(double ms) {
  volatile unsigned long spin = 0;
  while (cpu_ms() < ms)
    for (int i = 0; i < 1000; i++) spin++;
  char buf[256];
  if (read(0, buf, sizeof buf) > 0 && write(1, "{\"ready\":true}\n", 15) != 15) return 1;
  while (read(0, buf, sizeof buf) > 0) {
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "burn")) {
    volatile unsigned long spin = 0;
    for (;;) spin++;
  }
  if (argc >= 3 && !strcmp(argv[1], "start")) return ideal_start(atof(argv[2]));
  if (argc < 4) {
    fprintf(stderr, "usage: c-limit <library> seq|window|multi <calls> ...\n");
    return 2;
  }
  const char *library = argv[1], *mode = argv[2];
  g_spin_us = getenv("C_LIMIT_SPIN_US") ? atol(getenv("C_LIMIT_SPIN_US")) : 0;
  long calls = atol(argv[3]);
  signal(SIGPIPE, SIG_IGN);

  if (!strcmp(mode, "multi")) {
    int n = argc > 4 ? atoi(argv[4]) : 1;
    peer *kids = calloc((size_t)n, sizeof *kids);
    struct pollfd *fds = calloc((size_t)n, sizeof *fds);
    request r = make_request("noop");
    for (int i = 0; i < n; i++) kids[i] = start_child(library), fds[i] = (struct pollfd){kids[i].from, POLLIN, 0};
    long id = 0;
    /* warm-up: 100 calls each */
    for (int w = 0; w < 100; w++)
      for (int i = 0; i < n; i++) {
        set_id(&r, ++id);
        write_all(kids[i].to, r.text, r.n);
        while (read_replies(kids[i].from) == 0) {}
      }
    double child0 = 0;
    for (int i = 0; i < n; i++) child0 += cpu_child_us(kids[i].pid);
    double cpu0 = cpu_self_us(), t0 = now_us();
    long sent = 0, done = 0;
    for (int i = 0; i < n; i++) set_id(&r, ++id), write_all(kids[i].to, r.text, r.n), sent++;
    while (done < calls) {
      if (poll(fds, (nfds_t)n, -1) < 0 && errno != EINTR) die("poll");
      for (int i = 0; i < n; i++) {
        if (!(fds[i].revents & POLLIN)) continue;
        long k = read_replies(kids[i].from);
        done += k;
        if (k && sent < calls + n) set_id(&r, ++id), write_all(kids[i].to, r.text, r.n), sent++;
      }
    }
    double wall = now_us() - t0, cpu = cpu_self_us() - cpu0, child1 = 0;
    for (int i = 0; i < n; i++) child1 += cpu_child_us(kids[i].pid);
    printf("{\"calls\":%ld,\"wall_us\":%.1f,\"parent_cpu_us\":%.1f,\"child_cpu_us\":%.1f}\n", done, wall, cpu, child1 - child0);
    for (int i = 0; i < n; i++) close(kids[i].to);
    for (int i = 0; i < n; i++) waitpid(kids[i].pid, NULL, 0);
    return 0;
  }

  int width = 1;
  const char *payload = argc > 4 ? argv[4] : "noop";
  if (!strcmp(mode, "window")) {
    width = argc > 4 ? atoi(argv[4]) : 16;
    payload = argc > 5 ? argv[5] : "noop";
  } else if (strcmp(mode, "seq")) {
    fprintf(stderr, "c-limit: unknown mode %s\n", mode);
    return 2;
  }
  request r = make_request(payload);
  peer kid = start_child(library);
  long id = 0;
  long warm = r.n > 65536 ? 3 : 200;
  for (long w = 0; w < warm; w++) {
    set_id(&r, ++id);
    write_all(kid.to, r.text, r.n);
    long got = 0;
    while (!got) got = read_replies(kid.from);
  }
  double child0 = cpu_child_us(kid.pid), cpu0 = cpu_self_us(), t0 = now_us();
  double *lat = width == 1 ? malloc(sizeof(double) * (size_t)calls) : NULL;
  if (width == 1) {
    for (long i = 0; i < calls; i++) {
      double t = now_us();
      set_id(&r, ++id);
      write_all(kid.to, r.text, r.n);
      long got = 0;
      while (!got) got = read_replies(kid.from);
      lat[i] = now_us() - t;
    }
  } else {
    /* Requests for the replies one read completed go out together, in one write. */
    size_t bcap = r.n * (size_t)width, bn = 0;
    char *batch = malloc(bcap);
    long sent = 0, done = 0;
    for (; sent < width && sent < calls; sent++) set_id(&r, ++id), memcpy(batch + bn, r.text, r.n), bn += r.n;
    write_all(kid.to, batch, bn);
    while (done < calls) {
      long k = read_replies(kid.from);
      done += k;
      bn = 0;
      for (long j = 0; j < k && sent < calls; j++, sent++) set_id(&r, ++id), memcpy(batch + bn, r.text, r.n), bn += r.n;
      if (bn) write_all(kid.to, batch, bn);
    }
  }
  double wall = now_us() - t0, cpu = cpu_self_us() - cpu0, child = cpu_child_us(kid.pid) - child0;
  printf("{\"calls\":%ld,\"wall_us\":%.1f,\"parent_cpu_us\":%.1f,\"child_cpu_us\":%.1f", calls, wall, cpu, child);
  if (lat) {
    double sum = 0;
    for (long i = 0; i < calls; i++) sum += lat[i];
    qsort(lat, (size_t)calls, sizeof *lat, cmp_double);
    long p99 = (long)(0.99 * calls);
    if (p99 >= calls) p99 = calls - 1;
    printf(",\"mean_us\":%.2f,\"median_us\":%.2f,\"p99_us\":%.2f", sum / calls, lat[calls / 2], lat[p99]);
  }
  printf("}\n");
  close(kid.to);
  waitpid(kid.pid, NULL, 0);
  return 0;
}
