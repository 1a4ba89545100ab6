/* A plugin for the e2e tests (tests/e2e/run_test.sh, callbacks): it records every event it is told
 * into a file and asks what its args say. Args (all optional):
 *   events: a file to append "<kind> <step> <figure names...> <path>" lines to
 *   stop_at, save_at, evaluate_at, fail_at: the step whose STEP_END answers STOP, SAVE, EVALUATE or
 *     HFTRAIN_FAILED ("failing at step N as asked")
 *   refuse: any value makes hftrain_plugin_create refuse
 * Built once as is and once with TEST_PLUGIN_ABI set to another version (the refusal's test).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hftrain/plugin.h"

#ifndef TEST_PLUGIN_ABI
#define TEST_PLUGIN_ABI HFTRAIN_PLUGIN_ABI_VERSION
#endif

typedef struct {
  char events[4096];
  long long stop_at, save_at, evaluate_at, fail_at;
} state;

static int json_string(const char* json, const char* key, char* out, size_t size) {
  char needle[256];
  snprintf(needle, sizeof needle, "\"%s\":\"", key);
  const char* at = strstr(json, needle);
  if (!at) return 0;
  at += strlen(needle);
  size_t n = 0;
  for (; *at && *at != '"' && n + 1 < size; ++at) out[n++] = *at;
  out[n] = '\0';
  return 1;
}

static long long json_step(const char* json, const char* key) {
  char text[32];
  return json_string(json, key, text, sizeof text) ? atoll(text) : -1;
}

int hftrain_plugin_abi_version(void) { return TEST_PLUGIN_ABI; }

void* hftrain_plugin_create(const char* args_json, char* error, size_t error_size) {
  char text[8];
  if (json_string(args_json, "refuse", text, sizeof text)) {
    snprintf(error, error_size, "refusing as asked");
    return NULL;
  }
  state* s = calloc(1, sizeof *s);
  json_string(args_json, "events", s->events, sizeof s->events);
  s->stop_at = json_step(args_json, "stop_at");
  s->save_at = json_step(args_json, "save_at");
  s->evaluate_at = json_step(args_json, "evaluate_at");
  s->fail_at = json_step(args_json, "fail_at");
  return s;
}

int hftrain_plugin_on_event(void* p, const hftrain_event* e, char* error, size_t error_size) {
  state* s = p;
  if (s->events[0]) {
    FILE* f = fopen(s->events, "a");
    if (f) {
      fprintf(f, "%d %lld", (int)e->kind, (long long)e->step);
      for (size_t i = 0; i < e->num_figures; ++i) fprintf(f, " %s", e->figures[i].name);
      if (e->path) fprintf(f, " %s", e->path);
      fprintf(f, "\n");
      fclose(f);
    }
  }
  if (e->kind != HFTRAIN_EVENT_STEP_END) return HFTRAIN_CONTINUE;
  if (e->step == s->fail_at) {
    snprintf(error, error_size, "failing at step %lld as asked", (long long)e->step);
    return HFTRAIN_FAILED;
  }
  int control = HFTRAIN_CONTINUE;
  if (e->step == s->stop_at) control |= HFTRAIN_STOP;
  if (e->step == s->save_at) control |= HFTRAIN_SAVE;
  if (e->step == s->evaluate_at) control |= HFTRAIN_EVALUATE;
  return control;
}

void hftrain_plugin_destroy(void* p) { free(p); }
