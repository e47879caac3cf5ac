/*
 * The floor of `cxagent mcp`'s speed targets in C (issue 42 point 1): mcp-floor.mjs without a
 * JavaScript runtime. One process, blocking reads, no JSON parser: it finds what it needs in each
 * line with strstr and answers initialize, tools/list and calc_multiply, one write per read.
 * Nothing that checks its input, in any language, can be faster behind the same client.
 * Usage: mcp-floor
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char in[1 << 20], out[1 << 20];

/* The value after `"key":` in line, copied raw (a number or a quoted string) into buf. */
static int raw(const char *line, const char *key, char *buf, size_t cap) {
  const char *at = strstr(line, key);
  if (!at) return 0;
  at += strlen(key);
  size_t n = 0;
  int quoted = *at == '"';
  for (const char *p = at; *p && n + 1 < cap; p++) {
    if (!quoted && (*p == ',' || *p == '}')) break;
    buf[n++] = *p;
    if (quoted && n > 1 && *p == '"') break;
  }
  buf[n] = 0;
  return 1;
}

static size_t answer(const char *line, char *to) {
  char id[64], version[64];
  if (!raw(line, "\"id\":", id, sizeof id)) return 0; /* a notification */
  if (strstr(line, "\"method\":\"initialize\"")) {
    if (!raw(line, "\"protocolVersion\":", version, sizeof version)) strcpy(version, "\"2025-06-18\"");
    return sprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":%s,\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"floor\",\"version\":\"1.0.0\"}}}\n", id, version);
  }
  if (strstr(line, "\"method\":\"tools/list\""))
    return sprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[{\"name\":\"calc_multiply\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}}}}]}}\n", id);
  if (strstr(line, "\"method\":\"tools/call\"")) {
    const char *args = strstr(line, "\"arguments\":");
    char a[32] = "0", b[32] = "0";
    if (args) {
      raw(args, "\"a\":", a, sizeof a);
      raw(args, "\"b\":", b, sizeof b);
    }
    return sprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s * %s = %g\"}]}}\n", id, a, b, atof(a) * atof(b));
  }
  return sprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", id);
}

int main(void) {
  size_t have = 0;
  for (;;) {
    ssize_t n = read(0, in + have, sizeof in - 1 - have);
    if (n <= 0) return 0;
    have += (size_t)n;
    in[have] = 0;
    size_t used = 0, written = 0;
    for (char *nl; (nl = memchr(in + used, '\n', have - used)) != NULL; used = (size_t)(nl - in) + 1) {
      *nl = 0;
      if (written + 4096 < sizeof out) written += answer(in + used, out + written);
    }
    for (size_t at = 0; at < written;) {
      ssize_t w = write(1, out + at, written - at);
      if (w <= 0) return 1;
      at += (size_t)w;
    }
    memmove(in, in + used, have - used);
    have -= used;
  }
}
