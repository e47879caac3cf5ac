/* ------------------------------------------------------------------------------------------ */
/* Serving requests.                                                                           */
/*                                                                                             */
/* One pool thread at a time holds the reader role: it reads the next request and serves it    */
/* itself, then the next, the way a single-threaded server would — no hand-off between threads */
/* for a call, and a reply per call, on the thread that made it. A monitor thread watches the   */
/* role holder: when one call has run for longer than the hand-off time (1 ms), the role passes  */
/* to another thread (a new one, if none is free), so a slow or stuck call delays the others by */
/* that long at most, and many slow calls run side by side. The pool grows up to its cap.      */

static u8 *g_in_buf; /* touched only by the role holder */
static size_t g_in_len, g_in_off, g_in_scanned, g_in_cap;
static int g_in_discarding;

/* Under g_pool_mu: */
/* g_role_cv: idle threads wait here for the role; g_monitor_cv: the monitor waits for a call. */
static int g_role_taken, g_in_eof;
static i64 g_role_owner, g_next_thread_id;
static i64 g_busy_since; /* when the role holder's current call began (monotonic ns); 0: none */
static i64 g_busy_epoch; /* counts calls begun by role holders */
static i64 g_handoff_ns = 1000000;
static int g_monitor_idle; /* the monitor waits with no deadline: a new call must wake it */
static i64 g_last_call_at;  /* when the latest call began (monotonic ns); 0: none yet */

static shim_key_t g_role_key; /* a pool thread's id, for "is this thread the role holder?" */
static int g_more_buffered;  /* the role holder has another complete request already read */

/* A reply may wait for its neighbours only on the role holder, and only while more requests are
 * already read: serving them, or handing the role on, sends it soon after. Called under
 * g_write_mu (g_write_mu, then g_pool_mu: the one place the two locks nest). */
static int defer_this_reply(void) {
  i64 me = (i64)(unsigned long)x_pthread_getspecific(g_role_key);
  lock(&g_pool_mu);
  int defer = me && g_role_owner == me && g_more_buffered;
  unlock(&g_pool_mu);
  return defer;
}

