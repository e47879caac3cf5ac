/*
 * reporter — a plugin whose tool takes a few seconds and says what it is doing meanwhile.
 *
 * reporter_count {"to": N, "delayMs": M} counts from 1 to N on a thread of its own, one step
 * every M milliseconds. While it runs it reports progress, streams the numbers as text, and logs
 * a line at the halfway mark, all through the host table cxagent_plugin_attach hands over.
 * Watch it with:  bun run cxagent invoke examples/reporter reporter_count --args '{"to": 20}'
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxagent_plugin.h"

static const char MANIFEST[] =
    "{\"pluginContract\":4,\"name\":\"reporter\",\"version\":\"1.0.0\","
    "\"instructions\":\"reporter_count is a demonstration: it counts slowly and reports as it goes.\","
    "\"tools\":[{\"name\":\"reporter_count\","
    "\"description\":\"Counts from 1 to `to` (default 20), one step every `delayMs` milliseconds (default 150), reporting progress as it goes.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"to\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},"
    "\"delayMs\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":5000}}}}]}";

static const cxagent_host *host;

static char *copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* Reads an integer member of a flat JSON object; `fallback` when absent or not a number. */
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

struct count_job {
  char call_id[32]; /* copied: the host's string is only valid during the call */
  long to, delay_ms;
};

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void *count(void *arg) {
  struct count_job *job = arg;
  char text[64];
  for (long i = 1; i <= job->to; i++) {
    sleep_ms(job->delay_ms);
    snprintf(text, sizeof text, "%ld ", i);
    host->stream(job->call_id, text);
    snprintf(text, sizeof text, "counted to %ld of %ld", i, job->to);
    host->progress(job->call_id, (int32_t)(i * 100 / job->to), text);
    if (i == job->to / 2) host->log(job->call_id, CXAGENT_LOG_INFO, "halfway there");
  }
  host->stream(job->call_id, "\n");
  return NULL;
}

CXAGENT_PLUGIN_EXPORT int32_t cxagent_plugin_abi_version(void) { return CXAGENT_PLUGIN_CONTRACT; }
CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_describe(void) { return copy(MANIFEST); }
CXAGENT_PLUGIN_EXPORT void cxagent_plugin_attach(const cxagent_host *table) { host = table; }

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_start(const char *context_json) {
  (void)context_json;
  if (!host) return copy("{\"ok\":false,\"error\":\"reporter needs a host that calls cxagent_plugin_attach (contract 4)\"}");
  host->log(NULL, CXAGENT_LOG_DEBUG, "reporter started");
  return copy("{\"ok\":true}");
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_invoke(const char *tool_name, const char *call_json) {
  if (strcmp(tool_name, "reporter_count") != 0) return copy("{\"ok\":false,\"error\":\"reporter: unknown tool\"}");
  struct count_job job;
  snprintf(job.call_id, sizeof job.call_id, "%s", host->current_call());
  job.to = number_arg(call_json, "to", 20);
  job.delay_ms = number_arg(call_json, "delayMs", 150);
  if (job.to < 1 || job.to > 1000 || job.delay_ms < 0 || job.delay_ms > 5000)
    return copy("{\"ok\":false,\"error\":\"reporter_count: 'to' must be 1..1000 and 'delayMs' 0..5000\"}");

  pthread_t worker;
  if (pthread_create(&worker, NULL, count, &job) != 0) return copy("{\"ok\":false,\"error\":\"reporter_count: cannot start a thread\"}");
  pthread_join(worker, NULL); /* every report is made before this call returns */

  char *out = malloc(160);
  if (out) snprintf(out, 160, "{\"ok\":true,\"result\":{\"success\":true,\"output\":{\"content\":\"Counted to %ld.\",\"count\":%ld}}}", job.to, job.to);
  return out;
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_gate(const char *tool_name, const char *call_json) {
  (void)tool_name;
  (void)call_json;
  return NULL;
}

CXAGENT_PLUGIN_EXPORT const char *cxagent_plugin_stop(void) { return copy("{\"ok\":true}"); }
CXAGENT_PLUGIN_EXPORT void cxagent_plugin_free(const char *ptr) { free((void *)ptr); }
