// The user's own CUDA or HIP code, for the Go binding's GPU tests: streams
// and events made by calling the driver library directly (the one
// FERRY_CUDA_LIBRARY / FERRY_HIP_LIBRARY names: in tests, the core's driver
// emulations), not through ferry. ferry only ever sees their native values,
// as it would those of an application's own CUDA library.
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "chelper.h"

struct native_api {
  int loaded;  // 1 loaded, -1 failed
  char why[256];
  // CUDA (kind 0)
  int (*cuInit)(unsigned);
  int (*cuDeviceGet)(int*, int);
  int (*cuDevicePrimaryCtxRetain)(void**, int);
  int (*cuDevicePrimaryCtxRelease)(int);
  int (*cuCtxPushCurrent)(void*);
  int (*cuCtxPopCurrent)(void**);
  int (*cuStreamCreate)(void**, unsigned);
  int (*cuStreamDestroy)(void*);
  int (*cuEventCreate)(void**, unsigned);
  int (*cuEventDestroy)(void*);
  // HIP (kind 1)
  int (*hipInit)(unsigned);
  int (*hipSetDevice)(int);
  int (*hipStreamCreateWithFlags)(void**, unsigned);
  int (*hipStreamDestroy)(void*);
  int (*hipEventCreateWithFlags)(void**, unsigned);
  int (*hipEventDestroy)(void*);
  // The emulations' test controls.
  int (*gate_close)(void*);
  void (*gates_open)(void);
  int64_t (*stream_pending)(void*);
  int (*event_done)(void*);
};

static struct native_api apis[2];
static pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER;

// What native_open looks up: each kind's driver functions and its emulation's
// test controls, by the field they fill.
#define NATIVE_SYM(kind, field, name) {kind, offsetof(struct native_api, field), name}
static const struct {
  int kind;
  size_t offset;
  const char* name;
} native_syms[] = {
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuInit, "cuInit"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuDeviceGet, "cuDeviceGet"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuCtxPushCurrent, "cuCtxPushCurrent_v2"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuCtxPopCurrent, "cuCtxPopCurrent_v2"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuStreamCreate, "cuStreamCreate"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuStreamDestroy, "cuStreamDestroy_v2"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuEventCreate, "cuEventCreate"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, cuEventDestroy, "cuEventDestroy_v2"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, gate_close, "cuda_emu_gate_close"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, gates_open, "cuda_emu_gates_open"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, stream_pending, "cuda_emu_stream_pending"),
    NATIVE_SYM(CHELPER_NATIVE_CUDA, event_done, "cuda_emu_event_done"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, hipInit, "hipInit"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, hipSetDevice, "hipSetDevice"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, hipStreamCreateWithFlags, "hipStreamCreateWithFlags"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, hipStreamDestroy, "hipStreamDestroy"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, hipEventCreateWithFlags, "hipEventCreateWithFlags"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, hipEventDestroy, "hipEventDestroy"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, gate_close, "hip_emu_gate_close"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, gates_open, "hip_emu_gates_open"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, stream_pending, "hip_emu_stream_pending"),
    NATIVE_SYM(CHELPER_NATIVE_HIP, event_done, "hip_emu_event_done"),
};

static int native_open(int kind, struct native_api* api) {
  const char* variable = kind == CHELPER_NATIVE_CUDA ? "FERRY_CUDA_LIBRARY" : "FERRY_HIP_LIBRARY";
  const char* path = getenv(variable);
  if (path == NULL) {
    snprintf(api->why, sizeof(api->why), "%s is not set", variable);
    return -1;
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(api->why, sizeof(api->why), "dlopen %s: %s", path, dlerror());
    return -1;
  }
  for (size_t i = 0; i < sizeof(native_syms) / sizeof(native_syms[0]); i++) {
    if (native_syms[i].kind != kind) continue;
    void* sym = dlsym(lib, native_syms[i].name);
    if (sym == NULL) {
      snprintf(api->why, sizeof(api->why), "%s: no symbol %s", path, native_syms[i].name);
      return -1;
    }
    *(void**)((char*)api + native_syms[i].offset) = sym;
  }
  int cuda = kind == CHELPER_NATIVE_CUDA;
  if ((cuda ? api->cuInit(0) : api->hipInit(0)) != 0) {
    snprintf(api->why, sizeof(api->why), "%s failed", cuda ? "cuInit" : "hipInit");
    return -1;
  }
  return 0;
}

