/* ------------------------------------------------------------------------------------------ */
/* Check mode (`cxagent check`; the plugin host's --check).                                    */
/*                                                                                             */
/* Wrappers around the plugin's exports and the host table that watch how the plugin keeps    */
/* the contract, and say what they see in "check" events (src/protocol/wire.ts). Nothing here  */
/* runs in an ordinary plugin host: only with --check does the JavaScript side hand the shim   */
/* these wrappers (shim_check_exports) instead of the plugin's own exports, so the serving     */
/* path is the same code either way and costs an ordinary host nothing.                        */
/*                                                                                             */
/* For every string an export returns, one event when the host releases it:                    */
/*   where     "heap"; "plugin-read-only" or "plugin-writable" (a segment of the plugin's own  */
/*             library or one it ships: a string literal, a static buffer); "library" (another */
/*             library's memory, such as strerror's); "stack" (the calling thread's stack)     */
/*   repeated  it was returned again while an earlier return of it was not yet freed           */
/*   released  whether cxagent_plugin_free gave it back to the C library's allocator: "yes",   */
/*             "no", "unknown" (not glibc's heap, or nothing glibc writes on free can show it), */
/*             or "skipped" (not heap memory, or still returned elsewhere: freeing it would    */
/*             crash the host or free it twice, so the plugin's free is not called)            */
/* How "released" is read, on glibc (measured on 2.36): malloc'd memory starts with glibc's   */
/* chunk header, and free() always writes there or into the first 16 bytes — the tcache link  */
/* and key, a fastbin or bin link, or a grown size when it merges the chunk forward — unless  */
/* it merges it backward into a free neighbour (the header's PREV_INUSE bit says when that    */
/* can happen: then "unknown"). A chunk glibc mmapped is unmapped on free (mincore tells).     */
/* Before anything is read, the chunk must look like glibc's: aligned, mapped, a size that     */
/* holds the string, and inside the main arena's heap, a thread arena's heap, or an mmapped    */
/* block of whole pages.                                                                       */
/*                                                                                             */
/* The host table's functions are watched too (96-check-table.c).                             */
/*                                                                                             */
/* Check mode also hands the reader role on at once (no 1 ms wait), so concurrent requests    */
/* run on threads of their own and races in the plugin can show.                               */

#define CHECK_API __attribute__((visibility("default")))
#define CK_ENOMEM 12

enum { CK_DESCRIBE, CK_START, CK_INVOKE, CK_GATE, CK_STOP, CK_POLL, CK_COMMAND, CK_KINDS };
static const char *const ck_export_names[CK_KINDS] = {"describe", "start", "invoke", "gate", "stop", "poll", "command"};

enum { CK_HEAP, CK_PLUGIN_RO, CK_PLUGIN_RW, CK_LIBRARY, CK_STACK };
static const char *const ck_where_names[] = {"heap", "plugin-read-only", "plugin-writable", "library", "stack"};

static struct {
  fn_void describe;
  fn_one start;
  fn_two invoke;
  fn_two gate;
  fn_void stop;
  fn_free release;
  fn_void poll;
  fn_two command;
} ck_real;

typedef struct {
  u64 start, end, where;
} ck_range;
static ck_range *ck_ranges;
static int ck_nranges;
static int ck_glibc;
static u64 ck_page = 4096, ck_heap_start;
static int (*ck_mincore)(void *, size_t, u8 *);
static void *(*ck_sbrk)(long);

typedef struct {
  const char *p;
  int kind, where, repeated;
} ck_entry;
static ck_entry *ck_live; /* strings returned and not yet freed, under ck_mu */
static int ck_live_n, ck_live_cap;
static shim_mutex_t ck_mu;
static shim_key_t ck_in_key; /* the export running on this thread, plus one; 0 outside */
static int ck_stopped;        /* stop has returned (under ck_mu) */
static int ck_misuse_seen[8][5];

static int ck_mapped(const void *p) {
  u8 v;
  void *page = (void *)((u64)p & ~(ck_page - 1));
  return ck_mincore(page, 1, &v) == 0 || err_no() != CK_ENOMEM;
}

/* The chunk header and first words of a malloc'd string, when it looks like glibc's. */
typedef struct {
  u64 size, w0, w1;
  int ok, mmapped, prev_free;
} ck_chunk;

