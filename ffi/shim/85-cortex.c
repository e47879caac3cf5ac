/* ------------------------------------------------------------------------------------------ */
/* Cortex native plugins: a library that exports `cortex_plugin_init` and fills a table of       */
/* function pointers, whose strings cross as buffers passed by value (which bun:ffi cannot do). */
/*                                                                                             */
/* The plugin host's JavaScript calls cortex_plugin_init itself (two pointers and an int), checks */
/* the table, and hands it over with shim_cortex_set. From then on this part translates: it     */
/* reads plugin_info and the descriptors for the JavaScript side (shim_cortex_info,             */
/* shim_cortex_descriptor), and puts adapters with the cxagent exports' signatures in `plugin`, */
/* so the pool, the one locked writer, the ordering of replies and abandonment serve a Cortex   */
/* plugin unchanged:                                                                           */
/*   - invoke calls tool_execute with borrowed buffers (cap 0) and builds the reply itself from */
/*     the ToolResult (g_invoke_reply);                                                        */
/*   - start answers ok (a Cortex plugin has no start); gate answers NULL (its tools are never  */
/*     "dynamic");                                                                             */
/*   - stop calls plugin_drop exactly once, then answers ok; while calls are still inside       */
/*     tool_execute, the drop waits for the last of them to return, never runs under them;    */
/*   - release frees the strings this part built.                                             */
/* Every buffer a table function returns is copied into a string of the shim's own and given   */
/* back to the table's buffer_free at once, as it came (cap unchanged), on every path: empty,  */
/* oversized, invalid. Buffers this part lends the plugin are never passed to buffer_free.     */
/* In check mode (97-check-cortex.c) each returned buffer is judged before it is given back.   */

typedef struct {
  u8 *ptr;
  size_t len;
  size_t cap;
} cortex_buffer; /* CortexBuffer */

typedef struct {
  u32 abi_version;
  void *plugin;
  cortex_buffer (*plugin_info)(void *plugin);
  size_t (*tool_count)(void *plugin);
  cortex_buffer (*tool_descriptor)(void *plugin, size_t index);
  cortex_buffer (*tool_execute)(void *plugin, cortex_buffer tool_name, cortex_buffer input_json, cortex_buffer invocation_json);
  void (*plugin_drop)(void *plugin);
  void (*buffer_free)(cortex_buffer buffer);
} cortex_api; /* CortexPluginApi */

/* The layout pinned against a real build of the Cortex SDK (x86-64 and every LP64 target). */
typedef char cortex_buffer_is_24_bytes[sizeof(cortex_buffer) == 24 ? 1 : -1];
typedef char cortex_api_is_64_bytes[sizeof(cortex_api) == 64 ? 1 : -1];

#define CORTEX_API __attribute__((visibility("default")))

static cortex_api g_cortex;
static char *g_cortex_session = NULL;     /* "session_id":…,"actor":null,"source":… as JSON members */
static shim_mutex_t g_cortex_mu;          /* guards the three below */
static int g_cortex_running, g_cortex_stopping, g_cortex_dropped;

/* What went wrong with a buffer, as the JavaScript side reads it (see shim_cortex_info). */
enum { CORTEX_EMPTY = -1, CORTEX_LEN_OVER_CAP = -2, CORTEX_TOO_BIG = -3, CORTEX_NO_MEMORY = -4, CORTEX_NULL_WITH_LEN = -5 };

static const char *cortex_problem(i64 code) {
  switch (code) {
    case CORTEX_EMPTY: return "an empty buffer";
    case CORTEX_NULL_WITH_LEN: return "a buffer whose ptr is NULL but whose len is not 0";
    case CORTEX_LEN_OVER_CAP: return "a buffer whose len is larger than its cap";
    case CORTEX_TOO_BIG: return "a buffer larger than the line cap allows";
    default: return "a buffer the plugin host had no memory to copy";
  }
}

/* The functions of the table that return a buffer, as check events name them. */
enum { CORTEX_FROM_INFO, CORTEX_FROM_DESCRIPTOR, CORTEX_FROM_EXECUTE };

/* Check mode (97-check-cortex.c): lends each call fresh copies of its buffers, and judges each
 * returned buffer before (or instead of) giving it to buffer_free. All NULL in an ordinary host. */