// The API of `kind`, or NULL with the reason in `message`.
static struct native_api* native_api(int kind, char* message, int64_t size) {
  if (kind != CHELPER_NATIVE_CUDA && kind != CHELPER_NATIVE_HIP) {
    snprintf(message, (size_t)size, "unknown native kind %d", kind);
    return NULL;
  }
  struct native_api* api = &apis[kind];
  pthread_mutex_lock(&native_lock);
  if (api->loaded == 0) api->loaded = native_open(kind, api) == 0 ? 1 : -1;
  pthread_mutex_unlock(&native_lock);
  if (api->loaded < 0) {
    snprintf(message, (size_t)size, "%s", api->why);
    return NULL;
  }
  return api;
}

// Runs `call` with device 0 current, as CUDA code does.
static int native_cuda_in_context(struct native_api* api, int (*call)(struct native_api*, void**),
                                  void** out) {
  int device = 0;
  void* context = NULL;
  int rc = api->cuDeviceGet(&device, 0);
  if (rc == 0) rc = api->cuDevicePrimaryCtxRetain(&context, device);
  if (rc != 0) return rc;
  rc = api->cuCtxPushCurrent(context);
  if (rc == 0) {
    rc = call(api, out);
    api->cuCtxPopCurrent(NULL);
  }
  api->cuDevicePrimaryCtxRelease(device);
  return rc;
}

static int cuda_stream(struct native_api* api, void** out) { return api->cuStreamCreate(out, 1); }
static int cuda_event(struct native_api* api, void** out) { return api->cuEventCreate(out, 2); }

int chelper_native_stream(int32_t kind, void** stream_out, char* message, int64_t size) {
  struct native_api* api = native_api(kind, message, size);
  if (api == NULL) return -1;
  int rc = kind == CHELPER_NATIVE_CUDA ? native_cuda_in_context(api, cuda_stream, stream_out)
                                       : (api->hipSetDevice(0) != 0 ? -1
                                          : api->hipStreamCreateWithFlags(stream_out, 1));
  if (rc != 0) snprintf(message, (size_t)size, "creating a native stream: driver error %d", rc);
  return rc;
}

int chelper_native_event(int32_t kind, void** event_out, char* message, int64_t size) {
  struct native_api* api = native_api(kind, message, size);
  if (api == NULL) return -1;
  // An Arrow sync_event is a pointer to the native handle.
  void** handle = malloc(sizeof(void*));
  if (handle == NULL) return -1;
  int rc = kind == CHELPER_NATIVE_CUDA ? native_cuda_in_context(api, cuda_event, handle)
                                       : (api->hipSetDevice(0) != 0 ? -1
                                          : api->hipEventCreateWithFlags(handle, 2));
  if (rc != 0) {
    free(handle);
    snprintf(message, (size_t)size, "creating a native event: driver error %d", rc);
    return rc;
  }
  *event_out = handle;
  return 0;
}

int chelper_native_stream_destroy(int32_t kind, void* stream) {
  char message[256];
  struct native_api* api = native_api(kind, message, sizeof(message));
  if (api == NULL) return -1;
  return kind == CHELPER_NATIVE_CUDA ? api->cuStreamDestroy(stream) : api->hipStreamDestroy(stream);
}

int chelper_native_event_destroy(int32_t kind, void* event) {
  char message[256];
  struct native_api* api = native_api(kind, message, sizeof(message));
  if (api == NULL) return -1;
  void** handle = event;
  int rc = kind == CHELPER_NATIVE_CUDA ? api->cuEventDestroy(*handle) : api->hipEventDestroy(*handle);
  free(handle);
  return rc;
}

int chelper_native_event_done(int32_t kind, void* event) {
  char message[256];
  struct native_api* api = native_api(kind, message, sizeof(message));
  return api == NULL ? -1 : api->event_done(*(void**)event);
}

int chelper_native_gate_close(int32_t kind, void* stream) {
  char message[256];
  struct native_api* api = native_api(kind, message, sizeof(message));
  return api == NULL ? -1 : api->gate_close(stream);
}

void chelper_native_gates_open(int32_t kind) {
  char message[256];
  struct native_api* api = native_api(kind, message, sizeof(message));
  if (api != NULL) api->gates_open();
}

int64_t chelper_native_stream_pending(int32_t kind, void* stream) {
  char message[256];
  struct native_api* api = native_api(kind, message, sizeof(message));
  return api == NULL ? -1 : api->stream_pending(stream);
}
