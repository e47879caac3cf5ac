/*
 * scheduler — a plugin that starts work on its own (a "client").
 *
 * A person types  /remind in 2s run the tests ; the command stores the reminder, and when it is
 * due, cxagent_plugin_poll hands the goal back to the agent as new work. cxagent calls poll every
 * 200 ms; it answers NULL (nothing to say) until a reminder is due.
 * Try it:  bun run cxagent watch examples/scheduler --command "remind in 2s run the tests" --for 4000
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxagent_plugin.h"

static const char MANIFEST[] =
    "{\"pluginContract\":4,\"name\":\"scheduler\",\"version\":\"1.0.0\",\"client\":true,"
    "\"instructions\":null,\"tools\":[],"
    "\"commands\":["
    "{\"name\":\"remind\",\"summary\":\"Hand the agent a goal later: /remind in 30s run the tests (s, m or h)\","
    "\"arguments\":[{\"name\":\"when\",\"summary\":\"in <number><s|m|h>\"},{\"name\":\"goal\",\"summary\":\"what the agent should do\"}]},"
    "{\"name\":\"reminders\",\"summary\":\"List the reminders not yet due\"}]}";

#define MAX_REMINDERS 64
struct reminder {
  double due; /* CLOCK_MONOTONIC seconds */
  char *goal;
};
static struct reminder pending[MAX_REMINDERS];
static int pending_count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* `s` as a JSON string literal, appended to out (which has room for 6 bytes per input byte + 3). */
static char *json_string(char *out, const char *s) {
  *out++ = '"';
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      *out++ = '\\';
      *out++ = (char)*p;
    } else if (*p < 0x20) {
      out += sprintf(out, "\\u%04x", *p);
    } else {
      *out++ = (char)*p;
    }
  }
  *out++ = '"';
  *out = 0;
  return out;
}

static char *command_result(const char *status, const char *message) {
  char *out = malloc(strlen(message) * 6 + 64);
  if (!out) return NULL;
  char *end = out + sprintf(out, "{\"status\":\"%s\",\"message\":", status);
  end = json_string(end, message);
  strcpy(end, "}");
  return out;
}

/* Parses "in <n><s|m|h> <goal>"; returns the goal, or NULL. */
static const char *parse_reminder(const char *text, double *seconds) {
  if (strncmp(text, "in ", 3) != 0) return NULL;
  char *end;
  double n = strtod(text + 3, &end);
  if (end == text + 3 || n < 0 || n > 7 * 24 * 3600) return NULL;
  double unit = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 : 0;
  if (unit == 0 || end[1] != ' ') return NULL;
  const char *goal = end + 2;
  while (*goal == ' ') goal++;
  if (!*goal) return NULL;
  *seconds = n * unit;
  return goal;
}

CXAGENT_PLUGIN_EXPORT int32_t cxagent_plugin_abi_version(void) { return CXAGENT_PLUGIN_CONTRACT; }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_describe(void) { return copy(MANIFEST); }

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_start(const char *context_json) {
  (void)context_json;
  return copy("{\"ok\":true}");
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_command(const char *name, const char *arguments) {
  if (!strcmp(name, "reminders")) {
    pthread_mutex_lock(&lock);
    char list[4096] = "";
    size_t used = 0;
    for (int i = 0; i < pending_count && used < sizeof list - 128; i++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%sin %.0fs: %.100s", i ? "; " : "", pending[i].due - now(), pending[i].goal);
    pthread_mutex_unlock(&lock);
    return command_result("reported", used ? list : "No reminders are pending.");
  }
  if (strcmp(name, "remind") != 0) return command_result("refused", "scheduler has no such command");
  double seconds;
  const char *goal = parse_reminder(arguments, &seconds);
  if (!goal) return command_result("refused", "Usage: /remind in <number><s|m|h> <goal>, e.g. /remind in 2s run the tests");
  pthread_mutex_lock(&lock);
  int full = pending_count == MAX_REMINDERS;
  if (!full) {
    pending[pending_count].due = now() + seconds;
    pending[pending_count].goal = copy(goal);
    pending_count++;
  }
  pthread_mutex_unlock(&lock);
  if (full) return command_result("refused", "Too many reminders are pending already.");
  char message[600];
  snprintf(message, sizeof message, "I will remind the agent to %.500s in %gs.", goal, seconds);
  return command_result("changed", message);
}

/* Called every 200 ms, never twice at once: the first due reminder becomes new work. */
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_poll(void) {
  pthread_mutex_lock(&lock);
  double t = now();
  char *due = NULL;
  for (int i = 0; i < pending_count; i++) {
    if (pending[i].due <= t) {
      due = pending[i].goal;
      pending[i] = pending[--pending_count];
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  if (!due) return NULL;
  char *out = malloc(strlen(due) * 6 + 48);
  if (out) strcpy(json_string(out + sprintf(out, "{\"goal\":"), due), ",\"wantResult\":false}");
  free(due);
  return out;
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_invoke(const char *tool_name, const char *call_json) {
  (void)tool_name;
  (void)call_json;
  return copy("{\"ok\":false,\"error\":\"scheduler has no tools\"}");
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_gate(const char *tool_name, const char *call_json) {
  (void)tool_name;
  (void)call_json;
  return NULL;
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_stop(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < pending_count; i++) free(pending[i].goal);
  pending_count = 0;
  pthread_mutex_unlock(&lock);
  return copy("{\"ok\":true}");
}

CXAGENT_PLUGIN_EXPORT void cxagent_plugin_free(const char *ptr) { free((void *)ptr); }
