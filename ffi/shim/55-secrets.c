/* ------------------------------------------------------------------------------------------ */
/* The host table's secret (issue 40): the plugin asks, this writes a "secret" event, and the    */
/* parent answers with a "secret" notice of the same seq (80-requests.c: secret_answer), which  */
/* wakes the asking thread. The value passes through here only: copied into the plugin's buffer */
/* and wiped from the shim's memory. Nothing is cached, logged, or put in the environment.      */

enum { SECRET_UNDECLARED = -1, SECRET_UNBOUND = -2, SECRET_TOO_SMALL = -3, SECRET_UNAVAILABLE = -4 };
#define SECRET_MAX 65536
#define SECRET_WAIT_S 15

typedef struct secret_wait {
  i64 seq;
  int done;
  i64 code;           /* 0: the value arrived; else a SECRET_* code */
  u8 *value;          /* x_malloc'd, wiped before it is freed */
  size_t n;
  struct secret_wait *next;
} secret_wait;
static secret_wait *g_secret_waits; /* under g_pool_mu */
static i64 g_secret_seq;

/* Overwrites memory in a way the compiler keeps. */
static void wipe(void *p, size_t n) {
  volatile u8 *v = (volatile u8 *)p;
  while (n--) *v++ = 0;
}

static int secret_name_ok(const char *s) {
  size_t n = str_len(s);
  if (n < 1 || n > 64) return 0;
  for (size_t i = 0; i < n; i++) {
    u8 c = (u8)s[i];
    int ok = (c >= 'a' && c <= 'z') || is_digit(c) || (i > 0 && (c == '_' || c == '.' || c == '-'));
    if (!ok) return 0;
  }
  return 1;
}

static int b64_digit(u8 c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (is_digit(c)) return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

/* Decodes base64 (padding optional) into a new buffer; returns NULL on a bad digit or no memory. */
static u8 *b64_decode(const u8 *s, size_t n, size_t *out_n) {
  while (n && s[n - 1] == '=') n--;
  u8 *out = (u8 *)x_malloc(n * 3 / 4 + 1);
  if (!out) return NULL;
  size_t o = 0;
  u32 acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int d = b64_digit(s[i]);
    if (d < 0) {
      wipe(out, o);
      x_free(out);
      return NULL;
    }
    acc = (acc << 6) | (u32)d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (u8)(acc >> bits);
    }
  }
  *out_n = o;
  acc = 0;
  return out;
}

/* The parent's answer to request `seq` (from 80-requests.c): `value` base64, or `error` a word. */
static void secret_answer(i64 seq, const char *value, size_t value_n, const char *error) {
  lock(&g_pool_mu);
  secret_wait *w = g_secret_waits;
  while (w && w->seq != seq) w = w->next;
  if (w && !w->done) {
    if (value) {
      w->value = b64_decode((const u8 *)value, value_n, &w->n);
      w->code = w->value ? 0 : SECRET_UNAVAILABLE;
    } else {
      w->code = error && str_is(error, str_len(error), "undeclared") ? SECRET_UNDECLARED
                : error && str_is(error, str_len(error), "unbound")  ? SECRET_UNBOUND
                                                                      : SECRET_UNAVAILABLE;
    }
    w->done = 1;
    x_pthread_cond_broadcast(&g_pool_cv);
  }
  unlock(&g_pool_mu);
}

static i64 host_secret(const char *name, char *out, size_t cap) {
  if (!name || !secret_name_ok(name)) return SECRET_UNDECLARED;
  secret_wait w = {0, 0, 0, NULL, 0, NULL};
  lock(&g_pool_mu);
  /* Before the pool serves (during attach) nobody could read the answer. */
  if (g_threads <= 0 || g_exit_requested) {
    unlock(&g_pool_mu);
    return SECRET_UNAVAILABLE;
  }
  w.seq = ++g_secret_seq;
  w.next = g_secret_waits;
  g_secret_waits = &w;
  unlock(&g_pool_mu);
  buf line = {0};
  buf_str(&line, "{\"event\":\"secret\",\"name\":\"");
  buf_str(&line, name); /* a secret name needs no escaping */
  buf_str(&line, "\",\"seq\":");
  buf_i64(&line, w.seq);
  buf_str(&line, "}\n");
  write_line(&line);
  buf_free(&line);
  struct shim_timespec deadline;
  x_clock_gettime(SHIM_CLOCK_REALTIME, &deadline);
  deadline.tv_sec += SECRET_WAIT_S;
  lock(&g_pool_mu);
  while (!w.done && !g_exit_requested)
    if (x_pthread_cond_timedwait(&g_pool_cv, &g_pool_mu, &deadline) != 0 && !w.done) break;
  secret_wait **at = &g_secret_waits;
  while (*at && *at != &w) at = &(*at)->next;
  if (*at) *at = w.next;
  unlock(&g_pool_mu);
  i64 result;
  if (!w.done) result = SECRET_UNAVAILABLE;
  else if (w.code) result = w.code;
  else if (w.n > SECRET_MAX || !out || w.n + 1 > cap) result = SECRET_TOO_SMALL;
  else {
    for (size_t i = 0; i < w.n; i++) out[i] = (char)w.value[i];
    out[w.n] = 0;
    result = (i64)w.n;
  }
  if (w.value) {
    wipe(w.value, w.n);
    x_free(w.value);
  }
  return result;
}
