/*
 * payload-plugin.c — the plugin behind the payload benchmarks (built by scripts/bench at bench
 * time, with its sidecar bench-payload.plugin.json beside it).
 *
 *   reply {"bytes":N}  answers an envelope whose output.content is N bytes of letters. The envelope
 *                      of each size is built once and handed out again (its free is a no-op), so
 *                      the benchmark measures the path between processes, not the plugin.
 *   take  {...}        ignores its (large) arguments and answers a small envelope.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxagent_plugin.h"

#define MANIFEST                                                                                \
  "{\"pluginContract\":4,\"name\":\"bench-payload\",\"version\":\"1.0.0\",\"tools\":["         \
  "{\"name\":\"reply\",\"description\":\"answers N bytes\"},"                                   \
  "{\"name\":\"take\",\"description\":\"takes big arguments\"}]}"

static const char SMALL[] = "{\"ok\":true,\"result\":{\"success\":true,\"output\":{\"content\":\"ok\"}}}";

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { long bytes; char *text; } cache[16];
static int cached;

static const char *envelope_of(long bytes) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < cached; i++)
    if (cache[i].bytes == bytes) {
      pthread_mutex_unlock(&mu);
      return cache[i].text;
    }
  const char *head = "{\"ok\":true,\"result\":{\"success\":true,\"output\":{\"content\":\"";
  const char *tail = "\"}}}";
  size_t hn = strlen(head), tn = strlen(tail);
  char *text = malloc(hn + (size_t)bytes + tn + 1);
  memcpy(text, head, hn);
  for (long i = 0; i < bytes; i++) text[hn + (size_t)i] = (char)('a' + i % 26);
  memcpy(text + hn + bytes, tail, tn + 1);
  if (cached < 16) cache[cached].bytes = bytes, cache[cached++].text = text;
  pthread_mutex_unlock(&mu);
  return text;
}

static int is_cached(const char *p) {
  pthread_mutex_lock(&mu);
  int found = 0;
  for (int i = 0; i < cached && !found; i++) found = cache[i].text == p;
  pthread_mutex_unlock(&mu);
  return found;
}

static char *dup_text(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  memcpy(p, s, n);
  return p;
}

CXAGENT_PLUGIN_EXPORT int32_t cxagent_plugin_abi_version(void) { return 4; }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_describe(void) { return dup_text(MANIFEST); }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_start(const char *context) { (void)context; return dup_text("{\"ok\":true}"); }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_stop(void) { return dup_text("{\"ok\":true}"); }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_gate(const char *tool, const char *call) { (void)tool; (void)call; return NULL; }

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_invoke(const char *tool, const char *call_json) {
  if (!strcmp(tool, "reply")) {
    const char *at = strstr(call_json, "\"bytes\":");
    return envelope_of(at ? atol(at + 8) : 1024);
  }
  char *out = malloc(sizeof SMALL);
  memcpy(out, SMALL, sizeof SMALL);
  return out;
}

CXAGENT_PLUGIN_EXPORT void cxagent_plugin_free(const char *p) {
  if (!is_cached(p)) free((void *)p);
}
