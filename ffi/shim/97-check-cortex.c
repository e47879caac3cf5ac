/* ------------------------------------------------------------------------------------------ */
/* Check mode for a Cortex native plugin (issue 43; see 95-check.c for how memory is read).     */
/*                                                                                             */
/* Every buffer the table returns (plugin_info, tool_descriptor, tool_execute) is judged before */
/* it goes back to the plugin's buffer_free, in one "returned" event (its "free" is the function */
/* that released it, "buffer_free"):                                                           */
/*   where     as for a cxagent plugin's strings, or "lent": inside a buffer the host lent the  */
/*             call (the plugin handed back the host's own memory)                             */
/*   repeated  returned after buffer_free had already been given it (glibc's free words are   */
/*             still there, untouched since): giving it back again would free it twice         */
/*   released  by buffer_free: "yes", "no" (a leak), "unknown", or "skipped" (not heap memory, */
/*             or already freed: buffer_free is not called, to keep the host alive)            */
/*   length, cap                                                                               */
/* Each call's tool_name, input_json and invocation_json are lent as fresh heap copies (cap 0), */
/* so that a plugin freeing one does not crash the host but shows: after tool_execute returns, */
/* a copy glibc took back is a "lent" event naming it ("released":"yes"), and is not freed     */
/* again. An ordinary host lends its own memory and never loads any of this.                   */

#define CX_WHERE_LENT 5
static const char *const cx_from_names[] = {"plugin_info", "tool_descriptor", "tool_execute"};
static const char *const cx_lent_names[] = {"tool_name", "input_json", "invocation_json"};

struct cortex_lent {
  char *copy[3];
  size_t len[3];
  ck_chunk chunk[3];
};

/* Buffers buffer_free released, with the words free() left at them (the chunk's size and its  */
/* first 16 bytes), so that one returned again untouched is told from a fresh allocation that  */
/* happens to lie at the same address (malloc clears tcache's key; the plugin writes its text). */
typedef struct {
  u64 p, size, w0, w1;
} cx_freed;
enum { CX_FREED_RING = 1024 };
static cx_freed cx_ring[CX_FREED_RING];
static int cx_ring_next;

static int cx_words(const u8 *p, u64 out[3]) {
  if (((u64)p & 15) || !ck_mapped(p - 16) || !ck_mapped(p + 15)) return 0;
  const u64 *q = (const u64 *)(const void *)p;
  out[0] = q[-1];
  out[1] = q[0];
  out[2] = q[1];
  return 1;
}

static void cx_note_freed(const u8 *p) {
  u64 w[3];
  if (!cx_words(p, w)) return;
  lock(&ck_mu);
  cx_freed f = {(u64)p, w[0], w[1], w[2]};
  cx_ring[cx_ring_next] = f;
  cx_ring_next = (cx_ring_next + 1) % CX_FREED_RING;
  unlock(&ck_mu);
}

/* Whether `p` is a buffer buffer_free was given before and that nobody has allocated since. */
static int cx_freed_before(const u8 *p) {
  u64 now[3];
  int have = cx_words(p, now), stale = 0;
  lock(&ck_mu);
  for (int i = 0; i < CX_FREED_RING; i++) {
    cx_freed *f = &cx_ring[i];
    if (f->p != (u64)p) continue;
    if (have && now[0] == f->size && now[1] == f->w0 && now[2] == f->w1) stale = 1;
    else f->p = 0; /* allocated again since: a fresh buffer at the same address */
  }
  unlock(&ck_mu);
  return stale;
}

/* A number that fits a JSON number exactly (a cap of SIZE_MAX does not). */
static void cx_size(buf *b, size_t n) {
  if (n > ((size_t)1 << 53)) buf_str(b, "9007199254740992");
  else buf_i64(b, (i64)n);
}