static ck_chunk ck_look(const char *p, size_t len) {
  ck_chunk c = {0, 0, 0, 0, 0, 0};
  u64 a = (u64)p;
  if (!ck_glibc || !ck_mincore || (a & 15) || !ck_mapped(p - 16) || !ck_mapped(p + 15)) return c;
  const u64 *q = (const u64 *)(const void *)p;
  c.size = q[-1];
  c.w0 = q[0];
  c.w1 = q[1];
  u64 size = c.size & ~(u64)7;
  c.mmapped = (c.size & 2) != 0;
  u64 usable = c.mmapped ? size - 16 : size - 8;
  if (size < 32 || (size & 15) || usable < len + 1) return c;
  if (c.mmapped) {
    u64 before = q[-2]; /* glibc keeps the offset from the start of the mapping here */
    if (((a - 16 - before) & (ck_page - 1)) || ((before + size) & (ck_page - 1))) return c;
  } else if (c.size & 4) {
    /* a thread arena's chunk: its heap_info starts the 64 MiB-aligned heap it lies in */
    u64 heap = a & ~(((u64)64 << 20) - 1);
    if (!ck_mapped((const void *)heap)) return c;
    u64 heap_size = ((const u64 *)heap)[2];
    if (heap_size > ((u64)64 << 20) || a >= heap + heap_size) return c;
  } else {
    u64 top = ck_sbrk ? (u64)ck_sbrk(0) : 0;
    if (!ck_heap_start || a < ck_heap_start || a >= top) return c;
  }
  c.prev_free = !c.mmapped && !(c.size & 1);
  c.ok = 1;
  return c;
}

static const char *ck_released(const char *p, ck_chunk c) {
  if (!c.ok) return "unknown";
  if (c.mmapped) return ck_mapped(p) ? "no" : "yes";
  if (!ck_mapped(p - 16) || !ck_mapped(p + 15)) return "yes";
  const u64 *q = (const u64 *)(const void *)p;
  if (q[-1] != c.size || q[0] != c.w0 || q[1] != c.w1) return "yes";
  return c.prev_free ? "unknown" : "no";
}

static int ck_where(const char *p, const char *anchor) {
  u64 a = (u64)p, s = (u64)anchor;
  for (int i = 0; i < ck_nranges; i++)
    if (a >= ck_ranges[i].start && a < ck_ranges[i].end) return (int)ck_ranges[i].where;
  /* The export's frame lay just below its caller's, the wrapper whose local `anchor` is (64 KiB:
   * well inside the smallest thread stack glibc makes by default). */
  if (a < s && s - a < 64 * 1024) return CK_STACK;
  return CK_HEAP;
}

static const char *ck_returned(int kind, const char *p, const char *anchor) {
  if (!p) return p;
  int where = ck_where(p, anchor);
  lock(&ck_mu);
  int repeated = 0;
  for (int i = 0; i < ck_live_n; i++)
    if (ck_live[i].p == p) repeated = 1;
  if (ck_live_n == ck_live_cap) {
    int cap = ck_live_cap ? ck_live_cap * 2 : 64;
    ck_entry *grown = (ck_entry *)x_realloc(ck_live, (size_t)cap * sizeof(ck_entry));
    if (grown) {
      ck_live = grown;
      ck_live_cap = cap;
    }
  }
  if (ck_live_n < ck_live_cap) {
    ck_entry e = {p, kind, where, repeated};
    ck_live[ck_live_n++] = e;
  }
  unlock(&ck_mu);
  return p;
}

static void ck_free(const char *p) {
  if (!p) return;
  lock(&ck_mu);
  int at = -1, others = 0;
  for (int i = 0; i < ck_live_n; i++) {
    if (ck_live[i].p != p) continue;
    if (at < 0) at = i;
    else others++;
  }
  ck_entry e = {p, -1, CK_HEAP, 0};
  if (at >= 0) {
    e = ck_live[at];
    ck_live[at] = ck_live[--ck_live_n];
  }
  unlock(&ck_mu);
  if (at < 0) { /* not seen returned (tracking ran out of memory): nothing to say */
    ck_real.release(p);
    return;
  }
  size_t len = str_len(p);
  const char *released;
  if (e.where != CK_HEAP || others) {
    released = "skipped";
  } else {
    ck_chunk c = ck_look(p, len);
    ck_real.release(p);
    released = ck_released(p, c); /* reads only what free() leaves mapped; p is not used */
  }
  buf line = {0};
  buf_str(&line, "{\"event\":\"check\",\"what\":\"returned\",\"export\":\"");
  buf_str(&line, ck_export_names[e.kind]);
  buf_str(&line, "\",\"where\":\"");
  buf_str(&line, ck_where_names[e.where]);
  buf_str(&line, e.repeated || others ? "\",\"repeated\":true" : "\",\"repeated\":false");
  buf_str(&line, ",\"released\":\"");
  buf_str(&line, released);
  buf_str(&line, "\",\"length\":");
  buf_i64(&line, (i64)len);
  if (e.where != CK_HEAP || e.repeated || others || released[0] == 'n') {
    /* a string that is not heap memory is still there to show; one not released too */
    buf_str(&line, ",\"preview\":");
    buf_json_string(&line, (const u8 *)p, len > 120 ? 120 : len, 120);
  }
  buf_str(&line, "}\n");
  write_line(&line);
  buf_free(&line);
}

