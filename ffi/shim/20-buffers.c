/* ------------------------------------------------------------------------------------------ */
/* Small helpers (no libc string functions, so gcc never needs them either).                    */

/* Bulk helpers: copying and scanning many bytes per step. Loads and stores go through packed
 * structs, so an unaligned address is fine on every compiler. Scanning takes 16 bytes per step
 * where the compiler has vector types (gcc, clang: SSE2 or NEON code), else 8 bytes in a 64-bit
 * word (TinyCC). A step only says "some byte here may matter"; the caller then goes byte by byte. */
typedef struct __attribute__((packed)) { u64 v; } u64_unaligned;
static u64 load64(const void *p) { return ((const u64_unaligned *)p)->v; }
static void store64(void *p, u64 v) { ((u64_unaligned *)p)->v = v; }

#if defined(__GNUC__) && !defined(__TINYC__)
typedef u8 v16 __attribute__((vector_size(16)));
typedef u64 v2x64 __attribute__((vector_size(16)));
typedef struct __attribute__((packed)) { v16 v; } v16_unaligned;
#define SCAN_STEP 16
static v16 scan_load(const u8 *p) { return ((const v16_unaligned *)p)->v; }
static int scan_any(v16 m) {
  v2x64 w = (v2x64)m;
  return (w[0] | w[1]) != 0;
}
static int step_has_byte(const u8 *p, u8 c) { return scan_any(scan_load(p) == c); }
/* some byte is a quote, a backslash or a control character */
static int step_needs_care(const u8 *p) {
  v16 v = scan_load(p);
  return scan_any((v == '"') | (v == '\\') | (v < 0x20));
}
/* Four steps at once, from an address aligned to all four (so never across a page): str_len of
 * a 1 MiB result took 55 µs a step at a time and 15 µs this way (gcc -O2, the 2-vCPU VM). */
#define WIDE_STEP (4 * SCAN_STEP)
static int aligned_wide_has_zero(const u8 *p) {
  const v16 *q = (const v16 *)p;
  return scan_any((q[0] == 0) | (q[1] == 0) | (q[2] == 0) | (q[3] == 0));
}
#else
#define SCAN_STEP 8
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* Nonzero when some byte of x is zero, or below `n` (n <= 128), or equal to c. */
static u64 word_has_zero(u64 x) { return (x - ONES) & ~x & HIGHS; }
static u64 word_has_below(u64 x, u8 n) { return (x - ONES * n) & ~x & HIGHS; }
static u64 word_has_byte(u64 x, u8 c) { return word_has_zero(x ^ (ONES * c)); }
static int step_has_byte(const u8 *p, u8 c) { return word_has_byte(load64(p), c) != 0; }
static int step_needs_care(const u8 *p) {
  u64 w = load64(p);
  return (word_has_byte(w, '"') | word_has_byte(w, '\\') | word_has_below(w, 0x20)) != 0;
}
#define WIDE_STEP SCAN_STEP
static int aligned_wide_has_zero(const u8 *p) { return word_has_zero(*(const u64 *)(const void *)p) != 0; }
#endif

static size_t str_len(const char *s) {
  const u8 *p = (const u8 *)s;
  /* byte by byte up to an aligned address, then aligned steps, which never cross into an
   * unmapped page */
  while (((unsigned long)p & (WIDE_STEP - 1)) != 0) {
    if (!*p) return (size_t)(p - (const u8 *)s);
    p++;
  }
  while (!aligned_wide_has_zero(p)) p += WIDE_STEP;
  while (*p) p++;
  return (size_t)(p - (const u8 *)s);
}
/* Copies 32 bytes per step; every step loads before it stores, so a forward copy into an
 * overlapping lower address (compacting a buffer) is safe too. */
static void mem_copy(void *dst, const void *src, size_t n) {
  u8 *d = (u8 *)dst;
  const u8 *s = (const u8 *)src;
  while (n >= 32) {
    u64 a = load64(s), b = load64(s + 8), c = load64(s + 16), e = load64(s + 24);
    store64(d, a);
    store64(d + 8, b);
    store64(d + 16, c);
    store64(d + 24, e);
    d += 32;
    s += 32;
    n -= 32;
  }
  while (n >= 8) {
    store64(d, load64(s));
    d += 8;
    s += 8;
    n -= 8;
  }
  while (n--) *d++ = *s++;
}
/* The index of the first byte equal to c in s[0..n), or n. */
static size_t find_byte(const u8 *s, size_t n, u8 c) {
  size_t i = 0;
  while (i + SCAN_STEP <= n && !step_has_byte(s + i, c)) i += SCAN_STEP;
  while (i < n && s[i] != c) i++;
  return i;
}
/* How many bytes at the start of s[0..n) surely hold no quote, backslash or control character
 * (a multiple of the step; the rest is for the caller to look at). */
static size_t plain_prefix(const u8 *s, size_t n) {
  size_t i = 0;
  while (i + SCAN_STEP <= n && !step_needs_care(s + i)) i += SCAN_STEP;
  return i;
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