static void cx_release(cortex_buffer b, int from, const char *anchor, const cortex_lent *lent) {
  if (!b.ptr) { /* the empty buffer: nothing to judge, given back as it came */
    g_cortex.buffer_free(b);
    return;
  }
  int where = ck_where((const char *)b.ptr, anchor);
  if (where == CK_HEAP && lent) {
    for (int i = 0; i < 3; i++) {
      const char *c = lent->copy[i];
      if ((const char *)b.ptr >= c && (const char *)b.ptr <= c + lent->len[i] && ck_released(c, lent->chunk[i])[0] != 'y') where = CX_WHERE_LENT;
    }
  }
  int stale = where == CK_HEAP && cx_freed_before(b.ptr);
  /* what it held, shown when something is wrong: read before buffer_free may release it */
  u8 head[120];
  size_t shown = b.len > sizeof head ? sizeof head : b.len;
  int show = where != CK_HEAP || stale || b.len > b.cap;
  if (show) mem_copy(head, b.ptr, shown);
  const char *released = "skipped";
  if (where == CK_HEAP && !stale) {
    /* the allocation must hold cap bytes; a cap it does not hold leaves it "unknown" */
    ck_chunk c = ck_look((const char *)b.ptr, b.cap ? b.cap - 1 : 0);
    g_cortex.buffer_free(b);
    released = ck_released((const char *)b.ptr, c); /* reads only what free() leaves mapped */
    if (released[0] == 'y') cx_note_freed(b.ptr);
  }
  buf line = {0};
  buf_str(&line, "{\"event\":\"check\",\"what\":\"returned\",\"export\":\"");
  buf_str(&line, cx_from_names[from]);
  buf_str(&line, "\",\"free\":\"buffer_free\",\"where\":\"");
  buf_str(&line, where == CX_WHERE_LENT ? "lent" : ck_where_names[where]);
  buf_str(&line, stale ? "\",\"repeated\":true" : "\",\"repeated\":false");
  buf_str(&line, ",\"released\":\"");
  buf_str(&line, released);
  buf_str(&line, "\",\"length\":");
  cx_size(&line, b.len);
  buf_str(&line, ",\"cap\":");
  cx_size(&line, b.cap);
  if (show || released[0] == 'n') { /* one not released is still there to read */
    buf_str(&line, ",\"preview\":");
    buf_json_string(&line, show ? head : b.ptr, shown, 120);
  }
  buf_str(&line, "}\n");
  write_line(&line);
  buf_free(&line);
}

static cortex_lent *cx_lend(cortex_buffer *name, cortex_buffer *input, cortex_buffer *context) {
  cortex_lent *l = (cortex_lent *)x_malloc(sizeof(cortex_lent));
  if (!l) return NULL;
  cortex_buffer *b[3] = {name, input, context};
  for (int i = 0; i < 3; i++) {
    l->copy[i] = (char *)x_malloc(b[i]->len + 1);
    if (!l->copy[i]) {
      while (i--) x_free(l->copy[i]);
      x_free(l);
      return NULL; /* no memory: this call lends the host's own buffers, as an ordinary host does */
    }
  }
  for (int i = 0; i < 3; i++) {
    mem_copy(l->copy[i], b[i]->ptr, b[i]->len);
    l->copy[i][b[i]->len] = 0;
    l->len[i] = b[i]->len;
    l->chunk[i] = ck_look(l->copy[i], b[i]->len);
    b[i]->ptr = (u8 *)l->copy[i];
  }
  return l;
}

static void cx_give_back(cortex_lent *l) {
  for (int i = 0; i < 3; i++) {
    if (ck_released(l->copy[i], l->chunk[i])[0] != 'y') {
      x_free(l->copy[i]);
      continue;
    }
    buf line = {0};
    buf_str(&line, "{\"event\":\"check\",\"what\":\"lent\",\"export\":\"tool_execute\",\"buffer\":\"");
    buf_str(&line, cx_lent_names[i]);
    buf_str(&line, "\",\"released\":\"yes\",\"length\":");
    cx_size(&line, l->len[i]);
    buf_str(&line, "}\n");
    write_line(&line);
    buf_free(&line);
  }
  x_free(l);
}

/* Turns check mode on for a Cortex plugin, after shim_check_begin and before cortex_plugin_init. */
CHECK_API void shim_cortex_check(void) {
  g_cortex_check.lend = cx_lend;
  g_cortex_check.release = cx_release;
  g_cortex_check.give_back = cx_give_back;
  lock(&g_pool_mu);
  g_handoff_ns = 0;
  unlock(&g_pool_mu);
}
