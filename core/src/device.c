/* The device registry and the public ferry_device_* / ferry_backend_*
 * functions, which validate their arguments and dispatch to a backend.
 *
 * The registry is a process-wide table behind one mutex. Each backend's probe
 * runs at most once (lazily: only when the backend is first asked for), and
 * its result code and message are cached, so a missing CUDA driver costs one
 * dlopen attempt per process. One struct FerryDevice exists per
 * (device_type, device_id); it is created on first resolve and never freed,
 * so callers may keep the pointer for the life of the process.
 *
 * Streams: a NULL stream means "synchronous": the operation is complete when
 * the call returns. What that means for each backend:
 *   cpu   every operation is synchronous; streams are no-op handles.
 *   sim   NULL-stream operations run on the calling thread at once, without
 *         waiting for work queued on the sim's streams (so a consumer that
 *         forgot the sync event still reads poison); synchronizing the NULL
 *         stream waits for every stream of that sim device.
 *   cuda, rocm  the driver's default (legacy NULL) stream, followed by a
 *         stream synchronize so the copy is complete on return.
 *
 * Lookups: devices are found without the lock (the list only grows, and a
 * node is published with a release store once complete), so the hot paths
 * that resolve a device per call (ferry_device_array_wait) take no mutex.
 *
 * fork(): CUDA and HIP cannot be used in the child of a process that
 * initialized them; the driver fails there, or worse, seems to work. A
 * pthread_atfork child handler marks every such backend that probed
 * successfully, and from then on every call on it, in the child, fails with
 * ENODEV and a message saying the process forked. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "internal.h"

/* The backends in the order ferry_backend_name lists them. */
static const struct FerryBackend* const kBackends[] = {
    &ferry__backend_cpu, &ferry__backend_sim, &ferry__backend_cuda, &ferry__backend_rocm};
#define FERRY_N_BACKENDS ((int64_t)(sizeof(kBackends) / sizeof(kBackends[0])))

/* The cached outcome of one backend's probe. */
struct FerryProbeResult {
  int probed;
  int code;
  char message[FERRY_ERROR_MESSAGE_SIZE];
};

/* A registry entry; the devices live in a singly linked list that only grows. */
struct FerryRegistryNode {
  struct FerryDevice device;
  struct FerryRegistryNode* next;
};

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct FerryProbeResult g_probes[FERRY_N_BACKENDS];
/* Written under the lock with release stores, read without it (acquire). */
static struct FerryRegistryNode* g_devices;

/* ---- fork ------------------------------------------------------------------ */

/* Bit i: backend i was initialized before this process forked from its
 * parent, and cannot be used here. Written only by the atfork child handler
 * (the child has one thread then). */
static int g_forked_backends;
static pid_t g_fork_parent;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

/* Runs in the child of fork(): marks the GPU backends the parent had
 * initialized, and gives the locks that another thread of the parent may
 * have held at the fork back to the child. */
static void registry_atfork_child(void) {
  for (int64_t i = 0; i < FERRY_N_BACKENDS; i++) {
    if (kBackends[i]->unusable_after_fork && g_probes[i].probed &&
        g_probes[i].code == FERRY_OK) {
      __atomic_fetch_or(&g_forked_backends, 1 << i, __ATOMIC_RELAXED);
    }
  }
  if (g_forked_backends != 0) g_fork_parent = getppid();
  pthread_mutex_init(&g_registry_lock, NULL);
  for (struct FerryRegistryNode* node = g_devices; node != NULL; node = node->next) {
    pthread_mutex_init(&node->device.event_pool_lock, NULL);
  }
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, registry_atfork_child); }

static int backend_forked(int64_t index) {
  return (__atomic_load_n(&g_forked_backends, __ATOMIC_RELAXED) >> index) & 1;
}

/* The error of every call on backend `index` in a forked child; `what`
 * names the device or backend. */
static int forked_error(int64_t index, const char* what, struct FerryError* error) {
  return ferry__set_error(error, ENODEV,
                         "%s cannot be used in this process: it was forked (pid %d, "
                         "parent %d) after the %s backend was initialized, and the %s "
                         "driver does not survive fork(); use the GPU in the parent "
                         "only, or start the child with exec or posix_spawn",
                         what, (int)getpid(), (int)g_fork_parent, kBackends[index]->name,
                         kBackends[index]->name);
}

int ferry__device_usable(const struct FerryDevice* device, struct FerryError* error) {
  if (!backend_forked(device->backend_index)) return FERRY_OK;
  char what[64];
  snprintf(what, sizeof(what), "%s device %" PRId64,
           ferry_device_type_name(device->device_type), device->device_id);
  return forked_error(device->backend_index, what, error);
}

/* ---- the registry ------------------------------------------------------ */