typedef struct cortex_lent cortex_lent;
static struct {
  cortex_lent *(*lend)(cortex_buffer *name, cortex_buffer *input, cortex_buffer *context);
  void (*release)(cortex_buffer b, int from, const char *anchor, const cortex_lent *lent);
  void (*give_back)(cortex_lent *lent);
} g_cortex_check;

/* Copies a returned buffer into a NUL-terminated string of the shim's own (NUL bytes inside are
 * kept: *len counts them) and releases the buffer through the plugin's buffer_free, exactly once,
 * whatever it holds (in check mode, g_cortex_check.release does, or names why it must not).
 * Returns NULL with *len set to one of the codes above when there is nothing to copy. `anchor` is
 * a local of the function that called the table (check mode tells its stack by it). */
static char *cortex_take(cortex_buffer b, i64 *len, int from, const char *anchor, const cortex_lent *lent) {
  char *copy = NULL;
  if (!b.ptr && b.len != 0) *len = CORTEX_NULL_WITH_LEN;
  else if (!b.ptr || b.len == 0) *len = CORTEX_EMPTY;
  else if (b.len > b.cap) *len = CORTEX_LEN_OVER_CAP;
  else if (b.len > g_line_cap - 1024) *len = CORTEX_TOO_BIG;
  else if (!(copy = (char *)x_malloc(b.len + 1))) *len = CORTEX_NO_MEMORY;
  else {
    mem_copy(copy, b.ptr, b.len);
    copy[b.len] = 0;
    *len = (i64)b.len;
  }
  if (g_cortex_check.release) g_cortex_check.release(b, from, anchor, lent);
  else g_cortex.buffer_free(b);
  return copy;
}

static const char *cortex_ok(void) {
  static const char text[] = "{\"ok\":true}";
  char *p = (char *)x_malloc(sizeof text);
  if (p) mem_copy(p, text, sizeof text);
  return p;
}

static const char *cortex_start(const char *context_json) {
  (void)context_json;
  return cortex_ok();
}

static const char *cortex_gate(const char *tool, const char *call_json) {
  (void)tool;
  (void)call_json;
  return NULL;
}

/* Drops the plugin if nothing runs in it any more and stop was asked for; returns 1 if it did. */
static int cortex_drop_if_idle_locked(void) {
  if (!g_cortex_stopping || g_cortex_running || g_cortex_dropped) return 0;
  g_cortex_dropped = 1;
  return 1;
}

static const char *cortex_stop(void) {
  lock(&g_cortex_mu);
  g_cortex_stopping = 1;
  int drop = cortex_drop_if_idle_locked();
  int running = g_cortex_running;
  unlock(&g_cortex_mu);
  if (drop) {
    g_cortex.plugin_drop(g_cortex.plugin);
  } else if (running) {
    buf m = {0};
    buf_str(&m, "plugin_drop waits: ");
    buf_i64(&m, running);
    buf_str(&m, running == 1 ? " call is" : " calls are");
    buf_str(&m, " still inside tool_execute, and dropping the plugin under them would free what they use; it runs when the last of them returns");
    emit(EV_LOG, "0", 3, m.p ? m.p : "plugin_drop waits for calls still inside tool_execute");
    buf_free(&m);
  }
  return cortex_ok();
}

static void cortex_release(const char *p) { x_free((void *)p); }

static void cortex_failure(buf *r, i64 id, const char *message) {
  reply_head(r, id, 0);
  buf_str(r, ",\"error\":");
  buf_json_string(r, (const u8 *)message, str_len(message), str_len(message));
  buf_str(r, "}\n");
}

/* Turns a ToolResult {"output": string, "media": [attachment], "is_error": bool} into a reply
 * carrying the JobResult {success: !is_error, output: {content: output, media}, errorMessage:
 * output when is_error}. Anything else is a bad reply, with a bounded preview of what came. */
