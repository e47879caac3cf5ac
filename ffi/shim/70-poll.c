/* ------------------------------------------------------------------------------------------ */
/* Poll.                                                                                        */

static void sleep_ms(int ms) {
  struct shim_pollfd none = {-1, 0, 0};
  x_poll(&none, 0, ms);
}

static void poll_once(void) {
  const char *raw = plugin.poll();
  if (!raw) return;
  json_field f[2] = {{"goal", 0, 0}, {"wantResult", 0, 0}};
  json_parser p;
  p.error = NULL; /* read below even when the text was too long to parse */
  buf out = {0}, line = {0}, m = {0};
  size_t n = str_len(raw);
  const char *text = n > 0 && n < g_line_cap - 1024 ? json_parse_line(&p, (const u8 *)raw, n, &out, f, 2) : NULL;
  int parsed = text != NULL;
  if (parsed && p.top == '{') {
    buf_str(&line, "{\"event\":\"submit\"");
    if (field_present(&f[0])) {
      buf_str(&line, ",\"goal\":");
      buf_put(&line, field_text(text, &f[0]), field_len(&f[0]));
    }
    if (field_present(&f[1])) {
      buf_str(&line, ",\"wantResult\":");
      buf_put(&line, field_text(text, &f[1]), field_len(&f[1]));
    }
    buf_str(&line, "}\n");
    write_line(&line);
  } else {
    buf_str(&m, "cxagent_plugin_poll returned ");
    if (n == 0) buf_str(&m, "an empty string");
    else if (!parsed) {
      buf_str(&m, "invalid JSON (");
      buf_str(&m, p.error ? p.error : "too long");
      buf_str(&m, ")");
    } else {
      buf_str(&m, json_kind(p.top));
      buf_str(&m, " instead of a submit object");
    }
    buf_str(&m, "; ignored: ");
    buf_put(&m, raw, n > 200 ? 200 : n);
    emit(EV_LOG, "0", 3, m.p ? m.p : "");
  }
  release(raw);
  buf_free(&out);
  buf_free(&line);
  buf_free(&m);
}

static void *poll_thread(void *unused) {
  (void)unused;
  for (;;) {
    sleep_ms(g_poll_ms);
    lock(&g_pool_mu);
    int go = g_poll_state == 1 && !g_exit_requested;
    if (!go) {
      g_poll_state = 3;
      x_pthread_cond_broadcast(&g_pool_cv);
    }
    unlock(&g_pool_mu);
    if (!go) return NULL;
    poll_once();
  }
}

static void poll_begin(void) {
  if (!plugin.poll) return;
  lock(&g_pool_mu);
  int begin = g_poll_state == 0;
  if (begin) g_poll_state = 1;
  unlock(&g_pool_mu);
  if (!begin) return;
  shim_thread_t t;
  if (x_pthread_create(&t, NULL, poll_thread, NULL) == 0) x_pthread_detach(t);
  else {
    lock(&g_pool_mu);
    g_poll_state = 3;
    unlock(&g_pool_mu);
  }
}

/* Poll must have ended before stop is called; waits for a poll call in progress to return. */
static void poll_end(void) {
  lock(&g_pool_mu);
  if (g_poll_state == 1) g_poll_state = 2;
  while (g_poll_state == 2) x_pthread_cond_wait(&g_pool_cv, &g_pool_mu);
  unlock(&g_pool_mu);
}
