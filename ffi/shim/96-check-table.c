/* ------------------------------------------------------------------------------------------ */
/* Check mode, continued: the host table, watched (see 95-check.c).                             */
/*                                                                                             */
/* The table handed to attach in check mode calls the ordinary host functions, after noting    */
/* each misuse: a report that names no running call (outside invoke and command, or for a call */
/* that has returned), a percent or level out of range, a call id current_call() never gave,   */
/* or any call after stop returned. Each is an event naming the function, the misuse and the   */
/* export the thread was in ("what":"host-table"), the first three of each kind only.          */

enum { CKF_PROGRESS, CKF_LOG, CKF_STREAM, CKF_CURRENT_CALL, CKF_REGISTER_CHILD };
static const char *const ck_function_names[] = {"progress", "log", "stream", "current_call", "register_child"};
enum { CKM_OUTSIDE_CALL, CKM_AFTER_RETURN, CKM_AFTER_STOP, CKM_RANGE, CKM_BAD_ID };
static const char *const ck_misuse_names[] = {"outside-call", "after-return", "after-stop", "out-of-range", "bad-call-id"};
static cxagent_host ck_table;

static void ck_misuse(int function, int misuse) {
  lock(&ck_mu);
  int seen = ck_misuse_seen[function][misuse]++;
  unlock(&ck_mu);
  if (seen >= 3) return; /* a plugin thread that reports in a loop says the same thing each time */
  unsigned long in = (unsigned long)x_pthread_getspecific(ck_in_key);
  buf line = {0};
  buf_str(&line, "{\"event\":\"check\",\"what\":\"host-table\",\"function\":\"");
  buf_str(&line, ck_function_names[function]);
  buf_str(&line, "\",\"misuse\":\"");
  buf_str(&line, ck_misuse_names[misuse]);
  buf_str(&line, "\",\"from\":\"");
  buf_str(&line, in ? ck_export_names[in - 1] : "thread");
  buf_str(&line, "\"}\n");
  write_line(&line);
  buf_free(&line);
}

static int ck_after_stop(int function) {
  lock(&ck_mu);
  int stopped = ck_stopped;
  unlock(&ck_mu);
  if (stopped) ck_misuse(function, CKM_AFTER_STOP);
  return stopped;
}

/* Whether a report for `call_id` has a call to go to; the misuse when it has not. `log` may name
 * no call at all: that goes to the plugin's own log. */
static void ck_watch_call(int function, const char *call_id) {
  if (ck_after_stop(function)) return;
  if (call_id == NULL) {
    if (!x_pthread_getspecific(g_call_key) && function != CKF_LOG) ck_misuse(function, CKM_OUTSIDE_CALL);
    return;
  }
  i64 id = parse_call_id(call_id);
  if (id <= 0) {
    ck_misuse(function, CKM_BAD_ID);
    return;
  }
  lock(&g_write_mu);
  int active = find_active(id) != NULL;
  unlock(&g_write_mu);
  if (!active) ck_misuse(function, CKM_AFTER_RETURN);
}

static void ck_progress(const char *call_id, i32 percent, const char *text) {
  ck_watch_call(CKF_PROGRESS, call_id);
  if (percent < -1 || percent > 100) ck_misuse(CKF_PROGRESS, CKM_RANGE);
  host_progress(call_id, percent, text);
}
static void ck_log(const char *call_id, i32 level, const char *text) {
  ck_watch_call(CKF_LOG, call_id);
  if (level < 0 || level > 5) ck_misuse(CKF_LOG, CKM_RANGE);
  host_log(call_id, level, text);
}
static void ck_stream(const char *call_id, const char *text) {
  ck_watch_call(CKF_STREAM, call_id);
  host_stream(call_id, text);
}
static const char *ck_current_call(void) {
  ck_after_stop(CKF_CURRENT_CALL);
  return host_current_call();
}
static void ck_register_child(i64 pid) {
  ck_after_stop(CKF_REGISTER_CHILD);
  host_register_child(pid);
}

/* The host table for cxagent_plugin_attach, every function watched. */
CHECK_API const cxagent_host *shim_check_table(void) {
  ck_table = g_table;
  ck_table.progress = ck_progress;
  ck_table.log = ck_log;
  ck_table.stream = ck_stream;
  ck_table.current_call = ck_current_call;
  ck_table.register_child = ck_register_child;
  return &ck_table;
}

