/* ------------------------------------------------------------------------------------------ */
/* The API the JavaScript side calls through bun:ffi.                                           */

#define SHIM_API __attribute__((visibility("default")))

/* Receives the libc entry points, in SHIM_IMPORT_LIST order. */
SHIM_API void shim_imports(void **table) {
  int i = 0;
#define SHIM_ASSIGN(ret, name, args) x_##name = (ret(*) args)table[i++];
  SHIM_IMPORT_LIST(SHIM_ASSIGN)
#undef SHIM_ASSIGN
}

SHIM_API int shim_import_count(void) {
  int n = 0;
#define SHIM_COUNT(ret, name, args) n++;
  SHIM_IMPORT_LIST(SHIM_COUNT)
#undef SHIM_COUNT
  return n;
}

SHIM_API int shim_init(int out_fd, int in_fd, int contract, int pool_cap, int poll_ms, i64 line_cap, int spin_us) {
  g_out = out_fd;
  g_spin_ns = spin_us >= 0 ? (long)spin_us * 1000L : 100000L;
  g_in = in_fd;
  g_cap = pool_cap > 1 ? pool_cap : 2;
  g_poll_ms = poll_ms > 0 ? poll_ms : 200;
  if (line_cap > 4096) g_line_cap = (size_t)line_cap;
  if (x_pthread_mutex_init(&g_write_mu, NULL) || x_pthread_mutex_init(&g_pool_mu, NULL) ||
      x_pthread_cond_init(&g_pool_cv, NULL) || x_pthread_cond_init(&g_role_cv, NULL) ||
      x_pthread_cond_init(&g_monitor_cv, NULL) || x_pthread_key_create(&g_call_key, NULL) ||
      x_pthread_key_create(&g_role_key, NULL))
    return -1;
  g_table.size = sizeof(cxagent_host);
  g_table.contract = contract;
  g_table.progress = host_progress;
  g_table.log = host_log;
  g_table.stream = host_stream;
  g_table.current_call = host_current_call;
  g_table.register_child = host_register_child;
  g_table.secret = host_secret;
  return 0;
}

/* Receives the plugin's exports: start, invoke, gate, stop, free, poll (or NULL), command (or NULL). */
SHIM_API void shim_set_exports(void **table) {
  plugin.start = (fn_one)table[0];
  plugin.invoke = (fn_two)table[1];
  plugin.gate = (fn_two)table[2];
  plugin.stop = (fn_void)table[3];
  plugin.release = (fn_free)table[4];
  plugin.poll = (fn_void)table[5];
  plugin.command = (fn_two)table[6];
}

SHIM_API const cxagent_host *shim_table(void) { return &g_table; }

/* Writes one protocol line from the JavaScript side (the startup line, phase markers). */
SHIM_API int shim_write(const char *bytes, i64 length) {
  lock(&g_write_mu);
  int rc = write_locked(bytes, (size_t)length);
  unlock(&g_write_mu);
  return rc;
}

/* Starts serving requests on `threads` pool threads, and the monitor. */
SHIM_API int shim_serve(int threads) {
  if (threads < 1) threads = 1;
  if (threads > g_cap) threads = g_cap;
  lock(&g_pool_mu);
  g_threads = threads;
  unlock(&g_pool_mu);
  shim_thread_t t;
  if (x_pthread_create(&t, NULL, monitor_thread, NULL) != 0) return -1;
  x_pthread_detach(t);
  for (int i = 0; i < threads; i++)
    if (!spawn_pool_thread()) return -1;
  return 0;
}

/* The parent-death watcher. A plugin host whose parent died ends its own process group (it leads
 * it: the parent spawns it with setsid), so what the plugin started does not outlive the session
 * waiting for a later reap: SIGTERM to the group (this process ignores it, it has a job to finish),
 * a grace period, then SIGKILL to the group, this process included. It runs on a thread of its own
 * because the JavaScript thread spends its life blocked in native code (dlopen, describe,
 * shim_wait), where no JavaScript signal handler could run. */
