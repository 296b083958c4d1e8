/* A small TensorFlow Lite external delegate, written against TFLite's C ABI only.
 *
 * It takes float32 ADD and MUL nodes (version 1, two inputs of the same shape, no or
 * RELU fused activation) and runs them in its own kernel: one kernel per partition,
 * intermediate results in buffers it owns, partition inputs and outputs read and written
 * through the TfLiteTensor data pointers of the context. Built by
 * tests/interpreter_tests/test_external_delegate.py (gcc -shared -fPIC -O1) and loaded both by
 * ai_edge_litert's load_delegate and by litedelegate's.
 *
 * Options (keys and values are strings, as tflite_plugin_create_delegate receives them):
 *   refuse        comma-separated op names (ADD, MUL) the delegate must not take
 *   fail_create   "1": creation fails (report_error, then NULL)
 *   fail_prepare  "1": Prepare reports an error and returns kTfLiteError
 *   fail_invoke   "1": the kernel's invoke reports an error and returns kTfLiteError
 *   dump_only     "1": Prepare records every node and tensor (add_mul_delegate_dump,
 *                 add_mul_delegate_tensor) and takes none
 * Any other key is an error at creation.
 *
 * Exported for the tests: counters, the nodes and tensors Prepare saw, distances between
 * structs the runtime handed out (the runtime's struct sizes), and this file's own sizes
 * and offsets.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tflite_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* -- counters and records the tests read ------------------------------------------- */

static int g_created, g_destroyed, g_prepares, g_kernel_inits, g_kernel_frees, g_kernel_prepares,
    g_kernel_invokes, g_params_delegate_mismatch, g_nodes_taken, g_frees_after_destroy;

/* The delegates alive now: a kernel freed after its delegate was destroyed is counted. */
#define MAX_LIVE 256
static const void* g_live[MAX_LIVE];

static void set_live(const void* delegate, int alive) {
  for (int i = 0; i < MAX_LIVE; ++i) {
    if (alive ? g_live[i] == NULL : g_live[i] == delegate) {
      g_live[i] = alive ? delegate : NULL;
      return;
    }
  }
}

static int is_live(const void* delegate) {
  for (int i = 0; i < MAX_LIVE; ++i)
    if (g_live[i] == delegate) return 1;
  return 0;
}

static long long g_probe[8];

#define MAX_DUMP 64
#define DUMP_BYTES 64
typedef struct {
  int node, builtin_code, version, num_inputs, num_outputs, has_builtin_data;
  unsigned char builtin_data[DUMP_BYTES];
} NodeDump;
static NodeDump g_dump[MAX_DUMP];
static int g_dump_count;

typedef struct {
  long long fields[16];
  float scale;
  char name[64];
} TensorDump;
static TensorDump g_tensors[MAX_DUMP];
static int g_tensor_count;

EXPORT int add_mul_delegate_counter(const char* which) {
  if (!strcmp(which, "created")) return g_created;
  if (!strcmp(which, "destroyed")) return g_destroyed;
  if (!strcmp(which, "prepares")) return g_prepares;
  if (!strcmp(which, "kernel_inits")) return g_kernel_inits;
  if (!strcmp(which, "kernel_frees")) return g_kernel_frees;
  if (!strcmp(which, "kernel_prepares")) return g_kernel_prepares;
  if (!strcmp(which, "kernel_invokes")) return g_kernel_invokes;
  if (!strcmp(which, "params_delegate_mismatch")) return g_params_delegate_mismatch;
  if (!strcmp(which, "nodes_taken")) return g_nodes_taken; /* by the last Prepare */
  if (!strcmp(which, "frees_after_destroy")) return g_frees_after_destroy;
  return -1;
}

/* 0: bytes from a node to its registration, 1: bytes from node 0 to node 1 (both from
 * GetNodeAndRegistration: the runtime's sizeof(TfLiteNode) and of the pair), 2: whether
 * GetTensor is set, 3: GetTensor(0) minus &tensors[0] (-1 without GetTensor),
 * 4: tensors_size, 5: recommended_num_threads. */
EXPORT long long add_mul_delegate_probe(int i) { return (i >= 0 && i < 8) ? g_probe[i] : -1; }

EXPORT int add_mul_delegate_dump_count(void) { return g_dump_count; }