static i64 mono_ns(void) {
  struct shim_timespec t;
  x_clock_gettime(SHIM_CLOCK_MONOTONIC, &t);
  return (i64)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The spin before a blocking read. Waking a sleeping thread costs the writer a wake-up, which on
 * some machines (deep idle states, some hypervisors) is worth tens of microseconds, so a request
 * that follows closely could be served sooner if it found the reading thread awake. But a
 * spinning thread holds a CPU: where the CPUs are all busy (2 vCPUs with the parent running, other
 * plugin hosts, a build) it delays the very parent it waits for (measured with a fixed 100 µs
 * spin: a sequential call 1.7x slower, 32 busy plugins 0.46x the throughput), and where wake-ups
 * are cheap it gains nothing. So a wait spins only when all of these hold:
 *   - the waits are short: at least 6 of the last 8 ended within the spin window;
 *   - no task waits for a CPU: the runnable tasks (/proc/loadavg, this thread included) are no
 *     more than the online CPUs (/sys/devices/system/cpu/online), looked at most every 50 ms.
 *     Not "fewer": a sequential caller is itself runnable while it handles the reply, so on 2
 *     vCPUs "fewer" turned the spin off exactly when it pays (a sequential call's mean 114 µs
 *     against 48 µs with "no more", same run; contended and 32 busy plugins unchanged);
 *   - it pays, as measured here: the average short wait while spinning is at least 10 % shorter
 *     than while blocked in read (which includes this thread's wake-up). One eligible wait in 128
 *     takes the other way, to keep both averages current.
 * All of it belongs to the role holder, like the input buffer. */
static u32 g_wait_history; /* one bit per wait, newest lowest: 1 = it ended within the window */
static i64 g_wait_began;   /* when the current wait for input began (monotonic ns); 0: none */
static int g_wait_spun;    /* the current wait spun */
static i64 g_wait_ns[2];   /* average short wait, blocked [0] and spinning [1]; 0: not measured */
static u32 g_eligible;     /* eligible waits so far */
static i64 g_cpu_checked;  /* when the CPUs were last looked at; 0: never */
static int g_cpu_free, g_cpus;

/* Reads a small file into `text` (NUL-terminated); returns its length, or -1. */
static int read_small_file(const char *path, char *text, int cap) {
  int fd = x_open(path, SHIM_O_RDONLY | SHIM_O_CLOEXEC);
  if (fd < 0) return -1;
  int n = 0;
  for (;;) {
    ssize_t r = x_read(fd, text + n, (size_t)(cap - 1 - n));
    if (r < 0 && err_no() == SHIM_EINTR) continue;
    if (r <= 0) break;
    n += (int)r;
    if (n >= cap - 1) break;
  }
  x_close(fd);
  text[n] = 0;
  return n;
}

/* The number of CPUs in a list like "0-3,5,7-9", or 0 when it cannot be read. */
static int online_cpus(void) {
  char t[256];
  if (read_small_file("/sys/devices/system/cpu/online", t, sizeof t) <= 0) return 0;
  int count = 0, i = 0;
  while (t[i] >= '0' && t[i] <= '9') {
    int a = 0, b;
    while (t[i] >= '0' && t[i] <= '9') a = a * 10 + (t[i++] - '0');
    b = a;
    if (t[i] == '-') {
      i++;
      b = 0;
      while (t[i] >= '0' && t[i] <= '9') b = b * 10 + (t[i++] - '0');
    }
    if (b >= a) count += b - a + 1;
    if (t[i] == ',') i++;
  }
  return count;
}

/* Runnable tasks on the whole machine: the number before '/' in /proc/loadavg's fourth field. */
static int runnable_tasks(void) {
  char t[128];
  if (read_small_file("/proc/loadavg", t, sizeof t) <= 0) return -1;
  int i = 0, field = 0;
  while (t[i] && field < 3) field += t[i++] == ' ';
  int n = 0, digits = 0;
  while (t[i] >= '0' && t[i] <= '9') n = n * 10 + (t[i++] - '0'), digits++;
  return digits && t[i] == '/' ? n : -1;
}

static int cpu_free(i64 now) {
  if (g_cpu_checked && now - g_cpu_checked < 50000000LL) return g_cpu_free;
  g_cpu_checked = now;
  if (!g_cpus) g_cpus = online_cpus();
  int running = runnable_tasks();
  g_cpu_free = g_cpus > 0 && running > 0 && running <= g_cpus;
  return g_cpu_free;
}

static int waits_are_short(void) {
  int ended_soon = 0;
  for (int k = 0; k < 8; k++) ended_soon += (g_wait_history >> k) & 1;
  return ended_soon >= 6;
}

/* Spinning measured at least 10 % faster than blocking; every 128th eligible wait, the opposite. */
static int spin_pays(void) {
  int pays = g_wait_ns[0] > 0 && g_wait_ns[1] > 0 && g_wait_ns[1] * 10 < g_wait_ns[0] * 9;
  return (++g_eligible & 127) == 0 ? !pays : pays;
}

/* No complete request is buffered: a wait for input begins (or goes on). */
static void input_wait_begins(void) {
  if (g_spin_ns > 0 && !g_wait_began) g_wait_began = mono_ns();
}

/* Input arrived: the wait ended. Remember whether it was short, and how long it took this way. */
static void input_arrived(void) {
  if (!g_wait_began) return;
  i64 waited = mono_ns() - g_wait_began;
  int short_wait = waited <= g_spin_ns;
  g_wait_history = (g_wait_history << 1) | (short_wait ? 1u : 0u);
  if (short_wait) {
    i64 *avg = &g_wait_ns[g_wait_spun];
    *avg = *avg ? *avg + (waited - *avg) / 8 : waited;
  }
  g_wait_began = 0;
  g_wait_spun = 0;
}

/* Spins (polling stdin) for at most the window, when the waits are short, a CPU is free for it
 * and spinning pays. */
static void spin_for_input(void) {
  if (g_spin_ns <= 0 || g_wait_spun || !waits_are_short()) return;
  i64 t = mono_ns();
  if (!cpu_free(t) || !spin_pays()) return;
  g_wait_spun = 1;
  i64 until = t + g_spin_ns;
  for (;;) {
    struct shim_pollfd pf = {g_in, SHIM_POLLIN, 0};
    if (x_poll(&pf, 1, 0) > 0 || mono_ns() > until) return;
  }
}

/* Returns a malloc'd NUL-terminated line (without '\n'), or NULL at end of input. Only the role
 * holder calls this, so the buffer needs no lock. */
static char *next_line(size_t *out_len) {
  for (;;) {
    size_t i = g_in_scanned > g_in_off ? g_in_scanned : g_in_off;
    i += find_byte(g_in_buf + i, g_in_len - i, '\n');
    if (i < g_in_len) {
      size_t n = i - g_in_off;
      const u8 *start = g_in_buf + g_in_off;
      g_in_off = i + 1;
      g_in_scanned = g_in_off;
      if (g_in_discarding) {
        g_in_discarding = 0;
        bad_request("a request line longer than the line cap", "", 0);
        continue;
      }
      char *line = (char *)x_malloc(n + 1);
      if (!line) {
        bad_request("out of memory", "", 0);
        continue;
      }
      mem_copy(line, start, n);
      line[n] = 0;
      *out_len = n;
      /* Look ahead: is another whole request already here? (Remembered, so not scanned twice.) */
      size_t j = g_in_off;
      j += find_byte(g_in_buf + j, g_in_len - j, '\n');
      g_in_scanned = j;
      lock(&g_pool_mu);
      g_more_buffered = j < g_in_len;
      unlock(&g_pool_mu);
      return line;
    }
    g_in_scanned = g_in_len;
    flush_held(); /* nothing more to serve for now: what was held back goes out */
    /* Compact, and drop a line that has outgrown the cap (answered once its end arrives). */
    if (g_in_off > 0) {
      size_t rest = g_in_len - g_in_off;
      mem_copy(g_in_buf, g_in_buf + g_in_off, rest); /* forward, into a lower address: safe */
      g_in_len = rest;
      g_in_scanned -= g_in_off;
      g_in_off = 0;
    }
    if (g_in_len > g_line_cap) {
      g_in_discarding = 1;
      g_in_len = g_in_scanned = 0;
    }
    if (g_in_cap - g_in_len < 65536) {
      size_t cap = g_in_cap ? g_in_cap * 2 : 262144;
      u8 *p = (u8 *)x_realloc(g_in_buf, cap);
      if (!p) {
        g_in_discarding = 1;
        g_in_len = g_in_scanned = 0;
        continue;
      }
      g_in_buf = p;
      g_in_cap = cap;
    }
    input_wait_begins();
    spin_for_input(); /* before sleeping in read: see the spin above */
    ssize_t r = x_read(g_in, g_in_buf + g_in_len, g_in_cap - g_in_len);
    if (r > 0) {
      input_arrived();
      g_in_len += (size_t)r;
      continue;
    }
    int e = r < 0 ? err_no() : 0;
    if (e == SHIM_EINTR) continue;
    if (e == SHIM_EAGAIN) {
      struct shim_pollfd pf = {g_in, SHIM_POLLIN, 0};
      x_poll(&pf, 1, -1);
      continue;
    }
    flush_held();
    return NULL; /* the parent closed our stdin, or died */
  }
}

/* Names the calling thread (/proc/<pid>/task/<tid>/comm, what top -H shows); best effort. */
static void name_this_thread(const char *name) {
  int fd = x_open("/proc/thread-self/comm", SHIM_O_WRONLY | SHIM_O_CLOEXEC);
  if (fd < 0) return;
  (void)x_write(fd, name, str_len(name));
  x_close(fd);
}

static void *pool_thread(void *unused);

/* Starts a pool thread; the caller has counted it in g_threads. */
static int spawn_pool_thread(void) {
  shim_thread_t t;
  if (x_pthread_create(&t, NULL, pool_thread, NULL) != 0) return 0;
  x_pthread_detach(t);
  return 1;
}

static void *pool_thread(void *unused) {
  (void)unused;
  name_this_thread("cxagent-pool");
  lock(&g_pool_mu);
  i64 me = ++g_next_thread_id;
  x_pthread_setspecific(g_role_key, (void *)(unsigned long)me);
  for (;;) {
    g_idle++;
    while (g_role_taken && !g_in_eof && !g_exit_requested) x_pthread_cond_wait(&g_role_cv, &g_pool_mu);
    g_idle--;
    if (g_in_eof || g_exit_requested) break;
    g_role_taken = 1;
    g_role_owner = me;
    unlock(&g_pool_mu);
    for (;;) {
      size_t n = 0;
      char *line = next_line(&n);
      lock(&g_pool_mu);
      if (!line) {
        g_in_eof = 1;
        g_role_taken = 0;
        x_pthread_cond_broadcast(&g_role_cv);
        goto done;
      }
      g_busy_since = g_last_call_at = mono_ns();
      g_busy_epoch++;
      if (g_monitor_idle) x_pthread_cond_broadcast(&g_monitor_cv); /* else it looks at its deadline */
      unlock(&g_pool_mu);
      handle(line, n);
      x_free(line);
      lock(&g_pool_mu);
      if (g_role_owner != me) break; /* the monitor passed the role on: wait to get it back */
      g_busy_since = 0;
      unlock(&g_pool_mu);
    }
  }
done:
  g_threads--;
  unlock(&g_pool_mu);
  request_exit(0);
  return NULL;
}

static void wait_until_ns(shim_cond_t *cv, i64 mono_deadline) {
  struct shim_timespec real;
  x_clock_gettime(SHIM_CLOCK_REALTIME, &real);
  i64 left = mono_deadline - mono_ns();
  if (left < 0) left = 0;
  i64 at = (i64)real.tv_sec * 1000000000LL + real.tv_nsec + left;
  struct shim_timespec abs = {(long)(at / 1000000000LL), (long)(at % 1000000000LL)};
  x_pthread_cond_timedwait(cv, &g_pool_mu, &abs);
}

/* While calls come often, the monitor looks every hand-off time instead of sleeping until a call
 * wakes it: that wake-up, one per call that found it asleep, goes to the other CPU and takes it
 * from a spinning side. Back-to-back noop calls on the 2-vCPU VM (rounds of 20,000, as built):
 * the monitor woke 4,034 times in a round before, 476 after (about once per ms of calls); the
 * mean per call in 6 paired rounds went from 23.2-30.2 µs (median 26.7) to 20.3-31.3 µs (24.9),
 * lower in 5 of the 6 pairs. Ten ms after the latest call began it sleeps until the next one
 * wakes it, so idle hosts still use no CPU. */
#define MONITOR_LINGER_NS 10000000LL

/* Watches the role holder's call; past the hand-off time, passes the role to another thread. */
static void *monitor_thread(void *unused) {
  (void)unused;
  name_this_thread("cxagent-monitor");
  lock(&g_pool_mu);
  while (!g_exit_requested && !g_in_eof) {
    if (!g_busy_since) {
      i64 now = mono_ns();
      if (g_last_call_at && now - g_last_call_at < MONITOR_LINGER_NS) {
        wait_until_ns(&g_monitor_cv, now + g_handoff_ns); /* a call may begin meanwhile: look again */
        continue;
      }
      g_monitor_idle = 1;
      x_pthread_cond_wait(&g_monitor_cv, &g_pool_mu);
      g_monitor_idle = 0;
      continue;
    }
    i64 epoch = g_busy_epoch, deadline = g_busy_since + g_handoff_ns;
    if (mono_ns() < deadline) {
      wait_until_ns(&g_monitor_cv, deadline);
      continue;
    }
    if (g_busy_epoch != epoch || !g_busy_since) continue;
    /* The same call is still running: hand the role on. */
    g_role_taken = 0;
    g_role_owner = 0;
    g_busy_since = 0;
    g_more_buffered = 0;
    int grow = g_idle == 0 && g_threads < g_cap;
    if (grow) g_threads++;
    int threads = g_threads;
    x_pthread_cond_broadcast(&g_role_cv);
    unlock(&g_pool_mu);
    flush_held(); /* replies held back behind the slow call go out now */
    if (grow && !spawn_pool_thread()) {
      lock(&g_pool_mu);
      g_threads--;
      unlock(&g_pool_mu);
    } else if (grow && threads > 2) {
      /* One thread above the parent's limit stays free to read a stop request. */
      buf m = {0};
      if (threads == g_cap) {
        buf_str(&m, "the worker pool reached its cap: ");
        buf_i64(&m, threads - 1);
        buf_str(&m, " calls are running at once; more wait until one finishes");
      } else {
        buf_str(&m, "the worker pool grew to ");
        buf_i64(&m, threads);
        buf_str(&m, " threads: calls are running longer than 1 ms side by side");
      }
      emit(EV_LOG, "0", threads == g_cap ? 3 : 1, m.p ? m.p : "");
      buf_free(&m);
    }
    lock(&g_pool_mu);
  }
  unlock(&g_pool_mu);
  return NULL;
}