static void cortex_result(buf *r, i64 id, const char *text, size_t n) {
  enum { F_OUTPUT, F_MEDIA, F_IS_ERROR };
  json_field f[3] = {{"output", 0, 0}, {"media", 0, 0}, {"is_error", 0, 0}};
  json_parser p;
  buf copy = {0}, m = {0};
  const char *t = json_parse_line(&p, (const u8 *)text, n, &copy, f, 3);
  if (!t) {
    buf_str(&m, "tool_execute returned invalid JSON (");
    buf_str(&m, p.error ? p.error : "unreadable");
    buf_str(&m, " at byte ");
    buf_i64(&m, (i64)p.i);
    buf_str(&m, ")");
  } else if (p.top != '{') {
    buf_str(&m, "tool_execute returned ");
    buf_str(&m, json_kind(p.top));
    buf_str(&m, " where a ToolResult object belongs");
  } else if (!field_present(&f[F_OUTPUT]) || field_text(t, &f[F_OUTPUT])[0] != '"') {
    buf_str(&m, field_present(&f[F_OUTPUT]) ? "tool_execute returned a ToolResult whose \"output\" is not a string"
                                            : "tool_execute returned a ToolResult without \"output\"");
  } else if (!field_present(&f[F_IS_ERROR]) || (!str_is(field_text(t, &f[F_IS_ERROR]), field_len(&f[F_IS_ERROR]), "true") &&
                                                !str_is(field_text(t, &f[F_IS_ERROR]), field_len(&f[F_IS_ERROR]), "false"))) {
    buf_str(&m, field_present(&f[F_IS_ERROR]) ? "tool_execute returned a ToolResult whose \"is_error\" is not a boolean"
                                              : "tool_execute returned a ToolResult without \"is_error\"");
  } else if (field_present(&f[F_MEDIA]) && field_text(t, &f[F_MEDIA])[0] != '[' &&
             !str_is(field_text(t, &f[F_MEDIA]), field_len(&f[F_MEDIA]), "null")) {
    buf_str(&m, "tool_execute returned a ToolResult whose \"media\" is not an array");
  }
  if (m.n || m.failed) {
    reply_fault(r, id, "bad-reply", m.p ? m.p : "tool_execute returned something that is not a ToolResult", text, n, NULL);
    goto done;
  }
  int is_error = str_is(field_text(t, &f[F_IS_ERROR]), field_len(&f[F_IS_ERROR]), "true");
  int has_media = field_present(&f[F_MEDIA]) && field_text(t, &f[F_MEDIA])[0] == '[';
  size_t output_n = field_len(&f[F_OUTPUT]);
  size_t reply_n = output_n * (is_error ? 2 : 1) + (has_media ? field_len(&f[F_MEDIA]) : 2) + 256;
  if (reply_n > g_line_cap - 1024) {
    /* an error's output is sent twice (content and errorMessage): it must fit one line as well */
    reply_fault(r, id, "bad-reply", "tool_execute returned a ToolResult too large for one protocol line", NULL, 0, NULL);
    goto done;
  }
  buf_reserve(r, reply_n);
  reply_head(r, id, 1);
  buf_str(r, ",\"result\":{\"success\":");
  buf_str(r, is_error ? "false" : "true");
  buf_str(r, ",\"output\":{\"content\":");
  buf_put(r, field_text(t, &f[F_OUTPUT]), output_n);
  buf_str(r, ",\"media\":");
  if (has_media) buf_put(r, field_text(t, &f[F_MEDIA]), field_len(&f[F_MEDIA]));
  else buf_str(r, "[]");
  buf_str(r, "},\"errorMessage\":");
  if (is_error) buf_put(r, field_text(t, &f[F_OUTPUT]), output_n);
  else buf_str(r, "null");
  buf_str(r, "}}\n");
done:
  buf_free(&copy);
  buf_free(&m);
}

/* invoke: tool_execute(plugin, tool_name, input_json, invocation_json), each a buffer the shim
 * lends for the call (cap 0, not NUL-terminated as far as the plugin knows). */