/* fields: node, builtin_code, version, num_inputs, num_outputs, has_builtin_data */
EXPORT int add_mul_delegate_dump(int i, int* fields, unsigned char* builtin_data) {
  if (i < 0 || i >= g_dump_count) return -1;
  fields[0] = g_dump[i].node;
  fields[1] = g_dump[i].builtin_code;
  fields[2] = g_dump[i].version;
  fields[3] = g_dump[i].num_inputs;
  fields[4] = g_dump[i].num_outputs;
  fields[5] = g_dump[i].has_builtin_data;
  memcpy(builtin_data, g_dump[i].builtin_data, DUMP_BYTES);
  return 0;
}

EXPORT int add_mul_delegate_tensor_count(void) { return g_tensor_count; }

/* fields: type, allocation_type, bytes, is_variable, has data, params.zero_point,
 * quantization.type, dims size, dims[0..5], buffer_handle, has delegate */
EXPORT int add_mul_delegate_tensor(int i, long long* fields, float* scale, char* name) {
  if (i < 0 || i >= g_tensor_count) return -1;
  memcpy(fields, g_tensors[i].fields, sizeof(g_tensors[i].fields));
  *scale = g_tensors[i].scale;
  memcpy(name, g_tensors[i].name, sizeof(g_tensors[i].name));
  return 0;
}

/* -- this file's layout, for comparison with the runtime's declarations ------------- */

typedef struct {
  const char* name;
  long value;
} LayoutEntry;

#define SIZE(T) {"sizeof " #T, (long)sizeof(T)}
#define OFF(T, f) {#T "." #f, (long)offsetof(T, f)}

static const LayoutEntry kLayout[] = {
    SIZE(TfLiteIntArray), SIZE(TfLiteQuantizationParams), SIZE(TfLiteQuantization), SIZE(TfLitePtrUnion),
    SIZE(TfLiteTensor), OFF(TfLiteTensor, type), OFF(TfLiteTensor, data), OFF(TfLiteTensor, dims),
    OFF(TfLiteTensor, params), OFF(TfLiteTensor, allocation_type), OFF(TfLiteTensor, bytes),
    OFF(TfLiteTensor, allocation), OFF(TfLiteTensor, name), OFF(TfLiteTensor, delegate),
    OFF(TfLiteTensor, buffer_handle), OFF(TfLiteTensor, data_is_stale), OFF(TfLiteTensor, is_variable),
    OFF(TfLiteTensor, quantization), OFF(TfLiteTensor, sparsity), OFF(TfLiteTensor, dims_signature),
    SIZE(TfLiteNode), OFF(TfLiteNode, inputs), OFF(TfLiteNode, outputs), OFF(TfLiteNode, intermediates),
    OFF(TfLiteNode, temporaries), OFF(TfLiteNode, user_data), OFF(TfLiteNode, builtin_data),
    OFF(TfLiteNode, custom_initial_data), OFF(TfLiteNode, custom_initial_data_size), OFF(TfLiteNode, delegate),
    OFF(TfLiteNode, might_have_side_effect),
    SIZE(TfLiteRegistration), OFF(TfLiteRegistration, init), OFF(TfLiteRegistration, free),
    OFF(TfLiteRegistration, prepare), OFF(TfLiteRegistration, invoke), OFF(TfLiteRegistration, profiling_string),
    OFF(TfLiteRegistration, builtin_code), OFF(TfLiteRegistration, custom_name), OFF(TfLiteRegistration, version),
    OFF(TfLiteRegistration, registration_external), OFF(TfLiteRegistration, async_kernel),
    OFF(TfLiteRegistration, inplace_operator),
    SIZE(TfLiteDelegateParams), OFF(TfLiteDelegateParams, delegate), OFF(TfLiteDelegateParams, nodes_to_replace),
    OFF(TfLiteDelegateParams, input_tensors), OFF(TfLiteDelegateParams, output_tensors),
    SIZE(TfLiteContext), OFF(TfLiteContext, tensors_size), OFF(TfLiteContext, GetExecutionPlan),
    OFF(TfLiteContext, tensors), OFF(TfLiteContext, impl_), OFF(TfLiteContext, ResizeTensor),
    OFF(TfLiteContext, ReportError), OFF(TfLiteContext, AddTensors), OFF(TfLiteContext, GetNodeAndRegistration),
    OFF(TfLiteContext, ReplaceNodeSubsetsWithDelegateKernels), OFF(TfLiteContext, recommended_num_threads),
    OFF(TfLiteContext, GetExternalContext), OFF(TfLiteContext, SetExternalContext),
    OFF(TfLiteContext, allow_fp32_relax_to_fp16), OFF(TfLiteContext, profiler),
    OFF(TfLiteContext, AllocatePersistentBuffer), OFF(TfLiteContext, AllocateBufferForEval),
    OFF(TfLiteContext, RequestScratchBufferInArena), OFF(TfLiteContext, GetScratchBuffer),
    OFF(TfLiteContext, ResizeTensorExplicit), OFF(TfLiteContext, PreviewDelegatePartitioning),
    OFF(TfLiteContext, GetTensor), OFF(TfLiteContext, GetEvalTensor), OFF(TfLiteContext, GetModelMetadata),
    OFF(TfLiteContext, AcquireSubgraphContext), OFF(TfLiteContext, ReleaseSubgraphContext),
    SIZE(TfLiteDelegate), OFF(TfLiteDelegate, data_), OFF(TfLiteDelegate, Prepare),
    OFF(TfLiteDelegate, CopyFromBufferHandle), OFF(TfLiteDelegate, CopyToBufferHandle),
    OFF(TfLiteDelegate, FreeBufferHandle), OFF(TfLiteDelegate, flags), OFF(TfLiteDelegate, opaque_delegate_builder),
    SIZE(TfLiteAddParams), OFF(TfLiteAddParams, pot_scale_int16), SIZE(TfLiteMulParams),
};

