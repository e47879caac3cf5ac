/* ------------------------------------------------------------------------------------------ */
/* Writing: every protocol line goes through here, under g_write_mu.                            */

static shim_cond_t g_role_cv, g_monitor_cv; /* see "Serving requests" */

static void request_exit(int code) {
  lock(&g_pool_mu);
  if (!g_exit_requested) {
    g_exit_requested = 1;
    g_exit_code = code;
  }
  x_pthread_cond_broadcast(&g_pool_cv);
  x_pthread_cond_broadcast(&g_role_cv);
  x_pthread_cond_broadcast(&g_monitor_cv);
  unlock(&g_pool_mu);
}

/* Caller holds g_write_mu. Loops over short writes and EAGAIN (Bun may have made the fd
 * non-blocking), so a line of any size goes out whole before anyone else writes. */
static int write_locked(const char *p, size_t n) {
  while (n) {
    ssize_t w = x_write(g_out, p, n);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    int e = w < 0 ? err_no() : 0;
    if (e == SHIM_EINTR) continue;
    if (e == SHIM_EAGAIN) {
      struct shim_pollfd pf = {g_out, SHIM_POLLOUT, 0};
      x_poll(&pf, 1, -1);
      continue;
    }
    return -1; /* the parent is gone */
  }
  return 0;
}

static void write_line(buf *line) {
  if (line->failed) return;
  lock(&g_write_mu);
  int rc = write_locked(line->p, line->n);
  unlock(&g_write_mu);
  if (rc) request_exit(0);
}

/* ------------------------------------------------------------------------------------------ */
/* Calls: the set of requests currently inside invoke/command, and the one on this thread.      */

static call *find_active(i64 id) {
  for (call *c = g_active; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

static call *call_begin(i64 id) {
  call *c = (call *)x_malloc(sizeof(call));
  if (!c) return NULL;
  c->id = id;
  buf t = {0};
  buf_i64(&t, id);
  size_t m = t.n < sizeof c->id_text ? t.n : sizeof c->id_text - 1;
  mem_copy(c->id_text, t.p ? t.p : "", m);
  c->id_text[m] = 0;
  buf_free(&t);
  lock(&g_write_mu);
  c->next = g_active;
  g_active = c;
  unlock(&g_write_mu);
  x_pthread_setspecific(g_call_key, c);
  return c;
}

/* Replies held back while the thread that serves requests has more of them already read: they
 * go out together, in one write, before it next waits for input, or once four are held (or past
 * 256 KiB, or when a slow call makes the monitor hand the role on). Four, not all: the parent
 * starts on the first replies while this thread serves the rest, instead of the two sides taking
 * turns. In paired bench runs (3 runs each, noop): all held, 71-89k calls/s at 16 in flight and
 * 165-168k at 256; four, 104-119k and 208-215k; one (a write per reply) no better than four at 16
 * and 0.8-0.9x at 256; eight the same as four. Under g_write_mu. */
static buf g_held;
static int g_held_count; /* replies in g_held */
static int defer_this_reply(void);

static int write_held_locked(void) {
  int rc = g_held.n ? write_locked(g_held.p, g_held.n) : 0;
  g_held.n = 0;
  g_held_count = 0;
  return rc;
}

static void flush_held(void) {
  lock(&g_write_mu);
  int rc = write_held_locked();
  unlock(&g_write_mu);
  if (rc) request_exit(0);
}

/* Ends call `c` (NULL for requests that are not calls) and sends the reply to request `id` under
 * the same lock: an event either went out before this point, or finds its call gone and is
 * dropped. Nothing of a call can land after its reply. */
static void call_end(i64 id, call *c, buf *reply) {
  lock(&g_write_mu);
  /* Decided under g_write_mu, not before it: the monitor takes the role away first and flushes
   * what is held after, under this lock, so a reply either is held before that flush or sees the
   * role gone and goes out now. Decided outside the lock, a reply could be held just after the
   * last flush and wait for input that never comes (a call's reply lost until its deadline). */
  int defer = defer_this_reply();
  if (c) {
    for (call **pp = &g_active; *pp; pp = &(*pp)->next) {
      if (*pp == c) {
        *pp = c->next;
        break;
      }
    }
  }
  int rc = 0;
  if (reply->failed) {
    /* No memory to build the reply: the parent still gets one, built without allocating. */
    char line[160] = "{\"id\":";
    size_t n = str_len(line);
    char digits[24];
    int k = 23;
    digits[k] = 0;
    u64 u = (u64)id;
    do digits[--k] = (char)('0' + u % 10); while ((u /= 10) && k > 0);
    const char *tail = ",\"ok\":false,\"fault\":\"internal\",\"error\":\"the plugin host ran out of memory for this reply\"}\n";
    mem_copy(line + n, digits + k, (size_t)(23 - k));
    n += (size_t)(23 - k);
    mem_copy(line + n, tail, str_len(tail));
    n += str_len(tail);
    rc = write_held_locked();
    if (!rc) rc = write_locked(line, n);
  } else if (defer && g_held_count < 4 && g_held.n + reply->n <= 256 * 1024 && (buf_put(&g_held, reply->p, reply->n), !g_held.failed)) {
    g_held_count++; /* held back: goes out with its neighbours */
  } else {
    g_held.failed = 0;
    rc = write_held_locked();
    if (!rc) rc = write_locked(reply->p, reply->n);
  }
  unlock(&g_write_mu);
  if (c) {
    x_pthread_setspecific(g_call_key, NULL);
    x_free(c);
  }
  if (rc) request_exit(0);
}
