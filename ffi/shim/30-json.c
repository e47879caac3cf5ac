/* ------------------------------------------------------------------------------------------ */
/* JSON: a strict validator. It reads a document in place and reports where chosen members of  */
/* the top-level object sit in it, and whether the document holds a line break between tokens   */
/* (the only thing that keeps a valid document from being sent as one protocol line as it is). */
/* Given an output buffer, it also writes a minified copy and reports positions in that copy.  */

#define JSON_MAX_DEPTH 512

typedef struct {
  const char *name;
  size_t start, end; /* offsets into the text parsed (or its minified copy); end == 0 when absent */
} json_field;

typedef struct {
  const u8 *s;
  size_t n, i;
  buf *out; /* NULL: validate in place */
  int depth;
  const char *error;
  json_field *fields;
  int nfields;
  int line_break; /* a '\n' or '\r' between tokens was skipped */
  char top; /* first character of the top-level value: '{', '[', '"', 't', 'f', 'n' or a digit */
} json_parser;

static void json_ws(json_parser *p) {
  while (p->i < p->n) {
    u8 c = p->s[p->i];
    if (c == '\n' || c == '\r') p->line_break = 1;
    else if (c != ' ' && c != '\t') break;
    p->i++;
  }
}
static int json_fail(json_parser *p, const char *why) {
  if (!p->error) p->error = p->i >= p->n ? "an unexpected end" : why;
  return 0;
}
static int is_hex(u8 c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int is_digit(u8 c) { return c >= '0' && c <= '9'; }

/* Where the output stands: the position in the copy, or in the input when validating in place. */
static size_t json_at(const json_parser *p) { return p->out ? p->out->n : p->i; }
static void json_put(json_parser *p, const void *s, size_t n) {
  if (p->out) buf_put(p->out, s, n);
}
static void json_char(json_parser *p, char c) {
  if (p->out) buf_put(p->out, &c, 1);
}

static int json_string(json_parser *p) {
  size_t start = p->i++; /* opening quote */
  while (p->i < p->n) {
    p->i += plain_prefix(p->s + p->i, p->n - p->i); /* many plain bytes at a time */
    if (p->i >= p->n) break;
    u8 c = p->s[p->i];
    if (c == '"') {
      p->i++;
      json_put(p, p->s + start, p->i - start);
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
  json_put(p, p->s + start, p->i - start);
  return 1;
}

static int json_literal(json_parser *p, const char *word) {
  size_t m = str_len(word);
  if (p->i + m > p->n || !mem_equal(p->s + p->i, word, m)) return json_fail(p, "an unexpected character");
  json_put(p, word, m);
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

/* Whether the member name `key` (a string literal, quotes included) means `name`. */
static int key_is(const u8 *key, size_t n, const char *name) {
  if (find_byte(key, n, '\\') == n) return str_is((const char *)key + 1, n - 2, name); /* no escapes */
  buf k = {0};
  json_unescape(key, n, &k);
  int same = k.p && str_is(k.p, k.n, name);
  buf_free(&k);
  return same;
}

static int json_object(json_parser *p) {
  int top = p->depth == 1;
  p->i++;
  json_char(p, '{');
  json_ws(p);
  if (p->i < p->n && p->s[p->i] == '}') {
    p->i++;
    json_char(p, '}');
    return 1;
  }
  for (;;) {
    json_ws(p);
    if (p->i >= p->n || p->s[p->i] != '"') return json_fail(p, "a missing member name");
    size_t key_start = p->i;
    if (!json_string(p)) return 0;
    size_t key_end = p->i;
    json_ws(p);
    if (p->i >= p->n || p->s[p->i] != ':') return json_fail(p, "a missing ':'");
    p->i++;
    json_char(p, ':');
    json_ws(p);
    size_t value_start = json_at(p);
    if (!json_value(p)) return 0;
    if (top && p->nfields && !(p->out && p->out->failed)) {
      for (int f = 0; f < p->nfields; f++) {
        if (key_is(p->s + key_start, key_end - key_start, p->fields[f].name)) {
          p->fields[f].start = value_start;
          p->fields[f].end = json_at(p); /* a repeated key: the last one wins, as in JSON.parse */
        }
      }
    }
    json_ws(p);
    if (p->i < p->n && p->s[p->i] == ',') {
      p->i++;
      json_char(p, ',');
      continue;
    }
    if (p->i < p->n && p->s[p->i] == '}') {
      p->i++;
      json_char(p, '}');
      return 1;
    }
    return json_fail(p, "a missing ',' or '}'");
  }
}

static int json_array(json_parser *p) {
  p->i++;
  json_char(p, '[');
  json_ws(p);
  if (p->i < p->n && p->s[p->i] == ']') {
    p->i++;
    json_char(p, ']');
    return 1;
  }
  for (;;) {
    json_ws(p);
    if (!json_value(p)) return 0;
    json_ws(p);
    if (p->i < p->n && p->s[p->i] == ',') {
      p->i++;
      json_char(p, ',');
      continue;
    }
    if (p->i < p->n && p->s[p->i] == ']') {
      p->i++;
      json_char(p, ']');
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

/* Parses a whole document; returns 1, or 0 with p->error. With `out`, the minified text is left
 * there and field offsets point into it; with out == NULL, they point into `s`. */
static int json_parse(json_parser *p, const u8 *s, size_t n, buf *out, json_field *fields, int nfields) {
  p->s = s;
  p->n = n;
  p->i = 0;
  p->out = out;
  p->depth = 0;
  p->error = NULL;
  p->fields = fields;
  p->nfields = nfields;
  p->line_break = 0;
  for (int f = 0; f < nfields; f++) fields[f].start = fields[f].end = 0;
  json_ws(p);
  p->top = p->i < n ? (char)s[p->i] : 0;
  if (!json_value(p)) return 0;
  json_ws(p);
  if (p->i != n) return json_fail(p, "text after the JSON value");
  if (out && out->failed) return json_fail(p, "out of memory");
  return 1;
}

/* Validates `s` in place and returns the text its fields point into: `s` itself, or, when the
 * document breaks lines between tokens, a minified copy in `copy` (so it fits on one line). */
static const char *json_parse_line(json_parser *p, const u8 *s, size_t n, buf *copy, json_field *fields, int nfields) {
  if (!json_parse(p, s, n, NULL, fields, nfields)) return NULL;
  if (!p->line_break) return (const char *)s;
  if (!json_parse(p, s, n, copy, fields, nfields)) return NULL;
  return copy->p;
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
static const char *field_text(const char *text, const json_field *f) { return text + f->start; }
static size_t field_len(const json_field *f) { return f->end - f->start; }