static void cortex_invoke_reply(buf *r, i64 id, const char *tool, const char *args) {
  lock(&g_cortex_mu);
  int stopping = g_cortex_stopping;
  if (!stopping) g_cortex_running++;
  unlock(&g_cortex_mu);
  if (stopping) {
    cortex_failure(r, id, "the plugin was stopped before tool_execute could run this call");
    return;
  }
  size_t tool_n = str_len(tool);
  buf invocation = {0};
  buf_str(&invocation, "{\"tool_name\":");
  buf_json_string(&invocation, (const u8 *)tool, tool_n, tool_n);
  /* g_cortex_session: "session_id":…,"actor":null,"source":… (plugin-host/shim.ts cortex.set) */
  buf_str(&invocation, ",");
  buf_str(&invocation, g_cortex_session ? g_cortex_session : "\"session_id\":null,\"actor\":null,\"source\":null");
  buf_str(&invocation, ",\"execution_scope\":\"foreground\"}");
  char *text = NULL;
  i64 n = CORTEX_NO_MEMORY;
  if (!invocation.failed) {
    char anchor = 0;
    cortex_buffer name = {(u8 *)tool, tool_n, 0};
    cortex_buffer input = {(u8 *)args, str_len(args), 0};
    cortex_buffer context = {(u8 *)invocation.p, invocation.n, 0};
    cortex_lent *lent = g_cortex_check.lend ? g_cortex_check.lend(&name, &input, &context) : NULL;
    text = cortex_take(g_cortex.tool_execute(g_cortex.plugin, name, input, context), &n, CORTEX_FROM_EXECUTE, &anchor, lent);
    if (lent) g_cortex_check.give_back(lent);
  }
  buf_free(&invocation);
  lock(&g_cortex_mu);
  g_cortex_running--;
  int drop = cortex_drop_if_idle_locked();
  unlock(&g_cortex_mu);
  if (drop) g_cortex.plugin_drop(g_cortex.plugin);
  if (text) {
    cortex_result(r, id, text, (size_t)n);
    x_free(text);
  } else if (n == CORTEX_NO_MEMORY && invocation.failed) {
    reply_fault(r, id, "internal", "the plugin host ran out of memory building the call's invocation_json", NULL, 0, NULL);
  } else {
    buf m = {0};
    buf_str(&m, "tool_execute returned ");
    buf_str(&m, cortex_problem(n));
    buf_str(&m, ", not a ToolResult");
    reply_fault(r, id, "bad-reply", m.p ? m.p : "tool_execute returned no ToolResult", NULL, 0, NULL);
    buf_free(&m);
  }
}

/* Takes the table cortex_plugin_init filled (64 bytes, checked by the caller: no NULL entry, a
 * plugin state) and the session id as JSON text, and serves the plugin from then on. 0 on
 * success, -1 without memory or a lock. */
CORTEX_API int shim_cortex_set(const void *table, const char *session_json) {
  mem_copy(&g_cortex, table, sizeof g_cortex);
  if (x_pthread_mutex_init(&g_cortex_mu, NULL)) return -1;
  size_t n = str_len(session_json);
  g_cortex_session = (char *)x_malloc(n + 1);
  if (!g_cortex_session) return -1;
  mem_copy(g_cortex_session, session_json, n + 1);
  plugin.start = cortex_start;
  plugin.invoke = NULL; /* never called: g_invoke_reply answers invoke */
  plugin.gate = cortex_gate;
  plugin.stop = cortex_stop;
  plugin.release = cortex_release;
  plugin.poll = NULL;
  plugin.command = NULL;
  g_invoke_reply = cortex_invoke_reply;
  return 0;
}

/* plugin_info, copied (the caller frees it with shim_cortex_release); *len is its length, or a
 * negative code when there was nothing to copy. The buffer itself is already freed. */
CORTEX_API char *shim_cortex_info(i64 *len) {
  char anchor = 0;
  return cortex_take(g_cortex.plugin_info(g_cortex.plugin), len, CORTEX_FROM_INFO, &anchor, NULL);
}

CORTEX_API u64 shim_cortex_count(void) { return (u64)g_cortex.tool_count(g_cortex.plugin); }

CORTEX_API char *shim_cortex_descriptor(u64 index, i64 *len) {
  char anchor = 0;
  return cortex_take(g_cortex.tool_descriptor(g_cortex.plugin, (size_t)index), len, CORTEX_FROM_DESCRIPTOR, &anchor, NULL);
}

CORTEX_API void shim_cortex_release(char *p) { x_free(p); }