static const struct FerryBackend* backend_for_type(ArrowDeviceType device_type,
                                                   int64_t* index_out) {
  for (int64_t i = 0; i < FERRY_N_BACKENDS; i++) {
    for (int32_t t = 0; t < kBackends[i]->n_device_types; t++) {
      if (kBackends[i]->device_types[t] == device_type) {
        if (index_out != NULL) *index_out = i;
        return kBackends[i];
      }
    }
  }
  return NULL;
}

/* Runs backend i's probe once; the caller holds the registry lock. Copies the
 * cached result into `error` when the backend is unusable. */
static int probe_locked(int64_t i, struct FerryError* error) {
  struct FerryProbeResult* result = &g_probes[i];
  if (backend_forked(i)) {
    char what[64];
    snprintf(what, sizeof(what), "the %s backend", kBackends[i]->name);
    return forked_error(i, what, error);
  }
  if (!result->probed) {
    /* Before the first driver is initialized, so that a fork after it is
     * seen. */
    pthread_once(&g_atfork_once, register_atfork);
    struct FerryError probe_error;
    ferry_error_init(&probe_error);
    result->code = kBackends[i]->probe(&probe_error);
    if (result->code != FERRY_OK && probe_error.message[0] == '\0') {
      snprintf(probe_error.message, sizeof(probe_error.message),
               "the %s backend is unavailable (%s)", kBackends[i]->name,
               ferry_errno_name(result->code));
    }
    memcpy(result->message, probe_error.message, sizeof(result->message));
    result->probed = 1;
  }
  if (result->code != FERRY_OK) {
    return ferry__set_error(error, result->code, "%s", result->message);
  }
  return FERRY_OK;
}

int ferry__registry_resolve(ArrowDeviceType device_type, int64_t device_id,
                           struct FerryDevice** out, struct FerryError* error) {
  if (out == NULL) {
    return ferry__set_error(error, EINVAL, "out (the device pointer) must not be NULL");
  }
  *out = NULL;
  int64_t backend_index = 0;
  const struct FerryBackend* backend = backend_for_type(device_type, &backend_index);
  if (backend == NULL) {
    return ferry__set_error(error, ENODEV, "no backend for device type %d (%s)",
                           (int)device_type, ferry_device_type_name(device_type));
  }
  if (device_type == ARROW_DEVICE_CPU) {
    /* The specification says -1 for devices without an id; DLPack and older
     * producers say 0. Both name the one CPU device. */
    if (device_id != -1 && device_id != 0) {
      return ferry__set_error(error, ENODEV,
                             "cpu device id %" PRId64
                             " does not exist (the CPU is -1; 0 "
                             "is accepted too)",
                             device_id);
    }
    device_id = -1;
  } else if (device_id < 0) {
    return ferry__set_error(error, ENODEV, "%s device id %" PRId64 " is negative",
                           ferry_device_type_name(device_type), device_id);
  }

  /* Known devices: no lock (see the top of the file). */
  for (struct FerryRegistryNode* node = __atomic_load_n(&g_devices, __ATOMIC_ACQUIRE);
       node != NULL; node = node->next) {
    if (node->device.device_type == device_type && node->device.device_id == device_id) {
      FERRY_RETURN_NOT_OK(ferry__device_usable(&node->device, error));
      *out = &node->device;
      return FERRY_OK;
    }
  }

  pthread_mutex_lock(&g_registry_lock);
  /* Another thread may have created it since the walk above. */
  for (struct FerryRegistryNode* node = g_devices; node != NULL; node = node->next) {
    if (node->device.device_type == device_type && node->device.device_id == device_id) {
      *out = &node->device;
      pthread_mutex_unlock(&g_registry_lock);
      return FERRY_OK;
    }
  }

  int code = probe_locked(backend_index, error);
  if (code == FERRY_OK && device_type != ARROW_DEVICE_CPU) {
    int64_t count = 0;
    code = backend->device_count(device_type, &count, error);
    if (code == FERRY_OK && device_id >= count) {
      code = ferry__set_error(
          error, ENODEV,
          "%s device %" PRId64 " does not exist (%" PRId64 " device%s of that type)",
          ferry_device_type_name(device_type), device_id, count, count == 1 ? "" : "s");
    }
  }
  struct FerryRegistryNode* node = NULL;
  if (code == FERRY_OK) {
    node = (struct FerryRegistryNode*)calloc(1, sizeof(*node));
    if (node == NULL)
      code = ferry__set_error(error, ENOMEM, "out of memory in the registry");
  }
  if (code == FERRY_OK) {
    node->device.device_type = device_type;
    node->device.device_id = device_id;
    node->device.backend = backend;
    node->device.backend_index = backend_index;
    pthread_mutex_init(&node->device.event_pool_lock, NULL);
    if (backend->device_init != NULL) code = backend->device_init(&node->device, error);
    if (code == FERRY_OK) {
      node->next = g_devices;
      __atomic_store_n(&g_devices, node, __ATOMIC_RELEASE); /* publish it complete */
      *out = &node->device;
    } else {
      pthread_mutex_destroy(&node->device.event_pool_lock);
      free(node);
    }
  }
  pthread_mutex_unlock(&g_registry_lock);
  return code;
}

