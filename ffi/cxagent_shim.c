/*
 * cxagent_shim.c — the native half of a cxagent plugin host.
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
 * The file includes no header at all. libc is reached through a table of function pointers the
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

/* ------------------------------------------------------------------------------------------ */
/* The plugin's exports and the host table (layout must match ffi/cxagent_plugin.h).           */

typedef const char *(*fn_void)(void);
typedef const char *(*fn_one)(const char *);
typedef const char *(*fn_two)(const char *, const char *);
typedef void (*fn_free)(const char *);

static struct {
  fn_one start;
  fn_two invoke;
  fn_two gate;
  fn_void stop;
  fn_free release;
  fn_void poll;    /* optional */
  fn_two command;  /* optional */
} plugin;

typedef struct cxagent_host {
  u32 size;
  i32 contract;
  void (*progress)(const char *call_id, i32 percent, const char *text);
  void (*log)(const char *call_id, i32 level, const char *text);
  void (*stream)(const char *call_id, const char *text);
  const char *(*current_call)(void);
  void (*register_child)(i64 pid);
} cxagent_host;

/* ------------------------------------------------------------------------------------------ */
/* State                                                                                        */

static int g_out = -1, g_in = -1;
static size_t g_line_cap = 64u << 20;
static int g_poll_ms = 200;
static long g_spin_ns = 100000; /* see next_line() */
static cxagent_host g_table;

static shim_mutex_t g_write_mu;  /* one writer; also guards the set of active calls */
static shim_mutex_t g_pool_mu;   /* pool counters, exit and poll state */
static shim_cond_t g_pool_cv;
static shim_key_t g_call_key;

typedef struct call {
  i64 id;
  char id_text[24];
  struct call *next;
} call;
static call *g_active;

static int g_threads, g_idle, g_cap;
static int g_exit_requested, g_exit_code;
static int g_poll_state; /* 0 not started, 1 running, 2 asked to end, 3 ended */
static i64 g_child_seq, g_child_acked; /* register_child: sent and confirmed, under g_pool_mu */


/* ------------------------------------------------------------------------------------------ */
/* Small helpers (no libc string functions, so gcc never needs them either).                    */

static size_t str_len(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}
static void mem_copy(void *dst, const void *src, size_t n) {
  u8 *d = (u8 *)dst;
  const u8 *s = (const u8 *)src;
  while (n--) *d++ = *s++;
}
static int mem_equal(const void *a, const void *b, size_t n) {
  const u8 *x = (const u8 *)a, *y = (const u8 *)b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i]) return 0;
  return 1;
}
static int str_is(const char *s, size_t n, const char *lit) {
  size_t m = str_len(lit);
  return n == m && mem_equal(s, lit, n);
}
static int err_no(void) { return *x___errno_location(); }

static void lock(shim_mutex_t *m) { x_pthread_mutex_lock(m); }
static void unlock(shim_mutex_t *m) { x_pthread_mutex_unlock(m); }

/* A growable byte buffer. On allocation failure it sets `failed` and stops growing. */
typedef struct {
  char *p;
  size_t n, cap;
  int failed;
} buf;

