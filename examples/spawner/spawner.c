/*
 * spawner — a plugin that keeps a helper process running, and says so.
 *
 * On start it launches a helper (/bin/cat, which echoes every line it is sent) and registers it
 * with cxagent at once, so the helper is ended even if the session is killed before this plugin's
 * stop runs. Its tools talk to the helper; stop closes the helper's input and waits for it.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cxagent_plugin.h"

extern char **environ;

static const char MANIFEST[] =
    "{\"pluginContract\":4,\"name\":\"spawner\",\"version\":\"1.0.0\",\"spawns\":true,"
    "\"sandbox\":{\"net\":\"none\",\"processes\":4},"
    "\"tools\":["
    "{\"name\":\"spawner_ping\",\"description\":\"Sends text to the helper process and returns what it echoes.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}},"
    "{\"name\":\"spawner_wait\",\"description\":\"Waits the given number of milliseconds, then answers.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"ms\"]}}]}";

static const cxagent_host *host;
static pid_t helper = -1;
static int to_helper = -1, from_helper = -1;
static pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;

static char *copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

__attribute__((format(printf, 1, 2))) static char *format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *out = malloc((size_t)n + 1);
  if (!out) return NULL;
  va_start(ap, fmt);
  vsnprintf(out, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return out;
}

/* Copies the JSON string member `key` of a flat object into out, unescaping \" and \\ only. */
static int string_arg(const char *json, const char *key, char *out, size_t size) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\"", key);
  const char *at = strstr(json, pattern);
  if (!at) return 0;
  at = strchr(at + strlen(pattern), '"');
  if (!at) return 0;
  size_t n = 0;
  for (at++; *at && *at != '"' && n + 1 < size; at++) {
    if (*at == '\\' && at[1]) at++;
    out[n++] = *at;
  }
  out[n] = 0;
  return *at == '"';
}

static long number_arg(const char *json, const char *key, long fallback) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\"", key);
  const char *at = strstr(json, pattern);
  if (!at) return fallback;
  at += strlen(pattern);
  while (*at == ' ' || *at == ':') at++;
  char *end;
  long value = strtol(at, &end, 10);
  return end == at ? fallback : value;
}

CXAGENT_PLUGIN_EXPORT int32_t cxagent_plugin_abi_version(void) { return CXAGENT_PLUGIN_CONTRACT; }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_describe(void) { return copy(MANIFEST); }
CXAGENT_PLUGIN_EXPORT void cxagent_plugin_attach(const cxagent_host *table) { host = table; }

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_start(const char *context_json) {
  (void)context_json;
  if (!host) return copy("{\"ok\":false,\"error\":\"spawner needs the host table (contract 4) to register its helper\"}");
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return copy("{\"ok\":false,\"error\":\"spawner: cannot create pipes\"}");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  char *argv[] = {"cat", NULL};
  int rc = posix_spawn(&helper, "/bin/cat", &actions, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return format("{\"ok\":false,\"error\":\"spawner: cannot start /bin/cat: %s\"}", strerror(rc));
  }
  /* Register first, before talking to it: if anything goes wrong from here, it is still reaped. */
  host->register_child((int64_t)helper);
  to_helper = in[1];
  from_helper = out[0];
  return copy("{\"ok\":true}");
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_invoke(const char *tool_name, const char *call_json) {
  if (!strcmp(tool_name, "spawner_wait")) {
    long ms = number_arg(call_json, "ms", -1);
    if (ms < 0) return copy("{\"ok\":false,\"error\":\"spawner_wait needs a number 'ms' of milliseconds\"}");
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    return format("{\"ok\":true,\"result\":{\"success\":true,\"output\":{\"content\":\"waited %ld ms\"}}}", ms);
  }
  if (strcmp(tool_name, "spawner_ping") != 0) return copy("{\"ok\":false,\"error\":\"spawner: unknown tool\"}");
  char text[512];
  if (!string_arg(call_json, "text", text, sizeof text - 1) || strchr(text, '\n'))
    return copy("{\"ok\":false,\"error\":\"spawner_ping needs a one-line string 'text' (up to 500 bytes)\"}");
  pthread_mutex_lock(&helper_lock);
  size_t n = strlen(text);
  text[n] = '\n';
  char echoed[512];
  size_t got = 0;
  int ok = write(to_helper, text, n + 1) == (ssize_t)(n + 1);
  while (ok && got < n + 1) {
    ssize_t r = read(from_helper, echoed + got, n + 1 - got);
    if (r <= 0) ok = 0;
    else got += (size_t)r;
  }
  pthread_mutex_unlock(&helper_lock);
  if (!ok) return copy("{\"ok\":true,\"result\":{\"success\":false,\"errorMessage\":\"the helper process is gone\",\"output\":{\"content\":\"The helper process is not running.\"}}}");
  echoed[n] = 0;
  /* The echo is plain text: escape the two characters JSON cares about most. */
  char escaped[1100];
  size_t e = 0;
  for (size_t i = 0; i < n && e + 7 < sizeof escaped; i++) {
    unsigned char c = (unsigned char)echoed[i];
    if (c == '"' || c == '\\') escaped[e++] = '\\';
    if (c < 0x20) e += (size_t)snprintf(escaped + e, sizeof escaped - e, "\\u%04x", c);
    else escaped[e++] = (char)c;
  }
  escaped[e] = 0;
  return format("{\"ok\":true,\"result\":{\"success\":true,\"output\":{\"content\":\"%s\",\"helper\":%ld}}}", escaped, (long)helper);
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_gate(const char *tool_name, const char *call_json) {
  (void)tool_name;
  (void)call_json;
  return NULL;
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_stop(void) {
  /* Closing its input ends cat; if it does not go within a second, it is told to. */
  if (to_helper >= 0) close(to_helper);
  if (helper > 0) {
    int status;
    for (int i = 0; i < 100 && waitpid(helper, &status, WNOHANG) == 0; i++) {
      struct timespec ts = {0, 10000000L};
      nanosleep(&ts, NULL);
      if (i == 99) {
        kill(helper, SIGTERM);
        waitpid(helper, &status, 0);
      }
    }
  }
  if (from_helper >= 0) close(from_helper);
  to_helper = from_helper = -1;
  helper = -1;
  return copy("{\"ok\":true}");
}

CXAGENT_PLUGIN_EXPORT void cxagent_plugin_free(const char *ptr) { free((void *)ptr); }