/* ---- backends ------------------------------------------------------------ */

int64_t ferry_backend_count(void) { return FERRY_N_BACKENDS; }

const char* ferry_backend_name(int64_t i) {
  if (i < 0 || i >= FERRY_N_BACKENDS) return NULL;
  return kBackends[i]->name;
}

int ferry_backend_probe(int64_t i, struct FerryError* error) {
  if (i < 0 || i >= FERRY_N_BACKENDS) {
    return ferry__set_error(error, EINVAL,
                           "backend index %" PRId64 " is out of range (0..%" PRId64 ")",
                           i, FERRY_N_BACKENDS - 1);
  }
  pthread_mutex_lock(&g_registry_lock);
  int code = probe_locked(i, error);
  pthread_mutex_unlock(&g_registry_lock);
  return code;
}

/* ---- devices --------------------------------------------------------------- */

int ferry_device_resolve(ArrowDeviceType device_type, int64_t device_id,
                         struct FerryDevice** out, struct FerryError* error) {
  return ferry__registry_resolve(device_type, device_id, out, error);
}

/* 0 ("no device type") for NULL. */
ArrowDeviceType ferry_device_type(const struct FerryDevice* device) {
  return device == NULL ? 0 : device->device_type;
}

/* -1 for NULL, like the CPU. */
int64_t ferry_device_id(const struct FerryDevice* device) {
  return device == NULL ? -1 : device->device_id;
}

int ferry_device_is_host_accessible(const struct FerryDevice* device) {
  if (device == NULL) return 0;
  return device->backend->is_host_accessible(device->device_type);
}

/* Every public call on a device starts here: a NULL device is EINVAL, a
 * device of a backend this process cannot use since it forked is ENODEV. */
static int check_device(const struct FerryDevice* device, const char* what,
                        struct FerryError* error) {
  if (device == NULL) return ferry__set_error(error, EINVAL, "%s must not be NULL", what);
  if (__builtin_expect(__atomic_load_n(&g_forked_backends, __ATOMIC_RELAXED) != 0, 0)) {
    return ferry__device_usable(device, error);
  }
  return FERRY_OK;
}

/* check_device, then refuses a NULL `handle` (the pointer, stream or event
 * argument called `what`). */
static int check_device_and_handle(const struct FerryDevice* device, const void* handle,
                                   const char* what, struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device(device, "device", error));
  if (handle == NULL) return ferry__set_error(error, EINVAL, "%s must not be NULL", what);
  return FERRY_OK;
}

int ferry_device_allocate(struct FerryDevice* device, int64_t size, void** out,
                          struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device_and_handle(device, out, "out", error));
  *out = NULL;
  if (size < 0) {
    return ferry__set_error(error, EINVAL, "size must not be negative (got %" PRId64 ")",
                           size);
  }
  FERRY_RETURN_NOT_OK(device->backend->allocate(device, size, out, error));
  __atomic_fetch_add(&device->live_allocations, 1, __ATOMIC_RELAXED);
  return FERRY_OK;
}

/* NULL `ptr` is accepted and does nothing, as with free(). */
int ferry_device_deallocate(struct FerryDevice* device, void* ptr,
                            struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device(device, "device", error));
  if (ptr == NULL) return FERRY_OK;
  FERRY_RETURN_NOT_OK(device->backend->deallocate(device, ptr, error));
  __atomic_fetch_sub(&device->live_allocations, 1, __ATOMIC_RELAXED);
  return FERRY_OK;
}

/* 0 for NULL. */
int64_t ferry_device_live_allocations(struct FerryDevice* device) {
  if (device == NULL) return 0;
  return __atomic_load_n(&device->live_allocations, __ATOMIC_RELAXED);
}

/* Copies between devices of two different backends through a host buffer:
 * the source side synchronously, the destination side on `stream`, which is
 * synchronized before the staging buffer is freed. */
static int memcpy_staged(struct FerryDevice* dst_device, void* dst,
                         struct FerryDevice* src_device, const void* src, int64_t size,
                         void* stream, struct FerryError* error) {
  void* staging = malloc((size_t)size);
  if (staging == NULL) {
    return ferry__set_error(error, ENOMEM, "out of memory staging a %" PRId64 "-byte copy",
                           size);
  }
  int code = src_device->backend->memcpy(src_device, staging, src_device, src, size,
                                         FERRY_COPY_DEVICE_TO_HOST, NULL, error);
  if (code == FERRY_OK) {
    code = dst_device->backend->memcpy(dst_device, dst, src_device, staging, size,
                                       FERRY_COPY_HOST_TO_DEVICE, stream, error);
  }
  if (code == FERRY_OK && stream != NULL) {
    code = dst_device->backend->stream_synchronize(dst_device, stream, error);
  }
  free(staging);
  return code;
}

