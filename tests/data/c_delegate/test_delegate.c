/* LiteRT's interpreter-test delegate, in C.
 *
 * A port of tensorflow/lite/python/testdata/test_delegate.cc (Copyright 2019 The
 * TensorFlow Authors, Apache License 2.0), which LiteRT's interpreter_test.py loads as
 * testdata/test_delegate.so and whose own functions it calls through
 * ``Delegate._library``. Same exports, same counters, same behaviour: Prepare takes no
 * node and counts its calls; the option "options_counter" adds its integer value to a
 * counter; the option "fail" reports "Fail argument sent." and makes creation fail.
 *
 * Differences from the original, each for C: written in C (no lambdas, no namespaces),
 * and the TfLiteDelegate is zeroed (calloc) where the original's `new TfLiteDelegate`
 * leaves the members other than Prepare and flags uninitialised.
 *
 * Built by tests/interpreter_tests/test_litert_delegate_library.py and loaded by both
 * ai_edge_litert's load_delegate and litedelegate's.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tflite_abi.h"

#define EXPORT __attribute__((visibility("default")))

static int num_delegates_created = 0;
static int num_delegates_destroyed = 0;
static int num_delegates_invoked = 0;
static int options_counter = 0;
static int (*destruction_callback)(const char* s) = NULL;
typedef void (*ErrorHandler)(const char*);

static TfLiteStatus count_prepare(TfLiteContext* context, TfLiteDelegate* delegate) {
  (void)context;
  (void)delegate;
  num_delegates_invoked++;
  return kTfLiteOk;
}

EXPORT TfLiteDelegate* tflite_plugin_create_delegate(char** options_keys, char** options_values, size_t num_options,
                                                     ErrorHandler error_handler) {
  num_delegates_created++;
  for (size_t idx = 0; idx < num_options; idx++) {
    if (strcmp("options_counter", options_keys[idx]) == 0) {
      int int_value;
      if (sscanf(options_values[idx], "%d", &int_value) == 1) options_counter += int_value;
    } else if (strcmp("fail", options_keys[idx]) == 0) {
      if (error_handler) error_handler("Fail argument sent.");
      return NULL;
    }
  }
  TfLiteDelegate* delegate = (TfLiteDelegate*)calloc(1, sizeof(TfLiteDelegate));
  delegate->Prepare = count_prepare;
  delegate->flags = 0; /* kTfLiteDelegateFlagsNone */
  return delegate;
}

EXPORT void set_destroy_callback(int (*callback)(const char* s)) { destruction_callback = callback; }

EXPORT void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate) {
  num_delegates_destroyed++;
  free(delegate);
  if (destruction_callback) {
    destruction_callback("test_delegate");
    destruction_callback = NULL; /* a global: cleared so that a stale callback is never called */
  }
}

EXPORT void initialize_counters(void) {
  num_delegates_created = 0;
  num_delegates_destroyed = 0;
  num_delegates_invoked = 0;
  options_counter = 0;
}

EXPORT int get_num_delegates_created(void) { return num_delegates_created; }

EXPORT int get_num_delegates_destroyed(void) { return num_delegates_destroyed; }

EXPORT int get_num_delegates_invoked(void) { return num_delegates_invoked; }

EXPORT int get_options_counter(void) { return options_counter; }
