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

/* Parses `raw` (may be NULL) as what `export_name` returned. On success returns the text the fields
 * point into: `raw` itself, validated in place, or a minified copy in `copy` when `raw` breaks lines
 * between tokens. Otherwise writes a fault reply into `r` and returns NULL. */
static const char *parse_returned(buf *r, i64 id, const char *export_name, const char *raw, buf *copy, json_field *fields,
                                  int nfields, json_parser *p, size_t *raw_len) {
  buf m = {0};
  if (!raw) {
    message_join(&m, export_name, " returned NULL, which is not an answer here", NULL);
    reply_fault(r, id, "bad-reply", m.p, NULL, 0, NULL);
    buf_free(&m);
    return NULL;
  }
  size_t n = str_len(raw);
  *raw_len = n;
  if (n > g_line_cap - 1024) {
    message_join(&m, export_name, " returned more than the line cap allows", NULL);
    reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
    buf_free(&m);
    return NULL;
  }
  if (n == 0) {
    message_join(&m, export_name, " returned an empty string, which is not JSON", NULL);
    reply_fault(r, id, "bad-reply", m.p, NULL, 0, NULL);
    buf_free(&m);
    return NULL;
  }
  const char *text = json_parse_line(p, (const u8 *)raw, n, copy, fields, nfields);
  if (!text) {
    message_join(&m, export_name, " returned invalid JSON (", p->error);
    buf_str(&m, " at byte ");
    buf_i64(&m, (i64)p->i);
    buf_str(&m, ")");
    reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
    buf_free(&m);
    return NULL;
  }
  buf_free(&m);
  return text;
}

/* start, invoke and stop answer with a result envelope (SPEC §4.4). Returns 1 for ok:true. */
static int reply_envelope(buf *r, i64 id, const char *export_name, const char *raw, int need_result) {
  int succeeded = 0;
  json_field f[3] = {{"ok", 0, 0}, {"result", 0, 0}, {"error", 0, 0}};
  json_parser p;
  buf out = {0}, m = {0};
  size_t n = 0;
  const char *text = parse_returned(r, id, export_name, raw, &out, f, 3, &p, &n);
  if (!text) goto done;
  if (p.top != '{') {
    message_join(&m, export_name, " returned ", json_kind(p.top));
    buf_str(&m, " where a result envelope object belongs");
    reply_fault(r, id, "bad-reply", m.p, raw, n, NULL);
    goto done;
  }
  int ok_true = field_present(&f[0]) && str_is(field_text(text, &f[0]), field_len(&f[0]), "true");
  int ok_false = field_present(&f[0]) && str_is(field_text(text, &f[0]), field_len(&f[0]), "false");
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
    /* room for the whole reply at once: the result is copied once, straight from the plugin's
     * bytes (or their minified copy) */
    size_t result_n = field_present(&f[1]) ? field_len(&f[1]) : 0;
    buf_reserve(r, result_n + 64);
    reply_head(r, id, 1);
    succeeded = 1;
    if (field_present(&f[1])) {
      buf_str(r, ",\"result\":");
      buf_put(r, field_text(text, &f[1]), result_n);
    }
    buf_str(r, "}\n");
    goto done;
  }
  reply_head(r, id, 0);
  buf_str(r, ",\"error\":");
  if (field_present(&f[2]) && field_text(text, &f[2])[0] == '"') {
    buf_put(r, field_text(text, &f[2]), field_len(&f[2]));
  } else if (field_present(&f[2]) && !str_is(field_text(text, &f[2]), field_len(&f[2]), "null")) {
    message_join(&m, export_name, " failed: ", NULL);
    buf_put(&m, field_text(text, &f[2]), field_len(&f[2]));
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
  const char *text = parse_returned(r, id, export_name, raw, &out, NULL, 0, &p, &n);
  if (text) {
    size_t text_n = text == raw ? n : out.n;
    buf_reserve(r, text_n + 64);
    reply_head(r, id, 1);
    buf_str(r, ",\"");
    buf_str(r, member);
    buf_str(r, "\":");
    buf_put(r, text, text_n);
    buf_str(r, "}\n");
  }
  buf_free(&out);
}

static void release(const char *p) {
  if (!p) return;
  plugin.release(p);
}
