/* ------------------------------------------------------------------------------------------ */
/* The host table.                                                                              */

enum { EV_PROGRESS, EV_LOG, EV_STREAM };

/* Parses a call id the plugin handed back. Returns -1 when it is not a decimal number. */
static i64 parse_call_id(const char *s) {
  i64 v = 0;
  size_t i = 0;
  if (!s[0]) return -1;
  for (; s[i]; i++) {
    if (!is_digit((u8)s[i]) || i >= 18) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

static void emit(int kind, const char *call_id, i32 number, const char *text) {
  i64 id;
  if (call_id == NULL) {
    call *c = (call *)x_pthread_getspecific(g_call_key);
    id = c ? c->id : 0;
  } else {
    id = parse_call_id(call_id);
  }
  if (id < 0 || (id == 0 && kind != EV_LOG)) {
    return;
  }
  buf line = {0};
  buf_str(&line, kind == EV_PROGRESS ? "{\"event\":\"progress\",\"id\":" : kind == EV_LOG ? "{\"event\":\"log\",\"id\":" : "{\"event\":\"stream\",\"id\":");
  buf_i64(&line, id);
  if (kind == EV_PROGRESS) {
    buf_str(&line, ",\"percent\":");
    buf_i64(&line, number < -1 ? -1 : number > 100 ? 100 : number);
  } else if (kind == EV_LOG) {
    buf_str(&line, ",\"level\":");
    buf_i64(&line, number < 0 ? 0 : number > 5 ? 5 : number);
  }
  buf_str(&line, ",\"text\":");
  const char *t = text ? text : "";
  buf_json_string(&line, (const u8 *)t, str_len(t), g_line_cap / 8);
  buf_str(&line, "}\n");
  if (line.failed) {
    buf_free(&line);
    return;
  }
  lock(&g_write_mu);
  int placed = id == 0 || find_active(id) != NULL;
  int rc = placed ? write_locked(line.p, line.n) : 0;
  unlock(&g_write_mu);
  buf_free(&line);
  if (rc) request_exit(0);
}

static void host_progress(const char *call_id, i32 percent, const char *text) { emit(EV_PROGRESS, call_id, percent, text); }
static void host_log(const char *call_id, i32 level, const char *text) { emit(EV_LOG, call_id, level, text); }
static void host_stream(const char *call_id, const char *text) { emit(EV_STREAM, call_id, 0, text); }
static const char *host_current_call(void) {
  call *c = (call *)x_pthread_getspecific(g_call_key);
  return c ? c->id_text : NULL;
}

/* Reads /proc/<pid>/stat into `text` (at most cap - 1 bytes); returns the length, 0 for no such process. */
static size_t read_stat(i64 pid, char *text, size_t cap) {
  buf path = {0};
  buf_str(&path, "/proc/");
  buf_i64(&path, pid);
  buf_str(&path, "/stat");
  int fd = path.failed ? -1 : x_open(path.p, SHIM_O_RDONLY | SHIM_O_CLOEXEC);
  buf_free(&path);
  if (fd < 0) return 0;
  size_t n = 0;
  for (;;) {
    ssize_t r = x_read(fd, text + n, cap - 1 - n);
    if (r < 0 && err_no() == SHIM_EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (n >= cap - 1) break;
  }
  x_close(fd);
  return n;
}

/* Finds field `wanted` (3 or more: 3 is the state, 5 the process group, 9 the flags, 22 the start
 * time in clock ticks since boot) in a stat line; returns 0 if it has none. */
static int stat_field(const char *text, size_t n, int wanted, size_t *at, size_t *len) {
  /* The command name (field 2) may contain spaces and parentheses: count from the last ')'. */
  size_t close_paren = 0;
  for (size_t i = 0; i < n; i++)
    if (text[i] == ')') close_paren = i;
  if (!close_paren) return 0;
  int field = 2;
  size_t i = close_paren + 1;
  while (i < n && field < wanted) {
    if (text[i] == ' ') field++;
    i++;
  }
  size_t start = i;
  while (i < n && text[i] != ' ' && text[i] != '\n') i++;
  if (field != wanted || i == start) return 0;
  *at = start;
  *len = i - start;
  return 1;
}

static int read_stat_field(i64 pid, int wanted, buf *out) {
  char text[1024];
  size_t n = read_stat(pid, text, sizeof text), at, len;
  if (!n || !stat_field(text, n, wanted, &at, &len)) return 0;
  buf_put(out, text + at, len);
  return 1;
}

static i64 parse_decimal(const char *p, size_t n) {
  i64 v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit((u8)p[i])) return -1;
    v = v * 10 + (p[i] - '0');
  }
  return n ? v : -1;
}

/* Whether a living process other than `self` is in process group `group` (1 when it cannot tell). */
static int group_has_others(int group, int self) {
  void *dir = x_opendir("/proc");
  if (!dir) return 1;
  int found = 0;
  struct shim_dirent *e;
  while (!found && (e = x_readdir(dir)) != NULL) {
    i64 pid = parse_decimal(e->d_name, str_len(e->d_name));
    if (pid <= 0 || pid == self) continue;
    char text[1024];
    size_t n = read_stat(pid, text, sizeof text), sa, sn, ga, gn;
    if (!n || !stat_field(text, n, 3, &sa, &sn) || !stat_field(text, n, 5, &ga, &gn)) continue;
    found = text[sa] != 'Z' && parse_decimal(text + ga, gn) == group;
  }
  x_closedir(dir);
  return found;
}

static int read_start_time(i64 pid, buf *out) {
  buf field = {0};
  int ok = read_stat_field(pid, 22, &field) && !field.failed;
  for (size_t i = 0; ok && i < field.n; i++) ok = is_digit((u8)field.p[i]);
  if (ok) buf_put(out, field.p, field.n);
  buf_free(&field);
  return ok;
}

/* Records a process the plugin started: the parent checks that it descends from this host, writes
 * it to the session record and confirms with an "ack" request, which this waits for (at most 5 s),
 * so the record is on disk before register_child returns. A refusal is the parent's to report (it
 * trusts nothing this process says), and is confirmed all the same. Before the pool serves (during
 * attach) nobody could read the confirmation, so the event goes out unconfirmed. */
static void host_register_child(i64 pid) {
  if (pid <= 0) return;
  buf start = {0};
  if (!read_start_time(pid, &start)) {
    buf_free(&start);
    buf text = {0};
    buf_str(&text, "register_child(");
    buf_i64(&text, pid);
    buf_str(&text, ") was refused: there is no such process (it may have exited already); nothing was recorded");
    emit(EV_LOG, "0", 3, text.failed ? "register_child was refused: there is no such process" : text.p);
    buf_free(&text);
    return;
  }
  lock(&g_pool_mu);
  i64 seq = ++g_child_seq;
  int serving = g_threads > 0;
  unlock(&g_pool_mu);
  buf line = {0};
  buf_str(&line, "{\"event\":\"child\",\"pid\":");
  buf_i64(&line, pid);
  buf_str(&line, ",\"startTime\":\"");
  buf_put(&line, start.p, start.n);
  buf_str(&line, "\",\"ack\":");
  buf_i64(&line, serving ? seq : 0);
  buf_str(&line, "}\n");
  write_line(&line);
  buf_free(&line);
  buf_free(&start);
  if (!serving) return;
  struct shim_timespec deadline;
  x_clock_gettime(SHIM_CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 5;
  int timed_out = 0;
  lock(&g_pool_mu);
  while (g_child_acked < seq && !g_exit_requested && !timed_out)
    timed_out = x_pthread_cond_timedwait(&g_pool_cv, &g_pool_mu, &deadline) != 0 && g_child_acked < seq;
  unlock(&g_pool_mu);
  if (timed_out) emit(EV_LOG, "0", 3, "register_child: the parent did not confirm the record within 5 s");
}