static int buf_reserve(buf *b, size_t extra) {
  if (b->failed) return 0;
  if (b->n + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + extra + 1) cap *= 2;
  char *p = (char *)x_realloc(b->p, cap);
  if (!p) {
    b->failed = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}
static void buf_put(buf *b, const void *s, size_t n) {
  if (!buf_reserve(b, n)) return;
  mem_copy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void buf_str(buf *b, const char *s) { buf_put(b, s, str_len(s)); }
static void buf_char(buf *b, char c) { buf_put(b, &c, 1); }
static void buf_i64(buf *b, i64 v) {
  char t[24];
  int i = 23;
  int neg = v < 0;
  u64 u = neg ? (u64)(-(v + 1)) + 1 : (u64)v;
  t[i] = 0;
  do {
    t[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (neg) t[--i] = '-';
  buf_str(b, t + i);
}
static void buf_free(buf *b) {
  x_free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* Appends `s` as a JSON string literal. Control characters are escaped and invalid UTF-8 becomes
 * U+FFFD, so whatever bytes a plugin hands over, the line stays valid JSON. At most `max` input
 * bytes are taken; a cut is marked with an ellipsis. */
static void buf_json_string(buf *b, const u8 *s, size_t n, size_t max) {
  static const char hex[] = "0123456789abcdef";
  int cut = n > max;
  if (cut) n = max;
  buf_char(b, '"');
  size_t i = 0;
  while (i < n) {
    u8 c = s[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      size_t j = i;
      while (j < n && s[j] >= 0x20 && s[j] < 0x7f && s[j] != '"' && s[j] != '\\') j++;
      buf_put(b, s + i, j - i);
      i = j;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '"': buf_str(b, "\\\""); break;
        case '\\': buf_str(b, "\\\\"); break;
        case '\n': buf_str(b, "\\n"); break;
        case '\r': buf_str(b, "\\r"); break;
        case '\t': buf_str(b, "\\t"); break;
        case '\b': buf_str(b, "\\b"); break;
        case '\f': buf_str(b, "\\f"); break;
        default: {
          char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
          buf_put(b, e, 6);
        }
      }
      i++;
      continue;
    }
    /* A multi-byte sequence: copy it if it is well-formed UTF-8, else emit U+FFFD for one byte. */
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    int ok = len && c >= 0xc2 && c <= 0xf4 && i + len <= n;
    for (size_t k = 1; ok && k < len; k++) ok = (s[i + k] & 0xc0) == 0x80;
    if (ok && len == 3) {
      u32 cp = ((u32)(c & 0x0f) << 12) | ((u32)(s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f);
      ok = cp >= 0x800 && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok && len == 4) {
      u32 cp = ((u32)(c & 0x07) << 18) | ((u32)(s[i + 1] & 0x3f) << 12) | ((u32)(s[i + 2] & 0x3f) << 6) |
               (s[i + 3] & 0x3f);
      ok = cp >= 0x10000 && cp <= 0x10ffff;
    }
    if (ok) {
      buf_put(b, s + i, len);
      i += len;
    } else {
      buf_str(b, "\\ufffd");
      i++;
    }
  }
  if (cut) buf_str(b, "\xe2\x80\xa6");
  buf_char(b, '"');
}

/* ------------------------------------------------------------------------------------------ */
/* JSON: a strict validator that also writes a minified copy, and can report where chosen       */
/* members of the top-level object sit in that copy.                                           */

#define JSON_MAX_DEPTH 512

typedef struct {
  const char *name;
  size_t start, end; /* offsets into the minified copy; end == 0 when absent */
} json_field;

typedef struct {
  const u8 *s;
  size_t n, i;
  buf *out;
  int depth;
  const char *error;
  json_field *fields;
  int nfields;
  char top; /* first character of the top-level value: '{', '[', '"', 't', 'f', 'n' or a digit */
} json_parser;

static void json_ws(json_parser *p) {
  while (p->i < p->n) {
    u8 c = p->s[p->i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->i++;
  }
}
static int json_fail(json_parser *p, const char *why) {
  if (!p->error) p->error = p->i >= p->n ? "an unexpected end" : why;
  return 0;
}
static int is_hex(u8 c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int is_digit(u8 c) { return c >= '0' && c <= '9'; }

static int json_string(json_parser *p) {
  size_t start = p->i++; /* opening quote */
  while (p->i < p->n) {
    u8 c = p->s[p->i];
    if (c == '"') {
      p->i++;
      buf_put(p->out, p->s + start, p->i - start);
      return 1;
    }
    if (c < 0x20) return json_fail(p, "a control character inside a string");
    if (c == '\\') {
      if (p->i + 1 >= p->n) break;
      u8 e = p->s[p->i + 1];
      if (e == 'u') {
        if (p->i + 6 > p->n || !is_hex(p->s[p->i + 2]) || !is_hex(p->s[p->i + 3]) || !is_hex(p->s[p->i + 4]) ||
            !is_hex(p->s[p->i + 5]))
          return json_fail(p, "an invalid \\u escape");
        p->i += 6;
        continue;
      }
      if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't')
        return json_fail(p, "an invalid escape");
      p->i += 2;
      continue;
    }
    p->i++;
  }
  return json_fail(p, "an unterminated string");
}

static int json_number(json_parser *p) {
  size_t start = p->i;
  if (p->s[p->i] == '-') p->i++;
  if (p->i >= p->n) return json_fail(p, "an invalid number");
  if (p->s[p->i] == '0') {
    p->i++;
  } else if (is_digit(p->s[p->i])) {
    while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
  } else {
    return json_fail(p, "an invalid number");
  }
  if (p->i < p->n && p->s[p->i] == '.') {
    p->i++;
    if (p->i >= p->n || !is_digit(p->s[p->i])) return json_fail(p, "an invalid number");
    while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
  }
  if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
    p->i++;
    if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
    if (p->i >= p->n || !is_digit(p->s[p->i])) return json_fail(p, "an invalid number");
    while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
  }
  buf_put(p->out, p->s + start, p->i - start);
  return 1;
}

static int json_literal(json_parser *p, const char *word) {
  size_t m = str_len(word);
  if (p->i + m > p->n || !mem_equal(p->s + p->i, word, m)) return json_fail(p, "an unexpected character");
  buf_put(p->out, word, m);
  p->i += m;
  return 1;
}

/* Decodes a JSON string literal (quotes included) into UTF-8. Lone surrogates become U+FFFD and
 * decoding stops at an escaped NUL, since the result is handed to C as a NUL-terminated string. */
static void json_unescape(const u8 *s, size_t n, buf *out) {
  size_t i = 1, end = n - 1;
  while (i < end) {
    u8 c = s[i];
    if (c != '\\') {
      size_t j = i;
      while (j < end && s[j] != '\\') j++;
      buf_put(out, s + i, j - i);
      i = j;
      continue;
    }
    u8 e = s[i + 1];
    i += 2;
    switch (e) {
      case 'b': buf_char(out, '\b'); continue;
      case 'f': buf_char(out, '\f'); continue;
      case 'n': buf_char(out, '\n'); continue;
      case 'r': buf_char(out, '\r'); continue;
      case 't': buf_char(out, '\t'); continue;
      case 'u': break;
      default: buf_char(out, (char)e); continue;
    }
    u32 cp = 0;
    for (int k = 0; k < 4; k++) {
      u8 h = s[i + k];
      cp = cp * 16 + (u32)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    i += 4;
    if (cp >= 0xd800 && cp <= 0xdbff && i + 6 <= end && s[i] == '\\' && s[i + 1] == 'u') {
      u32 lo = 0;
      for (int k = 0; k < 4; k++) {
        u8 h = s[i + 2 + k];
        lo = lo * 16 + (u32)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i += 6;
      }
    }
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    if (cp == 0) return;
    u8 t[4];
    size_t m;
    if (cp < 0x80) {
      t[0] = (u8)cp;
      m = 1;
    } else if (cp < 0x800) {
      t[0] = (u8)(0xc0 | cp >> 6);
      t[1] = (u8)(0x80 | (cp & 0x3f));
      m = 2;
    } else if (cp < 0x10000) {
      t[0] = (u8)(0xe0 | cp >> 12);
      t[1] = (u8)(0x80 | ((cp >> 6) & 0x3f));
      t[2] = (u8)(0x80 | (cp & 0x3f));
      m = 3;
    } else {
      t[0] = (u8)(0xf0 | cp >> 18);
      t[1] = (u8)(0x80 | ((cp >> 12) & 0x3f));
      t[2] = (u8)(0x80 | ((cp >> 6) & 0x3f));
      t[3] = (u8)(0x80 | (cp & 0x3f));
      m = 4;
    }
    buf_put(out, t, m);
  }
}

static int json_value(json_parser *p);

static int json_object(json_parser *p) {
  int top = p->depth == 1;
  p->i++;
  buf_char(p->out, '{');
  json_ws(p);
  if (p->i < p->n && p->s[p->i] == '}') {
    p->i++;
    buf_char(p->out, '}');
    return 1;
  }
  for (;;) {
    json_ws(p);
    if (p->i >= p->n || p->s[p->i] != '"') return json_fail(p, "a missing member name");
    size_t key_start = p->out->n;
    if (!json_string(p)) return 0;
    size_t key_end = p->out->n;
    json_ws(p);
    if (p->i >= p->n || p->s[p->i] != ':') return json_fail(p, "a missing ':'");
    p->i++;
    buf_char(p->out, ':');
    json_ws(p);
    size_t value_start = p->out->n;
    if (!json_value(p)) return 0;
    if (top && p->nfields && !p->out->failed) {
      buf key = {0};
      json_unescape((const u8 *)p->out->p + key_start, key_end - key_start, &key);
      for (int f = 0; f < p->nfields; f++) {
        if (key.p && str_is(key.p, key.n, p->fields[f].name)) {
          p->fields[f].start = value_start;
          p->fields[f].end = p->out->n; /* a repeated key: the last one wins, as in JSON.parse */
        }
      }
      buf_free(&key);
    }
    json_ws(p);
    if (p->i < p->n && p->s[p->i] == ',') {
      p->i++;
      buf_char(p->out, ',');
      continue;
    }
    if (p->i < p->n && p->s[p->i] == '}') {
      p->i++;
      buf_char(p->out, '}');
      return 1;
    }
    return json_fail(p, "a missing ',' or '}'");
  }
}

static int json_array(json_parser *p) {
  p->i++;
  buf_char(p->out, '[');
  json_ws(p);
  if (p->i < p->n && p->s[p->i] == ']') {
    p->i++;
    buf_char(p->out, ']');
    return 1;
  }
  for (;;) {
    json_ws(p);
    if (!json_value(p)) return 0;
    json_ws(p);
    if (p->i < p->n && p->s[p->i] == ',') {
      p->i++;
      buf_char(p->out, ',');
      continue;
    }
    if (p->i < p->n && p->s[p->i] == ']') {
      p->i++;
      buf_char(p->out, ']');
      return 1;
    }
    return json_fail(p, "a missing ',' or ']'");
  }
}

static int json_value(json_parser *p) {
  json_ws(p);
  if (p->i >= p->n) return json_fail(p, "an unexpected end");
  if (++p->depth > JSON_MAX_DEPTH) return json_fail(p, "nesting deeper than 512 levels");
  u8 c = p->s[p->i];
  int ok;
  if (c == '{') ok = json_object(p);
  else if (c == '[') ok = json_array(p);
  else if (c == '"') ok = json_string(p);
  else if (c == 't') ok = json_literal(p, "true");
  else if (c == 'f') ok = json_literal(p, "false");
  else if (c == 'n') ok = json_literal(p, "null");
  else if (c == '-' || is_digit(c)) ok = json_number(p);
  else ok = json_fail(p, "an unexpected character");
  p->depth--;
  return ok;
}

/* Parses a whole document. Returns 1 and leaves the minified text in `out`, or 0 with p->error. */
static int json_parse(json_parser *p, const u8 *s, size_t n, buf *out, json_field *fields, int nfields) {
  p->s = s;
  p->n = n;
  p->i = 0;
  p->out = out;
  p->depth = 0;
  p->error = NULL;
  p->fields = fields;
  p->nfields = nfields;
  for (int f = 0; f < nfields; f++) fields[f].start = fields[f].end = 0;
  json_ws(p);
  p->top = p->i < n ? (char)s[p->i] : 0;
  if (!json_value(p)) return 0;
  json_ws(p);
  if (p->i != n) return json_fail(p, "text after the JSON value");
  if (out->failed) return json_fail(p, "out of memory");
  return 1;
}

static const char *json_kind(char top) {
  switch (top) {
    case '{': return "an object";
    case '[': return "an array";
    case '"': return "a string";
    case 't':
    case 'f': return "a boolean";
    case 'n': return "null";
    default: return "a number";
  }
}

static int field_present(const json_field *f) { return f->end != 0; }
static const char *field_text(const buf *b, const json_field *f) { return b->p + f->start; }
static size_t field_len(const json_field *f) { return f->end - f->start; }

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
 * go out together, in one write, before it next waits for input (or past 256 KiB, or when a
 * slow call makes the monitor hand the role on). Under g_write_mu. */
static buf g_held;
static int defer_this_reply(void);

static int write_held_locked(void) {
  int rc = g_held.n ? write_locked(g_held.p, g_held.n) : 0;
  g_held.n = 0;
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
  int defer = defer_this_reply();
  lock(&g_write_mu);
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
  } else if (defer && g_held.n + reply->n <= 256 * 1024 && (buf_put(&g_held, reply->p, reply->n), !g_held.failed)) {
    /* held back: goes out with its neighbours */
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
  int fd = path.failed ? -1 : x_open(path.p, SHIM_O_RDONLY);
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

/* ------------------------------------------------------------------------------------------ */
/* Turning what an export returned into a reply.                                                */

static void reply_head(buf *r, i64 id, int ok) {
  buf_str(r, "{\"id\":");
  buf_i64(r, id);
  buf_str(r, ok ? ",\"ok\":true" : ",\"ok\":false");
}

/* A failure the host detected (as opposed to a plugin's own ok:false): `fault` tells the parent
 * which kind, so it can pick the right error code. */
static void reply_fault(buf *r, i64 id, const char *fault, const char *message_start, const char *raw, size_t raw_len,
                        const char *message_end) {
  reply_head(r, id, 0);
  buf_str(r, ",\"fault\":\"");
  buf_str(r, fault);
  buf_str(r, "\",\"error\":");
  buf m = {0};
  buf_str(&m, message_start);
  if (raw) {
    buf_str(&m, ": ");
    /* A bounded preview, at most 200 characters, always valid text. */
    size_t n = 0, chars = 0;
    while (n < raw_len && chars < 200) {
      n++;
      while (n < raw_len && (((const u8 *)raw)[n] & 0xc0) == 0x80) n++;
      chars++;
    }
    buf_put(&m, raw, n);
    if (n < raw_len) buf_str(&m, "\xe2\x80\xa6");
  }
  if (message_end) buf_str(&m, message_end);
  buf_json_string(r, (const u8 *)(m.p ? m.p : ""), m.n, m.n);
  buf_free(&m);
  buf_str(r, "}\n");
}

static void message_join(buf *m, const char *a, const char *b, const char *c) {
  buf_str(m, a);
  buf_str(m, b);
  if (c) buf_str(m, c);
}

/* Parses `raw` (may be NULL) as what `export_name` returned. On success returns 1 with the minified
 * text in `out`; otherwise writes a fault reply into `r` and returns 0. */
static int parse_returned(buf *r, i64 id, const char *export_name, const char *raw, buf *out, json_field *fields,
                          int nfields, json_parser *p, size_t *raw_len) {
  buf m = {0};
  if (!raw) {
    message_join(&m, export_name, " returned NULL, which is not an answer here", NULL);
    reply_fault(r, id, "bad-reply", m.p, NULL, 0, NULL);
    buf_free(&m);
    return 0;
  }
  size_t n = str_len(raw);
  *raw_len = n;
  if (n > g_line_cap - 1024) {
    message_join(&m, export_name, " returned more than the line cap allows", NULL);
    reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
    buf_free(&m);
    return 0;
  }
  if (n == 0) {
    message_join(&m, export_name, " returned an empty string, which is not JSON", NULL);
    reply_fault(r, id, "bad-reply", m.p, NULL, 0, NULL);
    buf_free(&m);
    return 0;
  }
  if (!json_parse(p, (const u8 *)raw, n, out, fields, nfields)) {
    message_join(&m, export_name, " returned invalid JSON (", p->error);
    buf_str(&m, " at byte ");
    buf_i64(&m, (i64)p->i);
    buf_str(&m, ")");
    reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
    buf_free(&m);
    return 0;
  }
  buf_free(&m);
  return 1;
}

/* start, invoke and stop answer with a result envelope (SPEC §4.4). Returns 1 for ok:true. */
static int reply_envelope(buf *r, i64 id, const char *export_name, const char *raw, int need_result) {
  int succeeded = 0;
  json_field f[3] = {{"ok", 0, 0}, {"result", 0, 0}, {"error", 0, 0}};
  json_parser p;
  buf out = {0}, m = {0};
  size_t n = 0;
  if (!parse_returned(r, id, export_name, raw, &out, f, 3, &p, &n)) goto done;
  if (p.top != '{') {
    message_join(&m, export_name, " returned ", json_kind(p.top));
    buf_str(&m, " where a result envelope object belongs");
    reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
    goto done;
  }
  int ok_true = field_present(&f[0]) && str_is(field_text(&out, &f[0]), field_len(&f[0]), "true");
  int ok_false = field_present(&f[0]) && str_is(field_text(&out, &f[0]), field_len(&f[0]), "false");
  if (!ok_true && !ok_false) {
    message_join(&m, export_name, field_present(&f[0]) ? " returned an envelope whose \"ok\" is not a boolean"
                                                       : " returned an envelope without \"ok\"",
                 NULL);
    reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
    goto done;
  }
  if (ok_true) {
    if (need_result && !field_present(&f[1])) {
      message_join(&m, export_name, " returned ok:true without a \"result\"", NULL);
      reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
      goto done;
    }
    reply_head(r, id, 1);
    succeeded = 1;
    if (field_present(&f[1])) {
      buf_str(r, ",\"result\":");
      buf_put(r, field_text(&out, &f[1]), field_len(&f[1]));
    }
    buf_str(r, "}\n");
    goto done;
  }
  reply_head(r, id, 0);
  buf_str(r, ",\"error\":");
  if (field_present(&f[2]) && field_text(&out, &f[2])[0] == '"') {
    buf_put(r, field_text(&out, &f[2]), field_len(&f[2]));
  } else if (field_present(&f[2]) && !str_is(field_text(&out, &f[2]), field_len(&f[2]), "null")) {
    message_join(&m, export_name, " failed: ", NULL);
    buf_put(&m, field_text(&out, &f[2]), field_len(&f[2]));
    buf_json_string(r, (const u8 *)m.p, m.n, 4096);
  } else {
    message_join(&m, export_name, " reported a failure (ok:false) without an error message", NULL);
    buf_json_string(r, (const u8 *)m.p, m.n, m.n);
  }
  buf_str(r, "}\n");
done:
  buf_free(&out);
  buf_free(&m);
  return succeeded;
}

/* gate and command answer with any JSON value, or NULL; the parent interprets it (SPEC §4.5).
 * A reply without the member means NULL. */
static void reply_value(buf *r, i64 id, const char *export_name, const char *member, const char *raw) {
  if (!raw) {
    /* NULL leaves the member out, so the parent can tell it from a JSON null. */
    reply_head(r, id, 1);
    buf_str(r, "}\n");
    return;
  }
  json_parser p;
  buf out = {0};
  size_t n = 0;
  if (parse_returned(r, id, export_name, raw, &out, NULL, 0, &p, &n)) {
    reply_head(r, id, 1);
    buf_str(r, ",\"");
    buf_str(r, member);
    buf_str(r, "\":");
    buf_put(r, out.p, out.n);
    buf_str(r, "}\n");
  }
  buf_free(&out);
}

static void release(const char *p) {
  if (!p) return;
  plugin.release(p);
}

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
  buf out = {0}, line = {0}, m = {0};
  size_t n = str_len(raw);
  int parsed = n > 0 && n < g_line_cap - 1024 && json_parse(&p, (const u8 *)raw, n, &out, f, 2);
  if (parsed && p.top == '{') {
    buf_str(&line, "{\"event\":\"submit\"");
    if (field_present(&f[0])) {
      buf_str(&line, ",\"goal\":");
      buf_put(&line, field_text(&out, &f[0]), field_len(&f[0]));
    }
    if (field_present(&f[1])) {
      buf_str(&line, ",\"wantResult\":");
      buf_put(&line, field_text(&out, &f[1]), field_len(&f[1]));
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

/* ------------------------------------------------------------------------------------------ */
/* Requests.                                                                                    */

/* Copies a field's raw JSON text into a NUL-terminated buffer, or `fallback` when absent. */
static void field_copy(buf *dst, const buf *src, const json_field *f, const char *fallback) {
  if (field_present(f)) buf_put(dst, field_text(src, f), field_len(f));
  else buf_str(dst, fallback);
}
static void field_string(buf *dst, const buf *src, const json_field *f) {
  if (field_present(f) && field_text(src, f)[0] == '"') json_unescape((const u8 *)field_text(src, f), field_len(f), dst);
  buf_str(dst, "");
}

static void bad_request(const char *why, const char *line, size_t n) {
  buf m = {0};
  buf_str(&m, "the plugin host ignored a request it could not read (");
  buf_str(&m, why);
  buf_str(&m, "): ");
  buf_put(&m, line, n > 200 ? 200 : n);
  emit(EV_LOG, "0", 4, m.p ? m.p : why);
  buf_free(&m);
}

/* The id of a request the parser refused, when the line starts the way the parent writes every
 * request ({"id":<digits>,...}): such a request is answered with a fault instead of being ignored,
 * so the call it belongs to fails at once rather than waiting for a reply that never comes. */
static i64 leading_id(const char *line, size_t n) {
  size_t i = 0;
  while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i + 6 > n || line[i] != '{' || line[i + 1] != '"' || line[i + 2] != 'i' || line[i + 3] != 'd' || line[i + 4] != '"' || line[i + 5] != ':') return -1;
  i += 6;
  i64 v = 0;
  size_t digits = 0;
  while (i < n && is_digit((u8)line[i]) && digits < 18) v = v * 10 + (line[i++] - '0'), digits++;
  return digits && i < n && (line[i] == ',' || line[i] == '}') ? v : -1;
}

static void handle(const char *line, size_t n) {
  enum { F_ID, F_KIND, F_TOOL, F_ARGS, F_CONTEXT, F_NAME, F_TEXT, F_SEQ, F_COUNT };
  json_field f[F_COUNT] = {{"id", 0, 0},      {"kind", 0, 0}, {"tool", 0, 0}, {"arguments", 0, 0},
                           {"context", 0, 0}, {"name", 0, 0}, {"text", 0, 0}, {"seq", 0, 0}};
  json_parser p;
  buf req = {0}, kind = {0}, a = {0}, b = {0}, r = {0};
  i64 id = -1;
  if (!json_parse(&p, (const u8 *)line, n, &req, f, F_COUNT) || p.top != '{') {
    const char *why = p.error ? p.error : "not an object";
    bad_request(why, line, n);
    id = leading_id(line, n);
    if (id > 0) {
      reply_fault(&r, id, "bad-request", "the plugin host could not read this request", why, str_len(why), NULL);
      call_end(id, NULL, &r);
    }
    goto done;
  }
  if (field_present(&f[F_ID])) {
    buf idtext = {0};
    field_copy(&idtext, &req, &f[F_ID], "");
    id = idtext.p ? parse_call_id(idtext.p) : -1;
    buf_free(&idtext);
  }
  field_string(&kind, &req, &f[F_KIND]);
  if (id <= 0 || !kind.p) {
    bad_request("no positive integer id or no kind", line, n);
    goto done;
  }
  if (str_is(kind.p, kind.n, "ack")) {
    /* the parent recorded a registered child: wake register_child (no reply) */
    buf seq = {0};
    field_copy(&seq, &req, &f[F_SEQ], "");
    i64 n = seq.p ? parse_call_id(seq.p) : -1;
    buf_free(&seq);
    lock(&g_pool_mu);
    if (n > g_child_acked) g_child_acked = n;
    x_pthread_cond_broadcast(&g_pool_cv);
    unlock(&g_pool_mu);
  } else if (str_is(kind.p, kind.n, "invoke") || str_is(kind.p, kind.n, "gate")) {
    int is_invoke = kind.p[0] == 'i';
    field_string(&a, &req, &f[F_TOOL]);
    field_copy(&b, &req, &f[F_ARGS], "{}");
    if (a.failed || b.failed) goto oom;
    call *c = is_invoke ? call_begin(id) : NULL;
    const char *raw = is_invoke ? plugin.invoke(a.p, b.p) : plugin.gate(a.p, b.p);
    if (is_invoke) reply_envelope(&r, id, "cxagent_plugin_invoke", raw, 1);
    else reply_value(&r, id, "cxagent_plugin_gate", "gate", raw);
    release(raw);
    call_end(id, c, &r);
  } else if (str_is(kind.p, kind.n, "command")) {
    field_string(&a, &req, &f[F_NAME]);
    field_string(&b, &req, &f[F_TEXT]);
    if (a.failed || b.failed) goto oom;
    if (!plugin.command) {
      buf m = {0};
      buf_str(&m, "the plugin declares commands but does not export cxagent_plugin_command, so '");
      buf_str(&m, a.p);
      buf_str(&m, "' cannot run");
      reply_fault(&r, id, "missing-export", m.p ? m.p : "", NULL, 0, NULL);
      buf_free(&m);
      call_end(id, NULL, &r);
      goto done;
    }
    call *c = call_begin(id);
    const char *raw = plugin.command(a.p, b.p);
    reply_value(&r, id, "cxagent_plugin_command", "command", raw);
    release(raw);
    call_end(id, c, &r);
  } else if (str_is(kind.p, kind.n, "start")) {
    field_copy(&b, &req, &f[F_CONTEXT], "{}");
    if (b.failed) goto oom;
    const char *raw = plugin.start(b.p);
    int started = reply_envelope(&r, id, "cxagent_plugin_start", raw, 0);
    release(raw);
    if (started) poll_begin(); /* poll starts only once start has succeeded */
    call_end(id, NULL, &r);
  } else if (str_is(kind.p, kind.n, "stop")) {
    poll_end();
    const char *raw = plugin.stop();
    reply_envelope(&r, id, "cxagent_plugin_stop", raw, 0);
    release(raw);
    call_end(id, NULL, &r);
  } else {
    buf m = {0};
    buf_str(&m, "the plugin host does not know the request kind '");
    buf_str(&m, kind.p);
    buf_str(&m, "'");
    reply_fault(&r, id, "bad-request", m.p ? m.p : "", NULL, 0, NULL);
    buf_free(&m);
    call_end(id, NULL, &r);
  }
  goto done;
oom:
  reply_fault(&r, id, "internal", "the plugin host ran out of memory reading the request", NULL, 0, NULL);
  call_end(id, NULL, &r);
done:
  buf_free(&req);
  buf_free(&kind);
  buf_free(&a);
  buf_free(&b);
  buf_free(&r);
}

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

static shim_key_t g_role_key; /* a pool thread's id, for "is this thread the role holder?" */
static int g_more_buffered;  /* the role holder has another complete request already read */

/* A reply may wait for its neighbours only on the role holder, and only while more requests are
 * already read: serving them, or handing the role on, sends it soon after. */
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

/* Returns a malloc'd NUL-terminated line (without '\n'), or NULL at end of input. Only the role
 * holder calls this, so the buffer needs no lock. */
static char *next_line(size_t *out_len) {
  for (;;) {
    size_t i = g_in_scanned > g_in_off ? g_in_scanned : g_in_off;
    while (i < g_in_len && g_in_buf[i] != '\n') i++;
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
      while (j < g_in_len && g_in_buf[j] != '\n') j++;
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
      for (size_t k = 0; k < rest; k++) g_in_buf[k] = g_in_buf[g_in_off + k];
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
    /* Before sleeping in read, look for the next request for a moment (100 µs by default): on a
     * VM, waking a halted CPU costs the writer an interrupt worth tens of microseconds, so a
     * request that follows closely is cheaper to both sides if it finds this thread awake. Measured
     * here: sequential calls about twice as fast. The cost is at most that moment of CPU per gap. */
    if (g_spin_ns > 0) {
      i64 until = mono_ns() + g_spin_ns;
      for (;;) {
        struct shim_pollfd pf = {g_in, SHIM_POLLIN, 0};
        if (x_poll(&pf, 1, 0) > 0 || mono_ns() > until) break;
      }
    }
    ssize_t r = x_read(g_in, g_in_buf + g_in_len, g_in_cap - g_in_len);
    if (r > 0) {
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
      g_busy_since = mono_ns();
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

/* Watches the role holder's call; past the hand-off time, passes the role to another thread. */
static void *monitor_thread(void *unused) {
  (void)unused;
  lock(&g_pool_mu);
  while (!g_exit_requested && !g_in_eof) {
    if (!g_busy_since) {
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