int ferry_device_memcpy(struct FerryDevice* dst_device, void* dst,
                        struct FerryDevice* src_device, const void* src, int64_t size,
                        void* stream, struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device(dst_device, "dst_device", error));
  FERRY_RETURN_NOT_OK(check_device(src_device, "src_device", error));
  if (size < 0) {
    return ferry__set_error(error, EINVAL, "size must not be negative (got %" PRId64 ")",
                           size);
  }
  if (size == 0) return FERRY_OK;
  if (dst == NULL) return ferry__set_error(error, EINVAL, "dst must not be NULL");
  if (src == NULL) return ferry__set_error(error, EINVAL, "src must not be NULL");

  int dst_is_cpu = dst_device->device_type == ARROW_DEVICE_CPU;
  int src_is_cpu = src_device->device_type == ARROW_DEVICE_CPU;
  if (dst_is_cpu && src_is_cpu) {
    memmove(dst, src, (size_t)size);
    return FERRY_OK;
  }
  if (src_is_cpu) {
    return dst_device->backend->memcpy(dst_device, dst, src_device, src, size,
                                       FERRY_COPY_HOST_TO_DEVICE, stream, error);
  }
  if (dst_is_cpu) {
    return src_device->backend->memcpy(src_device, dst, src_device, src, size,
                                       FERRY_COPY_DEVICE_TO_HOST, stream, error);
  }
  if (dst_device->backend == src_device->backend) {
    return dst_device->backend->memcpy(dst_device, dst, src_device, src, size,
                                       FERRY_COPY_DEVICE_TO_DEVICE, stream, error);
  }
  return memcpy_staged(dst_device, dst, src_device, src, size, stream, error);
}

/* ---- streams and events ------------------------------------------------------ */

int ferry_device_stream_create(struct FerryDevice* device, void** stream_out,
                               struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device_and_handle(device, stream_out, "stream_out", error));
  *stream_out = NULL;
  return device->backend->stream_create(device, stream_out, error);
}

int ferry_device_stream_destroy(struct FerryDevice* device, void* stream,
                                struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device(device, "device", error));
  if (stream == NULL) {
    return ferry__set_error(
        error, EINVAL, "stream must not be NULL (the NULL stream cannot be destroyed)");
  }
  return device->backend->stream_destroy(device, stream, error);
}

/* NULL `stream`: waits for all work of the device (see the top of the file). */
int ferry_device_stream_synchronize(struct FerryDevice* device, void* stream,
                                    struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device(device, "device", error));
  return device->backend->stream_synchronize(device, stream, error);
}

int ferry_device_event_create(struct FerryDevice* device, void** sync_event_out,
                              struct FerryError* error) {
  FERRY_RETURN_NOT_OK(
      check_device_and_handle(device, sync_event_out, "sync_event_out", error));
  *sync_event_out = NULL;
  return device->backend->event_create(device, sync_event_out, error);
}

int ferry_device_event_destroy(struct FerryDevice* device, void* sync_event,
                               struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device_and_handle(device, sync_event, "sync_event", error));
  return device->backend->event_destroy(device, sync_event, error);
}

/* NULL `stream`: the event is recorded on the synchronous NULL stream. */
int ferry_device_event_record(struct FerryDevice* device, void* sync_event, void* stream,
                              struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device_and_handle(device, sync_event, "sync_event", error));
  return device->backend->event_record(device, sync_event, stream, error);
}

int ferry_device_event_synchronize(struct FerryDevice* device, void* sync_event,
                                   struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device_and_handle(device, sync_event, "sync_event", error));
  return device->backend->event_synchronize(device, sync_event, error);
}

/* NULL `stream`: the synchronous NULL stream waits, i.e. the host blocks. */
int ferry_device_stream_wait_event(struct FerryDevice* device, void* stream,
                                   void* sync_event, struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device_and_handle(device, sync_event, "sync_event", error));
  return device->backend->stream_wait_event(device, stream, sync_event, error);
}

int ferry__device_check_pointer(struct FerryDevice* device, const void* ptr, int64_t size,
                               struct FerryError* error) {
  FERRY_RETURN_NOT_OK(check_device_and_handle(device, ptr, "ptr", error));
  if (size < 0) {
    return ferry__set_error(error, EINVAL, "size must not be negative (got %" PRId64 ")",
                           size);
  }
  if (device->backend->check_pointer == NULL) {
    return ferry__set_error(error, ENOTSUP, "the %s backend cannot check pointers",
                           device->backend->name);
  }
  return device->backend->check_pointer(device, ptr, size, error);
}
