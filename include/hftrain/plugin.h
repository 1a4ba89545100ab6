/* hftrain's plugin interface: a shared library that hftrain loads at the start of a run
 * (`callbacks: [{plugin: path/libmine.so, args: {...}}]`) and tells the run's events, and that may
 * ask the run to stop, save or evaluate. A plain C interface, so that a plugin builds with any
 * compiler and against no hftrain library: include this file, define the four functions below with
 * C linkage, build a shared library (`cc -shared -fPIC mine.c -o libmine.so`).
 *
 * Versioning: a plugin reports HFTRAIN_PLUGIN_ABI_VERSION as it was built; hftrain refuses another
 * version, naming both. The structs below change only with the version.
 *
 * Threads and ranks: every call comes from the training loop's thread, one at a time, on rank 0
 * (or on every rank with `ranks: all`, each process with its own plugin state). A plugin must
 * return quickly: the loop waits for it.
 */
#ifndef HFTRAIN_PLUGIN_H
#define HFTRAIN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HFTRAIN_PLUGIN_ABI_VERSION 1

/* What happened. */
typedef enum {
  HFTRAIN_EVENT_TRAIN_BEGIN = 1, /* before the first step (of this process: a resumed run too) */
  HFTRAIN_EVENT_STEP_END = 2,    /* after every optimizer step; figures on logging steps only */
  HFTRAIN_EVENT_EVALUATE = 3,    /* after an evaluation: its figures (eval_loss, eval_ppl, ...) */
  HFTRAIN_EVENT_SAVE = 4,        /* after a checkpoint or the final model was written: `path` */
  HFTRAIN_EVENT_TRAIN_END = 5    /* after the last step (finished, stopped or interrupted) */
} hftrain_event_kind;

/* What the plugin asks of the run: bits, or'ed; HFTRAIN_CONTINUE (0) asks nothing. */
enum {
  HFTRAIN_CONTINUE = 0,
  HFTRAIN_STOP = 1,     /* stop after this step (a checkpoint and final/ are written as on any stop) */
  HFTRAIN_SAVE = 2,     /* write a checkpoint after this step */
  HFTRAIN_EVALUATE = 4, /* evaluate after this step */
  HFTRAIN_FAILED = -1   /* the plugin failed: hftrain stops the run with the plugin's message */
};

/* One figure by name, as metrics.jsonl names it ("loss", "lr", "grad_norm", "eval_loss", ...). */
typedef struct {
  const char* name;
  double value;
} hftrain_figure;

/* An event. Pointers are valid during the call only. */
typedef struct {
  hftrain_event_kind kind;
  int64_t step;        /* optimizer steps done */
  int64_t total_steps; /* the run's last step */
  double epoch;        /* fractional epochs of training data consumed */
  const hftrain_figure* figures;
  size_t num_figures;
  const char* path;    /* HFTRAIN_EVENT_SAVE: the directory written; else NULL */
  const char* run_dir; /* the run directory */
  int rank;
  int world_size;
} hftrain_event;

/* The functions a plugin defines. `error` (of `error_size` bytes) takes a message when one fails.
 *
 * hftrain_plugin_abi_version: HFTRAIN_PLUGIN_ABI_VERSION as the plugin was built.
 * hftrain_plugin_create: the plugin's state for one run; `args_json` is the callback's `args` as a
 *   JSON object of strings. NULL with a message in `error` refuses the run (hftrain exits 2).
 * hftrain_plugin_on_event: the control bits above, or HFTRAIN_FAILED with a message in `error`
 *   (hftrain stops the run: exit 1, after the usual checkpoint).
 * hftrain_plugin_destroy: frees the state; called once, after the run's last event.
 */
int hftrain_plugin_abi_version(void);
void* hftrain_plugin_create(const char* args_json, char* error, size_t error_size);
int hftrain_plugin_on_event(void* state, const hftrain_event* event, char* error, size_t error_size);
void hftrain_plugin_destroy(void* state);

#ifdef __cplusplus
}
#endif

#endif /* HFTRAIN_PLUGIN_H */
