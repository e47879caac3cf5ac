/*
 * slugger — a plugin that ships a library of its own: its one tool calls libslug.so, which sits
 * beside it in the plugin's folder.
 *
 * Built (scripts/build-native.ts) as
 *   cc -shared -fPIC -Wl,-soname,libslug.so -o libslug.so libslug.c
 *   cc -shared -fPIC -I ffi -o slugger.so slugger.c -L. -lslug -Wl,-rpath,'$ORIGIN'
 * so slugger.so needs "libslug.so" (DT_NEEDED) and looks for it in its own folder (RUNPATH
 * $ORIGIN). cxagent hashes both with the folder, and the plugin host loads both from sealed
 * copies of the approved bytes. Try it:
 *   bun run cxagent invoke examples/slugger slugify --args '{"text": "Hello, World!"}'
 */
#include <stdlib.h>
#include <string.h>

#include "cxagent_plugin.h"

size_t slug_make(const char *in, char *out, size_t cap);
const char *slug_version(void);

static const char MANIFEST[] =
    "{\"pluginContract\":4,\"name\":\"slugger\",\"version\":\"1.0.0\",\"tools\":[{\"name\":\"slugify\","
    "\"description\":\"Turns a title into a URL slug: lowercase ASCII letters and digits joined by single dashes.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}}]}";

static char *copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* The string member `key` of a flat JSON object, unescaped (a \uXXXX escape becomes a space,
 * which a slug drops anyway); NULL when absent or not a string. The caller frees it. */
static char *string_arg(const char *json, const char *key) {
  size_t klen = strlen(key);
  for (const char *at = strchr(json, '"'); at; at = strchr(at + 1, '"')) {
    if (strncmp(at + 1, key, klen) != 0 || at[klen + 1] != '"') continue;
    const char *p = at + klen + 2;
    while (*p == ' ' || *p == ':') p++;
    if (*p != '"') return NULL;
    char *out = malloc(strlen(p) + 1), *o = out;
    if (!out) return NULL;
    for (p++; *p && *p != '"'; p++) {
      if (*p != '\\') { *o++ = *p; continue; }
      p++;
      if (*p == 'u') { *o++ = ' '; for (int i = 0; i < 4 && p[1]; i++) p++; }
      else if (*p == 'n' || *p == 't' || *p == 'r' || *p == 'b' || *p == 'f') *o++ = ' ';
      else if (*p) *o++ = *p;
      else break;
    }
    *o = '\0';
    return out;
  }
  return NULL;
}

CXAGENT_PLUGIN_EXPORT int32_t cxagent_plugin_abi_version(void) { return 4; }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_describe(void) { return copy(MANIFEST); }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_start(const char *context_json) { (void)context_json; return copy("{\"ok\":true}"); }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_stop(void) { return copy("{\"ok\":true}"); }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_gate(const char *tool, const char *call) { (void)tool; (void)call; return NULL; }
CXAGENT_PLUGIN_EXPORT void cxagent_plugin_free(const char *ptr) { free((void *)ptr); }

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_invoke(const char *tool, const char *call_json) {
  if (strcmp(tool, "slugify") != 0) return copy("{\"ok\":false,\"error\":\"no such tool\"}");
  char *text = string_arg(call_json, "text");
  if (!text) {
    return copy("{\"ok\":true,\"result\":{\"success\":false,\"errorMessage\":\"slugify needs a string argument 'text'\"}}");
  }
  size_t cap = strlen(text) * 2 + 1;
  char *slug = malloc(cap);
  /* the slug holds only a-z, 0-9 and '-': nothing to escape in JSON */
  char *reply = slug ? malloc(cap + 160) : NULL;
  if (reply) {
    slug_make(text, slug, cap);
    strcpy(reply, "{\"ok\":true,\"result\":{\"success\":true,\"output\":{\"content\":\"");
    strcat(reply, slug);
    strcat(reply, "\",\"library\":\"");
    strcat(reply, slug_version());
    strcat(reply, "\"}}}");
  }
  free(slug);
  free(text);
  return reply ? reply : copy("{\"ok\":false,\"error\":\"out of memory\"}");
}