/* The export running on this thread, for host-table reports. */
static void ck_enter(int kind) { x_pthread_setspecific(ck_in_key, (void *)(unsigned long)(kind + 1)); }
static void ck_leave(void) { x_pthread_setspecific(ck_in_key, NULL); }

static const char *ck_describe(void) {
  char anchor;
  ck_enter(CK_DESCRIBE);
  const char *r = ck_real.describe();
  ck_leave();
  return ck_returned(CK_DESCRIBE, r, &anchor);
}
static const char *ck_start(const char *context) {
  char anchor;
  ck_enter(CK_START);
  const char *r = ck_real.start(context);
  ck_leave();
  return ck_returned(CK_START, r, &anchor);
}
static const char *ck_invoke(const char *tool, const char *args) {
  char anchor;
  ck_enter(CK_INVOKE);
  const char *r = ck_real.invoke(tool, args);
  ck_leave();
  return ck_returned(CK_INVOKE, r, &anchor);
}
static const char *ck_gate(const char *tool, const char *args) {
  char anchor;
  ck_enter(CK_GATE);
  const char *r = ck_real.gate(tool, args);
  ck_leave();
  return ck_returned(CK_GATE, r, &anchor);
}
static const char *ck_stop(void) {
  char anchor;
  ck_enter(CK_STOP);
  const char *r = ck_real.stop();
  ck_leave();
  lock(&ck_mu);
  ck_stopped = 1;
  unlock(&ck_mu);
  return ck_returned(CK_STOP, r, &anchor);
}
static const char *ck_poll(void) {
  char anchor;
  ck_enter(CK_POLL);
  const char *r = ck_real.poll();
  ck_leave();
  return ck_returned(CK_POLL, r, &anchor);
}
static const char *ck_command(const char *name, const char *args) {
  char anchor;
  ck_enter(CK_COMMAND);
  const char *r = ck_real.command(name, args);
  ck_leave();
  return ck_returned(CK_COMMAND, r, &anchor);
}

CHECK_API void shim_set_exports(void **table); /* 99-api.c */

/* Turns check mode on, before the plugin runs any export. `imports`: mincore, sbrk. `ranges`:
 * [start, end, where] for every loaded object's segments. `glibc`: the C library is glibc, whose
 * heap ck_look reads. Returns -1 when its lock or key cannot be made. */
CHECK_API int shim_check_begin(void **imports, const u64 *ranges, int nranges, i64 page, u64 heap_start, int glibc,
                               void *describe, void *release) {
  if (x_pthread_mutex_init(&ck_mu, NULL) || x_pthread_key_create(&ck_in_key, NULL)) return -1;
  ck_mincore = (int (*)(void *, size_t, u8 *))imports[0];
  ck_sbrk = (void *(*)(long))imports[1];
  ck_page = page > 0 ? (u64)page : 4096;
  ck_heap_start = heap_start;
  ck_glibc = glibc;
  ck_real.describe = (fn_void)describe;
  ck_real.release = (fn_free)release;
  ck_ranges = (ck_range *)x_malloc(sizeof(ck_range) * (size_t)(nranges > 0 ? nranges : 1));
  if (!ck_ranges) return -1;
  for (int i = 0; i < nranges; i++) {
    ck_ranges[i].start = ranges[3 * i];
    ck_ranges[i].end = ranges[3 * i + 1];
    ck_ranges[i].where = ranges[3 * i + 2];
  }
  ck_nranges = nranges;
  return 0;
}

/* describe through its wrapper, for the JavaScript side; its answer goes to shim_check_free. */
CHECK_API const char *shim_check_describe(void) { return ck_describe(); }
CHECK_API void shim_check_free(const char *p) { ck_free(p); }

/* As shim_set_exports, with the wrappers in the plugin's place. */
CHECK_API void shim_check_exports(void **table) {
  ck_real.start = (fn_one)table[0];
  ck_real.invoke = (fn_two)table[1];
  ck_real.gate = (fn_two)table[2];
  ck_real.stop = (fn_void)table[3];
  ck_real.release = (fn_free)table[4];
  ck_real.poll = (fn_void)table[5];
  ck_real.command = (fn_two)table[6];
  void *wrapped[7] = {(void *)ck_start, (void *)ck_invoke,                          (void *)ck_gate,
                      (void *)ck_stop,  (void *)ck_free,                            ck_real.poll ? (void *)ck_poll : NULL,
                      ck_real.command ? (void *)ck_command : NULL};
  shim_set_exports(wrapped);
  lock(&g_pool_mu);
  g_handoff_ns = 0;
  unlock(&g_pool_mu);
}