EXPORT int add_mul_delegate_layout_count(void) { return (int)(sizeof(kLayout) / sizeof(kLayout[0])); }
EXPORT const char* add_mul_delegate_layout_name(int i) { return kLayout[i].name; }
EXPORT long add_mul_delegate_layout_value(int i) { return kLayout[i].value; }

/* -- the delegate -------------------------------------------------------------------- */

static TfLiteStatus DelegatePrepare(TfLiteContext* context, TfLiteDelegate* delegate);

typedef struct {
  int refuse_add, refuse_mul, fail_prepare, fail_invoke, dump_only;
} Options;

static size_t num_elements(const TfLiteIntArray* dims) {
  size_t count = 1;
  for (int i = 0; i < dims->size; ++i) count *= (size_t)dims->data[i];
  return count;
}

static int same_dims(const TfLiteIntArray* a, const TfLiteIntArray* b) {
  if (a->size != b->size) return 0;
  for (int i = 0; i < a->size; ++i)
    if (a->data[i] != b->data[i]) return 0;
  return 1;
}

static TfLiteIntArray* int_array(int size) {
  TfLiteIntArray* array = malloc(sizeof(TfLiteIntArray) + sizeof(int) * (size_t)size);
  array->size = size;
  return array;
}

typedef struct {
  int op, activation, a, b, out;
} Step;

typedef struct {
  int num_steps;
  Step* steps;
  size_t num_tensors;
  unsigned char* boundary; /* per tensor: 1 when it is an input or output of the partition */
  float** scratch;         /* per tensor inside the partition: the kernel's own buffer */
  size_t* scratch_count;
  const Options* options;
  const TfLiteDelegate* delegate;
  int first_node;
} Kernel;

static void* KernelInit(TfLiteContext* context, const char* buffer, size_t length) {
  (void)length;
  const TfLiteDelegateParams* params = (const TfLiteDelegateParams*)buffer;
  Kernel* kernel = calloc(1, sizeof(Kernel));
  ++g_kernel_inits;
  if (params->delegate == NULL || params->delegate->Prepare != DelegatePrepare) ++g_params_delegate_mismatch;
  kernel->options = (const Options*)params->delegate->data_;
  kernel->delegate = params->delegate;
  kernel->num_tensors = context->tensors_size;
  kernel->boundary = calloc(kernel->num_tensors, 1);
  kernel->scratch = calloc(kernel->num_tensors, sizeof(float*));
  kernel->scratch_count = calloc(kernel->num_tensors, sizeof(size_t));
  for (int i = 0; i < params->input_tensors->size; ++i) kernel->boundary[params->input_tensors->data[i]] = 1;
  for (int i = 0; i < params->output_tensors->size; ++i) kernel->boundary[params->output_tensors->data[i]] = 1;
  kernel->num_steps = params->nodes_to_replace->size;
  kernel->steps = calloc((size_t)kernel->num_steps, sizeof(Step));
  kernel->first_node = params->nodes_to_replace->data[0];
  for (int i = 0; i < kernel->num_steps; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* registration;
    context->GetNodeAndRegistration(context, params->nodes_to_replace->data[i], &node, &registration);
    Step* step = &kernel->steps[i];
    step->op = registration->builtin_code;
    step->activation = ((const TfLiteMulParams*)node->builtin_data)->activation;
    step->a = node->inputs->data[0];
    step->b = node->inputs->data[1];
    step->out = node->outputs->data[0];
  }
  return kernel;
}

