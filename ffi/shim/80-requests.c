/* ------------------------------------------------------------------------------------------ */
/* Requests.                                                                                    */

/* A field's raw JSON text, NUL-terminated where it lies, or `fallback` when absent. The text is
 * the request's own copy, and what follows a member's value (',', '}' or a blank) is not read
 * again once the members have been found, so no copy is needed. */
static const char *field_in_place(char *text, const json_field *f, const char *fallback) {
  if (!field_present(f)) return fallback;
  text[f->end] = 0;
  return text + f->start;
}
static void field_string(buf *dst, const char *text, const json_field *f) {
  if (field_present(f) && field_text(text, f)[0] == '"') json_unescape((const u8 *)field_text(text, f), field_len(f), dst);
  buf_str(dst, "");
}
/* A field holding a positive decimal integer (an id, a sequence number), or -1. */
static i64 field_id(const char *text, const json_field *f) {
  if (!field_present(f) || field_len(f) > 18) return -1;
  i64 v = 0;
  for (size_t i = 0; i < field_len(f); i++) {
    u8 c = (u8)text[f->start + i];
    if (!is_digit(c)) return -1;
    v = v * 10 + (c - '0');
  }
  return field_len(f) ? v : -1;
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
  if (i + 6 > n || line[i] != '{' || line[i + 1] != '"' || line[i + 2] != 'i' || line[i + 3] != 'd' || line[i + 4] != '"' ||
      line[i + 5] != ':')
    return -1;
  i += 6;
  i64 v = 0;
  size_t digits = 0;
  while (i < n && is_digit((u8)line[i]) && digits < 18) v = v * 10 + (line[i++] - '0'), digits++;
  return digits && i < n && (line[i] == ',' || line[i] == '}') ? v : -1;
}

/* A kind of plugin whose calls answer in a shape of its own builds an invoke's reply itself, into
 * `r`, between the call's begin and end (Cortex: 85-cortex.c). NULL: the cxagent ABI's envelope. */
static void (*g_invoke_reply)(buf *r, i64 id, const char *tool, const char *args);

/* Serves one request line (the caller's own malloc'd copy, which this may write into). */
static void handle(char *line, size_t n) {
  enum { F_ID, F_KIND, F_TOOL, F_ARGS, F_CONTEXT, F_NAME, F_TEXT, F_SEQ, F_VALUE, F_ERROR, F_COUNT };
  json_field f[F_COUNT] = {{"id", 0, 0},      {"kind", 0, 0}, {"tool", 0, 0}, {"arguments", 0, 0},
                           {"context", 0, 0}, {"name", 0, 0}, {"text", 0, 0}, {"seq", 0, 0},
                           {"value", 0, 0},   {"error", 0, 0}};
  json_parser p;
  buf req = {0}, kind = {0}, a = {0}, b = {0}, r = {0};
  i64 id = -1;
  /* validated in place; a line that breaks lines between tokens ('\r') is read from a copy */
  char *text = (char *)json_parse_line(&p, (const u8 *)line, n, &req, f, F_COUNT);
  if (!text || p.top != '{') {
    const char *why = p.error ? p.error : "not an object";
    bad_request(why, line, n);
    id = leading_id(line, n);
    if (id > 0) {
      reply_fault(&r, id, "bad-request", "the plugin host could not read this request", why, str_len(why), NULL);
      call_end(id, NULL, &r);
    }
    goto done;
  }
  id = field_id(text, &f[F_ID]);
  field_string(&kind, text, &f[F_KIND]);
  if (id <= 0 || !kind.p) {
    bad_request("no positive integer id or no kind", line, n);
    goto done;
  }
  if (str_is(kind.p, kind.n, "ack")) {
    /* the parent recorded a registered child: wake register_child (no reply) */
    i64 n = field_id(text, &f[F_SEQ]);
    lock(&g_pool_mu);
    if (n > g_child_acked) g_child_acked = n;
    x_pthread_cond_broadcast(&g_pool_cv);
    unlock(&g_pool_mu);
  } else if (str_is(kind.p, kind.n, "secret")) {
    /* the parent's answer to host_secret (no reply); the line holds the value: wiped after */
    field_string(&a, text, &f[F_VALUE]);
    field_string(&b, text, &f[F_ERROR]);
    secret_answer(field_id(text, &f[F_SEQ]), field_present(&f[F_VALUE]) && !a.failed ? a.p : NULL, a.n, b.p);
    wipe(a.p, a.n);
    wipe(line, n);
    if (req.p) wipe(req.p, req.n);
  } else if (str_is(kind.p, kind.n, "cancel")) {
    /* the parent abandoned a call: native code cannot be interrupted, and its late answer is
       discarded by the parent (no reply) */
  } else if (str_is(kind.p, kind.n, "invoke") || str_is(kind.p, kind.n, "gate")) {
    int is_invoke = kind.p[0] == 'i';
    field_string(&a, text, &f[F_TOOL]);
    if (a.failed) goto oom;
    const char *args = field_in_place(text, &f[F_ARGS], "{}");
    call *c = is_invoke ? call_begin(id) : NULL;
    if (is_invoke && g_invoke_reply) {
      g_invoke_reply(&r, id, a.p, args);
    } else {
      const char *raw = is_invoke ? plugin.invoke(a.p, args) : plugin.gate(a.p, args);
      if (is_invoke) reply_envelope(&r, id, "cxagent_plugin_invoke", raw, 1);
      else reply_value(&r, id, "cxagent_plugin_gate", "gate", raw);
      release(raw);
    }
    call_end(id, c, &r);
  } else if (str_is(kind.p, kind.n, "command")) {
    field_string(&a, text, &f[F_NAME]);
    field_string(&b, text, &f[F_TEXT]);
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
    const char *raw = plugin.start(field_in_place(text, &f[F_CONTEXT], "{}"));
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
