/* An hftrain plugin (include/hftrain/plugin.h) in plain C: writes each evaluation to a CSV file and
 * stops the run once the evaluation loss reaches a target.
 *
 *   callbacks:
 *     - plugin: build/examples/libstop_at_loss.so
 *       args: {target: "2.5", csv: "evals.csv"}   # csv: default <run_dir>/stop_at_loss.csv
 *
 * Build: cc -shared -fPIC -I include examples/stop_at_loss/stop_at_loss.c -o libstop_at_loss.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hftrain/plugin.h"

typedef struct {
  double target;
  char csv[4096];
  int have_csv;
} state;

/* The string value of "key" in a flat JSON object of strings (what hftrain hands over), or 0. */
static int json_string(const char* json, const char* key, char* out, size_t size) {
  char needle[256];
  snprintf(needle, sizeof needle, "\"%s\":\"", key);
  const char* at = strstr(json, needle);
  if (!at) return 0;
  at += strlen(needle);
  size_t n = 0;
  for (; *at && *at != '"' && n + 1 < size; ++at) {
    if (*at == '\\' && at[1]) ++at; /* an escaped character: taken as it is */
    out[n++] = *at;
  }
  out[n] = '\0';
  return 1;
}

int hftrain_plugin_abi_version(void) { return HFTRAIN_PLUGIN_ABI_VERSION; }

void* hftrain_plugin_create(const char* args_json, char* error, size_t error_size) {
  char text[64];
  if (!json_string(args_json, "target", text, sizeof text)) {
    snprintf(error, error_size, "args needs a target eval loss, e.g. {target: \"2.5\"}");
    return NULL;
  }
  char* end = NULL;
  const double target = strtod(text, &end);
  if (end == text || *end != '\0') {
    snprintf(error, error_size, "target '%s' is not a number", text);
    return NULL;
  }
  state* s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  s->target = target;
  s->have_csv = json_string(args_json, "csv", s->csv, sizeof s->csv);
  return s;
}

int hftrain_plugin_on_event(void* p, const hftrain_event* e, char* error, size_t error_size) {
  state* s = p;
  if (e->kind == HFTRAIN_EVENT_TRAIN_BEGIN && !s->have_csv) {
    snprintf(s->csv, sizeof s->csv, "%s/stop_at_loss.csv", e->run_dir);
    s->have_csv = 1;
  }
  if (e->kind != HFTRAIN_EVENT_EVALUATE) return HFTRAIN_CONTINUE;
  double loss = -1;
  for (size_t i = 0; i < e->num_figures; ++i) {
    if (strcmp(e->figures[i].name, "eval_loss") == 0) loss = e->figures[i].value;
  }
  FILE* f = fopen(s->csv, "a");
  if (!f) {
    snprintf(error, error_size, "cannot append to %s", s->csv);
    return HFTRAIN_FAILED;
  }
  fprintf(f, "%lld,%.6f\n", (long long)e->step, loss);
  fclose(f);
  return loss >= 0 && loss <= s->target ? HFTRAIN_STOP : HFTRAIN_CONTINUE;
}

void hftrain_plugin_destroy(void* p) { free(p); }