static void KernelFree(TfLiteContext* context, void* buffer) {
  (void)context;
  Kernel* kernel = buffer;
  ++g_kernel_frees;
  if (!is_live(kernel->delegate)) ++g_frees_after_destroy;
  for (size_t t = 0; t < kernel->num_tensors; ++t) free(kernel->scratch[t]);
  free(kernel->scratch);
  free(kernel->scratch_count);
  free(kernel->boundary);
  free(kernel->steps);
  free(kernel);
}

static TfLiteStatus KernelPrepare(TfLiteContext* context, TfLiteNode* node) {
  Kernel* kernel = node->user_data;
  ++g_kernel_prepares;
  /* Shapes flow through the partition: every output has its first input's shape. */
  TfLiteIntArray** shape = calloc(kernel->num_tensors, sizeof(TfLiteIntArray*));
  TfLiteStatus status = kTfLiteOk;
  for (int i = 0; i < kernel->num_steps && status == kTfLiteOk; ++i) {
    const Step* step = &kernel->steps[i];
    const TfLiteIntArray* a = shape[step->a] ? shape[step->a] : context->tensors[step->a].dims;
    const TfLiteIntArray* b = shape[step->b] ? shape[step->b] : context->tensors[step->b].dims;
    if (!same_dims(a, b)) {
      context->ReportError(context, "add_mul_delegate: node %d: inputs of different shapes (%d and %d dims)",
                           kernel->first_node + i, a->size, b->size);
      status = kTfLiteError;
      break;
    }
    shape[step->out] = int_array(a->size);
    memcpy(shape[step->out]->data, a->data, sizeof(int) * (size_t)a->size);
    size_t count = num_elements(a);
    if (kernel->boundary[step->out]) {
      TfLiteTensor* out = &context->tensors[step->out];
      if (!same_dims(out->dims, a)) {
        TfLiteIntArray* new_size = int_array(a->size); /* ResizeTensor takes ownership */
        memcpy(new_size->data, a->data, sizeof(int) * (size_t)a->size);
        status = context->ResizeTensor(context, out, new_size);
      }
    } else if (kernel->scratch_count[step->out] != count) {
      free(kernel->scratch[step->out]);
      kernel->scratch[step->out] = malloc(sizeof(float) * (count ? count : 1));
      kernel->scratch_count[step->out] = count;
    }
  }
  for (size_t t = 0; t < kernel->num_tensors; ++t) free(shape[t]);
  free(shape);
  return status;
}

static float* tensor_data(TfLiteContext* context, Kernel* kernel, int t) {
  return kernel->boundary[t] ? context->tensors[t].data.f : kernel->scratch[t];
}

static TfLiteStatus KernelInvoke(TfLiteContext* context, TfLiteNode* node) {
  Kernel* kernel = node->user_data;
  ++g_kernel_invokes;
  if (kernel->options->fail_invoke) {
    context->ReportError(context, "add_mul_delegate: invoke failed on purpose (node %d, %s)", kernel->first_node,
                         "fail_invoke");
    return kTfLiteError;
  }
  for (int i = 0; i < kernel->num_steps; ++i) {
    const Step* step = &kernel->steps[i];
    const float* a = tensor_data(context, kernel, step->a);
    const float* b = tensor_data(context, kernel, step->b);
    float* out = tensor_data(context, kernel, step->out);
    if (!a || !b || !out) {
      context->ReportError(context, "add_mul_delegate: node %d: a tensor has no data", kernel->first_node + i);
      return kTfLiteError;
    }
    size_t count = kernel->boundary[step->out] ? num_elements(context->tensors[step->out].dims)
                                               : kernel->scratch_count[step->out];
    for (size_t k = 0; k < count; ++k) {
      float value = step->op == kTfLiteBuiltinAdd ? a[k] + b[k] : a[k] * b[k];
      if (step->activation == kTfLiteActRelu && value < 0.0f) value = 0.0f;
      out[k] = value;
    }
  }
  return kTfLiteOk;
}