static int g_parent_pid, g_orphan_grace_ms, g_guarded;

static void end_own_group(void) {
  int self = x_getpid(), group = x_getpgrp();
  if (group == self && group > 1 && group_has_others(group, self)) {
    x_signal(SHIM_SIGTERM, SHIM_SIG_IGN);
    x_kill(-group, SHIM_SIGTERM);
    for (int waited = 0; waited < g_orphan_grace_ms && group_has_others(group, self); waited += 20) x_poll(NULL, 0, 20);
    x_kill(-group, SHIM_SIGKILL);
  }
  x_kill(self, SHIM_SIGKILL);
}

/* Whether the parent is gone, or on its way out: a process being torn down shows PF_EXITING in
 * its flags (field 9) from the start of its exit, before its descriptors are closed. */
#define SHIM_PF_EXITING 0x4
static int parent_leaving(void) {
  if (x_getppid() != g_parent_pid) return 1;
  char text[1024];
  size_t n = read_stat(g_parent_pid, text, sizeof text), sa, sn, fa, fn;
  if (!n || !stat_field(text, n, 3, &sa, &sn) || !stat_field(text, n, 9, &fa, &fn)) return 1;
  i64 flags = parse_decimal(text + fa, fn);
  return text[sa] == 'Z' || text[sa] == 'X' || (flags > 0 && (flags & SHIM_PF_EXITING) != 0);
}

static void *watch_parent_thread(void *arg) {
  int pidfd = (int)(long)arg;
  while (pidfd >= 0) {
    struct shim_pollfd p = {pidfd, SHIM_POLLIN, 0};
    int r = x_poll(&p, 1, -1);
    if (r > 0) end_own_group(); /* readable: the parent has exited */
    if (r < 0 && err_no() != SHIM_EINTR) break;
  }
  /* No pidfd (Linux before 5.3, or refused): an orphan is adopted by another process. */
  while (x_getppid() == g_parent_pid) x_poll(NULL, 0, 100);
  end_own_group();
  return NULL;
}

/* Starts the watcher for `parent`, which must be this process's parent. Returns 0 once it runs
 * (the caller may then drop PR_SET_PDEATHSIG, which would kill this process before the watcher
 * could end the group); -1 if no thread could be started. A parent already gone ends the group
 * now. */
SHIM_API int shim_guard(int parent, int orphan_grace_ms) {
  g_parent_pid = parent;
  g_orphan_grace_ms = orphan_grace_ms >= 0 ? orphan_grace_ms : 1000;
  int pidfd = parent > 1 ? (int)x_syscall(SHIM_SYS_PIDFD_OPEN, (long)parent, 0L) : -1;
  /* Checked after pidfd_open: a parent still ours now held that pid when the pidfd was made. */
  if (parent <= 1 || x_getppid() != parent) end_own_group();
  shim_thread_t t;
  if (x_pthread_create(&t, NULL, watch_parent_thread, (void *)(long)(pidfd >= 0 ? pidfd : -1)) != 0) {
    if (pidfd >= 0) x_close(pidfd);
    return -1;
  }
  x_pthread_detach(t);
  g_guarded = 1;
  return 0;
}

/* For a plugin host that reads its requests itself (a module plugin's, on the JavaScript thread):
 * when they end, whether that is because the parent is gone or on its way out; then the host
 * ends its group with shim_end_group, which does not return, as shim_wait would. */
SHIM_API int shim_orphaned(void) { return g_guarded && parent_leaving(); }
SHIM_API void shim_end_group(void) { end_own_group(); }

/* Blocks the calling thread until the host should exit; returns the exit code. Requests end when
 * the parent closes them, and when it dies: the host may see that end before the watcher sees the
 * death, and must not exit then and leave its group to nobody. */
SHIM_API int shim_wait(void) {
  lock(&g_pool_mu);
  while (!g_exit_requested) x_pthread_cond_wait(&g_pool_cv, &g_pool_mu);
  int code = g_exit_code;
  unlock(&g_pool_mu);
  if (g_guarded && parent_leaving()) end_own_group();
  return code;
}