static int supported(TfLiteContext* context, const TfLiteNode* node, const TfLiteRegistration* registration,
                     const Options* options) {
  int op = registration->builtin_code;
  if (op != kTfLiteBuiltinAdd && op != kTfLiteBuiltinMul) return 0;
  if ((op == kTfLiteBuiltinAdd && options->refuse_add) || (op == kTfLiteBuiltinMul && options->refuse_mul)) return 0;
  if (registration->version != 1 || node->inputs->size != 2 || node->outputs->size != 1) return 0;
  if (!node->builtin_data) return 0;
  int activation = ((const TfLiteMulParams*)node->builtin_data)->activation;
  if (activation != kTfLiteActNone && activation != kTfLiteActRelu) return 0;
  const TfLiteTensor* a = &context->tensors[node->inputs->data[0]];
  const TfLiteTensor* b = &context->tensors[node->inputs->data[1]];
  const TfLiteTensor* out = &context->tensors[node->outputs->data[0]];
  if (a->type != kTfLiteFloat32 || b->type != kTfLiteFloat32 || out->type != kTfLiteFloat32) return 0;
  return same_dims(a->dims, b->dims) && same_dims(a->dims, out->dims);
}

static void record(TfLiteContext* context, int node_index) {
  TfLiteNode* node;
  TfLiteRegistration* registration;
  if (g_dump_count >= MAX_DUMP || context->GetNodeAndRegistration(context, node_index, &node, &registration))
    return;
  NodeDump* dump = &g_dump[g_dump_count++];
  memset(dump, 0, sizeof(*dump));
  dump->node = node_index;
  dump->builtin_code = registration->builtin_code;
  dump->version = registration->version;
  dump->num_inputs = node->inputs->size;
  dump->num_outputs = node->outputs->size;
  dump->has_builtin_data = node->builtin_data != NULL;
  /* Builtin data structs are small; the tests compare only the fields each one has. */
  if (node->builtin_data) memcpy(dump->builtin_data, node->builtin_data, DUMP_BYTES);
}

static void probe(TfLiteContext* context, const TfLiteIntArray* plan) {
  memset(g_probe, 0, sizeof(g_probe));
  if (plan->size >= 2 && plan->data[1] == plan->data[0] + 1) {
    TfLiteNode *n0, *n1;
    TfLiteRegistration *r0, *r1;
    context->GetNodeAndRegistration(context, plan->data[0], &n0, &r0);
    context->GetNodeAndRegistration(context, plan->data[1], &n1, &r1);
    g_probe[0] = (const char*)r0 - (const char*)n0;
    g_probe[1] = (const char*)n1 - (const char*)n0;
  }
  g_probe[2] = context->GetTensor != NULL;
  g_probe[3] = context->GetTensor != NULL && context->tensors_size
                   ? (const char*)context->GetTensor(context, 0) - (const char*)&context->tensors[0]
                   : -1;
  g_probe[4] = (long long)context->tensors_size;
  g_probe[5] = context->recommended_num_threads;
}

static void record_tensors(TfLiteContext* context) {
  g_tensor_count = 0;
  for (size_t i = 0; i < context->tensors_size && g_tensor_count < MAX_DUMP; ++i) {
    const TfLiteTensor* tensor = &context->tensors[i];
    TensorDump* dump = &g_tensors[g_tensor_count++];
    memset(dump, 0, sizeof(*dump));
    dump->fields[0] = tensor->type;
    dump->fields[1] = tensor->allocation_type;
    dump->fields[2] = (long long)tensor->bytes;
    dump->fields[3] = tensor->is_variable;
    dump->fields[4] = tensor->data.raw != NULL;
    dump->fields[5] = tensor->params.zero_point;
    dump->fields[6] = tensor->quantization.type;
    dump->fields[7] = tensor->dims ? tensor->dims->size : -1;
    for (int d = 0; tensor->dims && d < tensor->dims->size && d < 6; ++d) dump->fields[8 + d] = tensor->dims->data[d];
    dump->fields[14] = tensor->buffer_handle;
    dump->fields[15] = tensor->delegate != NULL;
    dump->scale = tensor->params.scale;
    if (tensor->name) strncpy(dump->name, tensor->name, sizeof(dump->name) - 1);
  }
}

static TfLiteStatus DelegatePrepare(TfLiteContext* context, TfLiteDelegate* delegate) {
  const Options* options = delegate->data_;
  ++g_prepares;
  if (options->fail_prepare) {
    context->ReportError(context, "add_mul_delegate: Prepare failed on purpose (%s, %d)", "fail_prepare", 42);
    return kTfLiteError;
  }
  TfLiteIntArray* plan;
  if (context->GetExecutionPlan(context, &plan) != kTfLiteOk) return kTfLiteError;
  probe(context, plan);
  /* The plan's memory belongs to the context: copy it before other calls. */
  TfLiteIntArray* nodes = int_array(plan->size);
  int count = plan->size, taken = 0;
  int* plan_nodes = malloc(sizeof(int) * (size_t)(count ? count : 1));
  memcpy(plan_nodes, plan->data, sizeof(int) * (size_t)count);
  if (options->dump_only) {
    g_dump_count = 0;
    record_tensors(context);
  }
  for (int i = 0; i < count; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* registration;
    if (options->dump_only) record(context, plan_nodes[i]);
    if (context->GetNodeAndRegistration(context, plan_nodes[i], &node, &registration) != kTfLiteOk) {
      free(plan_nodes);
      free(nodes);
      return kTfLiteError;
    }
    if (!options->dump_only && supported(context, node, registration, options)) nodes->data[taken++] = plan_nodes[i];
  }
  nodes->size = taken;
  g_nodes_taken = taken;
  TfLiteStatus status = kTfLiteOk;
  if (taken) {
    TfLiteRegistration kernel;
    memset(&kernel, 0, sizeof(kernel));
    kernel.init = KernelInit;
    kernel.free = KernelFree;
    kernel.prepare = KernelPrepare;
    kernel.invoke = KernelInvoke;
    kernel.custom_name = "AddMulCDelegate";
    kernel.version = 1;
    status = context->ReplaceNodeSubsetsWithDelegateKernels(context, kernel, nodes, delegate);
  }
  free(plan_nodes);
  free(nodes);
  return status;
}

static int flag(const char* value) { return !strcmp(value, "1") || !strcmp(value, "true"); }

EXPORT TfLiteDelegate* tflite_plugin_create_delegate(const char* const* keys, const char* const* values,
                                                     size_t num_options, void (*report_error)(const char*)) {
  Options options;
  memset(&options, 0, sizeof(options));
  for (size_t i = 0; i < num_options; ++i) {
    const char* key = keys[i];
    const char* value = values[i];
    if (!strcmp(key, "refuse")) {
      options.refuse_add = strstr(value, "ADD") != NULL;
      options.refuse_mul = strstr(value, "MUL") != NULL;
    } else if (!strcmp(key, "fail_prepare")) {
      options.fail_prepare = flag(value);
    } else if (!strcmp(key, "fail_invoke")) {
      options.fail_invoke = flag(value);
    } else if (!strcmp(key, "dump_only")) {
      options.dump_only = flag(value);
    } else if (!strcmp(key, "fail_create") && flag(value)) {
      if (report_error) report_error("add_mul_delegate: creation failed on purpose (fail_create=1)");
      return NULL;
    } else {
      char message[256];
      snprintf(message, sizeof(message), "add_mul_delegate: unknown option '%s'", key);
      if (report_error) report_error(message);
      return NULL;
    }
  }
  TfLiteDelegate* delegate = calloc(1, sizeof(TfLiteDelegate));
  Options* data = malloc(sizeof(Options));
  *data = options;
  delegate->data_ = data;
  delegate->Prepare = DelegatePrepare;
  delegate->flags = 0; /* kTfLiteDelegateFlagsNone: static shapes only */
  ++g_created;
  set_live(delegate, 1);
  return delegate;
}

/* ai_edge_litert's Delegate.__del__ calls this with NULL after a failed creation. */
EXPORT void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate) {
  if (!delegate) return;
  ++g_destroyed;
  set_live(delegate, 0);
  free(delegate->data_);
  free(delegate);
}
